"""The pipeline validator: hostile pipelines are rejected with a useful message, real ones pass."""

from __future__ import annotations

import re
from datetime import date, datetime

import pytest

from context_engine.query.schema import schema_from_documents
from context_engine.query.validate import (
    ValidationError,
    ValidationPolicy,
    ensure_valid,
    validate_pipeline,
)

USERS = ["alice", "bob", "carol", "dave"]
LABELS = ["bug", "feature", "docs", "security"]


def _pr(n: int) -> dict:
    created = datetime(2024, 1 + n % 12, 1 + n, 9, 30)
    merged = n % 3 != 0
    return {
        "_id": f"pr{n}",
        "tenant_id": "acme",
        "acl": ["*"],
        "number": n,
        "title": f"Fix flaky test {n}",
        "body": f"This PR fixes issue #{n * 7}.",
        "state": "closed" if merged or n % 4 == 0 else "open",
        "draft": n % 5 == 0,
        "merged": merged,
        "user": {"login": USERS[n % 4]},
        "labels": [{"name": LABELS[n % 4]}, {"name": LABELS[(n + 1) % 4]}][: 1 + n % 2],
        "requested_reviewers": [{"login": USERS[(n + 1) % 4]}],
        "reviews": [{"user": {"login": USERS[(n + 2) % 4]}, "state": "APPROVED" if merged else "CHANGES_REQUESTED"}],
        "milestone": {"title": f"v1.{n % 3}"},
        "created_at": created,
        "merged_at": created.replace(hour=17) if merged else None,
        "closed_at": created.replace(hour=18) if merged else None,
        "additions": 10 * n + 3,
        "base": {"repo": {"full_name": "acme/api" if n % 2 else "acme/web"}},
        "repo": "api" if n % 2 else "web",
    }


SCHEMA = schema_from_documents("pull_requests", [_pr(n) for n in range(1, 11)])
D = datetime(2024, 3, 1)


def test_schema_hides_tenant_fields():
    assert SCHEMA.has_path("user.login") and SCHEMA.has_path("reviews.user.login") and SCHEMA.text_index
    assert not any(SCHEMA.has_path(p) for p in ("_id", "tenant_id", "acl"))


def _nested_and(levels: int) -> dict:
    query: dict = {"state": "open"}
    for _ in range(levels):
        query = {"$and": [query]}
    return query


class _Code(str):
    """Stands in for bson.code.Code, a str subclass that carries JavaScript."""


M = {"$match": {"state": "open"}}
GROUP_BY_USER = {"$group": {"_id": "$user.login", "n": {"$sum": 1}}}

HOSTILE = [
    # disallowed stages
    ("out", [M, {"$out": "stolen"}], "Stage $out is not allowed; use only $match"),
    ("merge", [M, {"$merge": {"into": "x"}}], "Stage $merge is not allowed"),
    ("unionWith", [{"$unionWith": "issues"}], "Stage $unionWith is not allowed"),
    (
        "lookup",
        [{"$lookup": {"from": "issues", "localField": "number", "foreignField": "number", "as": "i"}}],
        "Stage $lookup is not allowed",
    ),
    ("graphLookup", [{"$graphLookup": {"from": "people"}}], "Stage $graphLookup is not allowed"),
    ("facet", [{"$facet": {"a": [M]}}], "Stage $facet is not allowed"),
    ("replaceRoot", [{"$replaceRoot": {"newRoot": "$$ROOT"}}], "Stage $replaceRoot is not allowed"),
    ("set", [{"$set": {"x": 1}}], "Stage $set is not allowed (use $addFields instead)"),
    ("sample", [{"$sample": {"size": 5}}], "Stage $sample is not allowed"),
    ("collStats", [{"$collStats": {}}], "Stage $collStats is not allowed"),
    # code execution, at any depth
    ("where top", [{"$match": {"$where": "this.tenant_id != 'acme'"}}], "Query operator $where is not allowed"),
    ("where in $and", [{"$match": {"$and": [{"$where": "sleep(1000)"}]}}], "Query operator $where is not allowed"),
    (
        "where as field value",
        [{"$match": {"title": {"$where": "1"}}}],
        "Query operator $where is not allowed on 'title'",
    ),
    ("where in elemMatch", [{"$match": {"labels": {"$elemMatch": {"$where": "1"}}}}], "$where is not allowed"),
    (
        "function in elemMatch",
        [{"$match": {"labels": {"$elemMatch": {"name": {"$function": {}}}}}}],
        "Query operator $function is not allowed on 'labels.name'",
    ),
    (
        "function in $expr",
        [{"$match": {"$expr": {"$function": {"body": "x", "args": [], "lang": "js"}}}}],
        "Expression operator $function is not allowed",
    ),
    (
        "function in $project",
        [{"$project": {"x": {"$function": {"body": "x", "args": [], "lang": "js"}}}}],
        "Expression operator $function is not allowed",
    ),
    (
        "accumulator in $group",
        [{"$group": {"_id": None, "x": {"$accumulator": {"init": "f"}}}}],
        "Accumulator $accumulator is not allowed",
    ),
    (
        "mergeObjects in $group",
        [{"$group": {"_id": None, "x": {"$mergeObjects": "$user"}}}],
        "Accumulator $mergeObjects is not allowed",
    ),
    (
        "let in $addFields",
        [{"$addFields": {"x": {"$let": {"vars": {}, "in": 1}}}}],
        "Expression operator $let is not allowed",
    ),
    ("jsonSchema", [{"$match": {"$jsonSchema": {}}}], "Query operator $jsonSchema is not allowed"),
    ("mod", [{"$match": {"number": {"$mod": [2, 0]}}}], "Query operator $mod is not allowed"),
    # variables
    ("$$ROOT", [{"$group": {"_id": None, "docs": {"$push": "$$ROOT"}}}], "variable '$$ROOT' is not allowed"),
    ("$$CURRENT", [{"$project": {"doc": "$$CURRENT"}}], "variable '$$CURRENT' is not allowed"),
    ("$$REMOVE", [{"$project": {"title": {"$cond": [True, "$$REMOVE", "$title"]}}}], "variable '$$REMOVE'"),
    # hidden fields
    ("tenant_id in group _id", [{"$group": {"_id": "$tenant_id", "n": {"$sum": 1}}}], "hidden field 'tenant_id'"),
    ("tenant_id in project", [{"$project": {"t": "$tenant_id"}}], "hidden field 'tenant_id'"),
    ("tenant_id as project key", [{"$project": {"tenant_id": 1}}], "hidden field 'tenant_id'"),
    ("tenant_id literal", [{"$match": {"title": "$tenant_id"}}], "names the hidden field 'tenant_id'"),
    ("tenant_id in $in literal", [{"$match": {"title": {"$in": ["a", "$acl"]}}}], "names the hidden field 'acl'"),
    ("tenant_id match key", [{"$match": {"tenant_id": {"$ne": "acme"}}}], "hidden field 'tenant_id'"),
    ("acl.0", [{"$match": {"acl.0": "*"}}], "hidden field 'acl'"),
    ("$acl.0 ref", [{"$project": {"a": {"$arrayElemAt": ["$acl", 0]}}}], "hidden field 'acl'"),
    (
        "nested $or tenant",
        [{"$match": {"$or": [{"state": "open"}, {"tenant_id": "other"}]}}],
        "hidden field 'tenant_id'",
    ),
    ("tenant in $expr", [{"$match": {"$expr": {"$ne": ["$tenant_id", "acme"]}}}], "hidden field 'tenant_id'"),
    ("tenant in elemMatch", [{"$match": {"labels": {"$elemMatch": {"tenant_id": "x"}}}}], "hidden field 'tenant_id'"),
    ("addFields writes tenant", [{"$addFields": {"tenant_id": "acme"}}], "hidden field 'tenant_id'"),
    ("addFields writes acl", [{"$addFields": {"acl": ["*"]}}], "hidden field 'acl'"),
    ("_id: 1 projection", [{"$project": {"_id": 1, "title": 1}}], "hidden field '_id'"),
    ("sort by _id", [M, {"$sort": {"_id": 1}}], "hidden field '_id'"),
    ("unwind acl", [{"$unwind": "$acl"}], "hidden field 'acl'"),
    ("group output tenant", [{"$group": {"_id": None, "tenant_id": {"$first": "$title"}}}], "hidden field 'tenant_id'"),
    ("tenant after group", [GROUP_BY_USER, {"$match": {"tenant_id": "x"}}], "hidden field 'tenant_id'"),
    ("$literal hidden", [{"$project": {"x": {"$literal": "$tenant_id"}}}], "names the hidden field"),
    # regex disabled by default
    ("regex", [{"$match": {"title": {"$regex": "fix", "$options": "i"}}}], "regular expressions are not allowed"),
    ("compiled regex", [{"$match": {"title": re.compile("fix")}}], "regular expressions are not allowed"),
    # caps and shapes
    ("limit 10000", [M, {"$limit": 10_000}], "$limit must be an integer between 1 and 200; got 10000"),
    ("limit True", [M, {"$limit": True}], "$limit must be an integer between 1 and 200; got True"),
    ("limit 0", [M, {"$limit": 0}], "$limit must be an integer"),
    ("negative skip", [M, {"$skip": -1}], "$skip must be an integer between 0 and 10000"),
    ("depth bomb", [{"$match": _nested_and(50)}], "nested more than 10 levels"),
    ("size bomb", [{"$match": {"title": {"$in": ["x" * 100] * 100}}}], "too large"),
    ("too many stages", [M] * 13, "at most 12 are allowed"),
    ("non-list pipeline", {"$match": {}}, "must be a JSON array"),
    ("string pipeline", "[{'$match': {}}]", "must be a JSON array"),
    ("empty pipeline", [], "pipeline is empty"),
    ("stage with two keys", [{"$match": {"state": "open"}, "$limit": 5}], "exactly one key"),
    ("stage not an object", ["$match"], "exactly one key"),
    ("non-string key", [{"$match": {1: "x"}}], "field name must be a string"),
    ("NUL key", [{"$match": {"title\x00": "x"}}], "invalid field name"),
    ("empty key", [{"$match": {"": "x"}}], "invalid field name"),
    ("$ key in project", [{"$project": {"$title": 1}}], "invalid field name"),
    ("field op at top", [{"$match": {"$gt": 5}}], "$gt must be applied to a field"),
    # fields
    ("unknown field", [{"$match": {"author": "bob"}}], "Field 'author' does not exist in pull_requests"),
    ("unknown ref", [{"$project": {"n": {"$size": "$label"}}}], "Field 'label' does not exist"),
    (
        "unknown after group",
        [GROUP_BY_USER, {"$sort": {"title": 1}}],
        "Field 'title' is not available after $group; available fields: _id, n",
    ),
    (
        "unknown _id subfield",
        [{"$group": {"_id": {"repo": "$repo"}, "n": {"$sum": 1}}}, {"$sort": {"_id.user": 1}}],
        "Field '_id.user' is not available after $group",
    ),
    (
        "unknown after project",
        [{"$project": {"title": 1}}, {"$match": {"state": "open"}}],
        "Field 'state' is not available after $project; available fields: title",
    ),
    ("unknown after count", [{"$count": "n"}, {"$sort": {"number": 1}}], "not available after $count"),
    ("excluded field", [{"$project": {"body": 0}}, {"$match": {"body": "x"}}], "removed by an earlier $project"),
    # $text placement
    (
        "$text not first stage",
        [{"$sort": {"number": 1}}, {"$match": {"$text": {"$search": "flaky"}}}],
        "$text is only allowed at the top level of the first $match stage",
    ),
    (
        "$text in $or",
        [{"$match": {"$or": [{"$text": {"$search": "x"}}, {"state": "open"}]}}],
        "$text is only allowed at the top level",
    ),
    ("$text option", [{"$match": {"$text": {"$search": "x", "$caseSensitive": True}}}], "$caseSensitive not allowed"),
    ("textScore without $text", [M, {"$sort": {"score": {"$meta": "textScore"}}}], "needs a $text match"),
    # stage details
    ("sort by 2", [M, {"$sort": {"number": 2}}], "sort direction for 'number' must be 1 or -1; got 2"),
    ("sort empty", [M, {"$sort": {}}], "$sort needs a non-empty object"),
    (
        "unwind includeArrayIndex",
        [{"$unwind": {"path": "$labels", "includeArrayIndex": "i"}}],
        "$unwind option(s) includeArrayIndex not allowed",
    ),
    ("unwind no $", [{"$unwind": "labels"}], "$unwind needs a field path"),
    ("count with dot", [{"$count": "a.b"}], "must not contain '.'"),
    ("count with $", [{"$count": "$n"}], "invalid $count output name"),
    ("group without _id", [{"$group": {"n": {"$sum": 1}}}], "$group needs an _id"),
    ("group output not accumulator", [{"$group": {"_id": None, "n": 1}}], "must be one accumulator object"),
    ("group output with dot", [{"$group": {"_id": None, "a.b": {"$sum": 1}}}], "must not contain '.'"),
    ("project mix", [{"$project": {"title": 1, "body": 0}}], "cannot mix inclusion and exclusion"),
    ("project 5", [{"$project": {"title": 5}}], "must be 1, 0 or an expression"),
    ("expr two operators", [{"$project": {"x": {"$add": [1, 2], "$size": "$labels"}}}], "exactly one operator"),
    ("arity", [{"$project": {"x": {"$subtract": ["$additions"]}}}], "$subtract takes 2 argument(s); got 1"),
    (
        "dateToString extra",
        [{"$project": {"d": {"$dateToString": {"format": "%Y", "date": "$created_at", "onNull": "$$ROOT"}}}}],
        "unknown onNull",
    ),
    ("exists not bool", [{"$match": {"merged_at": {"$exists": "yes"}}}], "$exists on 'merged_at' needs true or false"),
    (
        "$expr in elemMatch",
        [{"$match": {"labels": {"$elemMatch": {"$expr": {"$eq": [1, 1]}}}}}],
        "$expr cannot be used inside $elemMatch",
    ),
    (
        "extended json $date",
        [{"$match": {"created_at": {"$gte": {"$date": "2024-01-01"}}}}],
        "key '$date' is not allowed inside a literal value",
    ),
    ("bytes literal", [{"$match": {"title": b"x"}}], "unsupported value type bytes"),
    (
        "date (not datetime) literal",
        [{"$match": {"created_at": {"$gte": date(2024, 1, 1)}}}],
        "unsupported value type date",
    ),
    (
        "str subclass literal (bson Code-like)",
        [{"$match": {"title": _Code("sleep(1)")}}],
        "unsupported value type _Code",
    ),
    ("$ path segment", [{"$match": {"labels.$.name": "x"}}], "invalid field name"),
    ("hidden in $text search", [{"$match": {"$text": {"$search": "$tenant_id"}}}], "names the hidden field"),
    ("$text after $group", [GROUP_BY_USER, {"$match": {"$text": {"$search": "x"}}}], "$text is only allowed"),
    (
        "unknown elemMatch subfield",
        [{"$match": {"labels": {"$elemMatch": {"title": "bug"}}}}],
        "Field 'labels.title' does not exist",
    ),
]


@pytest.mark.parametrize("pipeline, expected", [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_hostile_pipeline_rejected(pipeline, expected):
    errors = validate_pipeline(pipeline, SCHEMA)
    assert errors, "pipeline should have been rejected"
    assert any(expected in e for e in errors), errors
    with pytest.raises(ValidationError) as info:
        ensure_valid(pipeline, SCHEMA)
    assert info.value.errors == errors and str(info.value) == "; ".join(errors)


LEGIT = [
    ("open PRs", [{"$match": {"state": "open"}}, {"$limit": 20}]),
    ("by author", [{"$match": {"user.login": "alice", "merged": True}}, {"$sort": {"merged_at": -1}}]),
    ("by label", [{"$match": {"labels.name": "bug"}}]),
    ("label $in", [{"$match": {"labels.name": {"$in": ["bug", "security"]}, "draft": False}}]),
    ("label $nin", [{"$match": {"labels.name": {"$nin": ["docs"]}}}]),
    ("date range", [{"$match": {"created_at": {"$gte": D, "$lt": datetime(2024, 6, 1)}}}]),
    ("merged since", [{"$match": {"merged_at": {"$gte": D}, "base.repo.full_name": "acme/api"}}]),
    ("elemMatch", [{"$match": {"reviews": {"$elemMatch": {"user.login": "bob", "state": "APPROVED"}}}}]),
    ("elemMatch on scalar element", [{"$match": {"additions": {"$elemMatch": {"$gte": 10, "$lt": 50}}}}]),
    (
        "elemMatch with $or",
        [{"$match": {"reviews": {"$elemMatch": {"$or": [{"state": "APPROVED"}, {"user.login": "dave"}]}}}}],
    ),
    ("$all", [{"$match": {"labels.name": {"$all": ["bug", "feature"]}}}]),
    ("$size", [{"$match": {"requested_reviewers": {"$size": 0}}}]),
    ("$exists", [{"$match": {"milestone": {"$exists": True}, "merged_at": {"$ne": None}}}]),
    ("$not", [{"$match": {"state": {"$not": {"$in": ["closed"]}}}}]),
    ("$or/$nor", [{"$match": {"$or": [{"draft": True}, {"state": "open"}], "$nor": [{"user.login": "bob"}]}}]),
    ("$text", [{"$match": {"$text": {"$search": "flaky test"}, "state": "closed"}}, {"$limit": 10}]),
    (
        "$text sorted by score",
        [
            {"$match": {"$text": {"$search": "flaky", "$language": "en"}}},
            {"$sort": {"score": {"$meta": "textScore"}}},
            {"$limit": 5},
        ],
    ),
    ("count", [{"$match": {"state": "open"}}, {"$count": "open_prs"}]),
    (
        "top reviewers",
        [
            {"$unwind": "$reviews"},
            {"$group": {"_id": "$reviews.user.login", "n": {"$sum": 1}}},
            {"$sort": {"n": -1, "_id": 1}},
            {"$limit": 5},
        ],
    ),
    (
        "top authors by additions",
        [
            {
                "$group": {
                    "_id": "$user.login",
                    "total": {"$sum": "$additions"},
                    "avg": {"$avg": "$additions"},
                    "max": {"$max": "$additions"},
                }
            },
            {"$sort": {"total": -1}},
            {"$limit": 3},
        ],
    ),
    (
        "group by year/month",
        [
            {"$group": {"_id": {"y": {"$year": "$created_at"}, "m": {"$month": "$created_at"}}, "n": {"$sum": 1}}},
            {"$sort": {"_id.y": 1, "_id.m": 1}},
        ],
    ),
    (
        "group by week",
        [
            {"$match": {"created_at": {"$gte": D}}},
            {"$group": {"_id": {"$week": "$created_at"}, "n": {"$sum": 1}}},
            {"$sort": {"_id": 1}},
        ],
    ),
    (
        "group by day string",
        [
            {
                "$group": {
                    "_id": {"$dateToString": {"format": "%Y-%m-%d", "date": "$merged_at", "timezone": "UTC"}},
                    "n": {"$sum": 1},
                }
            }
        ],
    ),
    (
        "group by hour with tz",
        [{"$group": {"_id": {"$hour": {"date": "$created_at", "timezone": "Europe/Paris"}}, "n": {"$sum": 1}}}],
    ),
    (
        "unwind then group by label",
        [
            {"$unwind": {"path": "$labels", "preserveNullAndEmptyArrays": True}},
            {"$group": {"_id": "$labels.name", "prs": {"$addToSet": "$number"}}},
            {"$project": {"_id": 1, "count": {"$size": "$prs"}}},
            {"$sort": {"count": -1}},
        ],
    ),
    (
        "project with $size",
        [
            {"$match": {"state": "open"}},
            {"$project": {"_id": 0, "number": 1, "title": 1, "n_labels": {"$size": "$labels"}}},
        ],
    ),
    ("_id: 0 projection", [{"$project": {"_id": 0, "title": 1, "user.login": 1}}, {"$sort": {"user.login": 1}}]),
    ("exclusion projection", [{"$project": {"_id": 0, "body": 0}}, {"$match": {"state": "open"}}]),
    (
        "addFields then match",
        [
            {"$addFields": {"n_reviews": {"$size": "$reviews"}}},
            {"$match": {"n_reviews": {"$gte": 1}}},
            {"$sort": {"n_reviews": -1}},
        ],
    ),
    ("$expr two fields", [{"$match": {"$expr": {"$gt": ["$merged_at", "$created_at"]}}}]),
    (
        "$expr arithmetic",
        [{"$match": {"$expr": {"$gte": [{"$subtract": ["$closed_at", "$created_at"]}, 3600 * 1000]}}}],
    ),
    (
        "sort by group output",
        [{"$match": {"merged": True}}, {"$group": {"_id": "$repo", "merged": {"$sum": 1}}}, {"$sort": {"merged": -1}}],
    ),
    (
        "group null first/last",
        [
            {"$sort": {"created_at": 1}},
            {"$group": {"_id": None, "first": {"$first": "$title"}, "last": {"$last": "$title"}}},
        ],
    ),
    ("push object", [{"$group": {"_id": "$state", "prs": {"$push": {"n": "$number", "t": "$title"}}}}]),
    (
        "cond/ifNull/concat",
        [
            {
                "$project": {
                    "_id": 0,
                    "label": {"$concat": [{"$toUpper": "$state"}, " ", {"$ifNull": ["$milestone.title", "none"]}]},
                    "big": {"$cond": {"if": {"$gt": ["$additions", 50]}, "then": True, "else": False}},
                }
            }
        ],
    ),
    (
        "strings",
        [
            {
                "$project": {
                    "_id": 0,
                    "short": {"$substrCP": ["$title", 0, 10]},
                    "len": {"$strLenCP": "$title"},
                    "low": {"$toLower": "$user.login"},
                }
            }
        ],
    ),
    (
        "arrayElemAt and $in",
        [
            {
                "$project": {
                    "first_label": {"$arrayElemAt": ["$labels.name", 0]},
                    "is_bug": {"$in": ["bug", "$labels.name"]},
                }
            }
        ],
    ),
    ("$literal", [{"$project": {"kind": {"$literal": "$not-a-field"}, "number": 1}}]),
    ("skip and limit", [{"$sort": {"number": 1}}, {"$skip": 20}, {"$limit": 200}]),
    ("array index path", [{"$match": {"labels.0.name": "bug"}}]),
    (
        "day of week/year",
        [
            {
                "$project": {
                    "dow": {"$dayOfWeek": "$created_at"},
                    "doy": {"$dayOfYear": "$created_at"},
                    "dom": {"$dayOfMonth": "$created_at"},
                }
            }
        ],
    ),
    (
        "group then match then count",
        [
            {"$group": {"_id": {"repo": "$repo", "user": "$user.login"}, "n": {"$sum": 1}}},
            {"$match": {"n": {"$gte": 2}, "_id.repo": "api"}},
            {"$count": "pairs"},
        ],
    ),
    (
        "full planner pipeline",
        [
            {"$match": {"state": "closed", "merged": True, "closed_at": {"$gte": D}}},
            {"$addFields": {"hours": {"$divide": [{"$subtract": ["$merged_at", "$created_at"]}, 3600000]}}},
            {"$sort": {"hours": -1}},
            {"$limit": 10},
            {"$project": {"_id": 0, "number": 1, "title": 1, "hours": 1}},
        ],
    ),
    ("empty match", [{"$match": {}}, {"$limit": 1}]),
]


@pytest.mark.parametrize("pipeline", [case[1] for case in LEGIT], ids=[case[0] for case in LEGIT])
def test_legit_pipeline_accepted(pipeline):
    assert validate_pipeline(pipeline, SCHEMA) == []
    assert ensure_valid(pipeline, SCHEMA) is pipeline


def test_counts():
    assert len(HOSTILE) >= 35 and len(LEGIT) >= 35


def test_did_you_mean():
    errors = validate_pipeline([{"$match": {"user.name": "alice"}}], SCHEMA)
    assert len(errors) == 1
    assert "Field 'user.name' does not exist in pull_requests; did you mean 'user.login'" in errors[0]
    assert "did you mean 'title'" in validate_pipeline([{"$sort": {"titel": 1}}], SCHEMA)[0]


def test_all_errors_reported():
    pipeline = [{"$match": {"user.name": "alice", "title": {"$where": "1"}}}, {"$limit": 500}]
    errors = validate_pipeline(pipeline, SCHEMA)
    assert len(errors) == 3, errors
    assert errors[0].startswith("Stage 1 ($match): Field 'user.name'")
    assert errors[1].startswith("Stage 1 ($match): Query operator $where")
    assert errors[2].startswith("Stage 2 ($limit)")
    two = validate_pipeline([{"$match": {"tenant_id": "x"}}, {"$lookup": {}}], SCHEMA)
    assert len(two) == 2, two


def test_errors_name_allowed_alternatives():
    [error] = validate_pipeline([{"$lookup": {}}], SCHEMA)
    assert error == (
        "Stage $lookup is not allowed; use only $match, $sort, $limit, $skip, $count, "
        "$group, $project, $unwind, $addFields"
    )
    [error] = validate_pipeline([{"$match": {"$where": "1"}}], SCHEMA)
    assert "$elemMatch" in error and "$regex" not in error  # regex is not offered when disabled


def test_regex_allowed_by_policy():
    policy = ValidationPolicy(allow_regex=True)
    assert validate_pipeline([{"$match": {"title": {"$regex": "^fix", "$options": "i"}}}], SCHEMA, policy) == []
    assert validate_pipeline([{"$match": {"title": re.compile("fix", re.I)}}], SCHEMA, policy) == []
    assert validate_pipeline([{"$match": {"title": {"$not": re.compile("wip")}}}], SCHEMA, policy) == []
    bad = validate_pipeline([{"$match": {"title": {"$regex": "x", "$options": "g"}}}], SCHEMA, policy)
    assert "flags i, m, s" in bad[0]
    # `x` is refused (RE2 has no extended mode), and so is a compiled pattern carrying it
    assert validate_pipeline([{"$match": {"title": {"$regex": "x", "$options": "x"}}}], SCHEMA, policy)
    assert validate_pipeline([{"$match": {"title": re.compile("a b", re.X)}}], SCHEMA, policy)
    assert (
        "invalid regular expression" in validate_pipeline([{"$match": {"title": {"$regex": "("}}}], SCHEMA, policy)[0]
    )
    # the policy opens regex only: hidden fields and code stay closed
    assert validate_pipeline([{"$match": {"tenant_id": {"$regex": "."}}}], SCHEMA, policy)


def test_a_pattern_of_literal_words_is_allowed_without_the_regex_policy():
    # what a `words` filter compiles to: literal words, one fixed group of endings, word boundaries
    from context_engine.query.validate import word_pattern

    pattern = word_pattern(["token", "ci", "缓存"])
    assert validate_pipeline([{"$match": {"title": {"$regex": pattern}}}], SCHEMA) == []
    assert validate_pipeline([{"$match": {"title": {"$not": {"$regex": pattern}}}}], SCHEMA) == []
    # anything else is still a regular expression, refused: a wildcard, a word list grown by hand, no boundaries
    for other in (pattern.replace("token", "tok.*"), pattern + "|x", pattern.replace("(?i)", ""), "(?i)(?:fix)"):
        assert validate_pipeline([{"$match": {"title": {"$regex": other}}}], SCHEMA), other


def test_a_pattern_of_exact_words_is_allowed_too_and_no_mixture_of_the_two_forms():
    from context_engine.query.validate import exact_word_pattern, word_pattern

    pattern = exact_word_pattern(["port", "ports", "缓存"])
    assert pattern == "(?i)(?:\\bport\\b|\\bports\\b|缓存)"
    assert validate_pipeline([{"$match": {"title": {"$regex": pattern}}}], SCHEMA) == []
    mixed = pattern[:-1] + "|" + word_pattern(["x"])[len("(?i)(?:") :]
    for other in (mixed, pattern.replace("port", "po.t"), pattern.replace("\\b", "")):
        assert validate_pipeline([{"$match": {"title": {"$regex": other}}}], SCHEMA), other


def test_a_hyphenated_word_is_a_word_of_either_form():
    from context_engine.query.validate import exact_word_pattern, word_pattern

    for pattern in (word_pattern(["pre-commit", "lint"]), exact_word_pattern(["pre-commit", "lint"])):
        assert validate_pipeline([{"$match": {"title": {"$regex": pattern}}}], SCHEMA) == [], pattern
    # a hyphen is allowed between letters only: not a range, not at an end
    for other in ("(?i)(?:\\bpre-\\b)", "(?i)(?:\\b-commit\\b)", "(?i)(?:\\bpre--commit\\b)"):
        assert validate_pipeline([{"$match": {"title": {"$regex": other}}}], SCHEMA), other


def test_policy_caps():
    policy = ValidationPolicy(
        max_limit=1000, max_stages=2, hidden_fields=frozenset({"tenant_id", "acl", "_id", "body"})
    )
    assert validate_pipeline([M, {"$limit": 1000}], SCHEMA, policy) == []
    assert validate_pipeline([M, M, M], SCHEMA, policy)
    assert "hidden field 'body'" in validate_pipeline([{"$match": {"body": "x"}}], SCHEMA, policy)[0]


def test_without_schema_fields_are_not_checked_but_rules_are():
    assert validate_pipeline([{"$match": {"anything.at.all": 1}}, {"$sort": {"whatever": -1}}], None) == []
    assert validate_pipeline([{"$match": {"$text": {"$search": "x"}}}], None) == []
    assert "hidden field 'tenant_id'" in validate_pipeline([{"$match": {"tenant_id": "x"}}], None)[0]
    assert "$where" in validate_pipeline([{"$match": {"$where": "1"}}], None)[0]
    # output names of a reshaping stage are still known without a schema
    assert (
        "not available after $group"
        in validate_pipeline([{"$group": {"_id": "$x", "n": {"$sum": 1}}}, {"$sort": {"m": 1}}], None)[0]
    )


def test_text_needs_text_index():
    schema = schema_from_documents("commits_without_text", [{"sha": "a", "n": 1}])
    errors = validate_pipeline([{"$match": {"$text": {"$search": "x"}}}], schema)
    assert "has no full-text index" in errors[0]


def test_id_is_a_legit_name_only_after_group():
    assert (
        validate_pipeline([GROUP_BY_USER, {"$match": {"_id": "alice"}}, {"$project": {"_id": 1, "n": 1}}], SCHEMA) == []
    )
    assert "hidden field '_id'" in validate_pipeline([{"$match": {"_id": "pr1"}}], SCHEMA)[0]
    assert "hidden field '_id'" in validate_pipeline([{"$project": {"x": "$_id"}}], SCHEMA)[0]
    # once a $project drops the group key, `_id` is off limits again
    errors = validate_pipeline([GROUP_BY_USER, {"$project": {"_id": 0, "n": 1}}, {"$sort": {"_id": 1}}], SCHEMA)
    assert "hidden field '_id'" in errors[0]


def test_unserialisable_and_cyclic_pipelines():
    loop: dict = {}
    loop["$and"] = [loop]
    assert "nested more than" in validate_pipeline([{"$match": loop}], SCHEMA)[0]
    assert validate_pipeline([{"$match": {"title": object()}}], SCHEMA)

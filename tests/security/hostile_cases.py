"""The hostile-pipeline corpus: what an attacker (or a model steered by a poisoned document) might
send as a pipeline. Each case is (id, collection, pipeline, allow_regex, expect):

- expect "reject": the validator must refuse it (an escape attempt has no legitimate reading);
- expect "bounded": it may run, but must end within the deadline and caps, without leaking.

Every case, whatever it expects, must also end in <= 2 s, under 300 MB of extra memory, and return
nothing outside the asker's tenant and access scope and no hidden field at any depth.
"""

from __future__ import annotations

import re
from typing import Any

Case = tuple[str, str, Any, bool, str]

PR, MSG = "pull_requests", "messages"
FOREIGN = ["people", "messages", "pull_requests", "system.users", "admin", "../other"]
OWN = {"people", "messages", "pull_requests"}  # the tenant's collections: a $lookup may join them, in scope
HIDDEN = ["tenant_id", "acl", "_id"]


def _stages() -> list[Case]:
    """Stages outside the allow-list, most aimed at another collection, tenant or the server."""
    out: list[Case] = []
    for i, target in enumerate(FOREIGN):
        out += [
            (
                f"lookup-{i}",
                PR,
                [{"$lookup": {"from": target, "localField": "user.login", "foreignField": "login", "as": "x"}}],
                False,
                "bounded" if target in OWN else "reject",
            ),
            (f"unionwith-{i}", PR, [{"$unionWith": {"coll": target, "pipeline": []}}], False, "reject"),
            (f"out-{i}", PR, [{"$match": {}}, {"$out": target}], False, "reject"),
            (f"merge-{i}", PR, [{"$merge": {"into": target}}], False, "reject"),
        ]
    out += [
        (
            "graphlookup",
            PR,
            [
                {
                    "$graphLookup": {
                        "from": "pull_requests",
                        "startWith": "$repo",
                        "connectFromField": "repo",
                        "connectToField": "repo",
                        "as": "g",
                    }
                }
            ],
            False,
            "reject",
        ),
        (
            "lookup-pipeline",
            PR,
            [{"$lookup": {"from": "pull_requests", "pipeline": [{"$match": {}}], "as": "all"}}],
            False,
            "bounded",
        ),
        ("facet-escape", PR, [{"$facet": {"a": [{"$match": {"tenant_id": "globex"}}]}}], False, "reject"),
        ("replaceroot", PR, [{"$replaceRoot": {"newRoot": {"t": "$tenant_id"}}}], False, "reject"),
        ("replacewith", PR, [{"$replaceWith": "$$ROOT"}], False, "reject"),
        ("set-stage", PR, [{"$set": {"x": "$acl"}}], False, "reject"),
        ("unset-stage", PR, [{"$unset": "title"}], False, "reject"),
        ("sample", PR, [{"$sample": {"size": 10**9}}], False, "reject"),
        ("bucket", PR, [{"$bucket": {"groupBy": "$number", "boundaries": [0, 10]}}], False, "reject"),
        ("bucketauto", PR, [{"$bucketAuto": {"groupBy": "$number", "buckets": 5}}], False, "reject"),
        (
            "densify",
            PR,
            [{"$densify": {"field": "number", "range": {"step": 1, "bounds": [0, 10**9]}}}],
            False,
            "reject",
        ),
        ("fill", PR, [{"$fill": {"output": {"x": {"value": 1}}}}], False, "reject"),
        ("geonear", PR, [{"$geoNear": {"near": [0, 0], "distanceField": "d"}}], False, "reject"),
        ("collstats", PR, [{"$collStats": {"count": {}}}], False, "reject"),
        ("indexstats", PR, [{"$indexStats": {}}], False, "reject"),
        ("currentop", PR, [{"$currentOp": {"allUsers": True}}], False, "reject"),
        ("listsessions", PR, [{"$listSessions": {"allUsers": True}}], False, "reject"),
        ("plancache", PR, [{"$planCacheStats": {}}], False, "reject"),
        ("redact", PR, [{"$redact": "$$KEEP"}], False, "reject"),
        ("search", PR, [{"$search": {"text": {"query": "x", "path": "title"}}}], False, "reject"),
        ("setwindow", PR, [{"$setWindowFields": {"output": {"n": {"$sum": 1}}}}], False, "reject"),
        ("documents", PR, [{"$documents": [{"tenant_id": "globex"}]}], False, "reject"),
        ("changestream", PR, [{"$changeStream": {}}], False, "reject"),
        ("sortbycount", PR, [{"$sortByCount": "$tenant_id"}], False, "reject"),
        ("two-keys", PR, [{"$match": {}, "$lookup": {"from": "people"}}], False, "reject"),
        ("stage-not-object", PR, ["$match"], False, "reject"),
        ("stage-list", PR, [[{"$match": {}}]], False, "reject"),
        ("not-a-list", PR, {"$match": {}}, False, "reject"),
        ("empty", PR, [], False, "reject"),
        ("string-pipeline", PR, '[{"$match": {}}]', False, "reject"),
    ]
    return out


def _javascript() -> list[Case]:
    js = "function() { return true; }"
    return [
        ("where", PR, [{"$match": {"$where": "this.tenant_id == 'globex'"}}], False, "reject"),
        ("where-in-or", PR, [{"$match": {"$or": [{"$where": js}, {"state": "open"}]}}], False, "reject"),
        ("where-in-nor", PR, [{"$match": {"$nor": [{"$where": js}]}}], False, "reject"),
        ("where-in-elemmatch", PR, [{"$match": {"labels": {"$elemMatch": {"$where": js}}}}], False, "reject"),
        (
            "function-expr",
            PR,
            [{"$match": {"$expr": {"$function": {"body": js, "args": [], "lang": "js"}}}}],
            False,
            "reject",
        ),
        (
            "function-project",
            PR,
            [{"$project": {"x": {"$function": {"body": js, "args": [], "lang": "js"}}}}],
            False,
            "reject",
        ),
        (
            "accumulator",
            PR,
            [
                {
                    "$group": {
                        "_id": None,
                        "x": {
                            "$accumulator": {
                                "init": js,
                                "accumulate": js,
                                "accumulateArgs": [],
                                "merge": js,
                                "lang": "js",
                            }
                        },
                    }
                }
            ],
            False,
            "reject",
        ),
        ("where-field", PR, [{"$match": {"title": {"$where": js}}}], False, "reject"),
        ("mapreduce-like", PR, [{"$mapReduce": {"map": js, "reduce": js}}], False, "reject"),
    ]


def _hidden() -> list[Case]:
    """Hidden fields named, compared, copied or exposed, at the top and at depth."""
    out: list[Case] = []
    for name in HIDDEN:
        out += [
            (f"match-{name}", PR, [{"$match": {name: {"$exists": True}}}], False, "reject"),
            (f"match-or-{name}", PR, [{"$match": {"$or": [{name: "globex"}, {"state": "open"}]}}], False, "reject"),
            (f"expr-{name}", PR, [{"$match": {"$expr": {"$ne": [f"${name}", None]}}}], False, "reject"),
            (f"project-{name}", PR, [{"$project": {name: 1, "title": 1}}], False, "reject"),
            (f"project-copy-{name}", PR, [{"$project": {"copy": f"${name}"}}], False, "reject"),
            (f"project-nested-copy-{name}", PR, [{"$project": {"deep": {"a": {"b": f"${name}"}}}}], False, "reject"),
            (f"addfields-{name}", PR, [{"$addFields": {"x": f"${name}"}}], False, "reject"),
            (f"group-key-{name}", PR, [{"$group": {"_id": f"${name}", "n": {"$sum": 1}}}], False, "reject"),
            (f"push-{name}", PR, [{"$group": {"_id": None, "all": {"$push": f"${name}"}}}], False, "reject"),
            (f"sort-{name}", PR, [{"$sort": {name: 1}}], False, "reject"),
            (f"unwind-{name}", PR, [{"$unwind": f"${name}"}], False, "reject"),
            (f"dotted-{name}", PR, [{"$match": {f"user.{name}": "x"}}], False, "reject"),
            (f"concat-{name}", PR, [{"$project": {"x": {"$concat": ["a", f"${name}"]}}}], False, "reject"),
        ]
    out += [
        ("root-var", PR, [{"$project": {"all": "$$ROOT"}}], False, "reject"),
        ("current-var", PR, [{"$project": {"all": "$$CURRENT"}}], False, "reject"),
        ("remove-var", PR, [{"$project": {"title": "$$REMOVE"}}], False, "reject"),
        ("push-root", PR, [{"$group": {"_id": "$state", "docs": {"$push": "$$ROOT"}}}], False, "reject"),
        ("getfield", PR, [{"$project": {"x": {"$getField": "tenant_id"}}}], False, "reject"),
        (
            "getfield-literal",
            PR,
            [{"$project": {"x": {"$getField": {"field": {"$literal": "acl"}, "input": "$$ROOT"}}}}],
            False,
            "reject",
        ),
        ("objecttoarray", PR, [{"$project": {"x": {"$objectToArray": "$$ROOT"}}}], False, "reject"),
        ("mergeobjects", PR, [{"$project": {"x": {"$mergeObjects": ["$$ROOT", {}]}}}], False, "reject"),
        ("elemmatch-acl", PR, [{"$match": {"acl": {"$elemMatch": {"$eq": "*"}}}}], False, "reject"),
        ("nor-acl", PR, [{"$match": {"$nor": [{"acl": {"$exists": True}}]}}], False, "reject"),
        ("in-tenant", PR, [{"$match": {"tenant_id": {"$in": ["acme", "globex"]}}}], False, "reject"),
        ("ne-tenant", PR, [{"$match": {"tenant_id": {"$ne": None}}}], False, "reject"),
        ("literal-dollar-tenant", PR, [{"$match": {"title": "$tenant_id"}}], False, "reject"),
        ("exclude-acl", PR, [{"$project": {"acl": 0}}], False, "reject"),
        ("id-after-project", PR, [{"$project": {"title": 1}}, {"$match": {"_id": {"$exists": True}}}], False, "reject"),
        ("group-then-id-copy", PR, [{"$group": {"_id": "$state", "ids": {"$push": "$_id"}}}], False, "reject"),
    ]
    return out


def _names() -> list[Case]:
    """Keys that try to look like something else."""
    return [
        ("fullwidth-tenant", PR, [{"$match": {"ｔｅｎａｎｔ_ｉｄ": "globex"}}], False, "reject"),
        ("trailing-space", PR, [{"$match": {"tenant_id ": "globex"}}], False, "reject"),
        ("nul-key", PR, [{"$match": {"tenant_id\x00": "globex"}}], False, "reject"),
        ("dollar-key", PR, [{"$match": {"$tenant_id": "globex"}}], False, "reject"),
        ("dot-dollar", PR, [{"$match": {"user.$where": "x"}}], False, "reject"),
        ("empty-segment", PR, [{"$match": {"user..login": "x"}}], False, "reject"),
        ("empty-key", PR, [{"$match": {"": "x"}}], False, "reject"),
        ("cyrillic-acl", PR, [{"$match": {"аcl": "*"}}], False, "reject"),  # Cyrillic а
        ("zero-width", PR, [{"$match": {"tenant\u200b_id": "globex"}}], False, "reject"),
        ("dollar-in-literal-object", PR, [{"$match": {"user": {"login": "x", "$ne": 1}}}], False, "reject"),
        ("operator-in-literal", PR, [{"$match": {"title": {"$eq": {"$gt": ""}}}}], False, "reject"),
        ("project-output-dollar", PR, [{"$project": {"$x": "$title"}}], False, "reject"),
        ("project-output-hidden", PR, [{"$project": {"acl": "$title"}}], False, "reject"),
        ("addfields-overwrite-tenant", PR, [{"$addFields": {"tenant_id": "acme"}}], False, "reject"),
        ("group-output-hidden", PR, [{"$group": {"_id": None, "tenant_id": {"$first": "$title"}}}], False, "reject"),
        ("count-hidden", PR, [{"$count": "acl"}], False, "reject"),
        ("unknown-op", PR, [{"$match": {"title": {"$jsonSchema": {}}}}], False, "reject"),
        ("expr-unknown", PR, [{"$project": {"x": {"$eval": "1"}}}], False, "reject"),
        ("text-hidden", PR, [{"$match": {"$text": {"$search": "x", "$caseSensitive": True}}}], False, "reject"),
        (
            "text-not-first",
            PR,
            [{"$sort": {"number": 1}}, {"$match": {"$text": {"$search": "redis"}}}],
            False,
            "reject",
        ),
    ]


def _fan_out() -> list[Case]:
    big = list(range(101))
    return [
        ("unwind-literal", PR, [{"$addFields": {"a": list(range(100))}}, {"$unwind": "$a"}], False, "reject"),
        ("unwind-computed", PR, [{"$project": {"a": {"$concat": ["$title"]}}}, {"$unwind": "$a"}], False, "reject"),
        (
            "unwind-three",
            PR,
            [{"$unwind": "$labels"}, {"$unwind": "$reviews"}, {"$unwind": "$review_comments"}],
            False,
            "reject",
        ),
        ("unwind-scalar", PR, [{"$unwind": "$title"}], False, "reject"),
        (
            "unwind-after-group",
            PR,
            [{"$group": {"_id": None, "t": {"$push": "$title"}}}, {"$unwind": "$t"}],
            False,
            "reject",
        ),
        (
            "unwind-literal-x5",
            PR,
            [{"$addFields": {k: list(range(60)) for k in "abcde"}}] + [{"$unwind": f"${k}"} for k in "abcde"],
            False,
            "reject",
        ),
        ("in-101", PR, [{"$match": {"number": {"$in": big}}}], False, "reject"),
        ("nin-101", PR, [{"$match": {"number": {"$nin": big}}}], False, "reject"),
        ("all-101", PR, [{"$match": {"labels.name": {"$all": [str(i) for i in big]}}}], False, "reject"),
        ("literal-array-expr", PR, [{"$project": {"x": {"$literal": big}}}], False, "reject"),
        ("nested-arrays", PR, [{"$addFields": {"x": [[list(range(50))] * 50]}}], False, "reject"),
        ("range", PR, [{"$project": {"x": {"$range": [0, 10**9]}}}], False, "reject"),
        ("map", PR, [{"$project": {"x": {"$map": {"input": "$labels", "in": "$$this"}}}}], False, "reject"),
        (
            "reduce",
            PR,
            [{"$project": {"x": {"$reduce": {"input": "$labels", "initialValue": "", "in": "$$value"}}}}],
            False,
            "reject",
        ),
        ("zip", PR, [{"$project": {"x": {"$zip": {"inputs": ["$labels", "$labels"]}}}}], False, "reject"),
        ("concatarrays", PR, [{"$project": {"x": {"$concatArrays": ["$labels", "$labels"]}}}], False, "reject"),
        ("filter", PR, [{"$project": {"x": {"$filter": {"input": "$labels", "cond": True}}}}], False, "reject"),
        ("limit-huge", PR, [{"$limit": 10**9}], False, "reject"),
        ("limit-zero", PR, [{"$limit": 0}], False, "reject"),
        ("limit-negative", PR, [{"$limit": -1}], False, "reject"),
        ("limit-float", PR, [{"$limit": 10.0}], False, "reject"),
        ("limit-bool", PR, [{"$limit": True}], False, "reject"),
        ("skip-huge", PR, [{"$skip": 10**12}], False, "reject"),
        ("thirteen-stages", PR, [{"$match": {}}] * 13, False, "reject"),
        (
            "deep-nesting",
            PR,
            [
                {
                    "$match": {
                        "$and": [
                            {"$and": [{"$and": [{"$and": [{"$and": [{"$and": [{"$and": [{"state": "open"}]}]}]}]}]}]}
                        ]
                    }
                }
            ],
            False,
            "reject",
        ),
        ("too-large", PR, [{"$match": {"title": "x" * 9000}}], False, "reject"),
    ]


def _strings() -> list[Case]:
    return [
        ("concat-many", PR, [{"$project": {"x": {"$concat": ["$title"] * 9}}}], False, "reject"),
        (
            "push-concat",
            PR,
            [{"$group": {"_id": None, "x": {"$push": {"$concat": ["$title", "$title", "$title"]}}}}],
            False,
            "reject",
        ),
        (
            "addtoset-concat",
            PR,
            [{"$group": {"_id": "$state", "x": {"$addToSet": {"$concat": ["$title", "-"]}}}}],
            False,
            "reject",
        ),
        ("push-toupper", PR, [{"$group": {"_id": None, "x": {"$push": {"$toUpper": "$body"}}}}], False, "reject"),
        (
            "push-substr",
            PR,
            [{"$group": {"_id": None, "x": {"$push": {"$substrCP": ["$body", 0, 10**6]}}}}],
            False,
            "reject",
        ),
        (
            "push-datetostring",
            PR,
            [
                {
                    "$group": {
                        "_id": None,
                        "x": {"$push": {"$dateToString": {"format": "%Y" * 50, "date": "$created_at"}}},
                    }
                }
            ],
            False,
            "reject",
        ),
        (
            "push-object-concat",
            PR,
            [{"$group": {"_id": None, "x": {"$push": {"a": {"$concat": ["$title", "$title"]}}}}}],
            False,
            "reject",
        ),
        (
            "replaceall",
            PR,
            [{"$project": {"x": {"$replaceAll": {"input": "$title", "find": "", "replacement": "x"}}}}],
            False,
            "reject",
        ),
        (
            "strlen-nested",
            PR,
            [
                {
                    "$project": {
                        "x": {
                            "$concat": [
                                {
                                    "$concat": [
                                        {
                                            "$concat": [
                                                {
                                                    "$concat": [
                                                        {"$concat": [{"$concat": ["$title", "$title"]}, "$title"]},
                                                        "$title",
                                                    ]
                                                },
                                                "$title",
                                            ]
                                        },
                                        "$title",
                                    ]
                                },
                                "$title",
                            ]
                        }
                    }
                }
            ],
            False,
            "reject",
        ),
        ("tostring-bomb", PR, [{"$project": {"x": {"$toString": "$$ROOT"}}}], False, "reject"),
        ("split", PR, [{"$project": {"x": {"$split": ["$body", ""]}}}], False, "reject"),
        (
            "project-concat-ok",
            PR,
            [{"$project": {"x": {"$concat": ["$title", " ", "$state"]}}}, {"$limit": 5}],
            False,
            "bounded",
        ),
        ("push-body", PR, [{"$group": {"_id": None, "bodies": {"$push": "$body"}}}], False, "bounded"),
        ("addtoset-title", PR, [{"$group": {"_id": "$state", "t": {"$addToSet": "$title"}}}], False, "bounded"),
    ]


CATASTROPHIC = [
    "(a+)+$",
    "(a|a)*b",
    "(a|aa)+$",
    "(.*a){20}",
    "([a-zA-Z]+)*$",
    "(x+x+)+y",
    "^(\\w+\\s?)*$",
    "(a*)*b",
    "((a+)+)+c",
    "(.*)*.*=",
]


def _regex() -> list[Case]:
    out: list[Case] = []
    for i, pattern in enumerate(CATASTROPHIC):
        out.append((f"redos-{i}", PR, [{"$match": {"title": {"$regex": pattern}}}], True, "bounded"))
        out.append((f"redos-off-{i}", PR, [{"$match": {"title": {"$regex": pattern}}}], False, "reject"))
    out += [
        ("backref", PR, [{"$match": {"title": {"$regex": "(a)\\1"}}}], True, "reject"),
        ("lookahead", PR, [{"$match": {"title": {"$regex": "(?=a)a"}}}], True, "reject"),
        ("lookbehind", PR, [{"$match": {"title": {"$regex": "(?<=a)b"}}}], True, "reject"),
        ("long-pattern", PR, [{"$match": {"title": {"$regex": "a?" * 200 + "a" * 200}}}], True, "reject"),
        ("flag-x", PR, [{"$match": {"title": {"$regex": "a", "$options": "x"}}}], True, "reject"),
        ("flag-g", PR, [{"$match": {"title": {"$regex": "a", "$options": "g"}}}], True, "reject"),
        ("flag-u", PR, [{"$match": {"title": {"$regex": "a", "$options": "u"}}}], True, "reject"),
        ("options-alone", PR, [{"$match": {"title": {"$options": "i"}}}], True, "reject"),
        ("regex-not-string", PR, [{"$match": {"title": {"$regex": {"$gt": ""}}}}], True, "reject"),
        ("regex-hidden", PR, [{"$match": {"tenant_id": {"$regex": "^glo"}}}], True, "reject"),
        ("regex-invalid", PR, [{"$match": {"title": {"$regex": "(unclosed"}}}], True, "reject"),
        ("pattern-x-flag", PR, [{"$match": {"title": re.compile("a b", re.X)}}], True, "reject"),
        ("not-regex-redos", PR, [{"$match": {"title": {"$not": re.compile("(a+)+$")}}}], True, "bounded"),
        ("regex-in-in", PR, [{"$match": {"title": {"$in": [re.compile("(a|a)*b")]}}}], True, "bounded"),
        ("regex-ok", PR, [{"$match": {"title": {"$regex": "^(fix|add)", "$options": "i"}}}], True, "bounded"),
    ]
    return out


def _types() -> list[Case]:
    class Code(str):  # what bson.Code looks like to the validator: a str subclass carrying JavaScript
        pass

    return [
        ("code-str", PR, [{"$match": {"title": Code("function(){return 1}")}}], False, "reject"),
        ("set-value", PR, [{"$match": {"title": {"$in": {"a", "b"}}}}], False, "reject"),
        ("bytes-value", PR, [{"$match": {"title": b"x"}}], False, "reject"),
        ("tuple-value", PR, [{"$match": {"number": {"$in": (1, 2)}}}], False, "reject"),
        ("object-value", PR, [{"$match": {"title": object()}}], False, "reject"),
        ("int-key", PR, [{"$match": {1: "x"}}], False, "reject"),
        ("exists-string", PR, [{"$match": {"title": {"$exists": "yes"}}}], False, "reject"),
        ("size-negative", PR, [{"$match": {"labels": {"$size": -1}}}], False, "reject"),
        ("sort-bad-direction", PR, [{"$sort": {"number": "$tenant_id"}}], False, "reject"),
        ("huge-int", PR, [{"$match": {"number": 2**80}}], False, "bounded"),
        ("nan", PR, [{"$match": {"number": float("nan")}}], False, "bounded"),
    ]


def _heavy_but_allowed() -> list[Case]:
    """Pipelines the validator accepts: they must still end quickly, bounded, in scope."""
    return [
        ("everything", PR, [{"$match": {}}], False, "bounded"),
        ("messages-everything", MSG, [{"$match": {}}], False, "bounded"),
        ("unwind-two", PR, [{"$unwind": "$labels"}, {"$unwind": "$reviews"}], False, "bounded"),
        (
            "unwind-two-group",
            PR,
            [
                {"$unwind": "$labels"},
                {"$unwind": "$reviews"},
                {"$group": {"_id": {"l": "$labels.name", "r": "$reviews.user.login"}, "n": {"$sum": 1}}},
            ],
            False,
            "bounded",
        ),
        ("group-push-titles", PR, [{"$group": {"_id": "$user.login", "t": {"$push": "$title"}}}], False, "bounded"),
        ("sort-body", PR, [{"$sort": {"body": -1}}], False, "bounded"),
        ("group-first", MSG, [{"$group": {"_id": "$channel", "first": {"$first": "$text"}}}], False, "bounded"),
        ("group-count-channel", MSG, [{"$group": {"_id": "$channel", "n": {"$sum": 1}}}], False, "bounded"),
        ("text-search", MSG, [{"$match": {"$text": {"$search": "stripe key leaked"}}}], False, "bounded"),
        ("private-channel-by-name", MSG, [{"$match": {"channel": "security-private"}}], False, "bounded"),
        ("channel-id-private", MSG, [{"$match": {"channel_id": {"$regex": "^G"}}}], True, "bounded"),
        ("or-everything", PR, [{"$match": {"$or": [{"state": "open"}, {"state": "closed"}]}}], False, "bounded"),
        (
            "expr-cond",
            PR,
            [{"$project": {"big": {"$cond": [{"$gt": ["$additions", 100]}, "big", "small"]}}}],
            False,
            "bounded",
        ),
        (
            "addfields-size",
            PR,
            [{"$addFields": {"n": {"$size": {"$ifNull": ["$labels", []]}}}}, {"$sort": {"n": -1}}],
            False,
            "bounded",
        ),
        ("repos-globex-name", PR, [{"$match": {"repo": {"$in": ["globex/core", "globex/api"]}}}], False, "bounded"),
        ("skip-max", PR, [{"$skip": 10000}], False, "bounded"),
    ]


def _joins() -> list[Case]:
    """`$lookup` between the tenant's own collections: allowed, but its joined side is scoped like the
    pipeline's own; every way of reaching past that scope or at a hidden field is refused."""
    private = {"$match": {"channel": "security-private"}}
    every_message = {"from": MSG, "pipeline": [], "as": "m"}
    return [
        (
            "join-private-channel",
            PR,
            [
                {"$lookup": {"from": MSG, "pipeline": [private], "as": "m"}},
                {"$unwind": "$m"},
                {"$project": {"text": "$m.text", "_id": 0}},
            ],
            False,
            "bounded",
        ),
        ("join-every-message", PR, [{"$limit": 3}, {"$lookup": every_message}], False, "bounded"),
        (
            "join-group-all",
            MSG,
            [
                {"$lookup": every_message},
                {"$unwind": "$m"},
                {"$group": {"_id": "$m.channel", "t": {"$push": "$m.text"}}},
            ],
            False,
            "bounded",
        ),
        ("join-as-acl", PR, [{"$lookup": {**every_message, "as": "acl"}}], False, "reject"),
        ("join-as-tenant", PR, [{"$lookup": {**every_message, "as": "tenant_id"}}], False, "reject"),
        ("join-as-dollar", PR, [{"$lookup": {**every_message, "as": "$x"}}], False, "reject"),
        (
            "join-local-acl",
            PR,
            [{"$lookup": {"from": MSG, "localField": "acl", "foreignField": "channel", "as": "m"}}],
            False,
            "reject",
        ),
        (
            "join-foreign-tenant",
            PR,
            [{"$lookup": {"from": MSG, "localField": "repo", "foreignField": "tenant_id", "as": "m"}}],
            False,
            "reject",
        ),
        (
            "join-let-acl",
            PR,
            [{"$lookup": {"from": MSG, "let": {"a": "$acl"}, "pipeline": [], "as": "m"}}],
            False,
            "reject",
        ),
        (
            "join-match-acl",
            PR,
            [{"$lookup": {"from": MSG, "pipeline": [{"$match": {"acl": "*"}}], "as": "m"}}],
            False,
            "reject",
        ),
        (
            "join-match-tenant",
            PR,
            [{"$lookup": {"from": MSG, "pipeline": [{"$match": {"tenant_id": "globex"}}], "as": "m"}}],
            False,
            "reject",
        ),
        (
            "join-root",
            PR,
            [{"$lookup": {"from": MSG, "pipeline": [{"$project": {"all": "$$ROOT"}}], "as": "m"}}],
            False,
            "reject",
        ),
        ("join-read-joined-id", PR, [{"$lookup": every_message}, {"$project": {"ids": "$m._id"}}], False, "reject"),
        (
            "join-nested",
            PR,
            [{"$lookup": {"from": MSG, "pipeline": [{"$lookup": every_message}], "as": "m"}}],
            False,
            "reject",
        ),
        ("join-engine", PR, [{"$lookup": {**every_message, "from": "store_meta"}}], False, "reject"),
        ("join-three", PR, [{"$lookup": {**every_message, "as": f"m{i}"}} for i in range(3)], False, "reject"),
    ]


def all_cases() -> list[Case]:
    cases = (
        _stages()
        + _javascript()
        + _hidden()
        + _names()
        + _fan_out()
        + _strings()
        + _regex()
        + _types()
        + _heavy_but_allowed()
        + _joins()
    )
    ids = [c[0] for c in cases]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    return cases

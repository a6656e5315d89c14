"""The IR compiler, element by element: each compiled form is validated and run on the embedded store,
so an operator the validator or the store reads differently fails here, not in a user's question."""

from __future__ import annotations

from datetime import datetime

import pytest

from context_engine.query.compile import CompileError, compile_plan
from context_engine.query.execute import run_pipeline
from context_engine.query.ir import (
    Duration,
    Filter,
    Having,
    IRError,
    Join,
    Measure,
    PlanIR,
    Shape,
    SortKey,
    TimeRange,
)
from context_engine.query.schema import schema_from_documents
from context_engine.query.validate import validate_pipeline
from tests.query.conftest import ISSUES, hand_made_world, refs, run


@pytest.mark.parametrize(
    "f,expected",
    [
        (Filter("state", "eq", "open"), ["a#1", "a#3"]),
        (Filter("state", "ne", "open"), ["a#2", "a#4"]),
        (Filter("comments", "in", [0, 7]), ["a#2", "a#3"]),
        (Filter("comments", "nin", [0, 7]), ["a#1", "a#4"]),
        (Filter("comments", "gt", 1), ["a#1", "a#3"]),
        (Filter("comments", "gte", 1), ["a#1", "a#3", "a#4"]),
        (Filter("comments", "lt", 1), ["a#2"]),
        (Filter("comments", "lte", 1), ["a#2", "a#4"]),
        # "is empty": missing (a#3), null (a#2); an empty list, an empty string
        (Filter("milestone", "empty"), ["a#2", "a#3"]),
        (Filter("milestone", "not_empty"), ["a#1", "a#4"]),
        (Filter("labels", "empty"), ["a#2"]),
        (Filter("reviews", "empty"), ["a#3"]),
        (Filter("title", "empty"), ["a#2"]),
        (Filter("title", "not_empty"), ["a#1", "a#3", "a#4"]),
        (Filter("assignee", "exists", True), ["a#1", "a#4"]),
        (Filter("assignee", "exists", False), ["a#2", "a#3"]),
        # negation: the complement, missing values included
        (Filter("state", "eq", "open", negate=True), ["a#2", "a#4"]),
        (Filter("labels.name", "in", ["bug"], negate=True), ["a#2", "a#4"]),
        (Filter("labels", "empty", negate=True), ["a#1", "a#3", "a#4"]),
        (Filter("comments", "gt", 1, negate=True), ["a#2", "a#4"]),
        (Filter("assignee", "exists", True, negate=True), ["a#2", "a#3"]),
        # a role, not a path: "label" is labels.name here, "assignee" assignee.login
        (Filter("label", "eq", "docs"), ["a#3", "a#4"]),
        # any of the words, whole or with an ending, in any case: "three" and "four"; not inside another word
        (Filter("title", "words", ["three", "four"]), ["a#3", "a#4"]),
        (Filter("title", "words", ["hree"]), []),
        (Filter("title", "exact_words", ["three", "fou"]), ["a#3"]),  # exactly: "fou" is not "four"
        (Filter("title", "exact_words", ["three"], negate=True), ["a#1", "a#2", "a#4"]),
        (Filter("title", "words", ["three"], negate=True), ["a#1", "a#2", "a#4"]),
    ],
)
def test_each_operator_means_what_it_says_on_the_store(store, schema, f, expected):
    assert refs(PlanIR("issues", filters=[f]), store, schema) == expected


def test_open_ended_time_ranges_and_roles(store, schema):
    since = TimeRange("created", start=datetime(2026, 2, 1))
    before = TimeRange("created_at", end=datetime(2026, 2, 1))
    closed = TimeRange("closed", start=datetime(2026, 2, 1), end=datetime(2026, 2, 2))
    assert refs(PlanIR("issues", times=[since]), store, schema) == ["a#3", "a#4"]
    assert refs(PlanIR("issues", times=[before]), store, schema) == ["a#1", "a#2"]
    assert refs(PlanIR("issues", times=[closed]), store, schema) == ["a#2"]
    assert compile_plan(PlanIR("issues", times=[TimeRange("created")]), schema) == []


def test_time_ranges_that_are_alternatives_hold_either(store, schema):
    """Two periods compared ("January or March?"): a record of either, not of both (none), nor of the
    time between them (February: a#3, a#4)."""
    january = TimeRange("created", datetime(2026, 1, 1), datetime(2026, 2, 1))
    march = TimeRange("created", datetime(2026, 3, 1), datetime(2026, 4, 1))
    jan_and_feb = TimeRange("created", datetime(2026, 1, 1), datetime(2026, 3, 1))
    assert refs(PlanIR("issues", times=[january, jan_and_feb], times_any=True), store, schema) == refs(
        PlanIR("issues", times=[jan_and_feb]), store, schema
    )
    assert refs(PlanIR("issues", times=[january, march], times_any=True), store, schema) == ["a#1", "a#2"]
    assert refs(PlanIR("issues", times=[january, march]), store, schema) == []
    ir = PlanIR("issues", times=[january, march], times_any=True)
    assert PlanIR.from_json(ir.to_json()) == ir and "times_any" not in PlanIR("issues").to_json()


def test_two_conditions_on_one_path_both_hold(store, schema):
    ir = PlanIR("issues", filters=[Filter("comments", "gte", 1), Filter("comments", "lte", 3)])
    assert refs(ir, store, schema) == ["a#1", "a#4"]


def test_conditions_on_one_array_of_objects_hold_for_the_same_element(store, schema):
    # a#2 has a review by ann and a review in January, but not ann's review in January
    ir = PlanIR(
        "issues",
        filters=[Filter("reviews.user.login", "eq", "ann")],
        times=[TimeRange("reviews.submitted_at", datetime(2026, 1, 1), datetime(2026, 2, 1))],
    )
    assert compile_plan(ir, schema)[0]["$match"]["reviews"]["$elemMatch"]
    assert refs(ir, store, schema) == ["a#1"]


def test_count_and_distinct_count(store, schema):
    assert run(PlanIR("issues", filters=[Filter("state", "eq", "open")], shape=Shape("count")), store, schema) == [
        {"count": 2}
    ]
    # distinct assignees: ann and bob; the unassigned form no value
    assert run(PlanIR("issues", shape=Shape("distinct_count", field="assignee")), store, schema) == [{"count": 2}]
    # distinct labels of an array field: bug and docs
    assert run(PlanIR("issues", shape=Shape("distinct_count", field="labels.name")), store, schema) == [{"count": 2}]


def test_group_by_a_field_and_top_n_groups(store, schema):
    rows = run(PlanIR("issues", shape=Shape("group", field="label")), store, schema)
    assert rows == [{"_id": "bug", "count": 2}, {"_id": "docs", "count": 2}]
    rows = run(PlanIR("issues", shape=Shape("group", field="reviews.user.login", limit=1)), store, schema)
    assert rows == [{"_id": "ann", "count": 2}]


def test_time_buckets_in_time_order(store, schema):
    rows = run(PlanIR("issues", shape=Shape("group", field="created", bucket="month")), store, schema)
    assert rows == [{"_id": "2026-01", "count": 2}, {"_id": "2026-02", "count": 2}]


def test_extremes_over_buckets_busiest_and_quietest(store, schema):
    # reviews per month: January 2 (a#1, a#2's bob), February 1, March 1
    busiest = Shape("argmax", field="reviews.submitted_at", bucket="month", over="groups")
    assert run(PlanIR("issues", shape=busiest), store, schema) == [{"_id": "2026-01", "count": 2}]
    quietest = Shape("argmin", field="reviews.submitted_at", bucket="month", over="groups")
    assert run(PlanIR("issues", shape=quietest), store, schema) == [{"_id": "2026-02", "count": 1}]
    most = Shape("max", field="reviews.user.login", over="groups")
    assert run(PlanIR("issues", shape=most), store, schema) == [{"count": 2}]  # ann and bob reviewed twice each
    # records without the field form no group: the milestone with the fewest issues is v1, not "none"
    fewest = Shape("argmin", field="milestone.title", over="groups")
    assert run(PlanIR("issues", shape=fewest), store, schema) == [{"_id": "v1", "count": 2}]


def test_extremes_over_records(store, schema):
    assert [r["ref"] for r in run(PlanIR("issues", shape=Shape("argmax", field="comments")), store, schema)] == ["a#3"]
    assert [r["ref"] for r in run(PlanIR("issues", shape=Shape("argmin", field="comments")), store, schema)] == ["a#2"]
    assert run(PlanIR("issues", shape=Shape("max", field="comments")), store, schema) == [{"max": 7}]
    # a missing value is no minimum: closed_at is null on two issues
    assert run(PlanIR("issues", shape=Shape("min", field="closed_at")), store, schema) == [
        {"min": datetime(2026, 2, 1)}
    ]


def test_sum_of_a_measure_over_the_records(store, schema):
    assert run(PlanIR("issues", shape=Shape("sum", field="comments")), store, schema) == [{"total": 11}]
    opened = PlanIR("issues", filters=[Filter("state", "eq", "open")], shape=Shape("sum", field="comments"))
    assert run(opened, store, schema) == [{"total": 10}]  # a#1 3 + a#3 7: the conditions hold first
    with pytest.raises(IRError, match="needs a field"):
        Shape("sum")


def test_top_n_by_a_measure_and_list_sort_limit(store, schema):
    top = Shape("top", field="comments", limit=2, sort=[SortKey("created", -1)])
    assert [r["ref"] for r in run(PlanIR("issues", shape=top), store, schema)] == ["a#3", "a#1"]
    listed = Shape("list", sort=[SortKey("created", 1)], limit=3)
    assert [r["ref"] for r in run(PlanIR("issues", shape=listed), store, schema)] == ["a#1", "a#2", "a#3"]


def test_a_raw_pipeline_is_passed_through_for_the_validator():
    raw = [{"$match": {"state": "open"}}, {"$project": {"title": 1}}]
    assert compile_plan(PlanIR("issues", pipeline=raw), schema_from_documents("issues", ISSUES)) == raw


def test_an_unknown_field_is_a_compile_error_naming_it(schema):
    with pytest.raises(CompileError, match="no field or role 'sprint'"):
        compile_plan(PlanIR("issues", filters=[Filter("sprint", "eq", "S1")]), schema)


@pytest.mark.parametrize(
    "data,message",
    [
        ({"collection": "issues", "filters": [{"field": "x", "op": "regex", "value": ".*"}]}, "unknown operator"),
        ({"collection": "issues", "filters": [{"field": "x", "op": "in", "value": "a"}]}, "takes a list"),
        ({"collection": "issues", "filters": [{"field": "x", "value": {"$where": "1"}}]}, "filter value"),
        ({"collection": "issues", "shape": {"kind": "delete"}}, "unknown shape"),
        ({"collection": "issues", "shape": {"kind": "list", "limit": -1}}, "positive integer"),
        ({"collection": "issues", "shape": {"kind": "group"}}, "needs a field"),
        ({"collection": "issues", "shape": {"kind": "group", "field": "x", "bucket": "minute"}}, "time bucket"),
        ({"collection": "issues", "times": [{"field": "created", "start": "yesterday"}]}, "bounds are dates"),
        ({"filters": []}, "collection"),
        ({"collection": "issues", "filters": [{"field": "title", "op": "words", "value": ["a.*"]}]}, "words takes"),
        ({"collection": "issues", "filters": [{"field": "title", "op": "words", "value": "fix"}]}, "words takes"),
        ({"collection": "issues", "shape": {"kind": "measures"}}, "needs at least one"),
        (
            {"collection": "issues", "shape": {"kind": "avg", "field": "x", "measures": [{"op": "max", "field": "x"}]}},
            "only the shape measures",
        ),
        (
            {"collection": "issues", "shape": {"kind": "measures", "measures": [{"op": "median", "field": "x"}]}},
            "unknown measure",
        ),
        ({"collection": "issues", "shape": {"kind": "measures", "measures": [{"op": "sum"}]}}, "needs a field"),
        (
            {"collection": "issues", "shape": {"kind": "measures", "measures": [{"op": "count", "field": "x"}]}},
            "takes no field",
        ),
        (
            {
                "collection": "issues",
                "shape": {"kind": "count", "having": [{"measure": {"op": "count"}, "op": "gt", "value": 1}]},
            },
            "condition on a group",
        ),
        (
            {
                "collection": "issues",
                "shape": {
                    "kind": "distinct",
                    "field": "state",
                    "having": [{"measure": {"op": "count"}, "op": "gt", "value": "1"}],
                },
            },
            "compares with a number",
        ),
    ],
)
def test_malformed_ir_is_refused_with_a_sentence(data, message):
    with pytest.raises(IRError, match=message):
        PlanIR.from_json(data)


def test_ir_round_trips_through_json():
    ir = PlanIR(
        "issues",
        filters=[Filter("state", "eq", "open", span=(0, 4)), Filter("labels", "empty", negate=True)],
        times=[TimeRange("created", start=datetime(2026, 1, 1), span=(10, 20))],
        text=["redis"],
        shape=Shape("argmax", field="created", bucket="week", over="groups", span=(5, 12)),
        followup="restrict",
    )
    assert PlanIR.from_json(ir.to_json()) == ir


def test_fields_show_only_what_the_question_asks_for(store, schema):
    # "the title and comment count of open issues": those fields (and the ref an answer cites), no others
    ir = PlanIR(
        "issues",
        filters=[Filter("state", "eq", "open")],
        shape=Shape("list", sort=[SortKey("comments", -1)], fields=["title", "comments"]),
    )
    assert run(ir, store, schema) == [
        {"ref": "a#3", "title": "three", "comments": 7},
        {"ref": "a#1", "title": "one", "comments": 3},
    ]
    top = run(
        PlanIR("issues", shape=Shape("top", field="comments", limit=1, fields=["milestone.title"])), store, schema
    )
    assert top == [{"ref": "a#3"}]  # a#3 has no milestone: nothing else to show
    with pytest.raises(CompileError, match="no field or role 'nonsense'"):
        compile_plan(PlanIR("issues", shape=Shape("list", fields=["nonsense"])), schema)
    with pytest.raises(IRError, match="only a shape of records"):
        Shape("count", fields=["title"])
    with pytest.raises(IRError, match="list of field names"):
        Shape.from_json({"kind": "list", "fields": "title"})


def test_unwind_reads_each_element_of_an_embedded_array(store, schema):
    # "reviews by ann": one row per review, so a#2's review by bob is not counted with ann's
    ir = PlanIR("issues", filters=[Filter("reviews.user.login", "eq", "ann")], unwind="reviews", shape=Shape("count"))
    assert compile_plan(ir, schema)[:2] == [{"$unwind": "$reviews"}, {"$match": {"reviews.user.login": "ann"}}]
    assert run(ir, store, schema) == [{"count": 2}]
    # Two conditions on the unwound element: both of the same review (not $elemMatch on a non-array).
    both = PlanIR(
        "issues",
        filters=[Filter("reviews.user.login", "eq", "ann")],
        unwind="reviews.user.login",
        times=[TimeRange("reviews.submitted_at", datetime(2026, 1, 1), datetime(2026, 2, 1))],
        shape=Shape("list", fields=["reviews.submitted_at"]),
    )
    assert run(both, store, schema) == [{"ref": "a#1", "reviews": {"submitted_at": datetime(2026, 1, 6)}}]
    per_reviewer = run(
        PlanIR("issues", unwind="reviews", shape=Shape("group", field="reviews.user.login")), store, schema
    )
    assert per_reviewer == [{"_id": "ann", "count": 2}, {"_id": "bob", "count": 2}]  # unwound once, not twice
    with pytest.raises(CompileError, match="no array of objects 'title'"):
        compile_plan(PlanIR("issues", unwind="title"), schema)
    assert PlanIR.from_json(ir.to_json()) == ir
    assert "unwind" not in PlanIR("issues").to_json() and "fields" not in Shape().to_json()  # older plans read the same


def test_a_field_named_in_another_case_or_number_is_the_one_field_meant(store, schema):
    # A model writes "State", "Review.user.login": the one field so named, whatever its case or number
    ir = PlanIR("issues", filters=[Filter("State", "eq", "open")], shape=Shape("list", fields=["Title"]))
    assert compile_plan(ir, schema) == [{"$match": {"state": "open"}}, {"$project": {"title": 1, "ref": 1}}]
    assert compile_plan(PlanIR("issues", filters=[Filter("Review.User.Login", "eq", "ann")]), schema) == [
        {"$match": {"reviews.user.login": "ann"}}
    ]
    with pytest.raises(CompileError, match="no field or role 'stat'"):
        compile_plan(PlanIR("issues", filters=[Filter("stat", "eq", "open")]), schema)  # no guessing past that


def test_a_condition_on_a_referenced_record_is_asked_inside_one_join():
    from context_engine.kinds import CollectionSpec

    kind = CollectionSpec(name="incidents", noun="incident", key="id", references={"pr": "pull_requests"})
    incidents = schema_from_documents("incidents", [{"id": 1, "pr": "a#1", "ref": "incidents/1"}], own_kind=kind)
    prs = schema_from_documents(
        "pull_requests", [{"ref": "a#1", "reviews": [{"user": {"login": "kim"}}], "merged_by": {"login": "lee"}}]
    )
    ir = PlanIR(
        "incidents",
        filters=[Filter("reviewer", "eq", "kim", via="pr"), Filter("merger", "ne", "kim", via="pr")],
        shape=Shape("count"),
    )
    assert compile_plan(ir, incidents, {"pull_requests": prs}) == [
        {
            "$lookup": {
                "from": "pull_requests",
                "localField": "pr",
                "foreignField": "ref",
                "as": "joined_pr",
                "pipeline": [
                    {"$match": {"reviews.user.login": "kim", "merged_by.login": {"$ne": "kim"}}},
                    {"$project": {"ref": 1}},
                ],
            }
        },
        {"$match": {"joined_pr": {"$ne": []}}},
        {"$project": {"joined_pr": 0}},
        {"$count": "count"},
    ]
    assert PlanIR.from_json(ir.to_json()) == ir  # `via` survives the plan's JSON
    with pytest.raises(CompileError, match="has no records to read"):
        compile_plan(ir, incidents, {})
    with pytest.raises(CompileError, match="no reference 'repo'"):
        compile_plan(
            PlanIR("incidents", filters=[Filter("reviewer", "eq", "kim", via="repo")]),
            incidents,
            {"pull_requests": prs},
        )


def test_average_of_a_measure_and_distinct_values(store, schema):
    assert run(PlanIR("issues", shape=Shape("avg", field="comments")), store, schema) == [{"average": 11 / 4}]
    opened = PlanIR("issues", filters=[Filter("state", "eq", "open")], shape=Shape("avg", field="comments"))
    open_comments = [i["comments"] for i in ISSUES if i["state"] == "open"]
    assert run(opened, store, schema) == [{"average": sum(open_comments) / len(open_comments)}]
    # the distinct values in value order; an array's elements each once, a missing value none
    assert run(PlanIR("issues", shape=Shape("distinct", field="state")), store, schema) == [
        {"_id": "closed"},
        {"_id": "open"},
    ]
    labels = run(PlanIR("issues", shape=Shape("distinct", field="labels.name")), store, schema)
    assert [r["_id"] for r in labels] == sorted({lab["name"] for i in ISSUES for lab in i.get("labels", [])})
    for kind in ("avg", "distinct"):
        with pytest.raises(IRError, match="needs a field"):
            Shape(kind)


def test_several_measures_at_once_over_the_records(store, schema):
    both = Shape("measures", measures=[Measure("min", "comments"), Measure("max", "comments"), Measure("count")])
    assert run(PlanIR("issues", shape=both), store, schema) == [{"min_comments": 0, "max_comments": 7, "count": 4}]
    opened = PlanIR("issues", filters=[Filter("state", "eq", "open")], shape=both)
    assert run(opened, store, schema) == [{"min_comments": 3, "max_comments": 7, "count": 2}]


def test_measures_per_value_of_a_field_in_value_order(store, schema):
    per_state = Shape("measures", field="state", measures=[Measure("avg", "comments"), Measure("sum", "comments")])
    assert run(PlanIR("issues", shape=per_state), store, schema) == [
        {"_id": "closed", "avg_comments": 0.5, "sum_comments": 1},
        {"_id": "open", "avg_comments": 5.0, "sum_comments": 10},
    ]
    # a condition on a measure not shown: it is computed, asked and left out of the answer
    busy = Having(Measure("sum", "comments"), "gte", 5)
    narrowed = Shape("measures", field="state", measures=[Measure("count")], having=[busy])
    assert run(PlanIR("issues", shape=narrowed), store, schema) == [{"_id": "open", "count": 2}]


def test_a_condition_on_a_group_keeps_the_values_that_meet_it(store, schema):
    # milestones: v1 twice (a#1, a#4); the records without one form no group
    twice = [Having(Measure("count"), "gte", 2)]
    assert run(PlanIR("issues", shape=Shape("distinct", field="milestone.title", having=twice)), store, schema) == [
        {"_id": "v1"}
    ]
    once = [Having(Measure("count"), "eq", 1)]
    assert run(PlanIR("issues", shape=Shape("distinct", field="assignee.login", having=once)), store, schema) == [
        {"_id": "ann"},
        {"_id": "bob"},
    ]
    # the groups themselves, narrowed: labels with more than one issue each, with their counts
    # (bug: a#1 and a#3, fewest comments 3; docs: a#3 and a#4, fewest 1)
    many = [Having(Measure("count"), "gt", 1), Having(Measure("min", "comments"), "lt", 2)]
    assert run(PlanIR("issues", shape=Shape("group", field="label", having=many)), store, schema) == [
        {"_id": "docs", "count": 2, "min_comments": 1}
    ]


def test_measures_and_group_conditions_round_trip_through_json():
    shape = Shape(
        "measures",
        field="state",
        measures=[Measure("count"), Measure("avg", "comments")],
        having=[Having(Measure("max", "comments"), "lt", 5)],
    )
    ir = PlanIR("issues", shape=shape)
    assert PlanIR.from_json(ir.to_json()) == ir


def test_a_join_pairs_each_record_with_the_records_it_refers_to():
    from context_engine.query.validate import validate_pipeline

    crews = schema_from_documents(
        "crew", [{"ref": "c1", "Crew_ID": 1, "Ship": "Vega", "postings": [{"Port_code": "HL"}]}]
    )
    ports = schema_from_documents("port", [{"Port_code": "HL", "Town": "Hull", "Depth": 9}])
    ir = PlanIR(
        "crew",
        filters=[
            Filter("Ship", "eq", "Vega"),
            Filter("port.Depth", "gt", 5),
            Filter("port.Town", "empty", negate=True),
        ],
        shape=Shape("list", fields=["Ship", "port.Town"]),
        join=Join("port", "postings.Port_code", "Port_code"),
    )
    pipeline = compile_plan(ir, crews, {"port": ports})
    assert pipeline == [
        {"$match": {"Ship": "Vega"}},
        {"$lookup": {"from": "port", "localField": "postings.Port_code", "foreignField": "Port_code", "as": "port"}},
        {"$unwind": "$port"},
        {"$match": {"port.Depth": {"$gt": 5}, "port.Town": {"$nin": [None, ""], "$not": {"$size": 0}}}},
        {"$project": {"Ship": 1, "port.Town": 1, "ref": 1}},
    ]
    assert validate_pipeline(pipeline, crews, schemas={"port": ports}) == []
    assert PlanIR.from_json(ir.to_json()) == ir
    # counted per a field of the joined records: no condition before the join asks for it
    per_town = PlanIR("crew", shape=Shape("group", field="port.Town"), join=ir.join)
    assert compile_plan(per_town, crews, {"port": ports})[2:] == [
        {"$group": {"_id": "$port.Town", "count": {"$sum": 1}}},
        {"$sort": {"count": -1, "_id": 1}},
    ]
    with pytest.raises(CompileError, match="has no records to read"):
        compile_plan(ir, crews, {})


def test_two_fields_of_one_record_compared(tmp_path):
    """eq_field / ne_field: "closed by its own author" and "closed by someone else", a record without a
    recorded closer in neither; negated, the one becomes the other; two comparisons both hold."""
    docs = [
        {"ref": "x#1", "user": {"login": "ann"}, "closed_by": {"login": "ann"}, "editor": "bob"},
        {"ref": "x#2", "user": {"login": "ann"}, "closed_by": {"login": "bob"}, "editor": "bob"},
        {"ref": "x#3", "user": {"login": "bob"}, "closed_by": None, "editor": "bob"},
    ]
    store, catalog = hand_made_world(tmp_path, {"issues": docs}, [])
    schema = catalog.schemas["issues"]

    def compared(*filters: Filter) -> list[str]:
        pipeline = compile_plan(PlanIR("issues", filters=list(filters)), schema)
        assert validate_pipeline(pipeline, schema) == []
        return sorted(
            r["ref"] for r in run_pipeline(store, "issues", pipeline, tenant="t", principals=[], schema=schema)
        )

    own = Filter("closed_by.login", "eq_field", "user.login")
    other = Filter("closed_by.login", "ne_field", "user.login")
    assert compared(own) == ["x#1"]
    assert compared(other) == ["x#2"]
    assert compared(Filter("closed_by.login", "eq_field", "user.login", negate=True)) == ["x#2"]
    assert compared(other, Filter("closed_by.login", "eq_field", "editor")) == ["x#2"]
    assert compile_plan(PlanIR("issues", filters=[other]), schema)[0]["$match"]["$expr"] == {
        "$ne": ["$closed_by.login", "$user.login"]
    }


def test_a_field_comparison_names_a_field_and_at_most_one_list(tmp_path):
    with pytest.raises(IRError):
        Filter("closed_by.login", "ne_field", None)
    labelled = schema_from_documents("issues", ISSUES)
    with pytest.raises(CompileError):
        compile_plan(PlanIR("issues", filters=[Filter("labels.name", "eq_field", "reviews.user.login")]), labelled)


def test_the_mean_of_a_measure_and_of_the_counts_per_period(store, schema):
    assert run(PlanIR("issues", shape=Shape("avg", field="comments")), store, schema) == [{"average": 2.75}]
    # reviews per month: January 2, February 1, March 1 — a month with none would be no group
    per_month = Shape("avg", field="reviews.submitted_at", bucket="month", over="groups")
    assert run(PlanIR("issues", shape=per_month), store, schema) == [{"average": 4 / 3}]
    # over a time with both ends, every period of it: January to April, the fourth month with none
    months = [TimeRange("reviews.submitted_at", datetime(2026, 1, 1), datetime(2026, 5, 1))]
    assert run(PlanIR("issues", times=months, shape=per_month), store, schema) == [{"average": 1.0, "months": 4}]
    # issues per milestone: v1 holds two; the two issues with none form no group of their own (else 1.0)
    per_milestone = Shape("avg", field="milestone.title", over="groups")
    assert run(PlanIR("issues", shape=per_milestone), store, schema) == [{"average": 2.0}]


@pytest.mark.parametrize(
    "part,share",
    [
        ([Filter("state", "eq", "open")], 0.5),
        ([Filter("state", "eq", "open", negate=True)], 0.5),
        ([Filter("comments", "gt", 1)], 0.5),
        ([Filter("comments", "in", [0, 7])], 0.5),
        ([Filter("comments", "nin", [0, 7])], 0.5),
        ([Filter("comments", "nin", [0, 7], negate=True)], 0.5),
        ([Filter("state", "ne", "open"), Filter("comments", "lt", 1)], 0.25),
        ([Filter("assignee", "exists", True)], 0.5),  # null and missing are not there
        ([Filter("assignee", "exists", False)], 0.5),
        ([Filter("state", "eq", "open"), Filter("comments", "gte", 5)], 0.25),  # both hold: a#3 only
        # a whole list's size: the issues hold 1, 0, 2 and 1 labels
        ([Filter("labels", "not_empty")], 0.75),
        ([Filter("labels", "empty")], 0.25),
        ([Filter("labels", "not_empty", negate=True)], 0.25),
        ([Filter("labels", "size_gte", 2)], 0.25),
        ([Filter("labels", "size_lte", 1)], 0.75),
        ([Filter("labels", "size_lte", 0)], 0.25),
    ],
)
def test_a_share_is_the_fraction_of_the_records_that_meet_its_part(store, schema, part, share):
    assert run(PlanIR("issues", shape=Shape("share", part=part)), store, schema) == [{"share": share}]


def test_a_share_per_group_in_key_order_or_ranked(store, schema):
    """The share of each group's issues with more than one comment (a#1 and a#3: both open), in key order or
    ranked by it, the best first; per month of a date; in percent, the share said so."""
    part = [Filter("comments", "gt", 1)]
    per_state = Shape("share", field="state", part=part)
    assert run(PlanIR("issues", shape=per_state), store, schema) == [
        {"_id": "closed", "share": 0.0},
        {"_id": "open", "share": 1.0},
    ]
    worst = Shape("share", field="state", part=part, sort=[SortKey("share", 1)], limit=1)
    assert run(PlanIR("issues", shape=worst), store, schema) == [{"_id": "closed", "share": 0.0}]
    per_month = Shape("share", field="created_at", bucket="month", part=part)
    assert run(PlanIR("issues", shape=per_month), store, schema) == [
        {"_id": "2026-01", "share": 0.5},
        {"_id": "2026-02", "share": 0.5},
    ]
    in_percent = Shape("share", field="state", part=part, percent=True)
    assert run(PlanIR("issues", shape=in_percent), store, schema)[1] == {"_id": "open", "percent": 100.0}


def test_a_share_of_the_records_a_condition_keeps(store, schema):
    # of the two open issues, the one with more than five comments
    opened = PlanIR(
        "issues", filters=[Filter("state", "eq", "open")], shape=Shape("share", part=[Filter("comments", "gt", 5)])
    )
    assert run(opened, store, schema) == [{"share": 0.5}]


def test_a_share_of_a_list_field_or_of_words_is_not_compiled(schema):
    unread = (
        Filter("labels.name", "eq", "bug"),
        Filter("title", "words", ["one"]),
        Filter("milestone", "empty"),
    )
    for part in unread:
        with pytest.raises(CompileError, match="share's part"):
            compile_plan(PlanIR("issues", shape=Shape("share", part=[part])), schema)


def test_a_later_place_of_a_ranking_skips_the_ones_before(store, schema):
    # ann and bob reviewed twice each: the tie is broken by name, bob second
    second = Shape("group", field="reviews.user.login", limit=1, offset=1)
    assert run(PlanIR("issues", shape=second), store, schema) == [{"_id": "bob", "count": 2}]
    top = Shape("top", field="comments", limit=1, offset=1)
    assert [r["ref"] for r in run(PlanIR("issues", shape=top), store, schema)] == ["a#1"]
    # reviews per month: January 2, then February and March 1 each (the earlier first)
    month = Shape("argmax", field="reviews.submitted_at", bucket="month", over="groups", offset=1)
    assert run(PlanIR("issues", shape=month), store, schema) == [{"_id": "2026-02", "count": 1}]


def test_only_a_ranking_skips_and_only_a_share_has_a_part():
    with pytest.raises(IRError, match="skips rows"):
        Shape("count", offset=1)
    with pytest.raises(IRError, match="share"):
        Shape("share")
    with pytest.raises(IRError, match="share"):
        Shape("count", part=[Filter("state", "eq", "open")])
    shape = Shape("share", part=[Filter("state", "eq", "open", span=(3, 7))])
    assert Shape.from_json(shape.to_json()) == shape
    ranked = Shape("group", field="author", limit=1, offset=2)
    assert Shape.from_json(ranked.to_json()) == ranked


CLOSE_TIME = Duration("days_to_close", "created", "closed_at")  # a#2 took 12 days, a#4 one; a#1 and a#3 are open


@pytest.mark.parametrize(
    "f,expected",
    [
        (Filter("days_to_close", "gt", 5), ["a#2"]),
        (Filter("days_to_close", "lte", 1), ["a#4"]),
        # the complement among the records that have a duration: an open issue took no time to close
        (Filter("days_to_close", "gt", 5, negate=True), ["a#4"]),
    ],
)
def test_a_duration_is_compared_where_both_dates_are_known(store, schema, f, expected):
    assert refs(PlanIR("issues", filters=[f], durations=[CLOSE_TIME]), store, schema) == expected


@pytest.mark.parametrize(
    "shape,expected",
    [
        (Shape("avg", field="days_to_close"), [{"average": 6.5}]),
        (Shape("max", field="days_to_close"), [{"max": 12}]),
    ],
)
def test_a_duration_is_a_measure_the_shape_aggregates(store, schema, shape, expected):
    assert run(PlanIR("issues", shape=shape, durations=[CLOSE_TIME]), store, schema) == expected


@pytest.mark.parametrize(
    "shape,expected",
    [
        (Shape("argmax", field="days_to_close"), ["a#2"]),
        (Shape("argmin", field="days_to_close"), ["a#4"]),
        (Shape("list", sort=[SortKey("days_to_close", 1)], limit=2), ["a#4", "a#2"]),
    ],
)
def test_records_are_ranked_by_a_duration(store, schema, shape, expected):
    rows = run(PlanIR("issues", shape=shape, durations=[CLOSE_TIME]), store, schema)
    assert [r["ref"] for r in rows] == expected


def test_a_duration_survives_json_and_a_malformed_one_is_refused():
    ir = PlanIR("issues", filters=[Filter("days_to_close", "gt", 5)], durations=[CLOSE_TIME])
    assert PlanIR.from_json(ir.to_json()) == ir
    with pytest.raises(IRError):
        PlanIR.from_json({"collection": "issues", "durations": [{"name": "$x", "start": "a", "end": "b"}]})
    with pytest.raises(IRError):
        Duration("took", "created", "closed_at", unit="fortnights")


def test_a_duration_compared_with_no_number_is_a_compile_error(schema):
    ir = PlanIR("issues", filters=[Filter("days_to_close", "eq", "long")], durations=[CLOSE_TIME])
    with pytest.raises(CompileError):
        compile_plan(ir, schema)


@pytest.mark.parametrize(
    "f,expected",
    [
        (Filter("created", "day_of_week", [2]), ["a#1"]),  # 2026-01-05 is a Monday
        (Filter("created", "day_of_week", [1, 7]), ["a#4"]),  # 2026-02-14 a Saturday
        (Filter("created", "day_of_week", [1, 7], negate=True), ["a#1", "a#2", "a#3"]),
    ],
)
def test_a_date_on_some_days_of_the_week(store, schema, f, expected):
    assert refs(PlanIR("issues", filters=[f]), store, schema) == expected


def test_days_of_the_week_are_numbered_one_to_seven():
    with pytest.raises(IRError):
        Filter("created", "day_of_week", [0])


def test_cyclic_buckets_count_per_hour_and_day_of_the_week(store, schema):
    by_weekday = run(PlanIR("issues", shape=Shape("group", field="created", bucket="weekday")), store, schema)
    # 2026-01-05 and 2026-01-20 are a Monday and a Tuesday, 2026-02-03 a Tuesday, 2026-02-14 a Saturday
    assert by_weekday == [{"_id": 2, "count": 1}, {"_id": 3, "count": 2}, {"_id": 7, "count": 1}]
    by_hour = run(PlanIR("issues", shape=Shape("argmax", field="created", bucket="hour", over="groups")), store, schema)
    assert by_hour == [{"_id": 0, "count": 4}]


def test_a_share_asked_in_percent_is_said_in_percent(store, schema):
    opened = Shape("share", part=[Filter("state", "eq", "open")], percent=True)
    assert run(PlanIR("issues", shape=opened), store, schema) == [{"percent": 50.0}]


def test_two_groups_set_against_each_other(store, schema):
    """Reviews per month: January 2, February 1, March 1 (an array: each element counted); a month with
    none counts 0, and no percent change is given from 0."""
    months = {"field": "reviews.submitted_at", "bucket": "month"}
    difference = Shape("difference", sides=["2026-01", "2026-02"], **months)
    assert run(PlanIR("issues", shape=difference), store, schema) == [
        {"difference": 1, "counts": {"first": 2, "second": 1}}
    ]
    change = Shape("change", sides=["2026-01", "2026-02"], **months)
    assert run(PlanIR("issues", shape=change), store, schema) == [
        {"percent_change": -50.0, "counts": {"first": 2, "second": 1}}
    ]
    from_nothing = Shape("change", sides=["2025-12", "2026-01"], **months)
    assert run(PlanIR("issues", shape=from_nothing), store, schema)[0]["percent_change"] is None
    # two values of a field (ann reviewed twice, bob twice), in the order given
    people = Shape("difference", field="reviews.user.login", sides=["ann", "bob"])
    assert run(PlanIR("issues", shape=people), store, schema)[0]["counts"] == {"first": 2, "second": 2}


@pytest.mark.parametrize(
    "shape",
    [
        {"kind": "difference", "field": "state"},  # no sides
        {"kind": "difference", "field": "state", "sides": ["open"]},
        {"kind": "change", "field": "state", "sides": ["open", "open"]},
        {"kind": "count", "sides": ["open", "closed"]},
        {"kind": "difference", "sides": ["open", "closed"]},  # no field to group by
        {"kind": "count", "percent": True},  # only a share is said in percent
    ],
)
def test_two_group_shapes_are_checked(shape):
    with pytest.raises(IRError):
        PlanIR.from_json({"collection": "issues", "shape": shape})


@pytest.mark.parametrize(
    "f,expected",
    [
        (Filter("labels", "size_gte", 2), ["a#3"]),  # "more than one label"
        (Filter("labels.name", "size_gte", 1), ["a#1", "a#3", "a#4"]),  # an element's path: its list counted
        (Filter("labels", "size_lte", 0), ["a#2"]),
        (Filter("labels", "size_gte", 2, negate=True), ["a#1", "a#2", "a#4"]),
        (Filter("reviews", "size_lte", 1), ["a#1", "a#3", "a#4"]),  # a#3 has none
    ],
)
def test_the_size_of_a_list(store, schema, f, expected):
    assert refs(PlanIR("issues", filters=[f]), store, schema) == expected


def test_a_size_of_a_field_that_is_no_list_is_refused(schema):
    with pytest.raises(CompileError, match="not one"):
        compile_plan(PlanIR("issues", filters=[Filter("comments", "size_gte", 2)]), schema)


def test_a_value_among_a_lists_values(store, schema):
    """ "reviewed by its own assignee": the assignee among the reviewers (a#1 ann, a#4 bob; a#2 has none)."""
    among = Filter("assignee.login", "eq_field", "reviews.user.login")
    assert refs(PlanIR("issues", filters=[among]), store, schema) == ["a#1", "a#4"]
    apart = Filter("assignee.login", "ne_field", "reviews.user.login")
    assert refs(PlanIR("issues", filters=[apart]), store, schema) == []

"""`eval tend`: the gold reader, the scorer, the sample and a whole run on a tiny TEND folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bson import ObjectId

from context_engine.config import Settings
from context_engine.eval.tend import (
    ENGINE_NAMES,
    Question,
    TendError,
    evaluate,
    load_split,
    parse_sample,
    same_result,
    scalar,
    stratified,
    write_outcomes,
)
from context_engine.eval.tend_gold import GoldError, GoldQuery, parse_gold, plain_database, run_gold, shape_of
from tests.chat_fakes import ScriptedChatModel

# ------------------------------------------------------------------ reading mongosh text


def test_aggregate_with_js_literals():
    text = """db.Student.aggregate([
      { $match: { Sex: 'F', "Age": { $gte: 18.5, }, note: "a \\"quoted\\" word", }, },  // a comment
      { $unwind: '$SportsInfo' },
      { $group: { _id: null, count: { $sum: 1 } } },
    ]);"""
    gold = parse_gold(text)
    assert gold.collection == "Student"
    assert gold.pipeline == [
        {"$match": {"Sex": "F", "Age": {"$gte": 18.5}, "note": 'a "quoted" word'}},
        {"$unwind": "$SportsInfo"},
        {"$group": {"_id": None, "count": {"$sum": 1}}},
    ]
    assert not gold.counted


def test_find_becomes_the_aggregation_mongodb_runs():
    # The projection comes last: a find sorts on a field it does not return.
    gold = parse_gold("db.club.find({ x: { $ne: true } }, { name: 1, _id: 0 }).sort({ Start_year: -1 }).limit(2);")
    assert gold.pipeline == [
        {"$match": {"x": {"$ne": True}}},
        {"$sort": {"Start_year": -1}},
        {"$limit": 2},
        {"$project": {"name": 1, "_id": 0}},
    ]
    counted = parse_gold("db.getCollection('club').find({ a: -3 }).count()")
    assert counted.collection == "club" and counted.counted
    assert counted.pipeline == [{"$match": {"a": -3}}, {"$count": "count"}]
    assert parse_gold("db.program.find({}, { Name: 1, _id: 0 }).sort({ Launch: 1 }).forEach(printjson)").pipeline == [
        {"$sort": {"Launch": 1}},
        {"$project": {"Name": 1, "_id": 0}},
    ]


@pytest.mark.parametrize(
    "text, says",
    [
        ("db.x.aggregate([{ $match: { a: 1 } ]);", "expected '}'"),
        ("db.x.find({}).explain()", "unknown cursor method .explain()"),
        ("db.x.drop()", "unknown method db.x.drop()"),
        ("db.x.find({ a: new Date() })", "unexpected 'new'"),
        ("db.x.aggregate([]); db.y.find()", "after the query"),
        ("db.x.find({ a: 1 }) # ", "unexpected '# '"),
    ],
)
def test_unreadable_gold_says_where(text, says):
    with pytest.raises(GoldError) as caught:
        parse_gold(text)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_correlated_lookup_and_negated_regex_run():
    db = plain_database(
        {
            "jobs": [
                {"title": "boss", "employees": [{"name": "Ann", "salary": 9}, {"name": "Max", "salary": 3}]},
                {"title": "clerk", "employees": [{"name": "Bo", "salary": 5}]},
            ],
        }
    )
    # Who earns more than Bo: mongomock refuses `let` + `pipeline`; the gold runner binds them itself.
    gold = parse_gold("""db.jobs.aggregate([
      { $unwind: "$employees" }, { $match: { "employees.name": "Bo" } },
      { $project: { _id: 0, salary: "$employees.salary" } },
      { $lookup: { from: "jobs", let: { s: "$salary" }, as: "Docs1", pipeline: [
          { $unwind: "$employees" }, { $match: { $expr: { $gt: ["$employees.salary", "$$s"] } } },
          { $project: { _id: 0, name: "$employees.name" } } ] } },
      { $unwind: "$Docs1" }, { $project: { name: "$Docs1.name" } } ]);""")
    assert run_gold(db, gold) == [{"name": "Ann"}]
    not_m = parse_gold(
        'db.jobs.aggregate([{ $unwind: "$employees" }, '
        '{ $match: { "employees.name": { $not: { $regex: "a", $options: "i" } } } }, '
        '{ $project: { _id: 0, n: "$employees.name" } }])'
    )
    assert run_gold(db, not_m) == [{"n": "Bo"}]
    with pytest.raises(GoldError, match="toDouble"):
        run_gold(db, parse_gold('db.jobs.aggregate([{ $project: { x: { $toDouble: "$title" } } }])'))


@pytest.mark.parametrize(
    "text, shape",
    [
        (
            'db.a.aggregate([{ $lookup: { from: "b", localField: "x", foreignField: "y", as: "j" } }, { $group: { _id: 1 } }])',
            "join",
        ),
        ('db.a.aggregate([{ $unwind: "$kids" }, { $group: { _id: "$kids.k", n: { $sum: 1 } } }])', "nested array"),
        ('db.a.aggregate([{ $group: { _id: "$k", n: { $sum: 1 } } }])', "aggregation"),
        ("db.a.find({ k: 1 }).count()", "aggregation"),
        ("db.a.find({ k: 1 }, { k: 1 }).sort({ k: 1 })", "filter"),
    ],
)
def test_shapes(text, shape):
    assert shape_of(parse_gold(text)) == shape


# ------------------------------------------------------------------ scoring

LIST = GoldQuery("c", [{"$project": {"a": 1}}])
SORTED = GoldQuery("c", [{"$sort": {"age": 1}}, {"$project": {"name": 1}}])
COUNT = GoldQuery("c", [{"$count": "count"}], counted=True)


def test_rows_are_multisets_of_values_field_names_ignored():
    gold = [{"Name": "Ann", "Age": 30}, {"Name": "Bo", "Age": 25}]
    assert same_result([{"age": 25.0, "name": "Bo"}, {"name": "Ann", "age": 30}], gold, LIST, "names and ages")
    assert not same_result([{"name": "Ann", "age": 30}], gold, LIST, "names and ages")  # one row short
    assert not same_result(gold + [gold[0]], gold, LIST, "names and ages")  # a duplicate is a row too
    assert not same_result(
        [{"name": "Ann", "age": 30, "city": "Oslo"}, {"name": "Bo", "age": 25}], gold, LIST, "names and ages"
    )  # a field not asked for
    assert not same_result(
        [{"name": "Ann", "age": "30"}, {"name": "Bo", "age": 25}], gold, LIST, "names and ages"
    )  # a string is not a number
    assert not same_result([{"v": True}], [{"v": 1}], LIST, "flag")  # a boolean is not a number


def test_nested_values_flattened_and_ids_not_data():
    gold = [{"_id": {"city": "Oslo", "kind": "x"}, "n": 2}]
    assert same_result([{"city": "Oslo", "kind": "x", "n": 2, "ref": "c-1"}], gold, LIST, "per city and kind")
    assert same_result([{"a": 1}], [{"_id": ObjectId(), "a": 1}], LIST, "a")  # the benchmark's storage id


def test_order_counts_only_when_the_question_asks_for_one():
    gold = [{"name": "Bo"}, {"name": "Ann"}]
    backwards = [{"name": "Ann"}, {"name": "Bo"}]
    assert not same_result(backwards, gold, SORTED, "List the names ordered by age")
    assert same_result(gold, gold, SORTED, "List the names sorted by age")
    assert same_result(backwards, gold, SORTED, "Which names are there, with their ages?")
    assert same_result(backwards, gold, LIST, "List the names in descending order")  # the gold does not sort
    assert not same_result(backwards, gold, SORTED, "Show the names, arranged from oldest to youngest")
    assert not same_result(backwards, gold, SORTED, "names from tallest to shortest")


def test_a_number_answers_a_number():
    assert scalar([], counted=True) == 0.0
    assert same_result([{"count": 0}], [], COUNT, "how many")  # MongoDB's $count of nothing is no row
    assert same_result([{"_id": None, "total": 3.0}], [{"count": 3}], COUNT, "how many")
    assert not same_result([{"count": 4}], [{"count": 3}], COUNT, "how many")
    assert not same_result([], [{"count": 3}], COUNT, "how many")
    assert same_result([{"avg": 2 / 3}], [{"avg_age": 0.66666667}], LIST, "average age")  # rounded to 4 places
    assert not same_result([{"x": "a", "n": 3}], [{"n": 3}], LIST, "how many")  # not one number


# ------------------------------------------------------------------ the sample


def _questions(n_db: int = 3, records: int = 4) -> list[Question]:
    shapes = ("filter", "join")
    return [
        Question(db * 100 + r, f"db{db}", p, f"q{db}-{r}-{p}", GoldQuery("c", []), shapes[r % 2])
        for db in range(n_db)
        for r in range(records)
        for p in range(5)
    ]


def test_stratified_sample_is_fixed_one_phrasing_per_record_every_stratum_first():
    qs = _questions()
    picked = stratified(qs, 6)
    assert picked == stratified(qs, 6)
    assert {(q.db, q.shape) for q in picked} == {(f"db{d}", s) for d in range(3) for s in ("filter", "join")}
    everything = stratified(qs, 1000)
    assert len(everything) == 12 and len({q.record_id for q in everything}) == 12
    assert stratified(qs, 6, seed=1) != picked or stratified(qs, 12, seed=1) != everything


def test_sample_option():
    assert parse_sample("stratified:100") == 100 and parse_sample(None) is None
    for bad in ("stratified:0", "random:5", "stratified:", "100"):
        with pytest.raises(TendError, match="stratified:N"):
            parse_sample(bad)


# ------------------------------------------------------------------ a whole run


def _tend_folder(root: Path) -> Path:
    data = {
        "people": [
            {"People_ID": 1, "Name": "Ann", "Age": 30},
            {"People_ID": 2, "Name": "Bo", "Age": 25},
            {"People_ID": 3, "Name": "Cy", "Age": 41},
        ],
        "club": [{"Club_ID": 1, "name": "Chess", "members": [{"People_ID": 1}, {"People_ID": 2}]}],
    }
    (root / "mongodb_data").mkdir(parents=True)
    (root / "mongodb_data" / "tiny.json").write_text(json.dumps(data))
    records = [
        {
            "record_id": 1,
            "db_id": "tiny",
            # Three phrasings the offline planner reads in full, two it reads nothing of (the model's).
            "nl_queries": ["What is the headcount?", "Tally up the folks."] + ["How many people are there?"] * 3,
            "MQL": "db.people.find({}).count();",
        },
        {
            "record_id": 2,
            "db_id": "tiny",
            "nl_queries": ["How many clubs are there?"] * 4 + ["Give the headcount of clubs."],
            "MQL": "db.club.aggregate([{ $count: 'n' }])",
        },
        {"record_id": 3, "db_id": "gone", "nl_queries": ["?"] * 5, "MQL": "db.x.find()"},
        {
            "record_id": 4,
            "db_id": "tiny",
            "nl_queries": ["Cast ages"] * 5,
            "MQL": "db.people.aggregate([{ $project: { a: { $toDouble: '$Age' } } }])",
        },
    ]
    (root / "test.json").write_text(json.dumps(records))
    (root / "mongodb_data" / "shop.json").write_text(json.dumps({"item": [{"Item_ID": 1, "price": 3}]}))
    train = [
        {
            "record_id": 9,
            "db_id": "shop",
            "nl_queries": ["How many items are there?", "Count the items."],
            "MQL": "db.item.find().count()",
        },
        {
            "record_id": 10,
            "db_id": "shop",
            "nl_queries": ["How many items cost 3?"],
            "MQL": "db.item.aggregate([{ $match: { price: 3 } }, { $out: 'copy' }])",
        },  # not a stage plans use
        {
            "record_id": 11,
            "db_id": "tiny",
            "nl_queries": ["How many people are there in all?"],
            "MQL": "db.people.find().count()",
        },
    ]
    (root / "train.json").write_text(json.dumps(train))
    return root


def test_a_run_loads_each_database_as_a_tenant_and_scores_through_the_engine(tmp_path):
    """The product's path: a question the offline planner reads in full is its plan; the rest are the
    model's. The run is the engine's: validation, scope, execution, scoring."""
    folder = _tend_folder(tmp_path / "tend")
    count = {"filters": [], "times": [], "text": [], "shape": {"kind": "count"}}
    model = ScriptedChatModel.answering(
        {"collection": "persons", **count},
        {"collection": "club", **count},  # the second phrasing: wrong
        {"collection": "nowhere", **count},  # not a collection: fails
    )
    settings = Settings().with_overrides(data_dir=tmp_path / "store", chat_models=(("planner", model),), max_attempts=1)
    report = evaluate(folder, settings, split="test", planner="llm")
    summary = report.summary()
    assert summary["missing_databases"] == ["gone"]
    assert [f["record_id"] for f in summary["gold_failures"]] == [4]  # $toDouble: not scored, said
    assert summary["total"] == 10 and set(summary["by_shape"]) == {"aggregation"}
    # The last: the model's plan failed and the offline planner had none to keep (no attempt ran).
    assert [o.planner for o in report.outcomes] == ["llm"] * 2 + ["offline"] * 7 + ["-"]
    # `people` is the engine's own kind: the TEND collection is stored as `persons` and counted there.
    assert [o.correct for o in report.outcomes] == [True, False] + [True] * 7 + [False]
    assert report.outcomes[0].predicted == {"collection": ENGINE_NAMES["people"], "pipeline": [{"$count": "count"}]}
    assert report.outcomes[-1].declined and summary["declined"] == 1
    assert summary["by_database"]["tiny"] == {"correct": 8, "total": 10, "accuracy": 0.8, "declined": 1}
    out = tmp_path / "out.jsonl"
    write_outcomes(report, out)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["summary"]["accuracy"] == 0.8 and len(lines) == 11
    assert {"question", "gold", "predicted", "correct", "why", "seconds"} <= set(lines[1])
    assert "3 rows" not in lines[2]["why"] and lines[2]["why"]  # the wrong count says what it got


def test_train_examples_are_close_questions_of_other_databases_with_plans_that_validate(tmp_path):
    from context_engine.eval.tend import TrainExamples

    examples = TrainExamples(_tend_folder(tmp_path / "tend"))
    got = examples.similar("How many people are there?", exclude_db="tiny")
    # One phrasing a record ("Count the items." is the same record), never a stage plans do not use.
    assert got == ['Q: How many items are there? -> {"collection":"item","pipeline":[{"$count":"count"}]}']
    assert examples.similar("How many people are there?")[0].startswith("Q: How many people are there in all?")


def test_examples_are_matched_on_what_is_asked_not_on_the_values_said():
    from context_engine.eval.tend import masked

    assert masked("Which singers are older than 30 and named 'Jo Li'?") == masked(
        'Which singers are older than 45.5 and named "Al"?'
    )
    assert masked("List the ships of Captain Lars Holm.") == masked("List the ships of Admiral Nelson.")
    assert masked("Which ships sank?") != masked("How many ships sank?")


def test_records_are_public_to_their_own_tenant_only(tmp_path):
    from context_engine.eval.tend import tenant_of
    from context_engine.query.execute import scope_filter
    from context_engine.store.documents import open_store

    folder = _tend_folder(tmp_path / "tend")
    settings = Settings().with_overrides(data_dir=tmp_path / "store")
    evaluate(folder, settings, split="test", limit=1)
    store = open_store(settings)
    assert store.scoped("persons", scope_filter(tenant_of("tiny"), [])).count() == 3  # no asker: public only
    assert store.scoped("persons", scope_filter("tend_other", ["*"])).count() == 0
    assert store.kinds(tenant_of("tiny")).get("persons").key == "People_ID"  # the unique id is the ref


def test_bad_folder_and_options_are_one_line_errors(tmp_path):
    with pytest.raises(TendError, match="--data is the TEND folder"):
        load_split(tmp_path, "test")
    (tmp_path / "test.json").write_text('{"not": "a list"}')
    with pytest.raises(TendError, match="not a list of TEND records"):
        load_split(tmp_path, "test")
    with pytest.raises(TendError, match="--split"):
        load_split(tmp_path, "dev")
    cli = [sys.executable, "-m", "context_engine.cli", "eval", "tend"]
    for args, says in (
        ([], "needs --data DIR"),
        (["--data", str(tmp_path / "none")], "--data is the TEND folder"),
        (["--data", str(tmp_path), "--sample", "all"], "stratified:N"),
    ):
        done = subprocess.run(cli + args, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_model_gets_one_correction_per_question(tmp_path):
    """A rejected pipeline is shown to the model once more; the small model repeats itself, so a third
    try is time spent for nothing: the question is declined after the second. (The first question is
    one the offline planner reads nothing of: the model's.)"""
    bad = {"collection": "persons", "pipeline": [{"$project": {"nowhere": 1}}]}
    good = {"collection": "persons", "pipeline": [{"$count": "count"}]}
    settings = Settings().with_overrides(
        data_dir=tmp_path / "store", chat_models=(("planner", ScriptedChatModel.answering(bad, bad, good)),)
    )
    assert settings.max_attempts > 2
    (outcome,) = evaluate(_tend_folder(tmp_path / "tend"), settings, split="test", planner="llm", limit=1).outcomes
    assert outcome.declined and not outcome.correct and "nowhere" in outcome.why
    settings = settings.with_overrides(chat_models=(("planner", ScriptedChatModel.answering(bad, good)),))
    (outcome,) = evaluate(_tend_folder(tmp_path / "tend2"), settings, split="test", planner="llm", limit=1).outcomes
    assert outcome.correct

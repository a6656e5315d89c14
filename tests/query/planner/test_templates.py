"""The context set in the offline planner: templates answer the questions they match, facets become
filters, `use_context_set` turns both off, and a 👍'd plan answers later paraphrases."""

from __future__ import annotations

import json
import shutil
from datetime import datetime

import pytest

from context_engine.assistant.structured_query import run_structured
from context_engine.config import Settings
from context_engine.eval.compare import compare, parse_config
from context_engine.query import context_sets as cs
from context_engine.query.engine import principals_of, resolve
from context_engine.query.execute import run_pipeline
from context_engine.query.feedback import FeedbackStore, submit
from context_engine.query.offline import OfflinePlanner
from context_engine.query.planner.templates import context_set_for
from context_engine.resources import catalog_for, store_for

NOW = datetime(2026, 11, 30, 12)
# A plan no step-by-step reading of its question writes (the 3 oldest, oldest first): when a later
# question gets it, the template answered.
TAUGHT = {
    "collection": "pull_requests",
    "pipeline": [
        {
            "$match": {
                "user.login": "rsh-dev",
                "merged": True,
                "merged_at": {"$gte": {"$date": "2026-10-01T00:00:00Z"}, "$lt": {"$date": "2026-11-01T00:00:00Z"}},
            }
        },
        {"$sort": {"merged_at": 1}},
        {"$limit": 3},
    ],
}


@pytest.fixture
def data(sample_dir, tmp_path):
    data_dir = tmp_path / "data"
    shutil.copytree(sample_dir, data_dir)
    return Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)


def _plan(settings, question, context_set):
    ctx, failed = resolve(question, NOW, catalog_for(settings), None)
    assert failed is None, failed.message
    ctx.context_set = context_set
    return OfflinePlanner().plan(ctx)


def _write_set(settings, entries):
    folder = settings.data_dir / "context_sets"
    folder.mkdir(exist_ok=True)
    (folder / "acme.json").write_text(json.dumps({"version": 2, **entries}), encoding="utf-8")


def _match(plan):
    return next(stage["$match"] for stage in plan.pipeline if "$match" in stage)


SECURITY = cs.Facet("hardening work", "pull_requests", {"labels.name": "security"}, ["hardening work", "安全加固"])
GOOD_TO_GO = cs.Facet("good to go", "pull_requests", {"state": "open", "draft": False}, ["good to go"])
THREE_OLDEST = cs.Template(
    "three-oldest-merged",
    "the three oldest PRs {who} merged {when}",
    {"who": "person", "when": "time"},
    "pull_requests",
    [
        {
            "$match": {
                "user.login": "{{who.github}}",
                "merged": True,
                "merged_at": {"$gte": "{{when.start}}", "$lt": "{{when.end}}"},
            }
        },
        {"$sort": {"merged_at": 1}},
        {"$limit": 3},
    ],
)


# -- facets ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("question", ["open PRs that are hardening work", "还开着的安全加固 PR"])
def test_a_facet_phrase_becomes_its_filter_and_is_understood_as_a_facet(data, question):
    plan = _plan(data, question, cs.ContextSet(facets=[SECURITY]))
    assert _match(plan)["labels.name"] == "security" and _match(plan)["state"] == "open"
    assert [s["text"] for s in plan.understood if s["how"] == "facet"] == [
        "hardening work" if question.isascii() else "安全加固"
    ]
    assert plan.not_understood == []


def test_without_the_facet_the_words_are_not_understood(data):
    plan = _plan(data, "open PRs that are hardening work", cs.ContextSet())
    assert "labels.name" not in _match(plan)
    assert "work" in " ".join(s["text"] for s in plan.not_understood)


def test_a_facet_after_a_negation_is_negated_and_its_rows_lack_it(data):
    plan = _plan(data, "open PRs that aren't hardening work", cs.ContextSet(facets=[SECURITY]))
    assert _match(plan)["labels.name"] == {"$ne": "security"}
    rows = run_pipeline(
        store_for(data),
        "pull_requests",
        plan.pipeline,
        tenant="acme",
        principals=principals_of(None),
        schema=catalog_for(data).schemas["pull_requests"],
    )
    assert rows and all("security" not in [lab["name"] for lab in r.get("labels", [])] for r in rows)


def test_a_facet_that_contradicts_the_question_is_not_applied(data):
    # "closed" sets the state; "good to go" would set it open: the question's own word wins.
    plan = _plan(data, "closed PRs that were good to go", cs.ContextSet(facets=[GOOD_TO_GO]))
    assert _match(plan)["state"] == "closed" and "draft" not in _match(plan)
    assert not any(s["how"] == "facet" for s in plan.understood)


def test_a_facet_of_another_collection_or_a_word_inside_another_word_does_not_apply(data):
    other = cs.Facet("security issues", "issues", {"fields.priority.name": "High"}, ["hardening work"])
    assert "labels.name" not in _match(_plan(data, "open PRs that are hardening work", cs.ContextSet(facets=[other])))
    assert "labels.name" not in _match(
        _plan(data, "open PRs that are hardening workers", cs.ContextSet(facets=[SECURITY]))
    )


# -- templates -------------------------------------------------------------------------------------


def test_a_question_close_to_a_template_gets_its_plan_bound_to_its_own_values(data):
    plan = _plan(data, "the three oldest PRs Priya merged in October", cs.ContextSet(templates=[THREE_OLDEST]))
    assert plan.notes[0].startswith("template three-oldest-merged")
    assert plan.pipeline[0]["$match"]["user.login"] == "priyar"
    assert plan.pipeline[0]["$match"]["merged_at"] == {"$gte": datetime(2026, 10, 1), "$lt": datetime(2026, 11, 1)}
    assert plan.pipeline[1:] == [{"$sort": {"merged_at": 1}}, {"$limit": 3}]
    how = {s["text"]: s["how"] for s in plan.understood}
    assert how["Priya"] == "person" and how["in October"] == "time" and how["oldest"] == "template"
    assert plan.not_understood == [] and plan.confidence >= 0.85


@pytest.mark.parametrize(
    "question",
    [
        "the three oldest PRs Priya merged in October that touch the docs",  # a condition the template lacks
        "the three oldest PRs merged in October",  # no person for its {who}
        "PRs Priya reviewed in October",  # other words
    ],
)
def test_a_template_that_would_drop_or_invent_a_condition_is_not_used(data, question):
    plan = _plan(data, question, cs.ContextSet(templates=[THREE_OLDEST]))
    assert not any(n.startswith("template ") for n in plan.notes)
    assert not any(s["how"] == "template" for s in plan.understood)


def test_the_setting_turns_the_context_set_off(data):
    _write_set(data, {"templates": [THREE_OLDEST.to_json()], "facets": [SECURITY.to_json()]})
    catalog = catalog_for(data)
    assert context_set_for(data.with_overrides(use_context_set=False), catalog.schemas) is None
    on = run_structured("the three oldest PRs Priya merged in October", data, now=NOW)
    off = run_structured(
        "the three oldest PRs Priya merged in October", data.with_overrides(use_context_set=False), now=NOW
    )
    assert on.plan.notes[0].startswith("template three-oldest-merged") and len(on.rows) <= 3
    assert not any(n.startswith("template ") for n in off.plan.notes)


def test_a_broken_tenant_file_plans_without_it(data):
    (data.data_dir / "context_sets").mkdir()
    (data.data_dir / "context_sets" / "acme.json").write_text('{"templates": [{"name": "x"}]}', encoding="utf-8")
    assert context_set_for(data, catalog_for(data).schemas) is None
    assert run_structured("open PRs", data, now=NOW).kind == "success"


def test_a_thumbs_up_teaches_a_template_that_answers_a_paraphrase_about_someone_else(data):
    FeedbackStore(data.data_dir).record_ask(
        "acme",
        "priyar",
        "the three oldest PRs Rashid merged in October",
        TAUGHT,
        "Found 3 pull requests",
        "2026-11-30T12:00:00Z",
    )
    assert submit(data.data_dir, catalog_for(data), asker="priyar", rating="up")["template"] == "feedback-1"
    # Another person, another month and another wording ("that"): the taught template answers.
    question = "the three oldest PRs that Priya merged in September"
    result = run_structured(question, data, now=NOW)
    assert result.kind == "success" and result.plan.notes[0].startswith("template feedback-1")
    catalog = catalog_for(data)
    want = run_pipeline(
        store_for(data),
        "pull_requests",
        [
            {
                "$match": {
                    "user.login": "priyar",
                    "merged": True,
                    "merged_at": {"$gte": datetime(2026, 9, 1), "$lt": datetime(2026, 10, 1)},
                }
            },
            {"$sort": {"merged_at": 1}},
            {"$limit": 3},
        ],
        tenant="acme",
        principals=principals_of(None),
        schema=catalog.schemas["pull_requests"],
    )
    assert want and [r["ref"] for r in result.rows] == [r["ref"] for r in want]


def test_eval_compare_says_which_template_answered_and_no_context_set_does_without(data, tmp_path):
    _write_set(data, {"templates": [THREE_OLDEST.to_json()]})
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps(
            {
                "id": "t1",
                "question": "the three oldest PRs Priya merged in October",
                "now": "2026-11-30T12:00:00Z",
                "collection": "pull_requests",
                "compare": "refs",
                "gold": [
                    {
                        "$match": {
                            "user.login": "priyar",
                            "merged": True,
                            "merged_at": {
                                "$gte": {"$date": "2026-10-01T00:00:00Z"},
                                "$lt": {"$date": "2026-11-01T00:00:00Z"},
                            },
                        }
                    },
                    {"$sort": {"merged_at": 1}},
                    {"$limit": 3},
                ],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    report = compare(questions, data, [parse_config("offline"), parse_config("no-context-set")])
    row = report.rows[0]
    assert row.how[0] == "template three-oldest-merged" and row.correct[0]
    assert row.how[1] == "offline"


def test_a_short_word_is_not_a_longer_one_and_shape_words_must_be_the_templates(data):
    shipped = context_set_for(data, catalog_for(data).schemas)
    # "any" is not "many": a yes/no list is not the count template's question.
    listed = _plan(data, "are there any open PRs labelled security?", shipped)
    assert not any(n.startswith("template ") for n in listed.notes) and "$count" not in str(listed.pipeline)
    counted = _plan(data, "how many open PRs are labeled security", shipped)
    assert counted.notes[0].startswith("template open-prs-with-label-count") and counted.pipeline[-1] == {
        "$count": "count"
    }
    # The template lists PRs; asking how many of them is another question.
    assert not any(
        n.startswith("template ") for n in _plan(data, "how many PRs Priya merged in October", shipped).notes
    )


def test_a_shipped_facet_does_not_read_a_verb_the_conditions_left(data):
    shipped = context_set_for(data, catalog_for(data).schemas)
    plan = _plan(data, "how many PRs did Jonas open in Q3", shipped)
    assert "state" not in _match(plan) and not any(s["how"] == "facet" for s in plan.understood)

"""Count sentences take their noun by number, from the kind's `noun` and `plural`: never "1 pull
requests match"."""

from __future__ import annotations

import pytest

from context_engine.kinds.spec import CollectionSpec
from context_engine.query.answer import compose
from context_engine.query.engine import MaxAttempts, Success
from context_engine.query.ir import PlanIR, Shape
from context_engine.query.plan import Attempt, Plan

ANALYSIS = CollectionSpec(name="analyses", noun="analysis", plural="analyses", text=("title",))


@pytest.mark.parametrize(
    ("count", "sentence"),
    [(0, "0 pull requests match."), (1, "1 pull request matches."), (2, "2 pull requests match.")],
)
def test_a_count_says_its_noun_by_number(count, sentence):
    assert compose(Success(Plan("pull_requests", []), [{"count": count}], []), "pull_requests")[0] == sentence


@pytest.mark.parametrize(
    ("count", "sentence"), [(0, "0 analyses match."), (1, "1 analysis matches."), (2, "2 analyses match.")]
)
def test_a_tenant_kind_with_an_irregular_plural(count, sentence):
    assert compose(Success(Plan("analyses", []), [{"count": count}], []), "analyses", ANALYSIS)[0] == sentence


def test_found_records_and_groups_by_number():
    one = [{"ref": "PR-1", "title": "Fix"}]
    assert compose(Success(Plan("pull_requests", []), one, []), "pull_requests")[0].startswith(
        "Found 1 pull request:\n"
    )
    assert compose(Success(Plan("pull_requests", []), one * 2, []), "pull_requests")[0].startswith(
        "Found 2 pull requests:\n"
    )
    group = [{"_id": "ana", "count": 3}]
    assert compose(Success(Plan("issues", []), group, []), "issues")[0].startswith("1 group of issues (count):")
    assert compose(Success(Plan("issues", []), group * 2, []), "issues")[0].startswith("2 groups of issues (count):")


def test_attempts_by_number():
    plan = Plan("issues", [])
    assert "after 1 attempt." in compose(MaxAttempts([Attempt(plan, "bad")]), "issues")[0]
    assert "after 2 attempts." in compose(MaxAttempts([Attempt(plan, "bad")] * 2), "issues")[0]


def test_a_mean_and_distinct_values_are_said_as_such():
    plan = Plan("deploys", [])
    assert (
        compose(Success(plan, [{"average": 812.5}], []), "deploys")[0] == "The average over the records matched: 812.5."
    )
    assert compose(Success(plan, [{"average": 448.96666666666664}], []), "deploys")[0].endswith(": 448.97.")
    shares = compose(Success(plan, [{"_id": "2021", "share": 0.89285}, {"_id": "2022", "share": 0.8463}], []), "x")[0]
    assert "1. 2021: 89.3%" in shares and "2. 2022: 84.6%" in shares
    per_day = compose(Success(plan, [{"average": 95 / 31, "days": 31}], []), "deploys")[0]
    assert per_day.startswith("3.06 records per day on average, over the 31 days of the time asked")
    distinct = [{"_id": "mobile-app"}, {"_id": "payments-api"}]
    assert (
        compose(Success(plan, distinct, []), "incidents")[0]
        == "2 distinct values over the records matched: mobile-app, payments-api."
    )
    assert compose(Success(plan, distinct[:1], []), "incidents")[0].startswith("1 distinct value over")


@pytest.mark.parametrize(
    ("field", "sentence"),
    [
        ("user", "106 different people among the messages matched."),
        ("channel", "106 different channels among the messages matched."),
    ],
)
def test_a_distinct_count_says_what_it_counted(field, sentence):
    """ "How many people posted" counts people: the sentence does not say 106 messages match."""
    plan = Plan("messages", [], ir=PlanIR("messages", shape=Shape("distinct_count", field=field)))
    assert compose(Success(plan, [{"count": 106}], []), "messages")[0] == sentence

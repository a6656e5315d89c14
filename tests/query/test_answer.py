"""Answers composed from rows: a week bucket says which days it is, and the answer which weeks it used."""

from __future__ import annotations

from context_engine.query.answer import WEEKS_SAID, compose
from context_engine.query.engine import Success
from context_engine.query.plan import Plan


def test_week_buckets_are_named_by_their_monday_and_said_to_be_iso_weeks():
    rows = [{"_id": "2020-W53", "count": 4}, {"_id": "2021-W01", "count": 2}]
    text, _ = compose(Success(Plan("messages", []), rows, []), "messages")
    assert WEEKS_SAID in text.splitlines()[0]
    assert "2020-W53 (from 2020-12-28): 4" in text and "2021-W01 (from 2021-01-04): 2" in text


def test_other_groups_say_nothing_of_weeks():
    text, _ = compose(Success(Plan("messages", []), [{"_id": "2021-01", "count": 3}], []), "messages")
    assert "week" not in text and "2021-01: 3" in text


def test_a_share_is_stated_as_a_fraction_and_a_percentage():
    text, citations = compose(Success(Plan("pull_requests", []), [{"share": 0.53125}], []), "pull_requests")
    assert "0.5312" in text and "53.1%" in text and citations == []


def test_a_mean_is_stated_as_one_number():
    text, _ = compose(Success(Plan("issues", []), [{"average": 2.5}], []), "issues")
    assert "average" in text and "2.5" in text


def test_a_record_cut_to_the_fields_asked_for_says_them():
    rows = [{"_id": "x", "ref": "org/repo#7", "additions": 31}]
    text, citations = compose(Success(Plan("pull_requests", []), rows, []), "pull_requests")
    assert "org/repo#7" in text and "additions: 31" in text and len(citations) == 1
    # a whole record is said as ever, without its every field
    whole = [{"ref": "org/repo#8", "title": "Fix", "state": "open", "additions": 3, "deletions": 1, "comments": 0}]
    text, _ = compose(Success(Plan("pull_requests", []), whole, []), "pull_requests")
    assert "additions" not in text


def test_a_list_cut_at_the_default_size_says_more_may_match():
    from context_engine.query.ir import PlanIR, Shape, SortKey
    from context_engine.query.planner.shape import DEFAULT_LIMIT

    rows = [{"ref": f"m{i}", "text": "hi", "user": "U1"} for i in range(DEFAULT_LIMIT)]
    listed = PlanIR("messages", shape=Shape("list", sort=[SortKey("date", -1)], limit=DEFAULT_LIMIT))
    text, _ = compose(Success(Plan("messages", [], ir=listed), rows, []), "messages")
    assert "more may match" in text.splitlines()[0]
    # fewer than the cap are all of them; and a size asked for is that size
    text, _ = compose(Success(Plan("messages", [], ir=listed), rows[:7], []), "messages")
    assert text.startswith("Found 7 messages:")
    five = PlanIR("messages", shape=Shape("list", sort=[SortKey("date", -1)], limit=5))
    text, _ = compose(Success(Plan("messages", [], ir=five), rows[:5], []), "messages")
    assert text.startswith("Found 5 messages:")


def test_a_long_list_says_how_many_it_leaves_out():
    records = [{"ref": f"m{i}", "text": "hi", "user": "U1"} for i in range(13)]
    text, citations = compose(Success(Plan("messages", []), records, []), "messages")
    assert text.startswith("Found 13 messages:") and text.endswith("\n… and 3 more in the records")
    assert len(citations) == 13  # every record cited, ten of them said
    groups = [{"_id": f"U{i}", "count": 40 - i} for i in range(30)]
    text, _ = compose(Success(Plan("messages", []), groups, []), "messages")
    assert "25. U24: 16" in text and text.endswith("\n… and 5 more")
    values = [{"_id": f"v{i}"} for i in range(12)]
    text, _ = compose(Success(Plan("messages", []), values, []), "messages")
    assert text.endswith("v9 … and 2 more.")
    text, _ = compose(Success(Plan("messages", []), records, [], total=436), "messages")
    assert text.startswith("Found 436 messages; the records hold the first 13:")

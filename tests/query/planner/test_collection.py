"""Which collection a question is about when no word names one (query/planner/collection.py): the verbs
said of only one kind of record, in English and Chinese."""

from __future__ import annotations

import pytest

from tests.query.planner.test_linking import _plan, github  # noqa: F401 (the fixture)


@pytest.mark.parametrize(
    "question,collection",
    [
        ("2023 年以前有人提的一共几个", "issues"),
        ("去年 thandeka 报告的有哪些", "issues"),
        ("去年合并的有多少", "pull_requests"),
        ("which ones were filed last year", "issues"),
        ("what got merged last month", "pull_requests"),
        ("what is still open in the 2.0 milestone?", "issues"),  # a milestone tracks issues
    ],
)
def test_a_verb_said_of_one_kind_of_record_names_it(github, question, collection):  # noqa: F811
    plan = _plan(github, question)
    assert plan.collection == collection, plan.notes


def test_pull_reqs_are_pull_requests(github):  # noqa: F811
    # chat shorthand for the noun: the records named, not a word left unread
    plan = _plan(github, "pull reqs opened in 2023")
    assert plan.collection == "pull_requests" and not plan.not_understood, plan.not_understood

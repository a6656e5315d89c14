"""Where a question names a value by its kind (`query.value_cues`): the word the kind's name points
at, and the words in that place that name no value."""

from __future__ import annotations

import pytest

from context_engine.query.value_cues import value_cues


@pytest.mark.parametrize(
    "question,role,text",
    [
        ("anything tagged wont-fix from last spring?", "label", "wont-fix"),
        ("tickets carrying the perf-regression label", "label", "perf-regression"),
        ("infra-labelled PRs merged this week", "label", "infra"),
        ("带 p1 标签的工单", "label", "p1"),
        ("everything planned for milestone v4.1", "milestone", "4.1"),
        ("the 2024-q3 milestone: what is left?", "milestone", "2024-q3"),
        ("what did people say in #ops-alerts yesterday", "channel", "ops-alerts"),
        ("was the releases channel busy in May", "channel", "releases"),
        ("rust 频道里上周的消息", "channel", "rust"),
        ("2025-h1 里程碑还剩几个 bug", "milestone", "2025-h1"),  # a pattern's second alternative
        ("里程碑 v9 下面的 PR", "milestone", "v9"),
        ("tickets that carry the flaky-ci tag", "label", "flaky-ci"),
        ("and for the performance label?", "label", "performance"),  # a follow-up's label, said after "for"
        ("how many bugs are priority P2?", "priority", "P2"),
        ("the P0 incidents of last week", "priority", "P0"),
        ("优先级为 urgent 的任务", "priority", "urgent"),
        ("the erlang workspace: how many posts", "workspace", "erlang"),
        ("who talks most in the haskell slack", "workspace", "haskell"),
        # shaped as trackers name labels, right before the records
        ("which needs-info issues haven't been closed yet", "label", "needs-info"),
        ("open kind/bug PRs", "label", "kind/bug"),
    ],
)
def test_the_value_a_kind_points_at(question, role, text):
    assert [(c.role, c.text) for c in value_cues(question)] == [(role, text)]


@pytest.mark.parametrize(
    "question,named",
    [
        ("which label do most bugs carry?", []),  # a question about labels, no label named
        ("bug-labelled issues from 2023", ["bug"]),  # "issues" after the cue word is the record, not a label
        ("the busiest channel last week", []),  # a superlative in a value's place
        ("messages per workspace in March", []),
        ("PRs without a milestone", []),
        ("issue #1234 and its comments", []),  # a record's number, not a channel
        ("open PRs not marked as draft", []),  # a state, not a label
        ("type-checking issues from 2023", []),  # a hyphenated topic, no label's shape
        ("json-loading issues", []),
        ("threads she tagged him in", []),  # a pronoun
        ("and the ones tagged with hers?", []),
    ],
)
def test_words_in_a_values_place_that_name_no_value(question, named):
    assert [c.text for c in value_cues(question)] == named

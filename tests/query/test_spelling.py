"""Misspelt rule words are read as the words meant; real words, names and stored values never are."""

from __future__ import annotations

import pytest

from context_engine.query.spelling import correct


@pytest.mark.parametrize(
    "asked,read",
    [
        ("numbr of unique isue authors in 2021", "number of unique issue authors in 2021"),
        (
            "hw many issues were opend in 2020",
            "how many issues were opened in 2020",
        ),  # a tie goes to the word ending alike
        ("closed isues with no asignee", "closed issues with no assignee"),
        ("repiles to my threads", "replies to my threads"),
        ("prs mergd lst week", "prs merged last week"),
        ("# of msgs in 2018", "# of messages in 2018"),
        ("issues that dont have labels", "issues that don't have labels"),  # a contraction without its apostrophe
        ("comments closeing the discussion", "comments closing the discussion"),  # "close" drops its "e" for "ing"
        ("open 🐛 issues", "open bug issues"),  # an emoji said as the word the records use
        ("the PR with the most 👍", "the PR with the most thumbs up"),
        ("most ❤️'d issue of 2023", "most heart-reacted issue of 2023"),  # a reaction emoji as a verb
    ],
)
def test_misspelt_rule_words_are_read_as_meant(asked, read):
    assert correct(asked, set()) == read


@pytest.mark.parametrize(
    "asked",
    [
        "stale PRs",  # an English word one edit from "state" stays
        "typo fixes merged in 2021",  # "fixes" is not "fixed"
        "issues prior to 2020",
        "Mergd issues",  # a capitalised word may be a name
        "issues in parquet format",
        "how many weren't assigned to anybody",  # a contraction's first half is no misspelt word
        "PRs that haven't been merged",
        "tickets on sharding from last year",  # "shard" + "ing": a word the dictionary lacks, not "starting"
    ],
)
def test_real_words_and_names_are_kept(asked):
    assert correct(asked, set()) == asked


def test_a_tenant_s_own_words_are_kept():
    # "opend" is someone's login here, "numbr" a label: never corrected
    assert correct("PRs by opend labelled numbr", {"opend", "numbr"}) == "PRs by opend labelled numbr"

"""Follow-up questions resolved offline against the turns before (the rules alone; the graph-level
conversation is in test_conversation.py)."""

from datetime import datetime

import pytest

from context_engine.answering.followup import resolve_offline
from context_engine.query.identity import PeopleDirectory

NOW = datetime(2026, 11, 30, 12)
PEOPLE = PeopleDirectory([
    {"login": "rsh-dev", "name": "Rashid Khan"},
    {"login": "priyar", "name": "Priya Raman"},
    {"login": "larsn", "name": "Lars Nielsen"},
    {"login": "nli", "name": "李娜"},
])
MERGED = {"standalone": "PRs Rashid merged last week", "people": ["Rashid Khan"], "people_text": ["Rashid"],
          "times": ["last week"], "refs": ["acme/infra#882", "acme/web#2126"], "answer_people": ["Lars Nielsen"]}


@pytest.mark.parametrize("asked,standalone", [
    ("and in October?", "PRs Rashid merged in October"),
    ("What about last month?", "PRs Rashid merged last month"),
    ("那上个月呢？", "PRs Rashid merged 上个月"),
    ("what about Priya?", "PRs Priya merged last week"),
    ("And Priya?", "PRs Priya merged last week"),
    ("how about for Lars?", "PRs Lars merged last week"),
    ("李娜呢？", "PRs 李娜 merged last week"),
    ("他呢？", "PRs Lars Nielsen merged last week"),  # the person the answer named, not the one asked about
    ("which of those are still open?", "PRs Rashid merged last week open"),
    ("only the ones in payments", "PRs Rashid merged last week in payments"),
    ("just the open ones", "PRs Rashid merged last week open"),
    ("who reviewed it?", "who reviewed acme/infra#882?"),
    ("who reviewed them?", "who reviewed acme/infra#882, acme/web#2126?"),
    ("how many PRs did Lars open in 2025?", "how many PRs did Lars open in 2025?"),  # stands alone
])
def test_follow_up_forms(asked, standalone):
    assert resolve_offline(asked, [MERGED], PEOPLE, NOW).standalone == standalone


def test_a_new_thread_has_nothing_to_resolve_against():
    assert resolve_offline("and in October?", [], PEOPLE, NOW).how == ""


def test_a_pronoun_prefers_the_person_asked_about_before():
    earlier = {**MERGED, "standalone": "PRs Priya merged last week", "people": ["Priya Raman"], "people_text": ["Priya"]}
    first = {**MERGED, "answer_people": []}
    assert resolve_offline("他呢？", [first, earlier], PEOPLE, NOW).standalone == "PRs Rashid Khan merged last week"

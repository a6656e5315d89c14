"""Structured questions over the three real Slack exports (clojurians, elmlang, racket).

`slack_dev.jsonl` is the set the planner was tuned on; `slack_heldout.jsonl` was written (gold
pipelines by hand) before the engine ever ran on it and was measured once, untuned (46/46 and 30/30).
A planner change that loses a question fails here (the ratchet, tests/data/ratchet.json).
"""

from __future__ import annotations

from datetime import datetime

import pytest

from context_engine.config import Settings
from context_engine.eval.structured import evaluate
from context_engine.query.timeexpr import find_time_ranges
from context_engine.resources import catalog_for
from tests.conftest import TEST_DATA_DIR, needs_slack_exports, tenant_settings
from tests.query.conftest import lost

pytestmark = needs_slack_exports
DATA = TEST_DATA_DIR


@pytest.fixture
def settings(real_sources_dir) -> Settings:
    """The Slack exports' tenant: this module's questions are all about it."""
    return tenant_settings(real_sources_dir, "oss")


@pytest.mark.parametrize("name", ["slack_dev", "slack_heldout"])
def test_structured_accuracy_over_the_slack_exports(settings, name):
    # The ratchet (tests/data/ratchet.json): every question that passed when it was recorded still does.
    assert lost(evaluate(DATA / f"{name}.jsonl", settings, planner="offline"), name) == []


def test_ordinary_words_are_not_fuzzy_people_and_months_are_not_april(settings):
    directory = catalog_for(settings).directory
    # "start" is one edit from Star and Stuart; "April" is a person here, but not in a date.
    assert [m.text for m in directory.find_mentions("how many threads did I start in April 2019?")] == ["I"]
    assert [m.person.name for m in directory.find_mentions("threads April started")] == ["April"]


def test_spaced_chinese_year_month_is_one_month():
    (rng,) = find_time_ranges("Chantelle 在 2019 年 3 月发了多少条消息？", datetime(2019, 6, 1))
    assert (rng.start, rng.end) == (datetime(2019, 3, 1), datetime(2019, 4, 1))

"""What the planner tests share: the sample organisation's catalog and a question resolved against it."""

from __future__ import annotations

import pytest

from context_engine.query.engine import resolve
from context_engine.query.plan import PlanningContext
from context_engine.runtime import catalog_for
from tests.conftest import NOW


@pytest.fixture
def catalog(settings):
    return catalog_for(settings)


def context(catalog, question: str) -> PlanningContext:
    """The planning context of a question that resolves (people and times found, nobody unknown)."""
    ctx, failed = resolve(question, NOW, catalog, None)
    assert failed is None
    return ctx

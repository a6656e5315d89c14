"""A tenant's own kinds: a list showing fields of another collection its records refer to, joined by a
reference found over field names, run through the engine on a tenant loaded the way `eval tend` does."""

from __future__ import annotations

import pytest

from context_engine.assistant.structured_query import run_structured
from context_engine.config import Settings
from context_engine.eval.tend import NOW, load_database, tenant_of
from context_engine.kinds import CollectionSpec
from context_engine.query.planner.own_joins import reference
from context_engine.query.schema import schema_from_documents
from context_engine.store.documents import open_store

GARDENERS = [
    {"Gardener_ID": 1, "Full_name": "Ivo Park", "plots": [{"Plot_ID": 10}, {"Plot_ID": 11}]},
    {"Gardener_ID": 2, "Full_name": "Una Reed", "plots": [{"Plot_ID": 12}]},
]
PLOTS = [
    {"Plot_ID": 10, "Soil": "clay", "Area": 40},
    {"Plot_ID": 11, "Soil": "loam", "Area": 25},
    {"Plot_ID": 12, "Soil": "sand", "Area": 60},
]


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    s = Settings().with_overrides(data_dir=tmp_path_factory.mktemp("joins"))
    store = open_store(s)
    load_database(store, "allotment", {"gardener": GARDENERS, "plot": PLOTS})
    store.commit()
    return s.with_overrides(tenant=tenant_of("allotment"), use_llm=False)


def test_the_reference_is_an_id_field_naming_the_other_collections_key():
    gardeners = schema_from_documents(
        "gardener", GARDENERS, own_kind=CollectionSpec("gardener", noun="gardener", key="Gardener_ID")
    )
    plots = schema_from_documents("plot", PLOTS, own_kind=CollectionSpec("plot", noun="plot", key="Plot_ID"))
    assert reference(gardeners, plots) == ("plots.Plot_ID", "Plot_ID")
    assert reference(plots, gardeners) == ("Plot_ID", "plots.Plot_ID")  # the key here, referred to there


def test_a_list_shows_the_referenced_records_fields_one_row_per_pair(settings):
    result = run_structured("Show the full names of the gardeners and the soil of their plots.", settings, now=NOW)
    assert result.kind == "success", getattr(result, "message", result.kind)
    assert result.plan.ir.join is not None
    pairs = sorted((r["Full_name"], r["plot"]["Soil"]) for r in result.rows)
    assert pairs == [("Ivo Park", "clay"), ("Ivo Park", "loam"), ("Una Reed", "sand")]
    assert result.plan.not_understood == []

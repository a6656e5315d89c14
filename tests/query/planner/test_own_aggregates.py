"""A tenant's own kinds: several aggregates at once, aggregates per value of a named field, and the
values whose records meet a count — planned offline and run through the engine on a tenant loaded the
way `eval tend` loads one."""

from __future__ import annotations

import pytest

from context_engine.assistant.structured_query import run_structured
from context_engine.config import Settings
from context_engine.eval.tend import NOW, load_database, tenant_of
from context_engine.store.documents import open_store

VESSELS = [
    {"Vessel_ID": 1, "Vessel_name": "Aurora", "Port": "Hull", "Tonnage": 900, "Crew_size": 12},
    {"Vessel_ID": 2, "Vessel_name": "Borealis", "Port": "Hull", "Tonnage": 1500, "Crew_size": 20},
    {"Vessel_ID": 3, "Vessel_name": "Cygnus", "Port": "Leith", "Tonnage": 400, "Crew_size": 6},
    {"Vessel_ID": 4, "Vessel_name": "Dorado", "Port": "Hull", "Tonnage": 700, "Crew_size": 9},
    {"Vessel_ID": 5, "Vessel_name": "Eridanus", "Port": "Wick", "Tonnage": 2100, "Crew_size": 30},
    {"Vessel_ID": 6, "Vessel_name": "Fornax", "Port": "Leith", "Tonnage": 650, "Crew_size": 8},
]


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    s = Settings().with_overrides(data_dir=tmp_path_factory.mktemp("aggregates"))
    store = open_store(s)
    load_database(store, "fleet", {"vessel": VESSELS})
    store.commit()
    return s.with_overrides(tenant=tenant_of("fleet"), use_llm=False)


def plan_and_rows(settings, question):
    result = run_structured(question, settings, now=NOW)
    assert result.kind in ("success", "no_results"), getattr(result, "message", result.kind)
    return result.plan, [{k: v for k, v in row.items() if k != "ref"} for row in result.rows]


@pytest.mark.parametrize(
    "question",
    [
        "Give the largest and the smallest tonnage of the vessels.",
        "What is the maximum, and minimum tonnage among vessels?",
    ],
)
def test_two_extremes_of_one_field_in_one_row(settings, question):
    plan, rows = plan_and_rows(settings, question)
    assert rows == [{"max_Tonnage": 2100, "min_Tonnage": 400}]
    assert plan.not_understood == []


def test_measures_of_two_fields_at_once(settings):
    _, rows = plan_and_rows(settings, "Show the mean tonnage along with the largest crew size of all vessels.")
    assert rows == [{"avg_Tonnage": sum(v["Tonnage"] for v in VESSELS) / 6, "max_Crew_size": 30}]


def test_a_measure_per_value_of_a_named_field(settings):
    plan, rows = plan_and_rows(settings, "Report the combined crew size for each port.")
    assert rows == [
        {"_id": "Hull", "sum_Crew_size": 41},
        {"_id": "Leith", "sum_Crew_size": 14},
        {"_id": "Wick", "sum_Crew_size": 30},
    ]
    assert plan.not_understood == []


def test_a_count_beside_the_measures_of_each_group(settings):
    _, rows = plan_and_rows(settings, "Per port, how many vessels and the average tonnage?")
    assert rows == [
        {"_id": "Hull", "count": 3, "avg_Tonnage": 3100 / 3},
        {"_id": "Leith", "count": 2, "avg_Tonnage": 525},
        {"_id": "Wick", "count": 1, "avg_Tonnage": 2100},
    ]


@pytest.mark.parametrize(
    "question,ports",
    [
        ("Which ports have at least two vessels?", ["Hull", "Leith"]),
        ("List the ports with 3 or more vessels.", ["Hull"]),
        ("Ports that are home to more than one vessel", ["Hull", "Leith"]),
        ("Which ports have exactly one vessel?", ["Wick"]),
        ("Show ports having multiple vessels.", ["Hull", "Leith"]),
    ],
)
def test_the_values_whose_records_meet_a_count(settings, question, ports):
    plan, rows = plan_and_rows(settings, question)
    assert rows == [{"_id": p} for p in ports]
    assert plan.not_understood == []


def test_a_count_of_something_else_is_no_condition_on_the_groups(settings):
    # "12 crew" is a crew size, not a number of vessels: no group of ports
    plan, _ = plan_and_rows(settings, "Which ports have vessels with more than 12 crew size?")
    assert plan.ir.shape.kind != "distinct" or not plan.ir.shape.having


def test_one_extreme_alone_stays_one_number(settings):
    plan, rows = plan_and_rows(settings, "What is the largest tonnage of the vessels?")
    assert plan.ir.shape.kind == "max"
    assert rows == [{"max": 2100}]

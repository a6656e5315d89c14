"""A tenant's own kinds (issue 28): question words linked to fields by the words of their names, and
what a question asks of those fields — comparisons, an order, the record with the highest value, an
average, the distinct values — planned offline and run through the engine on a tenant loaded the way
`eval tend` loads one (every field holding names a value field)."""

from __future__ import annotations

import pytest

from context_engine.assistant.structured_query import run_structured
from context_engine.config import Settings
from context_engine.eval.tend import NOW, load_database, tenant_of
from context_engine.query.planner.own_fields import field_words, names
from context_engine.store.documents import open_store

EMPLOYEES = [
    {"Employee_ID": 1, "Name": "Ann Lee", "City": "Oslo", "Salary": 25000, "Age": 30},
    {"Employee_ID": 2, "Name": "Bo Dahl", "City": "Bergen", "Salary": 43000, "Age": 45},
    {"Employee_ID": 3, "Name": "Cy Moss", "City": "Oslo", "Salary": 55000, "Age": 28},
    {"Employee_ID": 4, "Name": "Di Holt", "City": "Tromso", "Salary": 38000, "Age": 51},
]

SHOPS = [  # products embedded in their shop, as TEND embeds child tables
    {
        "Shop_ID": 1,
        "Shop_name": "North",
        "Products": [{"Title": "Kettle", "Price": 30}, {"Title": "Lamp", "Price": 250}],
    },
    {"Shop_ID": 2, "Shop_name": "South", "Products": [{"Title": "Rug", "Price": 120}]},
]


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    s = Settings().with_overrides(data_dir=tmp_path_factory.mktemp("own"))
    store = open_store(s)
    load_database(store, "firm", {"employee": EMPLOYEES, "shop": SHOPS})
    store.commit()
    return s.with_overrides(tenant=tenant_of("firm"), use_llm=False)


def ask(settings, question):
    result = run_structured(question, settings, now=NOW)
    assert result.kind in ("success", "no_results"), getattr(result, "message", result.kind)
    return [{k: v for k, v in row.items() if k != "ref"} for row in result.rows]


def test_field_words_split_camel_and_snake_case():
    assert field_words("Total_Passengers") == ["total", "passengers"]
    assert field_words("openYear") == ["open", "year"]
    assert field_words("orchestra.performance.Share") == ["share"]


@pytest.mark.parametrize(
    "word,field,expected",
    [
        ("names", "name", True),
        ("cities", "city", True),
        ("classes", "class", True),
        ("weigh", "weight", True),  # a shared start of 4 letters or more
        ("cat", "category", False),  # three letters name nothing by their start
        ("age", "agent", False),
        ("salary", "sales", False),
    ],
)
def test_a_question_word_names_a_field_word(word, field, expected):
    assert names(word, field) is expected


def test_a_list_shows_exactly_the_fields_named(settings):
    rows = ask(settings, "List the names and cities of all employees.")
    assert sorted(rows, key=lambda r: r["Name"]) == [{"Name": e["Name"], "City": e["City"]} for e in EMPLOYEES]


@pytest.mark.parametrize(
    "question,names_",
    [
        ("List the names of employees whose salary is more than 38,000.", {"Bo Dahl", "Cy Moss"}),
        ("List the names of employees with a salary of at least 38,000.", {"Bo Dahl", "Cy Moss", "Di Holt"}),
        ("Names of employees with salary between 30,000 and 50,000", {"Bo Dahl", "Di Holt"}),
        ("Which employees have an age under 30? Give their names.", {"Cy Moss"}),
    ],
)
def test_comparisons_on_a_named_number(settings, question, names_):
    assert {r["Name"] for r in ask(settings, question)} == names_


def test_an_order_by_a_named_field(settings):
    rows = ask(settings, "Show the names of employees sorted by salary in descending order.")
    assert [r["Name"] for r in rows] == ["Cy Moss", "Bo Dahl", "Di Holt", "Ann Lee"]
    rows = ask(settings, "Show the names of employees ordered by age.")
    assert [r["Name"] for r in rows] == ["Cy Moss", "Ann Lee", "Bo Dahl", "Di Holt"]


def test_the_record_with_the_highest_value_shows_the_fields_asked(settings):
    assert ask(settings, "What is the name of the employee with the highest salary?") == [{"Name": "Cy Moss"}]
    assert ask(settings, "What is the city of the employee with the lowest age?") == [{"City": "Oslo"}]


def test_average_maximum_and_distinct_values(settings):
    assert ask(settings, "What is the average salary of employees?") == [{"average": 40250}]
    assert ask(settings, "What is the maximum age of the employees?") == [{"max": 51}]
    assert [r["_id"] for r in ask(settings, "List the different cities of employees.")] == ["Bergen", "Oslo", "Tromso"]
    assert ask(settings, "How many distinct cities are there among employees?") == [{"count": 3}]


def test_a_stored_name_is_a_value_not_an_unknown_person(settings):
    assert ask(settings, "What is the salary of the employee named Ann Lee?") == [{"Salary": 25000}]
    assert ask(settings, "How many employees live in the city Oslo?") == [{"count": 2}]


def test_a_name_the_data_does_not_hold_is_still_declined(settings):
    result = run_structured("What is the salary of the employee named Zed Quux?", settings, now=NOW)
    assert result.kind == "resolution_failed" and "Zed Quux" in result.message


def test_the_most_common_value_is_the_value_alone(settings):
    assert ask(settings, "Which city is the most common among employees?") == [{"_id": "Oslo"}]
    assert ask(settings, "Find the city with the highest number of employees.") == [{"_id": "Oslo"}]
    # a tie is broken by the value, so the answer is the same every time
    assert ask(settings, "What is the least common city of employees?") == [{"_id": "Bergen"}]


def test_a_superlative_says_how_many_records(settings):
    rows = ask(settings, "List the names of the two employees with the highest salary.")
    assert [r["Name"] for r in rows] == ["Cy Moss", "Bo Dahl"]


def test_counts_per_value_of_a_field_named_after_a_grouping_word(settings):
    rows = ask(settings, "Show the number of employees in each city.")
    assert rows == [{"_id": "Oslo", "count": 2}, {"_id": "Bergen", "count": 1}, {"_id": "Tromso", "count": 1}]
    # a number is no group: "by salary" orders or compares, it does not count per salary
    assert all("count" not in r for r in ask(settings, "List the names of employees sorted by salary."))


def test_fields_of_embedded_records_answer_one_row_per_element(settings):
    rows = ask(settings, "What are the titles of products with a price at most 200?")
    assert sorted(r["Products"]["Title"] for r in rows) == ["Kettle", "Rug"]
    # a condition on embedded records alone keeps the answer about the records that hold them
    assert ask(settings, "List the shop names of shops with a price above 200.") == [{"Shop_name": "North"}]


def test_alphabetical_order_of_the_names_shown(settings):
    rows = ask(settings, "List the names of all employees in alphabetical order.")
    assert [r["Name"] for r in rows] == ["Ann Lee", "Bo Dahl", "Cy Moss", "Di Holt"]
    rows = ask(settings, "Show all employee cities and names sorted in reverse alphabetical order.")
    assert [r["City"] for r in rows] == ["Tromso", "Oslo", "Oslo", "Bergen"]


DEPLOYS = [
    {"deploy_id": "D-1", "deployed_by": "ann", "duration_seconds": 100, "size_mb": 12, "env": "prod"},
    {"deploy_id": "D-2", "deployed_by": "bo", "duration_seconds": 300, "size_mb": 30, "env": "prod"},
    {"deploy_id": "D-3", "deployed_by": "ann", "duration_seconds": 50, "size_mb": 8, "env": "staging"},
]


@pytest.fixture(scope="module")
def deploy_settings(tmp_path_factory):
    s = Settings().with_overrides(data_dir=tmp_path_factory.mktemp("deploys"))
    store = open_store(s)
    load_database(store, "ops", {"deploy": DEPLOYS})
    store.commit()
    return s.with_overrides(tenant=tenant_of("ops"), use_llm=False)


def test_a_field_is_named_without_its_unit_and_an_average_is_of_a_measure(deploy_settings):
    # "deploy" also begins `deploy_id`, `deployed_by`: an average is about the measure after it
    assert ask(deploy_settings, "average deploy duration") == [{"average": 150}]
    assert ask(deploy_settings, "what is the mean size of prod deploys?") == [{"average": 21}]
    assert ask(deploy_settings, "maximum duration of the deploys") == [{"max": 300}]


def test_a_total_of_a_measure_is_its_sum_but_a_total_number_counts(deploy_settings):
    assert ask(deploy_settings, "total deploy duration in prod") == [{"total": 400}]
    assert ask(deploy_settings, "what is the sum of the size of all deploys?") == [{"total": 50}]
    assert ask(deploy_settings, "what is the total number of deploys?") == [{"count": 3}]


@pytest.mark.parametrize(
    "question",
    [
        "Which shops have no products?",
        "Shop names without any products",
        "List the shops that do not stock any products.",
        "Shops that never had a product",
    ],
)
def test_a_negated_embedded_array_is_empty_or_missing(tmp_path, question):
    s = Settings().with_overrides(data_dir=tmp_path)
    store = open_store(s)
    empty_shops = [{"Shop_ID": 3, "Shop_name": "East", "Products": []}, {"Shop_ID": 4, "Shop_name": "West"}]
    load_database(store, "stock", {"shop": SHOPS + empty_shops})
    store.commit()
    rows = ask(s.with_overrides(tenant=tenant_of("stock"), use_llm=False), question)
    assert sorted(r["Shop_name"] for r in rows) == ["East", "West"]

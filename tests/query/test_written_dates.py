"""Years and days spoken in words read as digits (query/written_dates.py); counts in words are left alone."""

from __future__ import annotations

import pytest

from context_engine.query.written_dates import dates_in_digits, months_spelt_right


@pytest.mark.parametrize(
    "asked,read",
    [
        ("issues opened in twenty twenty-two", "issues opened in 2022"),
        ("PRs closed during Twenty Nineteen?", "PRs closed during 2019?"),
        ("messages from two thousand and eight", "messages from 2008"),
        ("the first half of two thousand seventeen", "the first half of 2017"),
        ("nineteen ninety-nine releases", "1999 releases"),
        ("since twenty oh six", "since 2006"),
        ("posted on the twenty-second of March", "posted on the 22nd of March"),
        ("closed on june the third, 2023", "closed on june the 3rd, 2023"),
    ],
)
def test_a_spoken_year_is_written_in_digits(asked, read):
    assert dates_in_digits(asked) == read


@pytest.mark.parametrize(
    "asked",
    [
        "the top twenty issues",
        "two thousand messages",
        "twenty-five PRs",
        "nineteen comments in 2020",
        "the first half of May",
        "March the second week",
    ],
)
def test_numbers_that_are_no_year_are_kept(asked):
    assert dates_in_digits(asked) == asked


@pytest.mark.parametrize(
    "asked,read",
    [
        ("how many PRs were merged in Febuary 2022?", "how many PRs were merged in February 2022?"),
        ("merged prs febuary 2022 count", "merged prs february 2022 count"),
        ("issues closed in Septmber 2020", "issues closed in September 2020"),
        ("since Janury", "since January"),
        # not where a month is said, an English word, or near two months: kept
        ("Febuary's PRs", "Febuary's PRs"),
        ("match 2021 results", "match 2021 results"),
        ("Juny 2020", "Juny 2020"),
    ],
)
def test_a_misspelt_month_is_written_right(asked, read):
    assert months_spelt_right(asked, set()) == (read, None)


def test_a_misspelt_month_that_is_someones_name_is_not_taken_either_way():
    # someone is called Junee: "in Junee 2020" is asked about, neither the month nor the person assumed
    assert months_spelt_right("PRs merged in Junee 2020", {"junee"}) == ("PRs merged in Junee 2020", ("Junee", "june"))

"""Years and days spoken in words read as digits (query/written_dates.py); counts in words are left alone."""

from __future__ import annotations

import pytest

from context_engine.query.written_dates import dates_in_digits


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

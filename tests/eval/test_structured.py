"""The evaluator's comparison of one answer with its gold (`context_engine.eval.structured.same_answer`)."""

from __future__ import annotations

from context_engine.eval.structured import answer_key, same_answer


def test_a_mean_or_a_share_is_met_within_a_relative_tolerance():
    # The same mean summed in another order differs in its last digits; a wrong mean differs in the first ones.
    assert same_answer(answer_key([{"_id": None, "avg": 12.345678}], "value"), 12.3456, "value")
    assert same_answer(0.6667, 2 / 3, "value")
    assert not same_answer(0.66, 2 / 3, "value")
    assert not same_answer(answer_key([{"_id": None, "mean": 13.0}], "value"), 12.5, "value")


def test_a_whole_number_gold_is_met_only_exactly():
    assert same_answer(734, 734, "value")
    assert not same_answer(734.4, 734, "value")  # a sum or a maximum has no rounding to forgive
    assert not same_answer(735, 734, "count")
    assert not same_answer(0.6667, 2 / 3, "count")  # only a `value` is compared with a tolerance


def test_a_winning_month_or_day_stated_alone_is_the_answers_dated_one():
    """The question fixed the year (or the month): "the 6th" and 2019-03-06 name the same day."""
    assert same_answer(answer_key([{"_id": "2021-03", "count": 9}], "top"), 3, "top")
    assert same_answer(answer_key([{"_id": "2019-03-06", "count": 222}], "top"), 6, "top")
    assert not same_answer(answer_key([{"_id": "2019-03-07", "count": 166}], "top"), 6, "top")
    assert not same_answer(answer_key([{"_id": "lhoestq", "count": 6}], "top"), 6, "top")


def test_counts_per_month_of_one_year_are_the_gold_s_counts_per_month_alone():
    """ "merges per month for the first half of 2024": a gold grouped by `$month` (1 … 6) and an answer per
    "2024-01" … "2024-06" are the same counts; per month of two different years they are not."""
    one_year = answer_key([{"_id": "2024-01", "count": 5}, {"_id": "2024-02", "count": 7}], "groups")
    assert same_answer(one_year, {(1, 5), (2, 7)}, "groups")
    assert not same_answer(one_year, {(1, 5), (2, 8)}, "groups")
    two_years = answer_key([{"_id": "2023-12", "count": 5}, {"_id": "2024-01", "count": 7}], "groups")
    assert not same_answer(two_years, {(12, 5), (1, 7)}, "groups")
    assert same_answer(one_year, {((2024, 1), 5), ((2024, 2), 7)}, "groups")  # dated gold: as ever


def test_the_report_gives_the_median_model_cost_of_the_questions_the_model_was_asked():
    from context_engine.eval.structured import QuestionResult, StructuredReport

    def result(calls: int, chars: int, tokens: int, seconds: float) -> QuestionResult:
        return QuestionResult("", "q", True, "llm" if calls else "offline", seconds + 1, "", "", False, False,
                              calls, chars, tokens, seconds)  # fmt: skip

    report = StructuredReport([result(0, 0, 0, 0.0), result(1, 900, 60, 8.0), result(2, 2000, 150, 20.0),
                               result(1, 1000, 80, 10.0)])  # fmt: skip
    cost = report.to_json()["model_cost"]
    assert cost == {
        "questions": 3,
        "median_model_calls": 1,
        "median_prompt_chars": 1000,
        "median_completion_tokens": 80,
        "median_model_seconds": 10.0,
        "median_seconds": 11.0,
    }
    assert StructuredReport([result(0, 0, 0, 0.0)]).model_cost() == {"questions": 0}

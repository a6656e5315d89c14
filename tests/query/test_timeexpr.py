from datetime import datetime, timedelta

import pytest

from context_engine.query.timeexpr import AmbiguousTime, find_time_ranges, timeish_spans

NOW = datetime(2026, 11, 30, 12, 0)  # a Monday
D = datetime


@pytest.mark.parametrize(
    "text,start,end",
    [
        ("PRs merged last week", D(2026, 11, 23), D(2026, 11, 30)),
        ("this week", D(2026, 11, 30), NOW),  # periods in progress end at now
        ("yesterday", D(2026, 11, 29), D(2026, 11, 30)),
        ("in the last 7 days", D(2026, 11, 24), NOW),
        ("past 2 weeks", D(2026, 11, 17), NOW),
        ("since March", D(2026, 3, 1), None),
        ("in March 2023", D(2023, 3, 1), D(2023, 4, 1)),
        ("Q1 2023", D(2023, 1, 1), D(2023, 4, 1)),
        ("in 2021", D(2021, 1, 1), D(2022, 1, 1)),
        ("last month", D(2026, 10, 1), D(2026, 11, 1)),
        ("上周", D(2026, 11, 23), D(2026, 11, 30)),
        ("本月", D(2026, 11, 1), NOW),
        ("between Oct 5 and Oct 9", D(2026, 10, 5), D(2026, 10, 10)),
        ("from March through May 2026", D(2026, 3, 1), D(2026, 6, 1)),
        ("in the first half of 2026", D(2026, 1, 1), D(2026, 7, 1)),
        ("Jan through May 2019", D(2019, 1, 1), D(2019, 6, 1)),  # one period, not January and "until May"
        ("2023 年第三季度", D(2023, 7, 1), D(2023, 10, 1)),
        ("closed in the last quarter of 2019", D(2019, 10, 1), D(2020, 1, 1)),  # its Q4, not the last quarter
        ("posts from the beginning of June 2025 on", D(2025, 6, 1), None),
        ("during the previous calendar year", D(2025, 1, 1), D(2026, 1, 1)),
        ("over the summer of 2018", D(2018, 6, 1), D(2018, 9, 1)),  # seasons of the northern hemisphere
        ("in autumn 2019", D(2019, 9, 1), D(2019, 12, 1)),
        ("2018年春天", D(2018, 3, 1), D(2018, 6, 1)),
        ("第三季度", D(2026, 7, 1), D(2026, 10, 1)),
        ("去年", D(2025, 1, 1), D(2026, 1, 1)),
        ("最近7天", D(2026, 11, 24), NOW),
        ("最近三十天", D(2026, 11, 1), NOW),
        ("2021年", D(2021, 1, 1), D(2022, 1, 1)),
        ("2023年3月", D(2023, 3, 1), D(2023, 4, 1)),
        ("since March 3, 2024", D(2024, 3, 3), None),
        ("before 2025-06-01", None, D(2025, 6, 1)),
        ("landed during July '21", D(2021, 7, 1), D(2021, 8, 1)),  # a year written with an apostrophe
        ("PRs merged in '21", D(2021, 1, 1), D(2022, 1, 1)),
        ("in the first week of April 2019", D(2019, 4, 1), D(2019, 4, 8)),
        ("the 2nd week of May 2021", D(2021, 5, 8), D(2021, 5, 15)),
        ("the last week of February 2024", D(2024, 2, 23), D(2024, 3, 1)),  # the month's last seven days
        ("in the second half of the year", D(2026, 7, 1), NOW),
        ("between 10 and 20 May 2019", D(2019, 5, 10), D(2019, 5, 21)),  # both days included
        ("posters, Feb 1-14 2019", D(2019, 2, 1), D(2019, 2, 15)),
        ("the first fortnight of February 2019", D(2019, 2, 1), D(2019, 2, 15)),
        ("2019 年 1 到 5 月", D(2019, 1, 1), D(2019, 6, 1)),
        ("issues closed during the previous calendar month", D(2026, 10, 1), D(2026, 11, 1)),
        ("bug reports filed no later than the end of 2020", None, D(2021, 1, 1)),  # not "later than": before
        ("messages before Christmas 2017", None, D(2017, 12, 25)),
        ("2017 年圣诞节之前", None, D(2017, 12, 25)),
        ("2021 年 下半年", D(2021, 7, 1), D(2022, 1, 1)),  # spaced like the other Chinese periods
        # two bare months bounding a period, the year said once at the end: both months are of that year
        ("feb–apr 2025", D(2025, 2, 1), D(2025, 5, 1)),
        ("March to May 2021", D(2021, 3, 1), D(2021, 6, 1)),
        ("between the beginning of March and the end of May 2021", D(2021, 3, 1), D(2021, 6, 1)),
        ("from the first of last month up to today", D(2026, 10, 1), NOW),
        # days written before their month, at both ends of a run of days
        ("tickets filed between 3 October and 9 November 2026", D(2026, 10, 3), D(2026, 11, 10)),
        ("from the 2nd of March to the 20th of April 2025", D(2025, 3, 2), D(2025, 4, 21)),
        ("over the past fortnight", D(2026, 11, 17), NOW),  # two weeks ending today, as "past 2 weeks"
        ("the second half of October 2025", D(2025, 10, 16), D(2025, 11, 1)),
        ("on new year's eve 2024", D(2024, 12, 31), D(2025, 1, 1)),
        ("from Christmas Eve to New Year's Day", D(2025, 12, 24), D(2026, 1, 2)),  # the latest ones before now
        ("since the new year", D(2026, 1, 1), NOW),
        ("on Valentine's Day 2019", D(2019, 2, 14), D(2019, 2, 15)),
        # the words that open a period after an aside in brackets that spells it out
        ("2017 年圣诞节（12 月 25 日）之前", None, D(2017, 12, 25)),
        ("Christmas 2017 (December 25) or earlier", None, D(2017, 12, 26)),
        ("posted on halloween", D(2026, 10, 31), D(2026, 11, 1)),  # the latest one before now
        ("shipped in autumn 2025 (Sep–Nov)", D(2025, 9, 1), D(2025, 12, 1)),  # the brackets only spell it out
        ("just the May threads", D(2026, 5, 1), D(2026, 6, 1)),  # "May" before the records it dates
        ("and for May?", D(2026, 5, 1), D(2026, 6, 1)),  # after "for", or at the end of the question: the month
        ("and May?", D(2026, 5, 1), D(2026, 6, 1)),
        ("what about May then", D(2026, 5, 1), D(2026, 6, 1)),
    ],
)
def test_time_expressions(text, start, end):
    ranges = find_time_ranges(text, NOW)
    assert len(ranges) == 1, ranges
    assert (ranges[0].start, ranges[0].end) == (start, end)


@pytest.mark.parametrize(
    "text", ["may I see the open PRs?", "issues that may be duplicates", "what may have broken it"]
)
def test_may_the_verb_is_no_month(text):
    assert find_time_ranges(text, NOW) == []


def test_the_last_days_asked_at_midnight_are_the_whole_days_before():
    # at 00:00 nothing of the new day has passed: "the last 10 days" are the ten days before now
    midnight = datetime(2026, 11, 30)
    (rng,) = find_time_ranges("in the last 10 days", midnight)
    assert (rng.start, rng.end) == (D(2026, 11, 20), midnight)


def test_a_bracketed_period_that_is_not_the_same_stays_a_second_period():
    assert len(find_time_ranges("closed in 2025 (March)", NOW)) == 2


def test_last_week_on_a_sunday_is_still_the_previous_iso_week():
    (rng,) = find_time_ranges("last week", datetime(2026, 11, 29, 23, 0))
    assert (rng.start, rng.end) == (D(2026, 11, 16), D(2026, 11, 23))


def test_verb_before_a_range_is_kept():
    (rng,) = find_time_ranges("issues closed this month", NOW)
    assert rng.verb == "closed"


def test_winter_spans_two_years_and_is_not_guessed():
    assert [r.text for r in find_time_ranges("messages in the winter of 2018", NOW)] == ["2018"]


def test_no_time_in_plain_question():
    assert find_time_ranges("open PRs by Rashid", NOW) == []


@pytest.mark.parametrize(
    "text,start,end",
    [
        # a period opened at one end by the words around it; NOW is 2026-11-30
        ("before 2024", None, D(2024, 1, 1)),
        ("prior to March 2025", None, D(2025, 3, 1)),
        ("earlier than 2022", None, D(2022, 1, 1)),
        ("through 2023", None, D(2024, 1, 1)),  # until/through include the period named
        ("until last week", None, D(2026, 11, 30)),
        ("after 2024", D(2025, 1, 1), None),  # after a period: from its end
        ("after March 2019", D(2019, 4, 1), None),
        ("2022 onwards", D(2022, 1, 1), None),
        ("from June 2025 on", D(2025, 6, 1), None),
        ("since the beginning of April", D(2026, 4, 1), None),
        ("pre-2020", None, D(2020, 1, 1)),
        ("post-2020", D(2021, 1, 1), None),
        ("2019 年之前", None, D(2019, 1, 1)),
        ("2020 年以前", None, D(2020, 1, 1)),
        ("2021 年以后", D(2021, 1, 1), None),  # 以后: from then on, the year included
        ("2021 年 6 月之后", D(2021, 7, 1), None),  # 之后: after June, like "after June 2021"
        ("从五月以来", D(2026, 5, 1), None),
        ("prior to 1 May 2020", None, D(2020, 5, 1)),  # a day, opened at one end
        ("up to the end of January 2019", None, D(2019, 2, 1)),
        ("by March 2024", None, D(2024, 4, 1)),
        ("since January 1st this year", D(2026, 1, 1), None),
        ("2022 年 3 月底之后", D(2022, 4, 1), None),  # after the end of March
        ("since the start of last week", D(2026, 11, 23), NOW),  # a period counted from now reaches now
        ("since the first day of this quarter", D(2026, 10, 1), NOW),  # its first day is its start
        ("since the 1st of this month", D(2026, 11, 1), NOW),
        ("predating 2020", None, D(2020, 1, 1)),
        ("postdating June 2024", D(2024, 7, 1), None),
        ("2019 or earlier", None, D(2020, 1, 1)),  # the period named and all before it
        ("May 2024, or before", None, D(2024, 6, 1)),
        ("2018 年及以前", None, D(2019, 1, 1)),
    ],
)
def test_open_ended_periods(text, start, end):
    (rng,) = find_time_ranges(text, NOW)
    assert (rng.start, rng.end) == (start, end)
    assert rng.text == text  # the words that opened it are the expression's own


@pytest.mark.parametrize(
    "text,day",
    [
        ("messages from 14 February 2019", D(2019, 2, 14)),  # "from" a day names the day itself
        ("PRs merged on May 1st, 2020", D(2020, 5, 1)),
        ("issues opened 2024-03-05", D(2024, 3, 5)),
        ("Huong 在 2019 年 2 月 14 日发了哪些消息", D(2019, 2, 14)),
        ("what did I post on the 3rd of March 2025", D(2025, 3, 3)),
    ],
)
def test_one_calendar_day(text, day):
    (rng,) = find_time_ranges(text, NOW)
    assert (rng.start, rng.end) == (day, day.replace(day=day.day + 1))


@pytest.mark.parametrize(
    "text,start,end",
    [
        ("messages from March 2025", D(2025, 3, 1), D(2025, 4, 1)),  # a bare "from" names the month itself
        ("what did I post this month", D(2026, 11, 1), NOW),  # "post" the verb opens nothing
        ("the 2.0 release was in 2021", D(2021, 1, 1), D(2022, 1, 1)),
    ],
)
def test_words_that_do_not_open_a_period(text, start, end):
    (rng,) = find_time_ranges(text, NOW)
    assert (rng.start, rng.end) == (start, end)


def test_an_open_period_keeps_the_verb_before_it():
    (rng,) = find_time_ranges("PRs merged before 2021", NOW)
    assert rng.verb == "merged" and rng.text == "before 2021"


@pytest.mark.parametrize(
    "text,start",
    [
        ("posts in the week of March 14, 2018", datetime(2018, 3, 12)),  # a Wednesday: its Monday
        ("the week of 12 March 2018", datetime(2018, 3, 12)),  # a Monday: itself
        ("during the week starting 2018-03-18", datetime(2018, 3, 12)),  # a Sunday: the Monday before
        ("2018 年 3 月 14 日那一周的消息", datetime(2018, 3, 12)),
    ],
)
def test_the_week_of_a_day_is_its_monday_to_monday_week(text, start):
    (found,) = find_time_ranges(text, NOW)
    assert (found.start, found.end) == (start, start + (datetime(2018, 1, 8) - datetime(2018, 1, 1)))


def test_a_day_without_the_week_of_is_still_one_day():
    (found,) = find_time_ranges("posts on March 14, 2018", NOW)
    assert (found.start, found.end) == (datetime(2018, 3, 14), datetime(2018, 3, 15))


@pytest.mark.parametrize(
    "text,start,end",
    [
        ("2023 年下半年的 issue", datetime(2023, 7, 1), datetime(2024, 1, 1)),  # spaced or not
        ("2023年 上半年", datetime(2023, 1, 1), datetime(2023, 7, 1)),
        ("上半年合并了几个", datetime(2026, 1, 1), datetime(2026, 7, 1)),  # alone: this year's
    ],
)
def test_chinese_halves_of_a_year(text, start, end):
    (found,) = find_time_ranges(text, NOW)
    assert (found.start, found.end) == (start, end)


def test_last_years_half_is_not_read_as_this_years():
    assert all(r.start is None or r.start.year != 2026 for r in find_time_ranges("去年上半年", NOW))


@pytest.mark.parametrize(
    "text,start,end",
    [
        ("tickets from Q3 '22", D(2022, 7, 1), D(2022, 10, 1)),  # a two-digit year after an apostrophe
        ("Q1 ’24 releases", D(2024, 1, 1), D(2024, 4, 1)),
        ("posts since Friday", D(2026, 11, 27), NOW),  # NOW is a Monday: the Friday before it, up to now
        ("since this Monday", D(2026, 11, 30), NOW),  # today is that day
        ("what was said on Saturday", D(2026, 11, 28), D(2026, 11, 29)),
        ("自星期四以来", D(2026, 11, 26), NOW),
        ("从周日到现在", D(2026, 11, 29), NOW),
        ("上周一共合并了几个", D(2026, 11, 23), D(2026, 11, 30)),
        (
            "这个月到现在的消息",
            D(2026, 11, 1),
            NOW,
        ),  # a named period "up to now" still ends now  # last week and 一共 ("in all"), no Monday
    ],
)
def test_short_years_and_weekdays(text, start, end):
    (rng,) = find_time_ranges(text, NOW)
    assert (rng.start, rng.end) == (start, end)


def test_a_verb_dates_a_period_across_in_the():
    (rng,) = find_time_ranges("PRs we merge during the last quarter", NOW)
    assert rng.verb == "merged"
    (rng,) = find_time_ranges("bugs we resolve in the previous month", NOW)
    assert rng.verb == "resolved"


@pytest.mark.parametrize(
    "text,start,end",
    [
        # counts written as words, up to a hundred
        ("tickets from the past sixty days", D(2026, 10, 2), NOW),
        ("over the last twenty-one days", D(2026, 11, 10), NOW),
        ("in the previous eleven weeks", D(2026, 9, 15), NOW),
        # a season named from now: the latest one over (summer 2026 at a November now), up to now after "since"
        ("since last summer", D(2026, 6, 1), NOW),
        ("during last spring", D(2026, 3, 1), D(2026, 6, 1)),
        ("去年秋天", D(2025, 9, 1), D(2025, 12, 1)),
        ("今年夏天以来", D(2026, 6, 1), NOW),
        # a two-digit year after a run of months is the year of both
        ("from april to august '21", D(2021, 4, 1), D(2021, 9, 1)),
        # "on" before a noun is no "from 2024 on"
        ("in 2024 on average", D(2024, 1, 1), D(2025, 1, 1)),
        ("from 2024 on", D(2024, 1, 1), None),
        # an age said in Chinese: open that long, created before now minus it
        ("还开着、而且已经超过一年的", None, D(2025, 11, 30)),
        ("开了超过 3 个月还没关的", None, D(2026, 8, 30)),
        ("已经开了超过 30 天的", None, NOW - timedelta(days=30)),
    ],
)
def test_number_words_seasons_from_now_and_short_years(text, start, end):
    (found,) = find_time_ranges(text, NOW)
    assert (found.start, found.end) == (start, end)


def test_last_summer_asked_in_summer_is_the_year_before():
    (found,) = find_time_ranges("last summer", datetime(2026, 7, 15))
    assert (found.start, found.end) == (D(2025, 6, 1), D(2025, 9, 1))


# Time written the many ways people write it (session 23): each form alone, at a fixed `now`.
@pytest.mark.parametrize(
    "text,start,end",
    [
        # a month in digits, either way round, with "/" or "-"
        ("number of issues opened in 03/2021", D(2021, 3, 1), D(2021, 4, 1)),
        ("issues opened in 3/2021", D(2021, 3, 1), D(2021, 4, 1)),
        ("issues created 2021-03, how many?", D(2021, 3, 1), D(2021, 4, 1)),
        ("2021/03 开了多少个 issue？", D(2021, 3, 1), D(2021, 4, 1)),
        ("12-2020", D(2020, 12, 1), D(2021, 1, 1)),
        ("on 2021-03-05", D(2021, 3, 5), D(2021, 3, 6)),  # a day stays a day
        ("issues from 2019-2021", D(2019, 1, 1), D(2022, 1, 1)),
        ("2019–2021", D(2019, 1, 1), D(2022, 1, 1)),
        # a day in digits that reads one way only
        ("on 21/12/2020", D(2020, 12, 21), D(2020, 12, 22)),
        ("on 12/21/2020", D(2020, 12, 21), D(2020, 12, 22)),
        ("on 5/5/2020", D(2020, 5, 5), D(2020, 5, 6)),
        # years named from now
        ("merged the year before last", D(2024, 1, 1), D(2025, 1, 1)),
        ("mariosasko 前年合并了几个 PR？", D(2024, 1, 1), D(2025, 1, 1)),
        ("大前年", D(2023, 1, 1), D(2024, 1, 1)),
        ("去年", D(2025, 1, 1), D(2026, 1, 1)),  # still last year, not 前年's
        # a quarter or a half of a year named from now
        ("opened in Q3 last year", D(2025, 7, 1), D(2025, 10, 1)),
        ("the third quarter of last year", D(2025, 7, 1), D(2025, 10, 1)),
        ("last year's Q3", D(2025, 7, 1), D(2025, 10, 1)),
        ("q1 of the year before last", D(2024, 1, 1), D(2024, 4, 1)),
        ("去年第三季度新开了多少 issue？", D(2025, 7, 1), D(2025, 10, 1)),
        ("今年第一季度", D(2026, 1, 1), D(2026, 4, 1)),
        ("the last quarter of 2021", D(2021, 10, 1), D(2022, 1, 1)),
        ("the first half of last year", D(2025, 1, 1), D(2025, 7, 1)),
        ("去年下半年", D(2025, 7, 1), D(2026, 1, 1)),
        # a part of a year: end = December, start/beginning = January, middle = June and July
        ("closed at the end of 2021", D(2021, 12, 1), D(2022, 1, 1)),
        ("at the beginning of 2022", D(2022, 1, 1), D(2022, 2, 1)),
        ("the start of last year", D(2025, 1, 1), D(2025, 2, 1)),
        ("at the start of this year", D(2026, 1, 1), datetime(2026, 11, 30, 12, 0)),  # from then up to now
        ("in the middle of 2022", D(2022, 6, 1), D(2022, 8, 1)),
        ("closed at the end of 2021 (in December)", D(2021, 12, 1), D(2022, 1, 1)),
        # ... but as a bound it bounds ("before the end of 2021" is before 2022)
        ("before the end of 2021", None, D(2022, 1, 1)),
        ("since the start of 2021", D(2021, 1, 1), None),
        ("by the end of 2021", None, D(2022, 1, 1)),
        ("between the start of April and the end of June 2022", D(2022, 4, 1), D(2022, 7, 1)),
        # the first/last month or week of a year, not "last month" named from now
        ("issues closed in the last month of 2021?", D(2021, 12, 1), D(2022, 1, 1)),
        ("the first month of 2020", D(2020, 1, 1), D(2020, 2, 1)),
        ("the last week of 2020", D(2020, 12, 25), D(2021, 1, 1)),
        ("the first week of last year", D(2025, 1, 1), D(2025, 1, 8)),
        # runs of days
        ("Dec 21-27, 2020", D(2020, 12, 21), D(2020, 12, 28)),
        ("Dec 21-27", D(2025, 12, 21), D(2025, 12, 28)),  # the latest such run
        ("12/21–12/27", D(2025, 12, 21), D(2025, 12, 28)),
        ("12/21–12/27 2020", D(2020, 12, 21), D(2020, 12, 28)),
        ("from the 21st to the 27th of December 2020", D(2020, 12, 21), D(2020, 12, 28)),
        ("21st to 27th Dec 2018", D(2018, 12, 21), D(2018, 12, 28)),
        ("between 10 and 20 May 2019", D(2019, 5, 10), D(2019, 5, 21)),
        ("created March 1-7, 2021", D(2021, 3, 1), D(2021, 3, 8)),
        # a bracketed period that pins down the vague one before it: the explicit one wins
        ("opened around Christmas 2020 (the week of Dec 21-27)?", D(2020, 12, 21), D(2020, 12, 28)),
        ("around Christmas 2018 (Dec 21-27)", D(2018, 12, 21), D(2018, 12, 28)),
        ("2020 年圣诞节前后那一周（12/21–12/27）开了哪些 issue？", D(2020, 12, 21), D(2020, 12, 28)),
        # the week that holds Christmas Day; pinned down after a comma by a run of days as long as it
        ("the Christmas week of 2018", D(2018, 12, 24), D(2018, 12, 31)),
        ("racket messages in the Christmas week of 2018, 21st to 27th Dec", D(2018, 12, 21), D(2018, 12, 28)),
        ("Lynne 在 2019 年 4 月第一周发了几条消息？", D(2019, 4, 1), D(2019, 4, 8)),
        # ... or that names when an open period begins: one period, not a second window of that month
        ("issues filed since last summer (june 2026)", D(2026, 6, 1), D(2026, 11, 30, 12)),
        ("PRs opened before 2022 (jan 2022)", None, D(2022, 1, 1)),
        ("2019 年 4 月的最后一周", D(2019, 4, 24), D(2019, 5, 1)),
        ("3 月第二个星期", D(2026, 3, 8), D(2026, 3, 15)),
        # the past year: the twelve months up to now, as the past 12 months ("last year" is the calendar one)
        ("messages posted in the past year", D(2025, 11, 30), D(2026, 11, 30, 12)),
        ("过去一年发了多少条消息", D(2025, 11, 30), D(2026, 11, 30, 12)),
        # abbreviations and two-digit years
        ("in Sept '22", D(2022, 9, 1), D(2022, 10, 1)),
        ("Sept ’17", D(2017, 9, 1), D(2017, 10, 1)),
        ("Sep. 2023", D(2023, 9, 1), D(2023, 10, 1)),
        ("Q4 2017", D(2017, 10, 1), D(2018, 1, 1)),
    ],
)
def test_time_written_many_ways(text, start, end):
    now = datetime(2026, 11, 30, 12, 0)
    ranges = find_time_ranges(text, now)
    assert len(ranges) == 1, ranges
    assert (ranges[0].start, ranges[0].end) == (start, end)


@pytest.mark.parametrize("text", ["on 03/04/2021", "between 3/4 and 5/6/2021", "3/4-5/6"])
def test_a_day_that_reads_both_ways_is_declined_with_both_readings(text):
    with pytest.raises(AmbiguousTime) as declined:
        find_time_ranges(text, NOW)
    assert "month/day" in str(declined.value) and "day/month" in str(declined.value)


def test_today_after_a_state_word_is_the_state_now_not_a_window():
    assert [r.text for r in find_time_ranges("PRs opened before 2022 still open today", NOW)] == ["before 2022"]
    assert [r.text for r in find_time_ranges("issues closed today", NOW)] == ["today"]


def test_a_bracketed_period_inside_one_said_outright_is_a_second_period():
    assert len(find_time_ranges("issues closed in 2025 (March)", NOW)) == 2


def test_a_period_after_a_comma_that_is_no_restatement_is_a_second_period():
    """ "in 2021, 3 to 5 March": three days inside a year, not the year said again."""
    assert len(find_time_ranges("issues opened in 2021, 3 to 5 March", NOW)) == 2


def test_a_bracketed_day_run_ends_the_vague_word_before_it_too():
    (rng,) = find_time_ranges("issues opened around Christmas 2020 (Dec 21-27)", NOW)
    assert rng.text.startswith("around")


# Words that look like a time but that no rule reads: the planner reports each one unread
# (tests/query/planner/test_unread_times.py); here, that they look like a time and are not read.
UNREADABLE = [
    ("PRs merged in Q5 2021", "Q5"),
    ("issues opened 2021-13", "2021-13"),
    ("issues from 2021/2022/2023", "2021/2022/2023"),
    ("issues closed 45/2021", "45/2021"),
    ("messages from 2019-2-30", "2019-2-30"),
    ("PRs merged in 1999", "1999"),
    ("issues 2021-2019", "2021-2019"),
]


@pytest.mark.parametrize("question,word", UNREADABLE)
def test_time_looking_words_no_rule_reads(question, word):
    spans = [question[a:b] for a, b in timeish_spans(question)]
    assert word in spans
    assert not any(word in r.text for r in find_time_ranges(question, NOW))


@pytest.mark.parametrize(
    "text,months",
    [
        ("new issues in Feb 2024 vs Jan — percent change?", [(2024, 2), (2024, 1)]),
        ("2024 年 2 月新开的 issue 环比 1 月变化了多少？", [(2024, 2), (2024, 1)]),
        ("Jan vs Feb", [(2026, 1), (2026, 2)]),  # no year said: the latest of each
    ],
)
def test_a_bare_month_beside_a_month_of_a_year_is_of_that_year(text, months):
    assert [(r.start.year, r.start.month) for r in find_time_ranges(text, NOW)] == months


@pytest.mark.parametrize("text", ["in the past 3 months", "over the last three months", "过去三个月", "最近 3 个月"])
def test_the_past_n_months_run_back_from_the_instant_now(text):
    # to the instant, as "now minus three months" reads: not from the midnight before
    (r,) = find_time_ranges(text, NOW)
    assert (r.start, r.end) == (datetime(2026, 8, 30, 12, 0), NOW)

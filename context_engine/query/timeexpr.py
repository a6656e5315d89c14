"""Time expressions in English and Chinese, resolved against `now` (UTC) to half-open ranges.

Calendar words follow ISO conventions: "last week" is the previous ISO week (Monday 00:00 UTC to
the next Monday), "this month" runs from the 1st to now. Chinese dates may be spaced ("2019 年 3 月").
Explicit dates that the rules below do not cover ("since March 3, 2024", "before 2025-06-01") are
parsed with `dateparser`, imported lazily.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from context_engine.text import EARLIEST, LATEST, TimeRangeError, check_time_range

MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
_CN_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
}
_UNIT_DAYS = {
    "day": 1,
    "days": 1,
    "week": 7,
    "weeks": 7,
    "fortnight": 14,
    "fortnights": 14,
    "天": 1,
    "日": 1,
    "周": 7,
    "星期": 7,
}


@dataclass(frozen=True)
class TimeRange:
    start: datetime | None  # inclusive
    end: datetime | None  # exclusive
    text: str  # the words that expressed it
    verb: str | None = None  # "merged", "created", ... when the phrase names one ("merged since May")


def _day(dt: datetime) -> datetime:
    return dt.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int) -> datetime:
    while month > 12:
        year, month = year + 1, month - 12
    while month < 1:
        year, month = year - 1, month + 12
    return datetime(year, month, 1)


def cn_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if text.startswith("十"):
        return 10 + _CN_DIGITS.get(text[1:], 0)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return _CN_DIGITS.get(tens, 1) * 10 + (_CN_DIGITS.get(ones, 0) if ones else 0)
    return _CN_DIGITS.get(text, 0)


def _most_recent_month(now: datetime, month: int) -> datetime:
    year = now.year if month <= now.month else now.year - 1
    return datetime(year, month, 1)


def _quarter(year: int, q: int) -> tuple[datetime, datetime]:
    start = datetime(year, 3 * (q - 1) + 1, 1)
    return start, _month_start(year, 3 * q + 1)


def _months_ago(day: datetime, months: int) -> datetime:
    """The same day and time of day `months` months before (the month's last day where it is shorter)."""
    first = _month_start(day.year, day.month - months)
    last_day = (_month_start(first.year, first.month + 1) - timedelta(days=1)).day
    return datetime.combine(first.replace(day=min(day.day, last_day)).date(), day.time())


def _period_start(now: datetime, period: str) -> datetime:
    day = _day(now)
    if period == "week":
        return day - timedelta(days=day.weekday())
    if period == "month":
        return day.replace(day=1)
    if period == "quarter":
        return datetime(now.year, 3 * ((now.month - 1) // 3) + 1, 1)
    return datetime(now.year, 1, 1)


def _year_of(now: datetime, month: int) -> int:
    return now.year if month <= now.month else now.year - 1


_SEASON_START = {"spring": 3, "春": 3, "summer": 6, "夏": 6, "fall": 9, "autumn": 9, "秋": 9}


def _season(year: int, season: str) -> tuple[datetime, datetime]:
    start = _SEASON_START[season.lower()]
    return datetime(year, start, 1), datetime(year, start + 3, 1)


def _last_season_year(now: datetime, season: str) -> int:
    """The year of the latest such season that is over by `now`."""
    _, end = _season(now.year, season)
    return now.year if end <= now else now.year - 1


def _half(year: int, half: int) -> tuple[datetime, datetime]:
    return (
        (datetime(year, 1, 1), datetime(year, 7, 1)) if half == 1 else (datetime(year, 7, 1), datetime(year + 1, 1, 1))
    )


def _week_of_month(which: str, year: int, month: int) -> tuple[datetime, datetime]:
    end = _month_start(year, month + 1)
    if which == "last":
        return end - timedelta(days=7), end
    start = datetime(year, month, 1) + timedelta(
        days=7
        * "first second third fourth".split().index(
            {"1st": "first", "2nd": "second", "3rd": "third", "4th": "fourth"}.get(which, which)
        )
    )
    return start, start + timedelta(days=7)


def _fortnight(which: str, year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1 if which == "first" else 15)
    return (start, start + timedelta(days=14)) if which == "first" else (start, _month_start(year, month + 1))


def _days_back(now: datetime, days: int) -> datetime:
    """The start of "the last N days": the N calendar days that end with the day in progress. At
    midnight no time of the new day has passed, so they are the N whole days before `now`."""
    day = _day(now)
    return (day if day == now else day + timedelta(days=1)) - timedelta(days=days)


def _half_of_month(which: str, year: int, month: int) -> tuple[datetime, datetime]:
    """ "the first half of November": days 1-15; the second: the 16th to the month's end."""
    middle = datetime(year, month, 16)
    return (datetime(year, month, 1), middle) if which == "first" else (middle, _month_start(year, month + 1))


_HOLIDAYS = {
    "christmas eve": (12, 24),
    "new year's eve": (12, 31),
    "new years eve": (12, 31),
    "new year's day": (1, 1),
    "new years day": (1, 1),
    "valentine's day": (2, 14),
    "valentines day": (2, 14),
    "halloween": (10, 31),
}
_HOLIDAY = r"(christmas eve|new year['’]?s eve|new year['’]?s day|(?:st\.? )?valentine['’]?s day|halloween)"


def _holiday(now: datetime, name: str, year: str | None) -> tuple[datetime, datetime]:
    """A named day of a year; said without one, the latest before now (as a bare month is)."""
    month, day = _HOLIDAYS[re.sub(r"^st\.? ", "", name.lower().replace("’", "'"))]
    start = datetime(int(year), month, day) if year else datetime(now.year, month, day)
    if not year and start > now:
        start = datetime(now.year - 1, month, day)
    return start, start + timedelta(days=1)


# A year named from now: "last year", "the year before last", 前年 (two years back), 大前年 (three)
_REL_YEAR = (
    r"(?:(?:the\s+)?year\s+before\s+last(?:\s+year)?|(?:the\s+)?(?:last|previous|prior|this|current)\s+year"
    r"|大前年|前年|去年|今年)"
)
_YEAR = rf"(20\d\d|{_REL_YEAR})"  # a year in digits or named from now


def _year_named(now: datetime, text: str) -> int:
    """The year of `_YEAR`'s words at `now`."""
    if text.isdigit():
        return int(text)
    if text == "大前年":
        return now.year - 3
    if "before" in text or text == "前年":
        return now.year - 2
    return now.year - bool(re.search(r"去年|last|previous|prior", text))


_ORDINAL_NUMBER = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "last": 4}
# The words right before "the end of 2021" that make it a bound of an open or joined period ("before the
# end of 2021", "from the start of April to the end of June 2022"): there the year is read whole and
# `_open_ended` / `_joined` place the bound, so the part of the year is not read on its own.
_BOUND_BEFORE = re.compile(
    r"(?:\b(?:before|prior to|earlier than|until|till|through|thru|up to|by|since|after|later than|from|between|starting"
    r"|beginning|and|to|as late as|no later than|not later than|not after)|-|–|到|至|从)\s*$"
)


def _part_of_year(m: re.Match, now: datetime) -> tuple[datetime, datetime] | None:
    """ "the end of 2021": its December; "the start/beginning": its January; "the middle": June and July
    (the two months either side of mid-year). A fixed reading, said in the understood span; None where
    the words bound an open or joined period instead."""
    if _BOUND_BEFORE.search(m.string[: m.start()]):
        return None
    if m.group(1) in ("start", "beginning") and re.search(r"this|current|今年", m.group(2)):
        return None  # "the start of this year" runs from then to now, like "the start of the week"
    year = _year_named(now, m.group(2))
    first, months = {"end": (12, 1), "start": (1, 1), "beginning": (1, 1), "middle": (6, 2)}[m.group(1)]
    return datetime(year, first, 1), _month_start(year, first + months)


class AmbiguousTime(Exception):  # not a ValueError: `_resolved` reads those as impossible dates
    """A date written so that it reads two ways ("03/04/2021": 3 April or 4 March): declined, with both."""

    def __init__(self, message: str, text: str):
        super().__init__(message)
        self.text = text


def _numeric_day(a: int, b: int, year: int, text: str) -> datetime:
    """A day written a/b: month/day when only that reads (b > 12), day/month when only that does;
    both ≤ 12 and different is AmbiguousTime naming the two readings."""
    month_first = b > 12 or a == b
    if a > 12:
        month_first = False
    elif b <= 12 and a != b:
        x, y = datetime(year, a, b), datetime(year, b, a)
        raise AmbiguousTime(
            f"the date {text!r} reads two ways: {x:%B} {x.day}, {year} (month/day) or {y:%B} {y.day}, {year}"
            " (day/month); which did you mean? Write it as the month's name or YYYY-MM-DD",
            text,
        )
    return datetime(year, a, b) if month_first else datetime(year, b, a)


def _numeric_days(m: re.Match, now: datetime) -> tuple[datetime, datetime]:
    """ "12/21–12/27" (a run of days written a/b-c/d, with or without a year after): both ends read the
    same way round; without a year, the latest such run that began by now."""
    text = m.group(0).strip()
    year = int(m.group(5)) if m.group(5) else now.year
    try:
        first = _numeric_day(int(m.group(1)), int(m.group(2)), year, text)
        last = _numeric_day(int(m.group(3)), int(m.group(4)), year, text)
    except AmbiguousTime:
        # one end may settle the order ("3/4-3/20"): read both ends that way round if it fits
        orders = [
            (datetime(year, int(m.group(i)), int(m.group(j))), datetime(year, int(m.group(k)), int(m.group(n))))
            for i, j, k, n in ((1, 2, 3, 4), (2, 1, 4, 3))
            if max(int(m.group(i)), int(m.group(k))) <= 12 and max(int(m.group(j)), int(m.group(n))) <= 31
        ]
        if len(orders) != 1:
            raise
        first, last = orders[0]
    if (first.month, first.day) > (last.month, last.day) and not m.group(5):
        first = first.replace(year=year - 1)  # "12/28–1/3": across the new year
    if not m.group(5) and first > now:
        first, last = first.replace(year=first.year - 1), last.replace(year=last.year - 1)
    return first, last + timedelta(days=1)


def _whole_month(year: int, month: int) -> tuple[datetime, datetime]:
    return datetime(year, month, 1), _month_start(year, month + 1)


def _whole_year(year: int) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1), datetime(year + 1, 1, 1)


def _one_day(day: datetime) -> tuple[datetime, datetime]:
    return day, day + timedelta(days=1)


def _edge_of_year(which: str, unit: str, year: int) -> tuple[datetime, datetime]:
    """ "the last month of 2021": December; "the first week of 2021": January 1-7; "the last week": its
    last seven days (as "the last week of April" is the month's)."""
    if unit == "month":
        return _whole_month(year, 1 if which == "first" else 12)
    if which == "first":
        return datetime(year, 1, 1), datetime(year, 1, 8)
    return datetime(year, 12, 25), datetime(year + 1, 1, 1)


def _day_run(now: datetime, month: int, first: int, last: int, year: str | None) -> tuple[datetime, datetime]:
    """Days `first`..`last` of a month; without a year, of the latest such month that began by now."""
    y = int(year) if year else _year_of(now, month)
    return datetime(y, month, first), datetime(y, month, last) + timedelta(days=1)


_UNIT_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen"
    " eighteen nineteen"
).split()
_TENS_WORDS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def _number(text: str) -> int:
    """A count written in digits or in words, up to a hundred ("ninety", "forty-five", "a hundred")."""
    text = text.lower()
    if text.isdigit():
        return int(text)
    if text in ("a", "an"):
        return 1
    if text.endswith("hundred"):
        return 100
    tens, _, unit = re.sub(r"[\s-]+", " ", text).partition(" ")
    if tens in _TENS_WORDS:
        return (_TENS_WORDS.index(tens) + 2) * 10 + (_UNIT_WORDS.index(unit) + 1 if unit in _UNIT_WORDS else 0)
    return _UNIT_WORDS.index(text) + 1 if text in _UNIT_WORDS else 0


_N = (
    r"(\d+|(?:a |one )?hundred|(?:"
    + "|".join(_TENS_WORDS)
    + r")(?:[- ](?:"
    + "|".join(_UNIT_WORDS[:9])
    + r"))?|"
    + "|".join(sorted(_UNIT_WORDS, key=len, reverse=True))
    + ")"
)
_CNN = r"(\d+|[一二两三四五六七八九十]+)"
_WEEKDAY = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_WEEKDAY_NUMBER = {
    **{d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())},
    **{d: i for i, d in enumerate("一二三四五六日")},
    "天": 6,
}


def _latest_weekday(today: datetime, day: str) -> tuple[datetime, datetime]:
    """The day of that name in the week up to today (today itself when it is that day)."""
    start = today - timedelta(days=(today.weekday() - _WEEKDAY_NUMBER[day]) % 7)
    return start, start + timedelta(days=1)


# "open for more than", "older than": what comes next is an age, the end of an open range
_OLDER_THAN = r"\b(?:(?:open|sitting|waiting|pending|idle|stale)\s+(?:for\s+)?(?:more than|over|longer than)|older than|more than)\s+"


def _rules(now: datetime):
    """(pattern, resolver) pairs; a resolver returns (start, end)."""
    today = _day(now)
    monday = today - timedelta(days=today.weekday())
    month = datetime(now.year, now.month, 1)
    year = datetime(now.year, 1, 1)
    q_now = (now.month - 1) // 3 + 1

    def one_day(year: int, month: int, day: int) -> tuple[datetime, datetime]:
        start = datetime(year, month, day)
        return start, start + timedelta(days=1)

    def week_of(year: int, month: int, day: int) -> tuple[datetime, datetime]:
        start = datetime(year, month, day)
        start -= timedelta(days=start.weekday())
        return start, start + timedelta(days=7)

    return [
        # "the last month of 2021" is its December, "the first week of last year" its days 1-7: before
        # "last month" and "last week", which are named from now
        (
            rf"\b(?:in |during )?(?:the )?(last|final|first) (month|week) of {_YEAR}",
            lambda m: _edge_of_year(m.group(1), m.group(2), _year_named(now, m.group(3))),
        ),
        # a quarter or half of a year named from now: "Q3 last year", "the third quarter of last year",
        # "last year's Q3", 去年第三季度, 前年下半年; and of a year in digits ("the last quarter of 2021")
        (
            rf"\b(?:the\s+)?(first|second|third|fourth|1st|2nd|3rd|4th|last)\s+quarter\s+of\s+{_YEAR}",
            lambda m: _quarter(_year_named(now, m.group(2)), _ORDINAL_NUMBER[m.group(1)]),
        ),
        (
            rf"\bq([1-4])\s*(?:of\s+|in\s+)?({_REL_YEAR})|({_REL_YEAR})['’]s\s+q([1-4])\b",
            lambda m: _quarter(_year_named(now, m.group(2) or m.group(3)), int(m.group(1) or m.group(4))),
        ),
        (
            r"(大前年|前年|去年|今年)\s*的?\s*第?\s*([一二三四1-4])\s*季度",
            lambda m: _quarter(_year_named(now, m.group(1)), cn_number(m.group(2))),
        ),
        (
            rf"\b(?:the )?(first|second) half of ({_REL_YEAR})|(大前年|前年|去年|今年)\s*的?\s*(上|下)半年",
            lambda m: _half(
                _year_named(now, m.group(2) or m.group(3)), 1 if (m.group(1) == "first" or m.group(4) == "上") else 2
            ),
        ),
        # "the end of 2021": its December (see `_part_of_year`)
        (
            rf"\b(?:at |in |towards? |around )?(?:the\s+)?(end|start|beginning|middle)\s+of\s+{_YEAR}",
            lambda m: _part_of_year(m, now),
        ),
        # A year named from now further back than last year: before "last year" / 去年
        (
            r"\b(?:in |during )?(?:the )?year before last(?: year)?\b|大前年|(?<!大)前年",
            lambda m: _whole_year(_year_named(now, m.group(0))),
        ),
        # A month in digits: "03/2021", "3/2021", "2021-03", "2021/03" (a day "2021-03-05" is read below)
        (
            r"(?<![\d/.\-])(20\d\d)[/\-](0?[1-9]|1[0-2])(?![\d]|[/\-]\d)",
            lambda m: _whole_month(int(m.group(1)), int(m.group(2))),
        ),
        (
            r"(?<![\d/.\-])(0?[1-9]|1[0-2])[/\-](20\d\d)(?![\d]|[/\-]\d)",
            lambda m: _whole_month(int(m.group(2)), int(m.group(1))),
        ),
        # Years joined by a dash: "2019-2021", "2019–2021" run from the first's start to the last's end
        (
            r"(?<![\d/.\-])(20\d\d)\s*[-–]\s*(20\d\d)(?![\d]|[/\-]\d)",
            lambda m: (
                (datetime(int(m.group(1)), 1, 1), datetime(int(m.group(2)) + 1, 1, 1))
                if m.group(1) < m.group(2)
                else None
            ),
        ),
        # A day in digits with its year: "21/12/2020", "12/21/2020" (declined when both orders read)
        (
            r"(?<![\d/.\-])(\d{1,2})/(\d{1,2})/(20\d\d)(?![\d/])",
            lambda m: _one_day(_numeric_day(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(0))),
        ),
        # Runs of days: "12/21–12/27", "Dec 21-27", "21st to 27th Dec", "from the 21st to the 27th of
        # December 2020"; without a year, the latest such run that began by now
        (
            (
                r"(?<![\d/.\-])(\d{1,2})/(\d{1,2})\s*(?:-|–|~|to|through|until|到|至)\s*(\d{1,2})/(\d{1,2})(?![\d/])"
                r"(?:,?\s*(20\d\d)\b)?"
            ),
            lambda m: _numeric_days(m, now),
        ),
        (
            (
                rf"\b{_MONTH}\.? (\d{{1,2}})(?:st|nd|rd|th)?\s*(?:-|–|to|through|until)\s*(\d{{1,2}})(?:st|nd|rd|th)?\b"
                r"(?:,? (20\d\d)\b)?(?![/\-]\d)"
            ),
            lambda m: _day_run(now, MONTHS[m.group(1)], int(m.group(2)), int(m.group(3)), m.group(4)),
        ),
        (
            (
                r"\b(?:from |between )?(?:the )?(\d{1,2})(?:st|nd|rd|th)?\s*(?:-|–|to|through|until|and)\s*(?:the )?"
                rf"(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b\.?(?:,?\s+(20\d\d)\b)?"
            ),
            lambda m: (
                None
                if m.group(3) == "may" and not m.group(4)  # "2 to 5 may ...": a verb, not the month
                else _day_run(now, MONTHS[m.group(3)], int(m.group(1)), int(m.group(2)), m.group(4))
            ),
        ),
        # A season named from now: "last summer" is the latest summer over by now (at a February `now`,
        # last year's; in October, this year's), "this summer" this year's; 去年夏天, 今年春天 by the year said.
        # Before "last year" / 去年, which would read the year alone.
        (
            r"\b(?:(last|past|previous)|this) (spring|summer|fall|autumn)\b",
            lambda m: _season(_last_season_year(now, m.group(2)) if m.group(1) else now.year, m.group(2)),
        ),
        (
            r"(去年|今年)\s*(春|夏|秋)(?:天|季)",
            lambda m: _season(now.year - (m.group(1) == "去年"), m.group(2)),
        ),
        # "the week of April 8, 2019", "2019 年 4 月 8 日那一周": the week (Monday to Monday, as "last
        # week" is) holding that day; before the single days, which would read the day alone
        (
            rf"\b(?:the )?week (?:of|starting|beginning|commencing)(?: on)? {_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(20\d\d)\b",
            lambda m: week_of(int(m.group(3)), MONTHS[m.group(1)], int(m.group(2))),
        ),
        (
            rf"\b(?:the )?week (?:of|starting|beginning|commencing)(?: on)? (?:the )?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\.?,?\s+(20\d\d)\b",
            lambda m: week_of(int(m.group(3)), MONTHS[m.group(2)], int(m.group(1))),
        ),
        (
            r"\b(?:the )?week (?:of|starting|beginning|commencing)(?: on)? (20\d\d)-(\d\d)-(\d\d)\b",
            lambda m: week_of(int(m.group(1)), int(m.group(2)), int(m.group(3))),
        ),
        (
            (
                r"(20\d\d)\s*年\s*(\d{1,2}|[一二三四五六七八九十]+)\s*月\s*(\d{1,2}|[一二三四五六七八九十]+)\s*[日号]\s*"
                r"(?:那|这|所在的?)(?:一)?(?:周|星期|个星期|礼拜|个礼拜)"
            ),
            lambda m: week_of(int(m.group(1)), cn_number(m.group(2)), cn_number(m.group(3))),
        ),
        (
            rf"\b(?:the )?(first|second) half of {_MONTH}\.?,?(?: (20\d\d))?\b",
            lambda m: _half_of_month(
                m.group(1), int(m.group(3)) if m.group(3) else _year_of(now, MONTHS[m.group(2)]), MONTHS[m.group(2)]
            ),
        ),
        (rf"\b{_HOLIDAY}(?:,? (20\d\d))?\b", lambda m: _holiday(now, m.group(1), m.group(2))),
        (r"\bsince (?:the )?new year\b", lambda m: (year, now)),
        # One calendar day: "14 February 2019", "May 1st, 2020", "2020-05-01", "2019 年 2 月 14 日",
        # "January 1st this year". Before the month rules: the day, not its month.
        (
            rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\.?,?\s+(20\d\d)\b",
            lambda m: one_day(int(m.group(3)), MONTHS[m.group(2)], int(m.group(1))),
        ),
        (
            rf"\b{_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(20\d\d)\b",
            lambda m: one_day(int(m.group(3)), MONTHS[m.group(1)], int(m.group(2))),
        ),
        (
            rf"\b{_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(this|last) year\b",
            lambda m: one_day(now.year - (m.group(3) == "last"), MONTHS[m.group(1)], int(m.group(2))),
        ),
        (r"\b(20\d\d)-(\d\d)-(\d\d)\b", lambda m: one_day(int(m.group(1)), int(m.group(2)), int(m.group(3)))),
        # "the Christmas week of 2018": the week (Monday on) that holds Christmas Day, as "the week of Dec 25"
        (
            r"\b(?:the )?(?:christmas|xmas) week,? (?:of )?(20\d\d)\b|(20\d\d)\s*年\s*圣诞(?:节)?(?:那一?|的)?(?:周|星期)",
            lambda m: week_of(int(m.group(1) or m.group(2)), 12, 25),
        ),
        (
            r"\b(?:christmas(?: day)?|xmas),? (20\d\d)\b|(20\d\d)\s*年\s*圣诞节?",
            lambda m: one_day(int(m.group(1) or m.group(2)), 12, 25),
        ),
        (
            rf"\b(?:the )?(first|second) fortnight of {_MONTH}\.?,?(?: (20\d\d))?\b",
            lambda m: _fortnight(
                m.group(1), int(m.group(3)) if m.group(3) else _year_of(now, MONTHS[m.group(2)]), MONTHS[m.group(2)]
            ),
        ),
        (
            r"(20\d\d)\s*年\s*(\d{1,2}|[一二三四五六七八九十]+)\s*月?\s*(?:到|至|-|–)\s*(\d{1,2}|[一二三四五六七八九十]+)\s*月",
            lambda m: (
                datetime(int(m.group(1)), cn_number(m.group(2)), 1),
                _month_start(int(m.group(1)), cn_number(m.group(3)) + 1),
            ),
        ),
        # 2019 年 4 月第一周, 4 月的最后一周: as "the first week of April 2019"
        (
            (
                r"(?:(20\d\d)\s*年\s*)?(\d{1,2}|[一二三四五六七八九十]+)\s*月\s*的?\s*(?:第\s*([一二三四1-4])|(最后))\s*(?:一\s*)?"
                r"(?:周|个星期|星期|个礼拜|礼拜)"
            ),
            lambda m: _week_of_month(
                "last" if m.group(4) else "first second third fourth".split()[cn_number(m.group(3)) - 1],
                int(m.group(1)) if m.group(1) else _year_of(now, cn_number(m.group(2))),
                cn_number(m.group(2)),
            ),
        ),
        # "the first week of April 2019": days 1-7 (the second 8-14 ...); the last week: the month's last 7 days
        (
            rf"\b(?:in |during )?(?:the )?(first|second|third|fourth|last|1st|2nd|3rd|4th) week of {_MONTH}\.?,?(?: (20\d\d))?\b",
            lambda m: _week_of_month(
                m.group(1), int(m.group(3)) if m.group(3) else _year_of(now, MONTHS[m.group(2)]), MONTHS[m.group(2)]
            ),
        ),
        (
            r"(20\d\d)\s*年\s*(\d{1,2}|[一二三四五六七八九十]+)\s*月\s*(\d{1,2}|[一二三四五六七八九十]+)\s*[日号]",
            lambda m: one_day(int(m.group(1)), cn_number(m.group(2)), cn_number(m.group(3))),
        ),
        (r"\btoday\b|今天", lambda m: (today, today + timedelta(days=1))),
        # "Monday", "this Monday", 周一: the latest such day up to today ("since Monday" runs from it to now)
        (
            rf"\b(?:(?:this|last|past)\s+)?{_WEEKDAY}\b|(?<![上本这下每])(?:周|星期|礼拜)([一二三四五六日天])(?![共些样直定起般致切])",
            lambda m: _latest_weekday(today, m.group(1) or m.group(2)),
        ),
        (
            rf"\b(?:in |over |during )?(?:the )?(?:last|past|previous) {_N} hours?\b",
            lambda m: (now - timedelta(hours=_number(m.group(1))), now),
        ),
        (
            (
                r"\b(?:since )?(?:the )?(?:start|beginning) of (?:the |this )?(week|month|quarter|year)\b|\b(quarter|year|month)[- ]to[- ]date\b"
                r"|\bso far this (week|month|quarter|year)\b"
                # "since the 1st of this month": its first day is its start ("the 1st of this month" alone is a day)
                r"|\bsince (?:the )?(?:1st|first)(?: day)? of (?:the |this )?(week|month|quarter|year)\b"
            ),
            lambda m: (_period_start(now, m.group(1) or m.group(2) or m.group(3) or m.group(4)), now),
        ),
        (
            r"从\s*(\d{1,2}|[一二三四五六七八九十]+)\s*月\s*(?:到|至|-)\s*(\d{1,2}|[一二三四五六七八九十]+)\s*月",
            lambda m: (
                datetime(_year_of(now, cn_number(m.group(1))), cn_number(m.group(1)), 1),
                _month_start(_year_of(now, cn_number(m.group(1))), cn_number(m.group(2)) + 1),
            ),
        ),
        (r"\byesterday\b|\byday\b|昨天", lambda m: (today - timedelta(days=1), today)),
        (r"\bytd\b|\byear[- ]to[- ]date\b|今年以来", lambda m: (year, now)),
        (
            rf"\bsince {_MONTH}\.? (\d{{1,2}})(?:st|nd|rd|th)?\b(?!,? \d{{4}})",
            lambda m: (datetime(_year_of(now, MONTHS[m.group(1)]), MONTHS[m.group(1)], int(m.group(2))), None),
        ),
        (
            r"\b(this|the current) (?:week|wk)\b|本周|这周|这个星期|本星期",
            lambda m: (monday, monday + timedelta(days=7)),
        ),
        (r"\b(last|previous|past) (?:week|wk)\b|上周|上个?星期|上一周", lambda m: (monday - timedelta(days=7), monday)),
        (r"\bthis month\b|本月|这个月", lambda m: (month, _month_start(now.year, now.month + 1))),
        (
            r"\b(last|previous|past|prior) (?:calendar )?month\b|上个?月",
            lambda m: (_month_start(now.year, now.month - 1), month),
        ),
        (r"\bthis quarter\b|本季度", lambda m: _quarter(now.year, q_now)),
        (
            r"\b(last|previous) quarter\b(?!\s+of\s+\d{4})|上个?季度",  # "the last quarter of 2021" is its Q4
            lambda m: _quarter(now.year - (q_now == 1), 4 if q_now == 1 else q_now - 1),
        ),
        # "in the past year", 过去一年: the twelve months up to now, as "the past 12 months" (while "last
        # year" is the calendar year before this one)
        (
            r"\b(?:in |over |during )?(?:the )?past year\b|(?:最近|过去|近)\s*一\s*年",
            lambda m: (_months_ago(today, 12), now),
        ),
        (r"\bthis year\b|今年", lambda m: (year, datetime(now.year + 1, 1, 1))),
        (r"\b(last|previous|prior) (?:calendar )?year\b|去年", lambda m: (datetime(now.year - 1, 1, 1), year)),
        (
            rf"\b(?:in |over |during )?(?:the )?(?:last|past|previous) {_N} (days?|weeks?|fortnights?)\b",
            lambda m: (_days_back(now, _number(m.group(1)) * _UNIT_DAYS[m.group(2)]), now),
        ),
        (
            r"\b(?:in |over |during )?(?:the )?(?:last|past|previous) fortnight\b",
            lambda m: (_days_back(now, 14), now),
        ),
        (
            rf"\b(?:in |over |during )?(?:the )?(?:last|past|previous) {_N} months?\b",
            lambda m: (_months_ago(now, _number(m.group(1))), now),
        ),
        (
            rf"{_OLDER_THAN}{_N}\s+(days?|weeks?)(?:\s+old)?\b",
            lambda m: (None, now - timedelta(days=_number(m.group(1)) * _UNIT_DAYS[m.group(2)])),
        ),
        (
            rf"{_OLDER_THAN}(?:{_N}|an?)\s+(months?|years?)(?:\s+old)?\b",
            lambda m: (
                None,
                _months_ago(today, _number(m.group(1) or "one") * (12 if m.group(2).startswith("y") else 1)),
            ),
        ),
        # "已经超过一年的", "开了超过 30 天": an age (open that long), the end of an open range, as "open for more than"
        (
            rf"(?:(?:已经?|开了|开着|存在了?)\s*)+(?:超过|多于|大于|有)\s*{_CNN}\s*(年|个月|天|日|周|个星期|星期)(?:以上|多)?",
            lambda m: (
                None,
                _months_ago(today, cn_number(m.group(1)) * (12 if m.group(2) == "年" else 1))
                if m.group(2) in ("年", "个月")
                else now - timedelta(days=cn_number(m.group(1)) * _UNIT_DAYS[m.group(2).lstrip("个")]),
            ),
        ),
        (
            rf"(?:最近|过去|近)\s*{_CNN}\s*(天|日|周|个星期|星期)",
            lambda m: (_days_back(now, cn_number(m.group(1)) * _UNIT_DAYS[m.group(2).lstrip("个")]), now),
        ),
        (rf"(?:最近|过去|近)\s*{_CNN}\s*个月", lambda m: (_months_ago(now, cn_number(m.group(1))), now)),
        (rf"\bsince {_MONTH}\.? (20\d\d)\b", lambda m: (datetime(int(m.group(2)), MONTHS[m.group(1)], 1), None)),
        (
            r"自?(20\d\d)\s*年\s*(\d{1,2}|[一二三四五六七八九十]+)\s*月(?:以来|起)",
            lambda m: (datetime(int(m.group(1)), cn_number(m.group(2)), 1), None),
        ),
        (r"(20\d\d)\s*年(?:以来|起)", lambda m: (datetime(int(m.group(1)), 1, 1), None)),
        (r"\bq([1-4])\s*(20\d\d)\b", lambda m: _quarter(int(m.group(2)), int(m.group(1)))),
        # "Q4 '23", "Q1 ’19": a year written with its last two digits after an apostrophe
        (r"\bq([1-4])\s*['’‘](\d\d)\b", lambda m: _quarter(2000 + int(m.group(2)), int(m.group(1)))),
        (r"(20\d\d)\s*年?\s*第?\s*([一二三四1-4])\s*季度", lambda m: _quarter(int(m.group(1)), cn_number(m.group(2)))),
        (
            r"\bq([1-4])\b|第([一二三四1-4])季度",
            lambda m: _quarter(now.year, int(m.group(1)) if m.group(1) else cn_number(m.group(2))),
        ),
        (
            r"\b(?:the )?(first|second) half(?: of (?:the|this) year)?\b(?! of)",
            lambda m: _half(now.year, 1 if m.group(1) == "first" else 2),
        ),
        (
            r"\b(?:the )?(first|second) half of (20\d\d)\b|\bh([12]) (20\d\d)\b|(20\d\d)\s*年?\s*(上|下)半年",
            lambda m: _half(
                int(m.group(2) or m.group(4) or m.group(5)),
                1 if (m.group(1) == "first" or m.group(3) == "1" or m.group(6) == "上") else 2,
            ),
        ),
        # "上半年" said alone is this year's, as "the first half" is; "去年上半年" is not read as this year's
        (r"(?<!年)(?<!年 )(上|下)半年", lambda m: _half(now.year, 1 if m.group(1) == "上" else 2)),
        # a season of a year, the meteorological one of the northern hemisphere ("summer 2018": June to
        # August); winter spans two years and is left unread rather than guessed
        (
            r"\b(?:in |during |over |through )?(?:the )?(spring|summer|fall|autumn)(?: of)? (20\d\d)\b|(20\d\d)\s*年\s*(春|夏|秋)(?:天|季)",
            lambda m: _season(int(m.group(2) or m.group(3)), m.group(1) or m.group(4)),
        ),
        (
            rf"\b(?:in |during )?{_MONTH}\.?,? ['’](\d\d)\b",  # "July '21"
            lambda m: (
                datetime(2000 + int(m.group(2)), MONTHS[m.group(1)], 1),
                _month_start(2000 + int(m.group(2)), MONTHS[m.group(1)] + 1),
            ),
        ),
        (
            rf"\b(?:in |during )?{_MONTH}\.?,? (?:of )?(20\d\d)\b",
            lambda m: (
                datetime(int(m.group(2)), MONTHS[m.group(1)], 1),
                _month_start(int(m.group(2)), MONTHS[m.group(1)] + 1),
            ),
        ),
        (
            r"(20\d\d)\s*年\s*(\d{1,2}|[一二三四五六七八九十]+)\s*月",
            lambda m: (
                datetime(int(m.group(1)), cn_number(m.group(2)), 1),
                _month_start(int(m.group(1)), cn_number(m.group(2)) + 1),
            ),
        ),
        (rf"\bsince {_MONTH}\b(?! \d)", lambda m: (_most_recent_month(now, MONTHS[m.group(1)]), None)),
        (
            r"自(\d{1,2}|[一二三四五六七八九十]+)月(?:以来|起|份以来)?",
            lambda m: (_most_recent_month(now, cn_number(m.group(1))), None),
        ),
        (
            rf"\bin {_MONTH}\b(?! \d)",
            lambda m: (
                _most_recent_month(now, MONTHS[m.group(1)]),
                _month_start(_most_recent_month(now, MONTHS[m.group(1)]).year, MONTHS[m.group(1)] + 1),
            ),
        ),
        (
            r"(?<![\d年])(\d{1,2}|[一二三四五六七八九十]+)\s*月份?(?![\d日号])",
            lambda m: (
                _most_recent_month(now, cn_number(m.group(1))),
                _month_start(_most_recent_month(now, cn_number(m.group(1))).year, cn_number(m.group(1)) + 1),
            ),
        ),
        # "May" alone is a month only before the records it dates ("the May ones", "May threads"), after "for",
        # "of" or "during" ("and for May?"), or where the question ends after it ("and May?", "May, then"): the
        # verb is followed by another verb or a subject, never by the end of the question
        (
            (
                r"\bmay(?= (?:ones?|messages?|threads?|posts?|prs?|pull requests?|issues?|commits?)\b)"
                r"|(?<=\bfor )may\b|(?<=\bof )may\b|(?<=\bduring )may\b|\bmay(?=\s*(?:[?!.,;)]|$|then\b|instead\b|too\b))"
            ),
            lambda m: (_most_recent_month(now, 5), _month_start(_most_recent_month(now, 5).year, 6)),
        ),
        (
            (
                r"\b(jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec|january|february|march|april|june|july|august|september|"
                r"october|november|december)\b(?![ .]?\d)"
            ),
            lambda m: (
                _most_recent_month(now, MONTHS[m.group(1)]),
                _month_start(_most_recent_month(now, MONTHS[m.group(1)]).year, MONTHS[m.group(1)] + 1),
            ),
        ),
        (r"\bsince (20\d\d)\b(?![-/])", lambda m: (datetime(int(m.group(1)), 1, 1), None)),
        (
            r"(20\d\d)\s*年(?!\s*(?:\d|[一二三四五六七八九十]+)\s*月)|\b(?:in |during )?(20\d\d)\b(?![-/]\d)",
            lambda m: (
                datetime(int(m.group(1) or m.group(2)), 1, 1),
                datetime(int(m.group(1) or m.group(2)) + 1, 1, 1),
            ),
        ),
        (
            r"\b(?:in |during )?['’](\d\d)(?![\w'’])",
            lambda m: (datetime(2000 + int(m.group(1)), 1, 1), datetime(2001 + int(m.group(1)), 1, 1)),
        ),  # "in '21"
    ]


_EXPLICIT = re.compile(
    r"\b(since|after|before|until)\s+((?:\d{4}-\d{2}-\d{2})|(?:" + _MONTH + r"\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4})"
    r"|(?:\d{1,2} " + _MONTH + r" \d{4}))",
    re.I,
)


def _parse_explicit(text: str) -> datetime | None:
    import dateparser  # lazy: it loads locale data on import

    parsed = dateparser.parse(text, languages=["en"], settings={"TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": False})
    return _day(parsed) if parsed else None


_DATEISH = (
    r"(?:\d{4}-\d{2}-\d{2}|" + _MONTH + r"\.? \d{1,2}(?!\d)(?:st|nd|rd|th)?(?:,? \d{4})?"
    r"|(?:the )?\d{1,2}(?:st|nd|rd|th)? (?:of )?" + _MONTH + r"\.?(?:,? \d{4})?|" + _MONTH + r"(?: \d{4})?)"
)
_BETWEEN = re.compile(
    r"\b(?:between|from)\s+(?P<a>" + _DATEISH + r")\s+(?:and|to|through|until|till|-)\s+(?P<b>" + _DATEISH + r")"
    r"(?:,?\s*['’](?P<yy>\d\d)(?![\w'’]))?",  # "from march through june '22": the year after both months
    re.I,
)


def _between(m: re.Match, now: datetime) -> tuple[datetime, datetime] | None:
    """`between Oct 5 and Oct 9`, `from March through May 2026`: inclusive of the last day or month."""
    first, last = m.group("a"), m.group("b")
    year = re.search(r"(20\d\d)", last) or re.search(r"(20\d\d)", first)
    year_text = year.group(1) if year else f"20{m.group('yy')}" if m.group("yy") else str(now.year)

    def bound(text: str, end: bool) -> datetime | None:
        month_only = re.fullmatch(_MONTH + r"\.?(?: 20\d\d)?", text.strip(), re.I)
        if month_only:
            month = MONTHS[month_only.group(1).lower()]
            start = datetime(int(year_text), month, 1)
            return _month_start(start.year, month + 1) if end else start
        text = re.sub(r"^the\s+", "", text.strip())
        if not re.search(r"20\d\d", text):
            text = f"{text} {year_text}"
        day = _parse_explicit(text)
        return (day + timedelta(days=1) if end else day) if day else None

    start, end = bound(first, False), bound(last, True)
    return (start, end) if start and end and start < end else None


_VERB_BEFORE = re.compile(
    r"\b(merged|merge|closed|close|created|create|opened|open|resolved|resolve|fixed|fix|"
    r"updated|submitted|posted|reviewed|filed|file|reported|report|(?:came|come|comes|coming)(?: in)?|arrived)"
    # "close in the previous quarter"; hyphenated as one adjective: "closed-in-2022 issues"
    r"(?:[\s-]+(?:in|during|over|within|throughout)(?:[\s-]+the)?)?[\s-]*$",
    re.I,
)
_VERB_FORMS = {
    "merge": "merged",
    "close": "closed",
    "create": "created",
    "open": "opened",
    "resolve": "resolved",
    "fix": "resolved",
    "fixed": "resolved",
    "file": "created",
    "filed": "created",
    "report": "created",
    "reported": "created",
    "arrived": "created",
    **{f"{verb}{particle}": "created" for verb in ("came", "come", "comes", "coming") for particle in ("", " in")},
}


def _verb_before(text: str, a: int) -> str | None:
    """The verb right before a time expression ("merged in May"), which the time then dates."""
    m = _VERB_BEFORE.search(text[:a])
    if m is None or re.search(r"(without (?:being )?|\bnot |\bnever |n't )$", text[: m.start()]):
        return None  # "closed without being merged this year" is dated by its closing
    return _VERB_FORMS.get(m.group(1).lower(), m.group(1).lower())


def find_time_ranges(question: str, now: datetime) -> list[TimeRange]:
    """Every time expression in the question, left to right, without overlaps. An expression that
    names no calendar date ("month 13"), or one outside `text.EARLIEST`..`LATEST` ("the last
    99999999999 days", "since 0001-01-01"), is a TimeRangeError naming it, in one line."""
    check_time_range(now, f"now {now.isoformat()}")
    found = []
    for start, end, rng in _time_ranges(question, now):
        for bound in (rng.start, rng.end):
            if bound is not None:
                check_time_range(bound, f"the time {rng.text!r} ({bound.date().isoformat()})")
        found.append((start, end, rng))
    # a period inside another's words (the aside of "christmas 2017 (december 25) or earlier") is its part
    found = [f for f in found if not any(o is not f and o[0] <= f[0] and f[1] <= o[1] for o in found)]
    # "still open today": the state now, not a window of today's records
    found = [f for f in found if not (f[2].text.lower() == "today" and _STATE_NOW.search(question[: f[0]]))]
    ranges = [
        r for _, _, r in _without_restatements(question, _joined(question, sorted(found, key=lambda x: x[0])), now)
    ]
    return _bare_months_in_the_year_said(ranges)


# A state word before "today" ("still open today", "unresolved as of today"): the state asked of now
_STATE_NOW = re.compile(r"\b(?:open|unmerged|pending|unresolved|outstanding)\s+(?:as of\s+)?$", re.I)
_BARE_MONTH = re.compile(rf"(?:(?:in|during)\s+)?{_MONTH}\.?|(\d{{1,2}}|[一二三四五六七八九十]+)\s*月份?", re.I)


def _bare_months_in_the_year_said(ranges: list[TimeRange]) -> list[TimeRange]:
    """A month said without a year beside months said with one ("Feb 2024 vs Jan", "2024 年 2 月 … 环比
    1 月") is of that year, not the latest such month before now."""
    years = {
        r.start.year
        for r in ranges
        if re.search(r"\d{4}", r.text)
        and r.start
        and r.end
        and r.start.day == 1
        and r.end == _month_start(r.start.year, r.start.month + 1)
    }
    if len(years) != 1:
        return ranges
    (year,) = years
    out = []
    for r in ranges:
        bare = _BARE_MONTH.fullmatch(r.text.strip())
        if bare and r.start is not None and r.start.year != year:
            month = MONTHS[bare.group(1).lower()] if bare.group(1) else cn_number(bare.group(2))
            r = TimeRange(datetime(year, month, 1), _month_start(year, month + 1), r.text, r.verb)
        out.append(r)
    return out


# "between 2019 and 2021", "from 2019 to 2021", "2019 到 2021 年", "between the start of April and the end
# of June 2022": two periods that bound one.
_JOINED_BY = re.compile(r"\s*(?:and|to|through|thru|until|till|up to|-|–|到|至)\s*(?:the\s+)?(?:end\s+of\s+)?$", re.I)
_JOIN_LEAD = re.compile(
    r"(?:\bbetween|\bfrom|从)\s*(?:the\s+)?(?:(?:start|beginning|1st|first(?:\s+day)?)\s+of\s+)?$", re.I
)


def _joined(question: str, found: list[tuple[int, int, TimeRange]]) -> list[tuple[int, int, TimeRange]]:
    out: list[tuple[int, int, TimeRange]] = []
    for a, b, rng in found:
        if out:
            pa, pb, prev = out[-1]
            between = question[pb:a]
            lead = _JOIN_LEAD.search(question[:pa])
            # "and" joins two periods only after "between"/"from": "in 2019 and 2021" are two years.
            # "Jan through May 2019": the second period, read as "until May 2019", ends the first (a
            # month said bare is of the second one's year)
            open_end = rng.start is None and re.match(r"(?:through|thru|until|till|up to|to)\b", rng.text.strip(), re.I)
            bare, year = re.fullmatch(_MONTH + r"\.?", prev.text.strip(), re.I), re.search(r"20\d\d", rng.text)
            if (open_end or _JOINED_BY.fullmatch(between)) and bare and year:  # "apr-jun 2022": both of 2022
                prev = TimeRange(
                    datetime(int(year.group(0)), MONTHS[bare.group(1).lower()], 1), prev.end, prev.text, prev.verb
                )
            if (
                (
                    (_JOINED_BY.fullmatch(between) and (lead or not re.search(r"and", between, re.I)))
                    or (open_end and not between.strip())
                )
                and prev.start is not None
                and rng.end is not None
                and prev.start < rng.end
            ):
                a0 = lead.start() if lead else pa
                out[-1] = (a0, b, TimeRange(prev.start, rng.end, question[a0:b], _verb_before(question.lower(), a0)))
                continue
        out.append((a, b, rng))
    return out


def _without_restatements(
    question: str, found: list[tuple[int, int, TimeRange]], now: datetime
) -> list[tuple[int, int, TimeRange]]:
    """A period in brackets that only spells out the one before it ("summer 2023 (Jun–Aug)") is not
    a second period: its words join the first's."""
    out: list[tuple[int, int, TimeRange]] = []
    for a, b, rng in found:
        if (
            out
            and re.fullmatch(r"\s*[(（]\s*", question[out[-1][1] : a])
            and (_restates(out[-1][2], rng, now) or _names_the_bound(out[-1][2], rng))
        ):
            pa, _, prev = out[-1]
            out[-1] = (pa, b, TimeRange(prev.start, prev.end, question[pa:b], prev.verb))
            continue
        if out and _BRACKET_AFTER.fullmatch(question[out[-1][1] : a]):
            narrower = _narrows(out[-1][2], rng, now)
            if narrower is not None:
                pa, _, prev = out[-1]
                # "around Christmas 2020 (Dec 21-27)": the brackets say what "around" meant
                vague = re.search(r"\b(?:around|about|roughly|approximately|circa|near)\s+$", question[:pa], re.I)
                pa = vague.start() if vague else pa
                out[-1] = (pa, b, TimeRange(narrower[0], narrower[1], question[pa:b], prev.verb))
                continue
        out.append((a, b, rng))
    return out


# What may stand between a vague period and the brackets (or the comma) that pin it down: "around Christmas 2020 (the
# week of Dec 21-27)", "2020 年圣诞节前后那一周（12/21–12/27）" — a few words, no digits, no closing bracket
_BRACKET_AFTER = re.compile(r"[^\d()（）]{0,12}[(（]\s*(?:[^\W\d]+\s+){0,3}|\s*[,，]\s*")


def _narrows(prev: TimeRange, rng: TimeRange, now: datetime) -> tuple[datetime, datetime] | None:
    """The bounds of a period in brackets that pins down the one before it: read in that one's year
    when it names none, and holding it ("around Christmas 2020 (the week of Dec 21-27)": Dec 21-28).
    The explicit period wins; None when the two are not the same time said twice."""
    if prev.start is None or prev.end is None or rng.start is None or rng.end is None:
        return None
    start, end = rng.start, rng.end
    if not re.search(r"\d{4}", rng.text):
        again = find_time_ranges(f"{rng.text} {prev.start.year}", now)
        if len(again) != 1 or again[0].start is None or again[0].end is None:
            return None
        start, end = again[0].start, again[0].end
    # It holds the one before ("Christmas 2020 (Dec 21-27)"): the vague day said more fully; or it is a period
    # as long as it that overlaps it ("the Christmas week of 2018, 21st to 27th Dec": the asker's own week).
    # One inside a period said outright ("closed in 2025 (March)") is a second period, not this one explained.
    holds = start <= prev.start and prev.end <= end
    same = end - start == prev.end - prev.start and start < prev.end and prev.start < end
    return (start, end) if holds or same else None


def _names_the_bound(prev: TimeRange, rng: TimeRange) -> bool:
    """Whether a period in brackets after an open one only says when it begins or ends: "since last
    summer (june 2024)" begins when June 2024 does, one period, not a second window of June only."""
    if re.match(r"(?:since|from|after|starting)\b", prev.text.strip(), re.I):
        return prev.start is not None and rng.start is not None and prev.start in (rng.start, rng.end)
    if re.match(r"(?:until|till|through|before|up to)\b", prev.text.strip(), re.I):
        return prev.end is not None and rng.start is not None and prev.end in (rng.start, rng.end)
    return False


def _restates(prev: TimeRange, rng: TimeRange, now: datetime) -> bool:
    """Whether a period said without a year, in brackets after one with a year, only spells it out:
    the same period once given that year ("summer 2023 (Jun–Aug)"), not a second one."""
    if prev.start is None or re.search(r"\d{4}", rng.text):
        return False
    again = find_time_ranges(f"{rng.text} {prev.start.year}", now)
    return len(again) == 1 and (again[0].start, again[0].end) == (prev.start, prev.end)


def _resolved(text: str, resolve, *args):
    """`resolve(*args)`, with a calendar overflow or an impossible date turned into one line."""
    try:
        return resolve(*args)
    except (OverflowError, ValueError):
        raise TimeRangeError(f"the time {text!r} is not a date between {EARLIEST.year} and {LATEST.year - 1}") from None


def _time_ranges(question: str, now: datetime) -> list[tuple[int, int, TimeRange]]:
    text = question.lower()
    found: list[tuple[int, int, TimeRange]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e, _ in found)

    def verb_before(a: int) -> str | None:
        return _verb_before(text, a)

    for m in _EXPLICIT.finditer(text):
        when = _resolved(m.group(0), _parse_explicit, m.group(2))
        if when is None:
            continue
        keyword = m.group(1).lower()
        if keyword in ("since", "after"):
            rng = (_resolved(m.group(0), lambda: when + timedelta(days=1)) if keyword == "after" else when, None)  # noqa: B023 (called at once)
        else:
            rng = (None, _resolved(m.group(0), lambda: when + timedelta(days=1)) if keyword == "until" else when)  # noqa: B023 (called at once)
        found.append(
            (m.start(), m.end(), TimeRange(rng[0], rng[1], question[m.start() : m.end()], verb_before(m.start())))
        )
    for m in _BETWEEN.finditer(text):
        rng = _resolved(m.group(0), _between, m, now)
        if rng and free(m.start(), m.end()):
            found.append(
                (m.start(), m.end(), TimeRange(rng[0], rng[1], question[m.start() : m.end()], verb_before(m.start())))
            )
    for pattern, resolve in _rules(now):
        for m in re.finditer(pattern, text):
            if free(m.start(), m.end()):
                read = _resolved(m.group(0), resolve, m)
                if read is None:  # the words are another rule's (a bound of an open period, "may" the verb)
                    continue
                (start, end), (a, b) = read, m.span()
                opened = _open_ended(text, a, b, start, end)
                if opened:
                    (a, b), (start, end) = opened
                    if (
                        end is None
                        and start is not None
                        and start < now
                        and (_RELATIVE.fullmatch(m.group(0).strip()) or _UP_TO_NOW.search(text[a:b]))
                    ):
                        end = now
                if end is not None and end > now and (start is None or start < now):
                    # "this week" means up to now, not up to Sunday; a period named outright that
                    # lies wholly after `now` ("in April 2019" asked on March 20) keeps its bounds.
                    end = now
                found.append((a, b, TimeRange(start, end, question[a:b], verb_before(a))))
    return found


# Words that open a period at one end: "before 2021" is everything until 2021 began, "after March
# 2019" everything from April on, "since April" / "2025 onwards" / "2018 年之前" likewise. A bare
# "from" is not one of them: "messages from March 2019" are the messages of that month.
_BEFORE = re.compile(
    r"(?:\b(?:before|prior to|earlier than|older than|up until|until|till|through|up to|as late as|by|pre-?dat(?:e|es|ed|ing)"
    r"|no later than|not later than|not after)"
    r"|\bpre-)\s*(?:the\s+)?(?:(?:start|beginning|end)\s+of\s+)?$"
)
_AFTER = re.compile(
    r"(?:\b(?:after|later than|newer than|post-?dat(?:e|es|ed|ing))|\bpost-)\s*(?:the\s+)?(?:end\s+of\s+)?$"
)
_SINCE = re.compile(
    r"(?:\b(?:since|starting(?:\s+(?:from|in|with))?|beginning(?:\s+(?:from|in))?)"
    r"\s+(?:the\s+)?(?:(?:start|beginning)\s+of\s+)?|\bfrom\s+the\s+(?:start|beginning)\s+of\s+|(?:自从?|从)\s*)$"
)
_ONWARDS = re.compile(
    # "2023 on" opens the period, "2023 on average" / "on a weekend" / "on Mondays" do not
    r"^(?:\s*(?:onwards?|on\b(?!\s+(?:average|avg|a|an|the|weekends?|weekdays?|\w*days?|time|record)\b)|and (?:later|after|since|beyond)|or later)|\s*(?:年)?\s*(?:以来|以后|起|开始)"
    r"|\s*(?:(?:到|至)(?:现在|今天|目前为止|目前)|至今))"
)
# A period named from now ("last month", 上个月): "since the start of last month" runs up to now
_RELATIVE = re.compile(
    r"(?:the\s+)?(?:last|this|previous|past|prior|current)\s+(?:calendar\s+)?(?:week|wk|month|quarter|year)"
    r"|(?:last|this|previous|past)\s+(?:spring|summer|fall|autumn)|(?:去年|今年)\s*(?:春|夏|秋)(?:天|季)"
    r"|上个?(?:月|星期|季度)|上周|本(?:月|周|季度)|今年|去年"
    rf"|(?:(?:this|last|past)\s+)?{_WEEKDAY}|(?:周|星期|礼拜)[一二三四五六日天]"
)
# "这个月到现在", "从周一至今": the period runs to now, not on past it
_UP_TO_NOW = re.compile(r"(?:(?:到|至)(?:现在|今天|目前为止|目前)|至今)$")
_EARLIER = re.compile(r"^\s*(?:年)?\s*(?:之前|以前)")
# "2020 or earlier", "March 2019 and before": that period and everything before it
_OR_EARLIER = re.compile(r"^\s*,?\s*(?:or|and)\s+(?:earlier|before|prior|older)\b|^\s*(?:年)?\s*(?:及|或)(?:之前|以前)")
# "2023 年 6 月之后": after June, like "after June 2023" (以后 reads "from then on": "2024 年以后" includes 2024);
# "9 月底之后", after the end of September, likewise.
_LATER = re.compile(r"^\s*(?:年)?\s*底?\s*之后")


_ASIDE = re.compile(r"\s*[(（][^()（）]{1,40}[)）]")


def _open_ended(
    text: str, a: int, b: int, start: datetime | None, end: datetime | None
) -> tuple[tuple[int, int], tuple[datetime | None, datetime | None]] | None:
    """The span and bounds of a closed period [start, end) turned open-ended by the words around it,
    or None. "until X"/"through X" include X, "before X" does not; "after X" starts when X ends."""
    if start is None or end is None:
        return None  # already open at one end ("since May", "older than 3 weeks")
    before, after = text[:a], text[b:]
    # "christmas 2017 (december 25) or earlier", "2017 年圣诞节（12 月 25 日）之前": the words that open the
    # period may follow an aside in brackets that spells it out; the span then covers the aside
    aside = _ASIDE.match(after)
    if aside and any(p.match(after[aside.end() :]) for p in (_OR_EARLIER, _EARLIER, _LATER, _ONWARDS)):
        b, after = b + aside.end(), after[aside.end() :]
    inclusive = re.search(
        r"(?:until|till|through|up to|as late as|by|no later than|not later than|not after)\s*$|\bend\s+of\s*$", before
    )
    if m := _BEFORE.search(before):
        return (m.start(), b), (None, end if inclusive else start)
    if m := _OR_EARLIER.match(after):
        return (a, b + m.end()), (None, end)
    if m := _EARLIER.match(after):
        return (a, b + m.end()), (None, start)
    if m := _AFTER.search(before):
        return (m.start(), b), (end, None)
    if m := _LATER.match(after):
        return (a, b + m.end()), (end, None)
    since, onwards = _SINCE.search(before), _ONWARDS.match(after)
    if onwards and not since:
        since = re.search(r"(?:\bfrom\s+|从\s*)$", before)  # "from 2025 onwards": both words say it
    if since or onwards:
        return (since.start() if since else a, b + (onwards.end() if onwards else 0)), (start, None)
    return None


# Words that look like a time: a year, a month's name (or a word said where one is, see
# `written_dates.month_typos`), a quarter, a year named from now, digits joined by "/" or "-" as dates are.
# One no time rule read is reported unread, never dropped (which would answer for all time).
_TIMEISH = re.compile(
    r"(?<![\w/.\-])\d{1,4}[/\-]\d{1,4}(?:[/\-]\d{1,4})?(?![\w/.\-])"
    r"|(?<![#\w.])(?:19|20)\d\d(?![\w.])|['’]\d\d(?![\w'’])"
    r"|\b(?:january|february|march|april|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\b\.?(?=\s*(?:\d|['’]\d))"
    r"|\bq\d\b|\bquarters?\b|季度|\bhalf[- ]year\b|半年|\byear before\b|大前年|前年|去年|今年|明年",
    re.I,
)


def timeish_spans(question: str) -> list[tuple[int, int]]:
    """The spans of `question` that look like a time (`_TIMEISH`) or are a misspelt month where one is said."""
    from context_engine.query.written_dates import month_typos  # it reads months with these names

    found = [m.span() for m in _TIMEISH.finditer(question) if _dateish_digits(m.group(0))]
    return sorted(found + [(a, b) for a, b, _ in month_typos(question)])


def _dateish_digits(text: str) -> bool:
    """Digits joined by "/" or "-" that could be a date: a year among them, or a month and a day ("12/21"),
    not a count's range ("2-3 reviewers")."""
    parts = re.split(r"[/\-]", text)
    if len(parts) == 1 or not all(p.isdigit() for p in parts):
        return True
    if any(len(p) == 4 for p in parts):
        return True
    return "/" in text and len(parts) == 2 and all(1 <= int(p) <= 31 for p in parts) and min(map(int, parts)) <= 12

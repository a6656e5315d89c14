"""Years and days of the month written out in words read as digits: "merged during twenty twenty-three"
is planned as "merged during 2023", "the last quarter of two thousand twenty-one" as "the last quarter of
2021", "on the fourteenth of February" as "on the 14th of February".

The time rules read years and days in digits. A year said the way people say it aloud ("twenty
twenty-three", "two thousand and nine", "nineteen ninety-nine", "twenty oh five") and an ordinal day
beside a month's name ("the third of May", "May the twenty-first") are rewritten before planning, and
the answer says how the question was read. Only a whole spoken year, and only a day next to a month,
is rewritten: "twenty issues", "two thousand messages" and "the first half" are not dates.
"""

from __future__ import annotations

import re

_UNITS = "one two three four five six seven eight nine".split()
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_VALUE = {
    **{w: i for i, w in enumerate(_UNITS, 1)},
    **{w: i for i, w in enumerate(_TEENS, 10)},
    **{w: i * 10 for i, w in enumerate(_TENS, 2)},
}
_UNIT = "|".join(_UNITS)
_TEN = "|".join(_TENS)
# 1..99 in words: "seven", "twelve", "twenty", "twenty-three", "twenty three"
_UNDER_HUNDRED = rf"(?:(?:{_TEN})(?:[\s\-](?:{_UNIT}))?|{'|'.join(_TEENS)}|{_UNIT})"
_SPOKEN_YEAR = re.compile(
    # "twenty twenty-three", "nineteen ninety-nine", "twenty oh five" (not "twenty ten": a count of ten)
    rf"\b(?P<century>nineteen|twenty)[\s\-](?P<rest>o(?:h)?[\s\-](?:{_UNIT})|(?:{_TEN})(?:[\s\-](?:{_UNIT}))?"
    rf"|{'|'.join(_TEENS[1:])})\b"
    # "two thousand twenty-one", "two thousand and nine"; "two thousand" alone is a count
    rf"|\btwo thousand(?:\s+and)?\s+(?P<after>{_UNDER_HUNDRED})\b",
    re.I,
)
_ORDINAL_UNITS = "first second third fourth fifth sixth seventh eighth ninth".split()
_ORDINAL_TEENS = "tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth"
_ORDINAL = {
    **{w: i for i, w in enumerate(_ORDINAL_UNITS, 1)},
    **{w: i for i, w in enumerate(_ORDINAL_TEENS.split(), 10)},
    "twentieth": 20,
    "thirtieth": 30,
}
_DAY = (
    rf"(?:(?:twenty|thirty)[\s\-](?:{'|'.join(_ORDINAL_UNITS)})|{'|'.join(_ORDINAL)})"  # "twenty-first", "fourteenth"
)
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b"
# "the fourteenth of February", "May the twenty-first": a day beside its month
_SPOKEN_DAY = re.compile(
    rf"\b(?P<day>{_DAY})(?=\s+of\s+{_MONTH})|(?P<month>\b{_MONTH}\s+(?:the\s+)?)(?P<after>{_DAY})\b(?!\s+(?:weeks?|half|fortnight|quarter)\b)",
    re.I,
)


def _under_hundred(words: str) -> int:
    return sum(_VALUE[p] for p in re.split(r"[\s\-]+", words.lower()) if p not in ("oh", "o"))


def _ordinal(words: str) -> int:
    parts = re.split(r"[\s\-]+", words.lower())
    return sum(_VALUE.get(p, 0) or _ORDINAL[p] for p in parts)


def dates_in_digits(question: str) -> str:
    """`question` with every year spoken in words, and every ordinal day beside a month, in digits."""

    def year(m: re.Match) -> str:
        if m.group("after"):
            return str(2000 + _under_hundred(m.group("after")))
        century = 1900 if m.group("century").lower() == "nineteen" else 2000
        return str(century + _under_hundred(m.group("rest")))

    def day(m: re.Match) -> str:
        n = _ordinal(m.group("day") or m.group("after"))
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"{m.group('month') or ''}{n}{suffix}"

    return _SPOKEN_DAY.sub(day, _SPOKEN_YEAR.sub(year, question))


_MONTH_NAMES = "january february march april may june july august september october november december".split()
# Where a month is said: before a day or a year ("Febuary 2022", "Sept '22"), or after a word that
# introduces a time ("in Febuary"). A word like a month anywhere else ("Marcy's PRs") is left alone.
_MONTH_BEFORE = re.compile(r"\b(?:in|since|during|before|after|until|till|from|through|of|early|mid|late)\s+$", re.I)
_MONTH_AFTER = re.compile(r"^\.?,?\s*(?:\d|['’]\d)")
_LETTERS = re.compile(r"\b[A-Za-z]{4,}\b")


def month_typos(question: str) -> list[tuple[int, int, str]]:
    """(start, end, month) of each word said where a month is that is a misspelt month name ("Febuary",
    "Septmber"): no English word, within two edits (one for five letters or fewer) of exactly one month."""
    from rapidfuzz.distance import OSA

    from context_engine.query.spelling import english_words  # lazy: the word list loads on first use

    found = []
    for m in _LETTERS.finditer(question):
        word = m.group(0).lower()
        if word in _MONTH_NAMES or not (
            _MONTH_AFTER.match(question[m.end() :]) or _MONTH_BEFORE.search(question[: m.start()])
        ):
            continue
        limit = 1 if len(word) <= 5 else 2
        near = [name for name in _MONTH_NAMES if len(name) >= 4 and OSA.distance(word, name) <= limit]
        if len(near) == 1 and not english_words().known([word]):
            found.append((m.start(), m.end(), near[0]))
    return found


def months_spelt_right(question: str, names: frozenset[str] | set[str]) -> tuple[str, tuple[str, str] | None]:
    """`question` with its misspelt month names written right, and the first (word, month) that is also
    someone's name in `names` (lower case): that one is the asker's to settle, never taken either way."""
    out, last = [], 0
    for start, end, month in month_typos(question):
        word = question[start:end]
        if word.lower() in names:
            return question, (word, month)
        out += [question[last:start], month.capitalize() if word[0].isupper() else month]
        last = end
    return "".join(out) + question[last:], None

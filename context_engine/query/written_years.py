"""Years written out in words read as digits: "merged during twenty twenty-three" is planned as
"merged during 2023", "the last quarter of two thousand twenty-one" as "the last quarter of 2021".

The time rules read years in digits. A year said the way people say it aloud ("twenty twenty-three",
"two thousand and nine", "nineteen ninety-nine", "twenty oh five") is rewritten before planning, and
the answer says how the question was read. Only a whole spoken year is rewritten: "twenty issues" or
"two thousand messages" are counts, not years.
"""

from __future__ import annotations

import re

_UNITS = "one two three four five six seven eight nine".split()
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_VALUE = {
    **{w: i for i, w in enumerate(_UNITS, 1)},
    **{w: i for i, w in enumerate(_TEENS, 10)},
    **{w: i for i, w in enumerate(_TENS, 2)},  # tens: multiplied by ten below
}
_UNIT = "|".join(_UNITS)
# 1..99 in words: "seven", "twelve", "twenty", "twenty-three", "twenty three"
_UNDER_HUNDRED = rf"(?:(?:{'|'.join(_TENS)})(?:[\s\-](?:{_UNIT}))?|{'|'.join(_TEENS)}|{_UNIT})"
_SPOKEN_YEAR = re.compile(
    # "twenty twenty-three", "nineteen ninety-nine", "twenty oh five"
    rf"\b(?P<century>nineteen|twenty)[\s\-](?P<rest>(?:oh|o)[\s\-](?:{_UNIT})|(?:{'|'.join(_TENS)})(?:[\s\-](?:{_UNIT}))?|{'|'.join(_TEENS[1:])})\b"
    # "two thousand twenty-one", "two thousand and nine", "two thousand" alone is a count
    rf"|\btwo thousand(?:\s+and)?\s+(?P<after>{_UNDER_HUNDRED})\b",
    re.I,
)


def _under_hundred(words: str) -> int:
    parts = [p for p in re.split(r"[\s\-]+", words.lower()) if p not in ("oh", "o")]
    total = 0
    for p in parts:
        total += _VALUE[p] * 10 if p in _TENS else _VALUE[p]
    return total


def years_in_digits(question: str) -> str:
    """`question` with every year spoken in words written in digits."""

    def year(m: re.Match) -> str:
        if m.group("after"):
            return str(2000 + _under_hundred(m.group("after")))
        century = 1900 if m.group("century").lower() == "nineteen" else 2000
        return str(century + _under_hundred(m.group("rest")))

    return _SPOKEN_YEAR.sub(year, question)

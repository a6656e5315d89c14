"""Lengths of one field of a record compared with a number (`ir.Length`): the characters of its text
("really long messages (over 1000 characters)", "msgs > 1000 chars", 超过 1000 个字符) or the people of
a people array ("messages that mention 2+ people", "tagged two or more people", @ 了两个以上的人: the
number of entries of the field the collection kind's `mentioned` role names). The bound is a filter on
the length; a phrase with no number a bound reads stays unread, and the answer says so."""

from __future__ import annotations

import re
from dataclasses import replace

from context_engine.query.fields import person_field_for
from context_engine.query.ir import Length
from context_engine.query.planner.draft import NUMBER_WORDS, Draft
from context_engine.query.timeexpr import cn_number

_NUMBER = r"(\d[\d,]*|" + "|".join(NUMBER_WORDS) + r")"
_CN_NUMBER = r"([\d一二两三四五六七八九十]+)"
# "over 1000", "more than two", "at least 3", "> 1000", "fewer than 5": the bound before the number;
# "2+", "two or more", "1000 or fewer": after it.
_BEFORE = (
    r"(more than|longer than|greater than|over|above|at least|upwards of|in excess of|>=|>|"
    r"less than|fewer than|shorter than|under|below|at most|no more than|<=|<)\s*"
)
_AFTER = r"\s*(\+|or more|or over|or fewer|or less|and up)?"
_ENGLISH = rf"(?:{_BEFORE})?(?<!\w){_NUMBER}{_AFTER}"
# The units of a text's length, and of a people array's ("people", 人: the persons it lists).
_CHARACTERS = r"(?:characters?|chars?|letters)\b"
_PEOPLE = r"(?:(?:other |different )?(?:people|persons|users|members|folks|others)\b|(?:@-?)?mentions\b)"
_MENTION_VERB = (
    r"\b(?:@-?mention(?:s|ed|ing)?|mention(?:s|ed|ing)?|mentions of|tag(?:s|ged|ging)?|ping(?:s|ed|ing)?)\s+"
)
_TEXT_BOUND = re.compile(
    rf"{_ENGLISH}\s*{_CHARACTERS}|(超过|多于|大于|不到|少于|小于)\s*{_CN_NUMBER}\s*个?(?:字符|字)", re.I
)
_PEOPLE_BOUND = re.compile(
    rf"(?:{_MENTION_VERB}|\bwith\s+){_ENGLISH}\s*{_PEOPLE}"
    rf"|(?:@|提到|提及)了?\s*{_CN_NUMBER}\s*个(?:或)?(以上|以下|及以上)?的?(?:人|用户)",
    re.I,
)
_AT_LEAST = ("at least", ">=", "+", "or more", "or over", "and up", "以上", "及以上")
_MORE = (
    "more than",
    "longer than",
    "greater than",
    "over",
    "above",
    "upwards of",
    "in excess of",
    ">",
    "超过",
    "多于",
    "大于",
)
_AT_MOST = ("at most", "no more than", "<=", "or fewer", "or less", "以下")


class LengthStep(Draft):
    """Read before the times and people: "over 1000" is no year and "chars" no one's name."""

    def _lengths(self) -> None:
        text = next((p for p in self.schema.kind.text if "string" in self._types(p)), None)
        mentioned = person_field_for(self.schema, "mentioned")
        for pattern, field, name in (
            (_TEXT_BOUND, text, "text_length"),
            (_PEOPLE_BOUND, mentioned[0] if mentioned else None, "mention_count"),
        ):
            said = next((m for m in pattern.finditer(self.q) if not self._is_used(m.span())), None)
            if said is None or field is None:
                continue
            bound = _bound(said)
            if bound is None:
                continue
            self.use(said.span(), "value")
            if field == text:  # "really long messages (over 1000 characters)": the length said in a word too
                self.mark(r"\b(?:(?:really|very|super|extra|quite)\s+)?(?:long|lengthy|short)\b|很长|很短", "value")
            self.lengths.append(Length(name, field))
            self.add_filter(name, *bound)
            self.notes.append(f"the length of {field}: {bound[1]} {bound[0]}")
            # The number is the length's, not a time or a person's name ("1000 chars").
            self.ctx = replace(
                self.ctx,
                times=[t for t in self.ctx.times if not self._inside(t.text)],
                mentions=[m for m in self.ctx.mentions if not (said.start() <= m.start < said.end())],
            )

    def _types(self, path: str) -> set[str]:
        info = self.schema.fields.get(path)
        return set() if info is None or self.schema.is_array(path) else info.types

    def _inside(self, text: str) -> bool:
        at = self.low.find(text.lower())
        return at >= 0 and self._is_used((at, at + len(text)))


def _bound(m: re.Match) -> tuple[int, str] | None:
    """The number and the comparison of a length bound: "over 1000" gt 1000, "2+" gte 2, "超过 3 个" gt 3."""
    groups = m.groups()
    if groups[1] is not None:  # said in English: the bound, the number, what follows it
        before, number, after = (g.lower() if g else "" for g in groups[:3])
        value: int | None = NUMBER_WORDS[number] if number in NUMBER_WORDS else int(number.replace(",", ""))
    elif m.re is _TEXT_BOUND:  # 超过 1000 个字符
        before, after, value = groups[3], "", cn_number(groups[4])
    else:  # @ 了 2 个以上的人
        before, after, value = "", groups[4] or "", cn_number(groups[3])
    if value is None:
        return None
    if after in _AT_LEAST or before in _AT_LEAST:
        return value, "gte"
    if before in _MORE:
        return value, "gt"
    if after in _AT_MOST or before in _AT_MOST:
        return value, "lte"
    if before:
        return value, "lt"
    return value, "eq"

"""A tenant's own kinds: aggregates beyond one number — several at once ("the highest and lowest
salary", "the average, minimum and maximum age"), any aggregate per value of a named field ("the average
price of each category", "the number of schools and the total enrollment per county"), and the values
whose records meet a count ("the cities with two or more branches", "hometowns shared by more than
one teacher", "the years that hosted multiple festivals").

Fields are named as `OwnFieldStep` links them (the words of their names); the cues are a fixed family of
aggregate words, grouping words and count phrases, never a list per collection."""

from __future__ import annotations

import re

from context_engine.query.ir import Having, Measure, Shape
from context_engine.query.planner.draft import NUMBER_WORDS
from context_engine.query.planner.own_fields import FieldMention, OwnFieldStep

# The aggregate words, each with the measure it says; "total"/"sum" not before "number"/"count" (that counts).
_MEASURE_WORDS = (
    ("avg", r"average|mean|avg"),
    ("sum", r"total(?!\s+(?:number|count)\b)|sum(?:\s+of)?|combined|overall|cumulative|aggregate"),
    ("max", r"maximum|max|highest|largest|greatest|biggest|most|oldest"),
    ("min", r"minimum|min|lowest|smallest|least|fewest|youngest"),
)
_MEASURE_CUE = re.compile(
    r"\b(?:" + "|".join(f"(?P<{op}>{words})" for op, words in _MEASURE_WORDS) + r")\b(?:\s+(?:of|the|value))*",
    re.I,
)
# Between two aggregate words of one field ("the highest and lowest", "the average, minimum, and maximum").
_JOINED = re.compile(r"\s*(?:,\s*(?:and\s+)?|\s(?:and|or|&|as well as|along with)\s+)(?:the\s+)?", re.I)
# "the number of schools", "how many players", "count of": a count shown beside other measures.
_COUNT_CUE = re.compile(r"\b(?:(?:the\s+)?(?:total\s+)?number\s+of|count\s+of|how\s+many|the\s+count)\b", re.I)
# The word that makes a field the groups: "of each category", "per county", "for every type", "by type".
_GROUP_CUE = re.compile(
    r"\b(?:for|of|in|across|within)?\s*(?:each|every|all(?:\s+the)?|the\s+various|various|different|individual)\s+$"
    r"|\b(?:per|by|grouped\s+by|categori[sz]ed\s+by|broken\s+down\s+by|according\s+to)\s+(?:the\s+|each\s+|their\s+)?$",
    re.I,
)
_COUNT_WORD = r"\d+|" + "|".join(NUMBER_WORDS)
# How many records a value must have: "two or more", "at least 3", "more than one", "multiple", "exactly one".
_HOW_MANY = re.compile(
    rf"\b(?:(?P<op>at\s+least|a\s+minimum\s+of|no\s+(?:less|fewer)\s+than|more\s+than|over|greater\s+than"
    rf"|at\s+most|a\s+maximum\s+of|no\s+more\s+than|fewer\s+than|less\s+than|exactly|only|just)\s+)?"
    rf"(?P<n>{_COUNT_WORD})(?:\s+(?P<after>or\s+more|or\s+fewer|or\s+less|or\s+greater))?"
    rf"|\b(?P<many>multiple|several|many)\b",
    re.I,
)
_OPS = {
    "at least": "gte",
    "a minimum of": "gte",
    "no less than": "gte",
    "no fewer than": "gte",
    "more than": "gt",
    "over": "gt",
    "greater than": "gt",
    "at most": "lte",
    "a maximum of": "lte",
    "no more than": "lte",
    "fewer than": "lt",
    "less than": "lt",
    "exactly": "eq",
    "only": "eq",
    "just": "eq",
}
# Between the field of the groups and the count: "hometowns (that are) shared by", "cities with", "years that hosted".
_HAVING_VERB = re.compile(
    r"^\s*(?:\w+\s+){0,2}?(?:that|which|who|with|having|has|have|had|where|whose|shared\s+by|in\s+which|hosting|hosted|"
    r"contain(?:s|ing)?|includ(?:e|es|ing))\b(?:\s+\w+){0,3}?\s+$",
    re.I,
)


class OwnAggregateStep(OwnFieldStep):
    """Aggregates of a tenant's own kind that one number does not answer."""

    def own_aggregate(self, mentions: list[FieldMention]) -> Shape | None:
        """Several measures, measures per group, or the values a count of records narrows; None when the
        question asks none of these (the single-aggregate shapes of `own_shape` then read it)."""
        if self.schema.kind.builtin:
            return None
        shown = [f for f in mentions if not self._is_used((f.start, f.end)) and not self.known(f.path)]
        return self._measures(shown) or self._values_with_a_count(shown)

    def _measures(self, shown: list[FieldMention]) -> Shape | None:
        """ "the highest and lowest price" (two measures of one field, the field said after the last),
        "the average age and the maximum weight", each with an optional group: "... for each gender"."""
        found: list[tuple[tuple[int, int], Measure, FieldMention]] = []
        pending: list[tuple[re.Match, str]] = []  # aggregate words still waiting for their field
        position = 0
        for cue in _MEASURE_CUE.finditer(self.q):
            if cue.start() < position or self._is_used(cue.span()):
                continue
            op = next(name for name, _ in _MEASURE_WORDS if cue.group(name))
            joined = _JOINED.match(self.q, cue.end())
            if joined and _MEASURE_CUE.match(self.q, joined.end()):  # "the highest and lowest <field>"
                pending, position = [*pending, (cue, op)], joined.end()
                continue
            field = next((f for f in shown if 0 <= f.start - cue.end() <= 25 and self._numeric(f.path)), None)
            if field is None:
                pending, position = [], cue.end()
                continue
            for waiting, waiting_op in [*pending, (cue, op)]:
                found.append((waiting.span(), Measure(waiting_op, field.path), field))
            pending, position = [], field.end
        grouped = self._group_of(shown, [m for _, m, _ in found])
        if len(found) < 2 and not (found and grouped):
            return None
        measures = [m for _, m, _ in found]
        for span, _, field in found:
            self.use(span, "shape")
            self.use((field.start, field.end), "field")
        group = None
        if grouped is not None:
            group, said = grouped
            self.use(said, "shape")
            self.use((group.start, group.end), "field")
            if self.mark(_COUNT_CUE.pattern, "shape"):  # "the number of schools and the total enrollment"
                measures.insert(0, Measure("count"))
        distinct = list({m.name: m for m in measures}.values())
        return Shape("measures", field=group.path if group else None, measures=distinct)

    def _group_of(
        self, shown: list[FieldMention], measures: list[Measure]
    ) -> tuple[FieldMention, tuple[int, int]] | None:
        """The field whose values are the groups, a field of names said right after a grouping word, and
        that word's span."""
        measured = {m.field for m in measures}
        for f in shown:
            if f.path in measured or self._numeric(f.path) or self._is_used((f.start, f.end)):
                continue
            start = max(0, f.start - 40)
            cue = _GROUP_CUE.search(self.q[start : f.start])
            if cue and not self._is_used((start + cue.start(), f.start)):
                return f, (start + cue.start(), f.start)
        return None

    def _values_with_a_count(self, shown: list[FieldMention]) -> Shape | None:
        """ "the cities with two or more branches": the values of a field of names whose records number
        at least two — the records being the collection's own, said after the count ("branches" of the
        branches). The count shown too when asked ("and how many")."""
        for m in _HOW_MANY.finditer(self.q):
            if self._is_used(m.span()):
                continue
            noun = re.match(r"\s+(?:\w+\s+){0,2}?(\w+)", self.q[m.end() :])
            if noun is None or not self._names_records(noun.group(1)):
                continue
            before = [f for f in shown if f.end <= m.start() and not self._numeric(f.path) and not self._is_key(f.path)]
            if not before or not _HAVING_VERB.match(self.q[before[-1].end : m.start()]):
                continue
            field = before[-1]
            having = Having(Measure("count"), *_count_condition(m))
            self.use((field.end, m.start()), "shape")  # "that are home to", "having": what joins them
            self.use(m.span(), "shape")
            self.use((m.end() + noun.start(1), m.end() + noun.end(1)), "collection")
            self.use((field.start, field.end), "field")
            if _COUNT_CUE.search(self.q):
                self.mark(_COUNT_CUE.pattern, "shape")
                return Shape("group", field=field.path, having=[having])
            return Shape("distinct", field=field.path, having=[having])
        return None

    def _names_records(self, word: str) -> bool:
        """Whether a word names this collection's records ("teachers" of `teacher`, "stations" of `station`)."""
        return bool(re.fullmatch(self.schema.kind.pattern(), word, re.I)) or any(
            _same_noun(word, w) for w in re.split(r"[_\s]+", self.schema.name.lower()) if w
        )


def _same_noun(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return a == b or a.rstrip("s") == b.rstrip("s") or (a.endswith("ies") and a[:-3] + "y" == b)


def _count_condition(m: re.Match) -> tuple[str, int]:
    """The comparison a count phrase says: "two or more" gte 2, "more than one" gt 1, "multiple" gt 1."""
    if m.group("many"):
        return "gt", 1
    said = m.group("n").lower()
    n = int(said) if said.isdigit() else NUMBER_WORDS[said]
    after = (m.group("after") or "").lower().split()
    if after:
        return ("gte" if after[-1] in ("more", "greater") else "lte"), n
    op = re.sub(r"\s+", " ", (m.group("op") or "").lower())
    return _OPS.get(op, "eq"), n

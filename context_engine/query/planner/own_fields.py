"""A tenant's own kinds: the question's words linked to the collection's fields by the words of their
names ("the total passenger counts" is `Total_Passengers`, "opening year" `Open_Year`), and what a
question asks of a named field: a comparison with a number ("salary more than 30,000", "between
200,000 and 2 million"), an order ("sorted by age descending"), the record with the highest or lowest
value ("the artist who joined most recently" ... "the submission with the highest score"), an average,
a maximum or minimum, the distinct values ("the different locations").

Names are matched by rule, never by a list per collection: a field's name is split into words (camel
case, '_', '.'), and a question word names a field word when they are equal but for a plural ending,
or when one begins the other and the shared start is 4 letters or more ("weigh" for `Weight`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from context_engine.query.compile import array_prefix
from context_engine.query.ir import Shape, SortKey
from context_engine.query.planner.draft import Draft
from context_engine.query.schema import CollectionSchema

NUMERIC = {"int", "double"}
# "30,000", "2 million", "1.5": the number a comparison says.
_NUMBER = r"(\d[\d,]*(?:\.\d+)?)(\s*(?:million|thousand|k)\b)?"
_SCALE = {"million": 1_000_000, "thousand": 1_000, "k": 1_000}
_GREATER = r"more than|greater than|greater|larger than|higher than|bigger than|over|above|exceed(?:s|ing)?|after|later than|beyond"
_LESS = r"less than|fewer than|smaller than|lower than|under|below|before|earlier than"
_AT_LEAST = r"at least|no less than|not less than|a minimum of|minimum of|or more|(?:greater|more) than or equal to"
_AT_MOST = r"at most|no more than|not more than|a maximum of|maximum of|up to|or less|or fewer|(?:less|smaller) than or equal to"
_EQUAL = r"equal to|equals|exactly|of|is|=|being"
_HIGH = r"highest|largest|biggest|greatest|most|maximum|max|top|oldest|latest|longest|tallest|heaviest|richest|most recent(?:ly)?"
_LOW = r"lowest|smallest|least|minimum|min|fewest|youngest|earliest|shortest|lightest|cheapest|poorest"
_DESCENDING = re.compile(
    r"\bdesc(?:ending)?\b|\bdescen\w*|\bdecreasing\b|\bhighest to (?:the )?lowest\b|\blargest to (?:the )?smallest\b"
    r"|\bmost to (?:the )?least\b|\bfrom \w+est to\b(?<!\blowest to\b)|\breverse\b",
    re.I,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z]*|\d+")
# A negation of having something: "no", "without (any)", "never had any", "did not write any", "zero".
_ABSENT = re.compile(
    r"\b(?:without(?:\s+any)?|with\s+no|no|zero|never\s+(?:\w+\s+){0,2}?(?:any|a|an)"
    r"|(?:do|does|did|have|has|had)\s*(?:not|n't)\s+(?:\w+\s+)?(?:any|a|an))\s+(?P<noun>(?:[a-z]+\s+){0,2}[a-z]+)",
    re.I,
)


def field_words(path: str) -> list[str]:
    """The words of a field's name, last key only: `Total_Passengers` -> total, passengers; `openYear`
    -> open, year; `orchestra.performance.Share` -> share."""
    leaf = path.rsplit(".", 1)[-1]
    leaf = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", leaf)
    return [w.lower() for w in re.split(r"[\s_\-]+", leaf) if w]


def _forms(word: str) -> set[str]:
    """A word and the singulars it may be of ("names": name; "classes": class; "cities": city)."""
    forms = {word}
    for ending, singular in (("ies", "y"), ("es", ""), ("s", "")):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            forms.add(word[: -len(ending)] + singular)
    return forms


def names(question_word: str, field_word: str) -> bool:
    """Whether a question word names a word of a field's name (see the module's docstring)."""
    a, b = question_word.lower(), field_word.lower()
    if _forms(a) & _forms(b):
        return True
    short, long_ = sorted((a, b), key=len)
    return len(short) >= 4 and long_.startswith(short)


# A field's last word that only says its unit: "duration" names `duration_seconds`, "size" `size_mb`.
_UNITS = frozenset(
    "seconds secs sec minutes mins min hours hrs days ms millis usd eur pct percent bytes kb mb gb kib mib gib".split()
)


@dataclass
class FieldMention:
    path: str
    start: int
    end: int
    words: int  # how many words of the field's name the question says


class OwnFieldStep(Draft):
    """Fields of a tenant's own kind named in the question, and what is asked of them."""

    def own_field_mentions(self, schema: CollectionSchema | None = None) -> list[FieldMention]:
        """Each field the question names (of `schema`, else the collection's), where: the mention saying
        the most of a field's name wins a place (`Player_name` over `name` for "player names"); words
        already read are skipped."""
        schema = schema or self.schema
        tokens = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(self.q)]
        found: list[FieldMention] = []
        for path, info in schema.fields.items():
            if path in ("ref", "source") or "object" in info.types or path.startswith("_"):
                continue
            words = field_words(path)
            if not words:
                continue
            for i in range(len(tokens)):
                # The field's words in order, allowing "the"/"of" between ("number of products"), or the
                # last word alone when the field has one word or its first word is the collection's.
                said = _said(words, tokens, i) or (words[-1] in _UNITS and _said(words[:-1], tokens, i))
                if said:
                    start, end, count = tokens[i][1], tokens[i + said - 1][2], len(words)
                    found.append(FieldMention(path, start, end, count))
                elif len(words) > 1 and names(tokens[i][0], words[-1]) and _names_collection(words[:-1], schema.name):
                    found.append(FieldMention(path, tokens[i][1], tokens[i][2], 1))
        found.sort(key=lambda f: (-(f.end - f.start), -f.words, f.path.count("."), f.start))
        taken: list[FieldMention] = []
        collection_words = getattr(self, "collection_spans", [])
        for f in found:
            if self._is_used((f.start, f.end)) or any(f.start < t.end and f.end > t.start for t in taken):
                continue
            if any(a <= f.start and f.end <= b for a, b in collection_words):
                continue  # "the room called X" names the rooms, not their reservations' `Room`
            taken.append(f)
        return sorted(taken, key=lambda f: f.start)

    def known(self, path: str) -> bool:
        """Whether the question says the field's value ("the high schooler named Kyle"): an answer
        shows what it does not know."""
        return any(f.field == path and f.op in ("eq", "in") and not f.negate for f in self.filters)

    def own_unwind(self, shape: Shape) -> str | None:
        """A tenant's own kind: the embedded array of objects whose elements the question is about — the
        one array every field it shows, orders or measures inside an array belongs to ("the prices of
        products ...": one row per product, not per manufacturer). A condition alone does not: "which
        stadium had an injury of X" is about stadiums."""
        if self.schema.kind.builtin:
            return None
        paths = [
            *shape.fields,
            *(s.field for s in shape.sort),
            *([shape.field] if shape.field else []),
            *(m.field for m in shape.measures if m.field),
        ]
        arrays = set()
        for path in paths:
            info = self.schema.fields.get(path)
            if info is not None and info.in_array and "." in path:
                top = array_prefix(path, self.schema)
                if top != path:  # a field of an array's objects, not an array of plain values
                    arrays.add(top)
        return arrays.pop() if len(arrays) == 1 else None

    def own_absences(self) -> None:
        """ "customers without any orders", "users who never wrote a review", "shops with no staff": an
        embedded array the negation names (by the words of its name) is empty or missing."""
        if self.schema.kind.builtin:
            return
        arrays = {
            path: field_words(path)[-1]
            for path, info in self.schema.fields.items()
            if "." not in path and info.in_array and field_words(path)
        }
        for m in _ABSENT.finditer(self.q):
            if self._is_used(m.span()):
                continue
            for word in re.finditer(r"[A-Za-z]+", m.group("noun")):
                path = next((p for p, last in arrays.items() if names(word.group(0), last)), None)
                if path is not None and not self.has_filter(path):
                    self.use((m.start(), m.start("noun") + word.end()), "value")
                    self.add_filter(path, None, "empty")
                    break

    def _numeric(self, path: str) -> bool:
        info = self.schema.fields.get(path)
        return info is not None and bool(info.types & NUMERIC)

    def own_comparisons(self, mentions: list[FieldMention]) -> list[FieldMention]:
        """Numeric conditions on a named numeric field ("salary more than 30,000", "at least 200 feet
        tall", "between 4,000 and 5,000"): each a filter, its words read. The mentions it used."""
        used: list[FieldMention] = []
        between = re.compile(rf"\bbetween\s+{_NUMBER}\s+(?:and|to)\s+{_NUMBER}", re.I)
        single = re.compile(
            rf"\b(?:(?P<op>{_AT_LEAST}|{_AT_MOST}|{_GREATER}|{_LESS}|{_EQUAL})\s+(?:the\s+)?)?{_NUMBER}"
            rf"(?:\s+(?P<after>or more|or less|or fewer|or greater|or higher|or above|or below))?",
            re.I,
        )
        for m in list(between.finditer(self.q)) + list(single.finditer(self.q)):
            if self._is_used(m.span()):
                continue
            field = self._field_near(m.start(), m.end(), mentions)
            if field is None:
                continue
            if m.re is between:
                low, high = _number(m.group(1), m.group(2)), _number(m.group(3), m.group(4))
                self.use(m.span(), "value")
                self.add_filter(field.path, low, "gte")
                self.add_filter(field.path, high, "lte")
            else:
                said = (m.group("op") or "").lower()
                after = (m.group("after") or "").lower()
                op = _operator(said, after)
                if op is None:
                    continue
                self.use(m.span(), "value")
                self.add_filter(field.path, _number(m.group(2), m.group(3)), op)
            self.use((field.start, field.end), "field")
            used.append(field)
        return used

    def _field_near(self, start: int, end: int, mentions: list[FieldMention]) -> FieldMention | None:
        """The numeric field a number compares: the nearest named before it (within a few words), else
        the one right after it ("at least 2 photos" is no field; "200 feet tall ... floors": the next)."""
        before = [f for f in mentions if f.end <= start and start - f.end <= 40 and self._numeric(f.path)]
        if before:
            return before[-1]
        after = [f for f in mentions if f.start >= end and f.start - end <= 12 and self._numeric(f.path)]
        return after[0] if after else None

    def own_shape(self, mentions: list[FieldMention]) -> Shape | None:
        """What is asked of a named field, when it is more than a list: an average, a maximum or
        minimum, the distinct values, the record with the highest or lowest value, an order."""
        q = self.q
        shown = [f for f in mentions if not self._is_used((f.start, f.end)) and not self.known(f.path)]

        def after(
            pattern: str, fits: Callable[[str], bool] = lambda path: True
        ) -> tuple[re.Match, FieldMention] | None:
            """A cue, then a field it is about within a few words ("average salary", "the highest
            total score"); `fits`: what that field must be (a measure for an average: "average deploy
            duration" is about the duration, not the deploy id)."""
            for m in re.finditer(pattern, q, re.I):
                if self._is_used(m.span()):
                    continue
                nxt = [f for f in shown if f.start >= m.end() and f.start - m.end() <= 25 and fits(f.path)]
                if nxt:
                    return m, nxt[0]
            return None

        common = re.search(
            r"\b(?:(?P<most>most|least)\s+(?:common(?:ly)?|frequent(?:ly)?|prevalent|popular|often)(?:\s+occurring)?"
            r"|(?P<high>highest|greatest|largest|biggest|lowest|smallest|fewest)\s+(?:number|count|amount)\s+of)\b",
            q,
            re.I,
        )
        if common and not self._is_used(common.span()):
            field = self._grouped_near(common, shown)
            if field is not None:
                least = re.match(r"least|lowest|smallest|fewest", common.group("most") or common.group("high"), re.I)
                self.use(common.span(), "shape")
                self.use((field.start, field.end), "field")
                self.mark(self.schema.kind.pattern(), "collection")
                return Shape("argmin" if least else "argmax", field=field.path, over="groups", fields=[field.path])
        avg = after(r"\b(?:average|mean|avg)\b(?:\s+(?:of|the|number of))*", self._numeric)
        if avg:
            self._read(avg)
            return Shape("avg", field=avg[1].path)
        # "total deploy duration", "the sum of the prices": not "the total number of …", which counts
        total = after(r"\b(?:total|sum|combined)\b(?!\s+(?:number|count)\b)(?:\s+(?:of|the))*", self._numeric)
        if total:
            self._read(total)
            return Shape("sum", field=total[1].path)
        distinct = after(r"\b(?:distinct|different|unique)\b")
        if distinct and not re.search(r"\bhow many\b|\bnumber of\b|\bcount\b", q, re.I):
            self._read(distinct)
            return Shape("distinct", field=distinct[1].path)
        if distinct:
            self._read(distinct)
            self.mark(r"\bhow many\b|\bnumber of\b|\bcount of\b|\bcount\b", "shape")
            return Shape("distinct_count", field=distinct[1].path)
        order = after(
            r"\b(?:sort(?:ed|s)?|order(?:ed|s)?|arrang(?:ed|e)|rank(?:ed)?)\s+(?:them\s+)?(?:\w+\s+){0,2}?(?:by|on|according to)\b"
            r"(?:\s+(?:the|their|its|each))*|\border of\b(?:\s+(?:the|their|its))*"
        )
        order = order or after(r"\bbased on\b(?:\s+(?:the|their|its))*")
        if order and self._numeric_or_any(order[1]):
            self._read(order)
            direction = -1 if _DESCENDING.search(q) else 1
            self.mark(_DESCENDING.pattern + r"|\bascending\b|\bin (?:ascending|descending) order\b", "shape")
            self.mark(r"\bin\s+(?:\w+\s+)?order\b", "shape")
            fields = [f.path for f in shown if f is not order[1]] or [order[1].path]
            return Shape("list", sort=[SortKey(order[1].path, direction)], fields=list(dict.fromkeys(fields)))
        alphabetical = re.search(
            r"\b(?:(?:in\s+)?(?:(?P<reverse>reverse|descending)\s+)?alphabetical(?:ly)?(?:\s+order)?|alphabetically)\b",
            q,
            re.I,
        )
        if alphabetical and not self._is_used(alphabetical.span()):
            named = [f for f in shown if not self._numeric(f.path)]
            if named:  # "the club names in reverse alphabetical order": ordered by the (first) name shown
                self.use(alphabetical.span(), "shape")
                for f in shown:
                    self.use((f.start, f.end), "field")
                direction = -1 if alphabetical.group("reverse") or _DESCENDING.search(q) else 1
                fields = list(dict.fromkeys(f.path for f in shown))
                return Shape("list", sort=[SortKey(named[0].path, direction)], fields=fields)
        extreme = after(rf"\b(?:{_HIGH}|{_LOW})\b")
        if extreme and self._numeric_or_any(extreme[1]):
            cue, field = extreme
            high = re.fullmatch(_HIGH, cue.group(0), re.I) is not None
            others = [f.path for f in shown if f is not field and f.end <= cue.start()]
            self._read(extreme)
            if others:  # "the name of the wrestler with the highest score": that record, those fields
                limit = _count_before(q[: cue.start()])
                return Shape("list", sort=[SortKey(field.path, -1 if high else 1)], limit=limit, fields=others)
            if re.fullmatch(r"maximum|max|minimum|min|highest|lowest|largest|smallest", cue.group(0), re.I):
                return Shape("max" if high else "min", field=field.path)
        return None

    def _grouped_near(self, cue: re.Match, shown: list[FieldMention]) -> FieldMention | None:
        """The field whose values a "most common" cue counts: a field of names, said before the cue ("the
        nationality with the highest number of journalists") or right after it ("the most common city")."""
        candidates = [f for f in shown if not self._numeric(f.path) and not self._is_key(f.path)]
        after = [f for f in candidates if f.start >= cue.end() and f.start - cue.end() <= 12]
        before = [f for f in candidates if f.end <= cue.start()]
        return after[0] if after else before[-1] if before else None

    def _is_key(self, path: str) -> bool:
        return path == self.schema.kind.key

    def _numeric_or_any(self, mention: FieldMention) -> bool:
        info = self.schema.fields.get(mention.path)
        return info is not None and not info.in_array

    def _read(self, found: tuple[re.Match, FieldMention]) -> None:
        cue, field = found
        self.use(cue.span(), "shape")
        self.use((field.start, field.end), "field")


_COUNTS = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten".split())}


def _count_before(text: str) -> int:
    """How many records a superlative asks for: "the three stations with the highest ...", "top 5 ..."
    (1 when no number is said)."""
    m = re.search(r"\b(?:the|top|first)\s+(\d+|" + "|".join(_COUNTS) + r")\b", text, re.I)
    if m is None:
        return 1
    said = m.group(1).lower()
    return max(1, min(int(said) if said.isdigit() else _COUNTS[said], 200))


def _said(words: list[str], tokens: list[tuple[str, int, int]], i: int) -> int:
    """How many question tokens from `i` say all of a field's words in order (fillers allowed), 0 if not."""
    j = i
    for k, word in enumerate(words):
        while k and j < len(tokens) and tokens[j][0].lower() in ("the", "of", "a"):
            j += 1
        if j >= len(tokens) or not names(tokens[j][0], word):
            return j - i if k >= 2 and len(words) >= 3 else 0  # "working years": Working_year_starts
        j += 1
    return j - i


def _names_collection(words: list[str], collection: str) -> bool:
    """Whether a field's first words name its own collection (`Player_name` of `player`): then the last
    word alone names the field ("the names of players")."""
    own = field_words(collection)
    return bool(own) and all(any(names(w, c) for c in own) for w in words)


def _number(digits: str, scale: str | None) -> int | float:
    value = float(digits.replace(",", ""))
    if scale:
        value *= _SCALE[scale.strip().lower()]
    return int(value) if value.is_integer() else value


def _operator(said: str, after: str) -> str | None:
    if after in ("or more", "or greater", "or higher", "or above") or re.fullmatch(_AT_LEAST, said):
        return "gte"
    if after in ("or less", "or fewer", "or below") or re.fullmatch(_AT_MOST, said):
        return "lte"
    if re.fullmatch(_GREATER, said):
        return "gt"
    if re.fullmatch(_LESS, said):
        return "lt"
    if said and re.fullmatch(_EQUAL, said):
        return "eq"
    return None

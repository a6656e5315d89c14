"""The typed plan IR: what a question asks for, before it is a MongoDB pipeline.

Both planners write this (the offline planner step by step, the LLM planner as JSON constrained by
`PLAN_JSON_SCHEMA`); `query.compile.compile_plan` turns it into a pipeline, deterministically, and the
validator checks that pipeline as it checks any other. Every element records the span of the question
it came from (`span`: `[start, end)` or None when no words said it), so a plan can say which words it
understood. Fields are named by a role ("author", "merged", "label": `query/fields.py`) or by a path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field as default
from datetime import datetime
from typing import Any

from context_engine.text import parse_datetime

Span = tuple[int, int]

# eq ... lte compare; in/nin take a list; exists takes a bool; empty/not_empty take no value
# ("is empty": missing, null, [] or ""); words takes a list of words, any of which the text of the
# field holds, whole or with an ending ("CI in the title"; `validate.word_pattern`); exact_words the
# same, each word exactly as written ("decoder or decoders": not "decode"; `validate.exact_word_pattern`);
# eq_field/ne_field compare with another field of the same record, named by the value ("closed by its
# own author": the closer eq_field the author; "replies in other people's threads": the thread's starter
# ne_field the author), the first field present; day_of_week takes the days (1 Sunday … 7 Saturday, UTC, as
# MongoDB's `$dayOfWeek` numbers them) a date falls on ("merged on a weekend": [1, 7]); size_gte/size_lte take a
# count of a list field's elements ("issues with 2+ labels": labels size_gte 2; a missing list holds none).
# eq_field with a list on one side is "among" ("assigned to their own author": the author eq_field the assignees).
OPERATORS = (
    "eq",
    "ne",
    "in",
    "nin",
    "gt",
    "gte",
    "lt",
    "lte",
    "exists",
    "empty",
    "not_empty",
    "words",
    "exact_words",
    "eq_field",
    "ne_field",
    "day_of_week",
    "size_gte",
    "size_lte",
)
# How many elements a list field holds, at least / at most ("more than one label": size_gte 2 of `labels`).
SIZE_OPERATORS = ("size_gte", "size_lte")
WORD_OPERATORS = ("words", "exact_words")
FIELD_OPERATORS = ("eq_field", "ne_field")
# The words of a `words` filter: one ASCII word (hyphenated ones too: "re-frame") or one run of Chinese
# characters each, so the pattern built from them is a fixed shape the validator recognises
# (`validate.is_word_pattern`).
WORD = re.compile(r"[a-z0-9_]{1,40}(?:-[a-z0-9_]{1,40}){0,3}|[\u4e00-\u9fff]{1,20}")
MAX_WORDS = 12
SHAPES = (
    "list",
    "count",
    "distinct_count",
    "group",
    "top",
    "min",
    "max",
    "argmin",
    "argmax",
    "sum",
    "avg",
    "distinct",
    "measures",
    "share",
    "difference",
    "change",
    "empty_count",
)
# Two groups of one grouping set against each other: their counts' difference, or the percent change from the first
# to the second. A "which of two" comparison that names a winner is a ranking (`argmax` over the groups), not this.
TWO_GROUP_SHAPES = ("difference", "change")
RECORD_SHAPES = ("list", "top", "argmin", "argmax")  # shapes whose answer is records, not numbers
# periods of time, and the cyclic ones: the hour of the day (0-23) and the day of the week (1 Sunday … 7 Saturday), UTC
BUCKETS = ("day", "week", "month", "year", "hour", "weekday")
PERIOD_BUCKETS = ("day", "week", "month", "year")  # the buckets that are periods of the calendar, not cycles
FOLLOWUPS = ("restrict", "recount")
MEASURES = ("count", "sum", "avg", "min", "max")
COMPARISONS = ("eq", "ne", "gt", "gte", "lt", "lte")
OFFSET_SHAPES = ("group", "top", "list", "argmin", "argmax")  # ranked rows, the first few skipped (the runner-up)
HAVING_SHAPES = ("group", "distinct", "measures")  # shapes of groups, which a condition on a group can narrow


class IRError(ValueError):
    """An IR that cannot mean anything: unknown operator or shape, a value of the wrong type."""


def _span_json(span: Span | None) -> list[int] | None:
    return [span[0], span[1]] if span else None


def _span_of(value: Any) -> Span | None:
    if value is None:
        return None
    if not (isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value)):
        raise IRError(f"a span is [start, end], not {value!r}")
    return value[0], value[1]


def from_extended_json(value: Any) -> Any:
    """MongoDB Extended JSON dates (`{"$date": ...}`) as datetimes, everything else as it is."""
    if isinstance(value, dict):
        if set(value) == {"$date"} and isinstance(value["$date"], str):
            parsed = parse_datetime(value["$date"])
            if parsed is not None:
                return parsed
        return {k: from_extended_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_extended_json(v) for v in value]
    return value


def to_extended_json(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"$date": value.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if isinstance(value, dict):
        return {k: to_extended_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_extended_json(v) for v in value]
    return value


_value_json = to_extended_json


def _value_of(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$date"}:
        parsed = parse_datetime(str(value["$date"]))
        if parsed is None:
            raise IRError(f"not a date: {value['$date']!r}")
        return parsed
    if isinstance(value, list):
        return [_value_of(v) for v in value]
    if isinstance(value, dict):
        raise IRError(f"a filter value is a string, number, boolean, null, date or list, not {value!r}")
    return value


@dataclass
class Filter:
    """One condition: `field` (a role or a path) `op` `value`; `negate` inverts it."""

    field: str
    op: str = "eq"
    value: Any = None
    negate: bool = False
    span: Span | None = None
    via: str | None = None  # the reference field whose record the condition is about (`pr`: the incident's PR)

    def __post_init__(self):
        if self.op not in OPERATORS:
            raise IRError(f"unknown operator {self.op!r}; use one of: {', '.join(OPERATORS)}")
        if self.op in ("in", "nin") and not isinstance(self.value, list):
            raise IRError(f"{self.op} takes a list, not {self.value!r}")
        if self.op == "exists" and not isinstance(self.value, bool):
            raise IRError(f"exists takes true or false, not {self.value!r}")
        if self.op in FIELD_OPERATORS and not (isinstance(self.value, str) and self.value):
            raise IRError(f"{self.op} takes the name of another field, not {self.value!r}")
        if self.op == "day_of_week" and not (
            isinstance(self.value, list)
            and self.value
            and all(isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= 7 for d in self.value)
        ):
            raise IRError(f"day_of_week takes a list of days 1 (Sunday) to 7 (Saturday), not {self.value!r}")
        if self.op in SIZE_OPERATORS and not (
            isinstance(self.value, int) and not isinstance(self.value, bool) and 0 <= self.value <= 1000
        ):
            raise IRError(f"{self.op} takes a number of elements (0 to 1000), not {self.value!r}")
        if self.op in WORD_OPERATORS and not (
            isinstance(self.value, list)
            and 0 < len(self.value) <= MAX_WORDS
            and all(isinstance(w, str) and WORD.fullmatch(w) for w in self.value)
        ):
            raise IRError(
                f"{self.op} takes a list of 1 to {MAX_WORDS} words (letters and digits, or Chinese characters), "
                f"not {self.value!r}"
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "op": self.op,
            "value": _value_json(self.value),
            "negate": self.negate,
            "span": _span_json(self.span),
            **({"via": self.via} if self.via else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Filter:
        return cls(
            field=str(data["field"]),
            op=data.get("op", "eq"),
            value=_value_of(data.get("value")),
            negate=bool(data.get("negate", False)),
            span=_span_of(data.get("span")),
            via=str(data["via"]) if data.get("via") else None,
        )


@dataclass
class TimeRange:
    """`field` (a date role or path) in [start, end); either end may be open (None)."""

    field: str
    start: datetime | None = None
    end: datetime | None = None
    span: Span | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "start": _value_json(self.start),
            "end": _value_json(self.end),
            "span": _span_json(self.span),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TimeRange:
        start, end = (_value_of(data.get(k)) for k in ("start", "end"))
        for bound in (start, end):
            if bound is not None and not isinstance(bound, datetime):
                raise IRError(f'a time range\'s bounds are dates ({{"$date": ...}}) or null, not {bound!r}')
        return cls(field=str(data["field"]), start=start, end=end, span=_span_of(data.get("span")))


@dataclass
class SortKey:
    """`field` ascending (1) or descending (-1); the field "relevance" is the full-text score."""

    field: str
    direction: int = -1

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "direction": self.direction}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SortKey:
        if data.get("direction", -1) not in (1, -1):
            raise IRError(f"a sort direction is 1 or -1, not {data.get('direction')!r}")
        return cls(str(data["field"]), data.get("direction", -1))


@dataclass
class Measure:
    """One aggregate over the records (of a group): `op` (count, sum, avg, min, max) of `field`; a count
    takes no field. Its `name` is the answer's column: "count", "avg_price"."""

    op: str
    field: str | None = None

    def __post_init__(self):
        if self.op not in MEASURES:
            raise IRError(f"unknown measure {self.op!r}; use one of: {', '.join(MEASURES)}")
        if (self.op == "count") != (self.field is None):
            raise IRError("a count takes no field" if self.field else f"the measure {self.op} needs a field")

    @property
    def name(self) -> str:
        return "count" if self.field is None else f"{self.op}_{self.field.replace('.', '_')}"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "field": self.field}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Measure:
        return cls(str(data["op"]), data.get("field"))


@dataclass
class Having:
    """A condition on a group's measure: "cities with two or more branches" keeps the groups whose count
    is at least 2; "types whose average price is under 100" those whose avg of price is below 100."""

    measure: Measure
    op: str
    value: int | float

    def __post_init__(self):
        if self.op not in COMPARISONS:
            raise IRError(f"a group condition compares with one of {', '.join(COMPARISONS)}, not {self.op!r}")
        if not isinstance(self.value, (int, float)) or isinstance(self.value, bool):
            raise IRError(f"a group condition compares with a number, not {self.value!r}")

    def to_json(self) -> dict[str, Any]:
        return {"measure": self.measure.to_json(), "op": self.op, "value": self.value}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Having:
        return cls(Measure.from_json(data["measure"]), data.get("op", "eq"), data["value"])


@dataclass
class Shape:
    """What the answer is.

    - list: the records, sorted, at most `limit`;
    - count: how many records; distinct_count: how many distinct values of `field`;
    - group: record counts per value of `field`, or per `bucket` (day/week/month/year) of the date `field`;
      buckets in time order, groups by count (most first), `limit` keeps the first groups (top-N);
    - top: the `limit` records with the highest `field` (a measure: replies, additions);
    - min/max: the smallest/largest `field` over the records, or the smallest/largest group count
      (`over` = "groups"); argmin/argmax: the record with it, or the group (busiest month, quietest day);
    - sum: the total of `field` over the records (the replies all of someone's threads got); avg: its mean,
      or (`over` = "groups") the mean record count of the groups or `bucket`s ("PRs merged per month, on average":
      over a time range with both ends, every period of it, one with no record counted as 0);
    - share: the fraction (0..1) of the records that also meet the filters `part` ("what share of 2023's
      PRs were merged": the PRs of 2023, the part merged);
      `percent`: said as a percentage (0..100), as the question asked ("in percent", "%", 百分之几); with a
      `field` (or its `bucket`), the share of each group's records, in key order ("the merge rate per year"),
      or with `sort` on "share" and `limit` the groups ranked by it ("which year had the best merge rate");
    - difference: the count of the group `sides[0]` minus that of `sides[1]`, the groups of `field` (its
      values, or its `bucket`s: "2022") as `group` makes them ("how many more PRs did A open than B": the
      authors A and B; "how many fewer issues in 2023 than 2022": the years 2022 and 2023);
    - change: the percent change from the count of `sides[0]` to that of `sides[1]` ((b - a) / a x 100;
      none when a is 0): "how did merged PRs change from 2023 to 2024, in percent", 同比, 环比;
    - empty_count: how many `bucket`s (day, week, month, year) of the plan's time range on the date `field` have
      no record ("how many days in 2018 had no messages": the days of 2018 minus the days with one); the
      time range must have both ends;
    - distinct: the distinct values of `field` ("the different locations"), in value order;
    - measures: several aggregates at once ("the minimum and maximum salary") over the records, or any
      aggregates per value of `field` ("the average price of each category"), in value order — or, with
      `sort` on a measure's name and `limit`, ranked by it ("whose threads drew the most replies altogether":
      the sum of reply_count per author, highest first, one);
    `having` (group, distinct, measures with a field) keeps only the groups whose measures meet it
    ("the cities with two or more branches": the distinct cities having a count of at least 2).
    `offset` (group, top, list) skips the first rows of that order: the runner-up is `offset` 1, `limit` 1.
    `fields` (list, top, argmin, argmax: record shapes) are the fields the answer shows ("the name and
    age of ..."); none: the whole records.
    """

    kind: str = "list"
    field: str | None = None
    bucket: str | None = None
    over: str = "records"
    limit: int | None = None
    sort: list[SortKey] = default(default_factory=list)
    span: Span | None = None
    fields: list[str] = default(default_factory=list)
    measures: list[Measure] = default(default_factory=list)
    having: list[Having] = default(default_factory=list)
    offset: int = 0
    part: list[Filter] = default(default_factory=list)
    percent: bool = False
    sides: list[Any] = default(default_factory=list)

    def __post_init__(self):
        if not (isinstance(self.fields, list) and all(isinstance(f, str) and f for f in self.fields)):
            raise IRError(f"shape fields are a list of field names, not {self.fields!r}")
        if self.fields and self.kind not in RECORD_SHAPES:
            raise IRError(f"only a shape of records ({', '.join(RECORD_SHAPES)}) shows fields, not {self.kind}")
        if self.kind not in SHAPES:
            raise IRError(f"unknown shape {self.kind!r}; use one of: {', '.join(SHAPES)}")
        if self.bucket is not None and self.bucket not in BUCKETS:
            raise IRError(f"unknown time bucket {self.bucket!r}; use one of: {', '.join(BUCKETS)}")
        if self.over not in ("records", "groups"):
            raise IRError(f"a shape is over records or groups, not {self.over!r}")
        if self.limit is not None and (
            not isinstance(self.limit, int) or isinstance(self.limit, bool) or self.limit < 1
        ):
            raise IRError(f"a limit is a positive integer, not {self.limit!r}")
        if not isinstance(self.offset, int) or isinstance(self.offset, bool) or self.offset < 0:
            raise IRError(f"an offset is a non-negative integer, not {self.offset!r}")
        if self.offset and self.kind not in OFFSET_SHAPES:
            raise IRError(f"only a ranked shape ({', '.join(OFFSET_SHAPES)}) skips rows, not {self.kind}")
        if (self.kind == "share") != bool(self.part):
            raise IRError("only the shape share takes a part, and it needs at least one filter")
        if self.percent and self.kind != "share":
            raise IRError("only a share is said in percent (a change always is)")
        if (self.kind in TWO_GROUP_SHAPES) != bool(self.sides):
            raise IRError(f"only the shapes {' and '.join(TWO_GROUP_SHAPES)} take sides, and they need them")
        if self.sides and (
            len(self.sides) != 2
            or self.sides[0] == self.sides[1]
            or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in self.sides)
        ):
            raise IRError(f"sides are two different group keys (a value or a period such as 2022), not {self.sides!r}")
        if self.kind == "empty_count" and self.bucket not in PERIOD_BUCKETS:
            raise IRError(f"empty_count counts periods: a bucket of {', '.join(PERIOD_BUCKETS)}, not {self.bucket!r}")
        needs_field = self.kind in ("distinct_count", "group", "top", "empty_count", *TWO_GROUP_SHAPES) or (
            self.kind in ("min", "max", "argmin", "argmax", "sum", "avg", "distinct")
        )
        if needs_field and not self.field:
            raise IRError(f"the shape {self.kind} needs a field")
        if (self.kind == "measures") != bool(self.measures):
            raise IRError("only the shape measures takes measures, and it needs at least one")
        if self.having and (self.kind not in HAVING_SHAPES or not self.field or self.bucket):
            raise IRError(f"only groups of a field's values ({', '.join(HAVING_SHAPES)}) take a condition on a group")

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "field": self.field,
            "bucket": self.bucket,
            "over": self.over,
            "limit": self.limit,
            "sort": [s.to_json() for s in self.sort],
            "span": _span_json(self.span),
            **({"fields": list(self.fields)} if self.fields else {}),
            **({"measures": [m.to_json() for m in self.measures]} if self.measures else {}),
            **({"having": [h.to_json() for h in self.having]} if self.having else {}),
            **({"offset": self.offset} if self.offset else {}),
            **({"part": [f.to_json() for f in self.part]} if self.part else {}),
            **({"percent": True} if self.percent else {}),
            **({"sides": list(self.sides)} if self.sides else {}),
        }  # said only when set: earlier plans read the same

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Shape:
        return cls(
            kind=data.get("kind", "list"),
            field=data.get("field"),
            bucket=data.get("bucket"),
            over=data.get("over") or "records",
            limit=data.get("limit"),
            sort=[SortKey.from_json(s) for s in data.get("sort") or []],
            span=_span_of(data.get("span")),
            fields=data.get("fields") or [],
            measures=[Measure.from_json(m) for m in data.get("measures") or []],
            having=[Having.from_json(h) for h in data.get("having") or []],
            offset=data.get("offset") or 0,
            part=[Filter.from_json(f) for f in data.get("part") or []],
            percent=data.get("percent") is True,
            sides=list(data.get("sides") or []),
        )


DURATION_NAME = re.compile(r"[a-z][a-z_]{0,39}")
DURATION_UNITS = {"days": 86_400_000, "hours": 3_600_000}  # milliseconds, what `$subtract` of two dates gives


@dataclass
class Duration:
    """A measure derived from two dates of one record: `end` minus `start` (date roles or paths) in `unit`
    ("took more than 30 days to merge": merged minus created, in days). Filters and the shape name it by
    `name` as they name a stored field; a record missing either date has no duration."""

    name: str
    start: str
    end: str
    unit: str = "days"

    def __post_init__(self):
        if not DURATION_NAME.fullmatch(self.name):
            raise IRError(f"a duration's name is lower-case letters and underscores, not {self.name!r}")
        if self.unit not in DURATION_UNITS:
            raise IRError(f"a duration is in one of {', '.join(DURATION_UNITS)}, not {self.unit!r}")
        if not (isinstance(self.start, str) and self.start and isinstance(self.end, str) and self.end):
            raise IRError("a duration names a start date and an end date")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "start": self.start, "end": self.end, "unit": self.unit}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Duration:
        return cls(str(data["name"]), str(data["start"]), str(data["end"]), data.get("unit") or "days")


@dataclass
class Length:
    """A measure of one field of a record: the characters of its text ("messages over 1000 characters":
    `text`) or the elements of its array ("messages that mention two or more people": `mentions`), which of
    the two by the field's type in the schema (the compiler's `$strLenCP` or `$size`; the validator allows
    `$strLenCP` only on a text field). Filters and the shape name it by `name` as they name a stored field; a
    record without the field has length 0 ("mention nobody": length 0)."""

    name: str
    field: str

    def __post_init__(self):
        if not DURATION_NAME.fullmatch(self.name):
            raise IRError(f"a length's name is lower-case letters and underscores, not {self.name!r}")
        if not (isinstance(self.field, str) and self.field):
            raise IRError("a length names the text or array field it measures")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "field": self.field}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Length:
        return cls(str(data["name"]), str(data["field"]))


@dataclass
class Join:
    """The records of another of the tenant's collections that each record refers to: `local` (a path
    here, possibly inside an embedded array) holds the values of `foreign` there ("the teacher's
    `course_arrange.Course_ID` is a course's `Course_ID`"). Each pair of a record and a joined record is
    one row; conditions and shown fields on the joined side are written `<collection>.<path>`."""

    collection: str
    local: str
    foreign: str

    def to_json(self) -> dict[str, Any]:
        return {"collection": self.collection, "local": self.local, "foreign": self.foreign}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Join:
        if not all(isinstance(data.get(k), str) and data[k] for k in ("collection", "local", "foreign")):
            raise IRError("a join names a collection, a local path and a foreign path")
        return cls(data["collection"], data["local"], data["foreign"])


@dataclass
class PlanIR:
    """One question's plan: a collection, conditions, full-text terms, a shape; or a raw `pipeline`
    for what the IR cannot say (validated like any other). `followup` says how it relates to the
    previous answer ("restrict": its records, narrowed; "recount": the same records, counted).
    `unwind` names an array of objects embedded in the records whose elements are what the question
    is about ("the students' sports": one row per sport); conditions and shape then read each element.
    `join` pairs each record with the records of another collection it refers to (`Join`).
    `times_any`: the time ranges are alternatives, a record in any one of them ("more in March 2023 or in
    March 2024?": two periods set side by side), not conditions that all hold.
    `durations`: measures derived from two dates of a record (`Duration`), named by filters and the shape;
    `lengths`: the length of a text or an array of a record (`Length`), named the same way.
    `nested`: a question whose one answer feeds the next ("how many issues did 2021's top PR author open that
    year?"): this plan is the outer one, its slot filled by the single top result of `Nested.inner`."""

    collection: str
    filters: list[Filter] = default(default_factory=list)
    times: list[TimeRange] = default(default_factory=list)
    text: list[str] = default(default_factory=list)
    text_span: Span | None = None
    shape: Shape = default(default_factory=Shape)
    followup: str | None = None
    pipeline: list[dict[str, Any]] | None = None
    unwind: str | None = None
    join: Join | None = None
    times_any: bool = False
    durations: list[Duration] = default(default_factory=list)
    nested: Nested | None = None
    lengths: list[Length] = default(default_factory=list)

    def __post_init__(self):
        if self.unwind is not None and not (isinstance(self.unwind, str) and self.unwind):
            raise IRError(f"unwind names one array field, not {self.unwind!r}")
        if self.followup is not None and self.followup not in FOLLOWUPS:
            raise IRError(f"unknown follow-up {self.followup!r}; use one of: {', '.join(FOLLOWUPS)}")

    def to_json(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "filters": [f.to_json() for f in self.filters],
            "times": [t.to_json() for t in self.times],
            "text": list(self.text),
            "text_span": _span_json(self.text_span),
            "shape": self.shape.to_json(),
            "followup": self.followup,
            "pipeline": to_extended_json(self.pipeline) if self.pipeline is not None else None,
            **({"unwind": self.unwind} if self.unwind else {}),
            **({"join": self.join.to_json()} if self.join else {}),
            **({"times_any": True} if self.times_any else {}),
            **({"durations": [d.to_json() for d in self.durations]} if self.durations else {}),
            **({"nested": self.nested.to_json()} if self.nested else {}),
            **({"lengths": [n.to_json() for n in self.lengths]} if self.lengths else {}),
        }

    @classmethod
    def from_json(cls, data: Any) -> PlanIR:
        """The IR of JSON (a model's output included); a malformed one raises `IRError`."""
        if not isinstance(data, dict) or not isinstance(data.get("collection"), str):
            raise IRError('a plan is a JSON object with a "collection"')
        try:
            text = data.get("text") or []
            if isinstance(text, str):
                text = text.split()
            pipeline = data.get("pipeline")
            if pipeline is not None and not isinstance(pipeline, list):
                raise IRError('"pipeline" is a list of stages')
            return cls(
                collection=data["collection"],
                filters=[Filter.from_json(f) for f in data.get("filters") or []],
                times=[TimeRange.from_json(t) for t in data.get("times") or []],
                text=[str(t) for t in text],
                text_span=_span_of(data.get("text_span")),
                shape=Shape.from_json(data.get("shape") or {}),
                followup=data.get("followup"),
                pipeline=from_extended_json(pipeline) if pipeline else None,
                unwind=data.get("unwind") or None,
                join=Join.from_json(data["join"]) if data.get("join") else None,
                times_any=data.get("times_any") is True,
                durations=[Duration.from_json(d) for d in data.get("durations") or []],
                nested=Nested.from_json(data["nested"]) if data.get("nested") else None,
                lengths=[Length.from_json(n) for n in data.get("lengths") or []],
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise IRError(f"malformed plan: {exc}") from None


NESTED_SLOTS = ("person", "time")


@dataclass
class Nested:
    """The inner step of a question whose one answer feeds the next: `inner` runs first, and its single top
    result fills the outer plan's `slot` on `field` — "person": the top group's key (a login, a Slack user)
    becomes the condition `field` eq that key ("the person who opened the most PRs in 2021: how many issues
    did they file?"); "time": the top time bucket (a day, week, month or year) becomes the range of the date
    `field` ("in 2021's busiest month for merges, who authored the most?"). `span`: the question's words
    the inner plan came from. Once the inner plan ran, `value` is what it bound (a key, or the bucket's
    label), `name` the display name of the person it is, `count` its measure, `tie` the other results level with it at the top (the outer ran for the
    first; the answer names them) and `pipeline` the inner pipeline as it ran."""

    inner: PlanIR
    slot: str
    field: str
    span: Span | None = None
    value: Any = None
    name: str | None = None
    count: Any = None
    tie: list[Any] = default(default_factory=list)
    pipeline: list[dict[str, Any]] | None = None

    def __post_init__(self):
        if self.slot not in NESTED_SLOTS:
            raise IRError(f"a nested plan fills one of the slots {', '.join(NESTED_SLOTS)}, not {self.slot!r}")
        if not (isinstance(self.field, str) and self.field):
            raise IRError("a nested plan names the outer field its result fills")
        if self.inner.nested is not None:
            raise IRError("a nested plan is one level deep: its inner plan has no inner plan of its own")

    @property
    def bound(self) -> bool:
        return self.pipeline is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "inner": self.inner.to_json(),
            "slot": self.slot,
            "field": self.field,
            "span": _span_json(self.span),
            **(
                {
                    "value": self.value,
                    "name": self.name,
                    "count": self.count,
                    "tie": list(self.tie),
                    "pipeline": to_extended_json(self.pipeline),
                }
                if self.bound
                else {}
            ),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Nested:
        if not isinstance(data, dict):
            raise IRError("a nested plan is an object with an inner plan, a slot and a field")
        return cls(
            inner=PlanIR.from_json(data.get("inner")),
            slot=str(data.get("slot")),
            field=str(data.get("field") or ""),
            span=_span_of(data.get("span")),
            value=data.get("value"),
            name=data.get("name"),
            count=data.get("count"),
            tie=list(data.get("tie") or []),
            pipeline=from_extended_json(data["pipeline"]) if data.get("pipeline") is not None else None,
        )


_SPAN_SCHEMA = {"type": ["array", "null"], "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
_DATE_SCHEMA = {
    "anyOf": [{"type": "null"}, {"type": "object", "properties": {"$date": {"type": "string"}}, "required": ["$date"]}]
}
_MEASURE_SCHEMA = {
    "type": "object",
    "properties": {"op": {"enum": list(MEASURES)}, "field": {"type": ["string", "null"]}},
    "required": ["op"],
}
_SCALAR = [{"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]

# The JSON schema of `PlanIR.to_json`, for constrained model output.
PLAN_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "collection": {"type": "string"},
        "filters": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "field": {"type": "string"},
                    "op": {"enum": list(OPERATORS)},
                    "value": {"anyOf": [*_SCALAR, _DATE_SCHEMA, {"type": "array", "items": {"anyOf": _SCALAR}}]},
                    "negate": {"type": "boolean"},
                    "span": _SPAN_SCHEMA,
                    "via": {"type": ["string", "null"]},
                },
                "required": ["field", "op", "value"],
            },
        },
        "times": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "field": {"type": "string"},
                    "start": _DATE_SCHEMA,
                    "end": _DATE_SCHEMA,
                    "span": _SPAN_SCHEMA,
                },
                "required": ["field", "start", "end"],
            },
        },
        "times_any": {"type": "boolean"},
        "text": {"type": "array", "items": {"type": "string"}},
        "shape": {
            "type": "object",
            "properties": {
                # The model is not offered a share (its part's filters are not in its schema yet).
                "kind": {"enum": [k for k in SHAPES if k != "share"]},
                "field": {"type": ["string", "null"]},
                "bucket": {"enum": [*BUCKETS, None]},
                "over": {"enum": ["records", "groups"]},
                "limit": {"type": ["integer", "null"]},
                "fields": {"type": "array", "items": {"type": "string"}},
                # difference / change: the two groups' keys, the first the one subtracted from (the base of a change)
                "sides": {"type": "array", "items": {"type": ["string", "integer"]}, "minItems": 2, "maxItems": 2},
                "measures": {"type": "array", "items": _MEASURE_SCHEMA},
                "having": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "measure": _MEASURE_SCHEMA,
                            "op": {"enum": list(COMPARISONS)},
                            "value": {"type": "number"},
                        },
                        "required": ["measure", "op", "value"],
                    },
                },
                "sort": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"field": {"type": "string"}, "direction": {"enum": [1, -1]}},
                        "required": ["field"],
                    },
                },
            },
            "required": ["kind"],
        },
        "followup": {"enum": [*FOLLOWUPS, None]},
        "unwind": {"type": ["string", "null"]},
        "join": {
            "type": ["object", "null"],
            "properties": {
                "collection": {"type": "string"},
                "local": {"type": "string"},
                "foreign": {"type": "string"},
            },
            "required": ["collection", "local", "foreign"],
        },
        "pipeline": {"type": ["array", "null"], "items": {"type": "object"}},
        # "over 1000 characters": {"name": "text_length", "field": "text"} and a filter text_length gt 1000
        "lengths": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "field": {"type": "string"}},
                "required": ["name", "field"],
            },
        },
    },
    # Conditions required (an empty list says "none"): a small model writing under this schema as a
    # grammar otherwise leaves out the optional keys, the filters with them.
    "required": ["collection", "filters", "times", "text", "shape"],
}
# A nested plan's inner plan is a plan of this same schema without a nested plan of its own (one level
# deep); said by reference rather than spelled out again, which would double every prompt carrying the schema.
PLAN_JSON_SCHEMA["properties"]["nested"] = {
    "type": ["object", "null"],
    "properties": {
        "inner": {"type": "object", "description": "a plan of this schema, without nested"},
        "slot": {"enum": list(NESTED_SLOTS)},
        "field": {"type": "string"},
        "span": _SPAN_SCHEMA,
    },
    "required": ["inner", "slot", "field"],
}

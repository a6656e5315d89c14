"""The plan IR compiled to a MongoDB aggregation pipeline: deterministic, one form per element.

Roles ("author", "merged", "label") become the tenant's own paths (`query/fields.py`); conditions on
one array of objects must hold for the same element (`$elemMatch`); the shape becomes the stages
after the `$match`. The pipeline then goes through the validator like any other: this module trusts
nothing it was given more than the validator does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from context_engine.query.fields import field_for, person_field_for
from context_engine.query.ir import (
    DURATION_UNITS,
    FIELD_OPERATORS,
    PERIOD_BUCKETS,
    SIZE_OPERATORS,
    TWO_GROUP_SHAPES,
    WORD_OPERATORS,
    Duration,
    Filter,
    Having,
    Join,
    Length,
    Measure,
    PlanIR,
    Shape,
    TimeRange,
)
from context_engine.query.schema import CollectionSchema
from context_engine.query.validate import exact_word_pattern, word_pattern

BUCKET_FORMATS = {"day": "%Y-%m-%d", "week": "%G-W%V", "month": "%Y-%m", "year": "%Y"}
CYCLIC_BUCKETS = {"hour": "$hour", "weekday": "$dayOfWeek"}
_COMPARISONS = {"ne": "$ne", "in": "$in", "nin": "$nin", "gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte"}
_BOUNDS = {"gt": "lte", "gte": "lt", "lt": "gte", "lte": "gt"}  # a bound and its negation
# The negation with an operator of its own; the others are wrapped in $not.
OPPOSITE = {
    "eq": "ne",
    "ne": "eq",
    "in": "nin",
    "nin": "in",
    "empty": "not_empty",
    "not_empty": "empty",
    "eq_field": "ne_field",
    "ne_field": "eq_field",
}


class CompileError(ValueError):
    """The IR names something this collection does not have."""


def resolve_field(schema: CollectionSchema, name: str, *, date: bool = False) -> str:
    """The path a role or path names here. A date (time range, bucket) reads roles first: "merged"
    is the merge date there, while as a filter it is the boolean path. A path written as a prompt lists
    an array field ("Orders.items.id[]") is that path."""
    name = name.removesuffix("[]")
    role = field_for(schema, name) or (person_field_for(schema, name) or (None,))[0]
    if date and role:
        return role
    if schema.has_path(name):
        return name
    if role:
        return role
    loose = [path for path in schema.fields if _loosely(path) == _loosely(name)]
    if len(loose) == 1:  # "country" for Country, "elections.District" for election.District: one field meant
        return loose[0]
    raise CompileError(f"{schema.name} has no field or role {name!r}")


def _loosely(path: str) -> str:
    """A path as a writer may misremember it: any case, each key without a plural "s"."""
    return ".".join(part.lower().removesuffix("s") for part in path.split("."))


def empty(path: str) -> dict[str, Any]:
    """ "Is empty": missing or null (both match null), an empty string, or an empty list — which
    `$in: [[]]` matches on MongoDB but not on the embedded store, while `$size: 0` matches on both.
    A field of an object that is itself null ("milestone.title" of `milestone: null`) is empty too:
    MongoDB says so of the dotted path, the embedded store only of the object, so both are asked."""
    parents = [".".join(path.split(".")[:i]) for i in range(1, path.count(".") + 1)]
    return {"$or": [{path: {"$in": [None, ""]}}, {path: {"$size": 0}}, *({p: {"$in": [None]}} for p in parents)]}


def _condition(f: Filter) -> Any:
    """The MongoDB condition of one filter on its path (`empty` is a clause of its own: `empty`, which compile_plan writes instead)."""
    op, value = f.op, f.value
    if op in WORD_OPERATORS:
        # case-insensitive inline: `$not` takes no `$options`
        words = {"$regex": word_pattern(value) if op == "words" else exact_word_pattern(value)}
        return {"$not": words} if f.negate else words
    if f.negate:
        if op == "exists":
            value = not value
        elif op in OPPOSITE:
            op = OPPOSITE[op]
        else:
            return {"$not": {_COMPARISONS[op]: value}}
    if op == "eq":
        return value
    if op == "exists":  # present and not null: mongomock misreads a lone $ne, MongoDB a lone $exists on null
        return {"$exists": True, "$ne": None} if value else {"$in": [None]}
    if op == "not_empty":
        return {"$nin": [None, ""], "$not": {"$size": 0}}
    return {_COMPARISONS[op]: value}


class _Conditions(dict):
    """A `$match` being built: two conditions on one path both hold (`$and`, not the second replacing
    the first)."""

    def add(self, path: str, cond: Any) -> None:
        if self.get(path) == cond or {path: cond} in self.get("$and", []):
            return  # said twice (a field compared with another is present; "replies", also said): once
        if path in self:
            self.setdefault("$and", []).extend([{path: self.pop(path)}, {path: cond}])
        else:
            self[path] = cond

    def add_filter(self, f: Filter, schema: CollectionSchema) -> None:
        path = resolve_field(schema, f.field)
        if f.op in FIELD_OPERATORS:
            self.add_field_comparison(path, f, schema)
            return
        if f.op == "day_of_week":
            self.add_day_of_week(f, schema)
            return
        if f.op in SIZE_OPERATORS:
            self.add_size(path, f, schema)
            return
        if f.op in ("empty", "not_empty"):
            # "No assignee" is an empty `assignees`: `assignees.login` of an empty list is no value
            # the store can compare, so emptiness is asked of the list itself.
            path = array_prefix(path, schema) if schema.is_array(path) else path
        if (f.op == "empty") != f.negate and f.op in ("empty", "not_empty"):
            self.setdefault("$and", []).append(empty(path))
        else:
            self.add(path, _condition(f))

    def add_day_of_week(self, f: Filter, schema: CollectionSchema) -> None:
        """A date on one of some days of the week ("merged on a weekend": Sunday or Saturday, UTC); negated,
        on none of them. A record without the date is on no day."""
        path = resolve_field(schema, f.field, date=True)
        self.add(path, _condition(Filter(path, "exists", True)))
        on_day: dict[str, Any] = {"$in": [{"$dayOfWeek": f"${path}"}, sorted(f.value)]}
        self._add_expression({"$not": [on_day]} if f.negate else on_day)

    def add_size(self, path: str, f: Filter, schema: CollectionSchema) -> None:
        """How many elements a list holds ("more than one label": at least 2 `labels`); a record without the
        list holds none. A field that is no list has no size to ask."""
        if not schema.is_array(path):
            raise CompileError(f"{f.op} counts the elements of a list; {path} is not one")
        size = {"$size": {"$ifNull": [f"${array_prefix(path, schema)}", []]}}
        # negated, the other bound (not at least 2: at most 1): `$not` would nest past the validator's bound
        at_least = (f.op == "size_gte") != f.negate
        value = f.value if not f.negate else f.value - 1 if f.op == "size_gte" else f.value + 1
        self._add_expression({"$gte" if at_least else "$lte": [size, value]})

    def _add_expression(self, expression: dict[str, Any]) -> None:
        """One more `$expr`: a second one goes into `$and`."""
        if "$expr" in self:
            self.setdefault("$and", []).append({"$expr": expression})
        else:
            self["$expr"] = expression

    def add_duration_comparison(self, duration: Duration, f: Filter, schema: CollectionSchema) -> None:
        """A duration compared with a number ("took more than 30 days"): both dates present, the comparison
        in `$expr` (a record missing a date has no duration, which no comparison holds of)."""
        if f.op not in _BOUNDS or not isinstance(f.value, (int, float)) or isinstance(f.value, bool):
            raise CompileError(f"a duration is compared with a number (gt, gte, lt, lte), not {f.op} {f.value!r}")
        op = _BOUNDS[f.op] if f.negate else f.op
        for end in (duration.start, duration.end):
            self.add(resolve_field(schema, end, date=True), _condition(Filter(end, "exists", True)))
        self._add_expression({_COMPARISONS[op]: [duration_expression(duration, schema), f.value]})

    def add_length_comparison(self, length: Length, f: Filter, schema: CollectionSchema) -> None:
        """A length compared with a number ("over 1000 characters", "two or more mentions", "mention
        nobody": length 0), in `$expr`; a record without the field has length 0."""
        if f.op not in _COMPARISONS.keys() | {"eq"} or not isinstance(f.value, int) or isinstance(f.value, bool):
            raise CompileError(f"a length is compared with a whole number, not {f.op} {f.value!r}")
        op = (_BOUNDS.get(f.op) or OPPOSITE[f.op]) if f.negate else f.op
        self._add_expression({_COMPARISONS.get(op, "$eq"): [length_expression(length, schema), f.value]})

    def add_field_comparison(self, path: str, f: Filter, schema: CollectionSchema) -> None:
        """Two fields of one record compared (`$expr`), the first one present: "closed by someone other
        than its author" holds of a record whose closer is recorded and is not its author. Scalar fields
        only: `$expr` compares an array as one value, not its elements."""
        other = resolve_field(schema, str(f.value))
        if schema.is_array(path) and schema.is_array(other):
            raise CompileError(f"{f.op} compares a value with another or with a list's; {path} and {other} are lists")
        op = OPPOSITE[f.op] if f.negate else f.op
        self.add(path, _condition(Filter(path, "exists", True)))
        if schema.is_array(path) or schema.is_array(other):
            # one single value among a list's ("assigned to its own author": the author among the assignees)
            one, many = (other, path) if schema.is_array(path) else (path, other)
            among = {"$in": [f"${one}", {"$ifNull": [f"${many}", []]}]}
            self._add_expression(among if op == "eq_field" else {"$not": [among]})
            return
        comparison = {"$expr": {"$eq" if op == "eq_field" else "$ne": [f"${path}", f"${other}"]}}
        if "$expr" in self:
            self.setdefault("$and", []).append(comparison)
        else:
            self.update(comparison)


def compile_plan(
    ir: PlanIR, schema: CollectionSchema, schemas: dict[str, CollectionSchema] | None = None
) -> list[dict[str, Any]]:
    """The pipeline of a plan. `schemas`: the tenant's other collections, which a condition on a
    referenced record (`Filter.via`) joins."""
    if ir.pipeline is not None:
        return ir.pipeline
    joined = _Joined(ir.join, schema, schemas or {}) if ir.join else None
    conditions = _Conditions()
    add = conditions.add
    durations = {d.name: d for d in ir.durations}
    lengths = {n.name: n for n in ir.lengths}
    for f in ir.filters:
        if f.field in durations:
            conditions.add_duration_comparison(durations[f.field], f, schema)
        elif f.field in lengths:
            conditions.add_length_comparison(lengths[f.field], f, schema)
        elif joined and joined.names(f.field):
            joined.conditions.add_filter(Filter(**{**vars(f), "field": joined.rest(f.field)}), joined.schema)
        elif f.via is None:
            conditions.add_filter(f, schema)
    periods = []
    for t in ir.times:
        bounds = {k: v for k, v in (("$gte", t.start), ("$lt", t.end)) if v is not None}
        if bounds:
            periods.append({resolve_field(schema, t.field, date=True): bounds})
    if ir.times_any and len(periods) > 1:
        conditions["$or"] = periods  # periods compared: a record in any one of them
    else:
        for period in periods:
            add(*next(iter(period.items())))
    unwound = _unwound(ir.unwind, schema) if ir.unwind else None
    searched = {"$text": {"$search": " ".join(ir.text)}} if ir.text else {}
    if searched and not unwound:
        conditions.update(searched)
    shape = ir.shape
    resolve = joined.resolver() if joined else lambda name: resolve_field(schema, name)
    # a duration or length measured by the shape, or (a list) ordered by: "the three fastest merges"
    said = shape.field or (shape.sort[0].field if shape.kind == "list" and shape.sort else "")
    measured: Duration | Length | None = durations.get(said) or lengths.get(said)
    if isinstance(measured, Duration):  # a duration is a measure of the records that have both its dates
        for end in (measured.start, measured.end):
            add(resolve_field(schema, end, date=True), _condition(Filter(end, "exists", True)))
    grouped = (
        measured.name
        if measured
        else resolve(shape.field)
        if joined and shape.field and joined.names(shape.field)
        else resolve_field(schema, shape.field, date=shape.bucket is not None)
        if shape.field
        else None
    )
    # A grouped field of the joined records is there once joined: no condition before the join asks for it.
    local_grouped = grouped is not None and not (joined and joined.names(grouped)) and not measured
    if (
        (shape.kind in ("group", "distinct_count", "measures", "share") or shape.over == "groups")
        and local_grouped
        and shape.bucket is None
        and not _some_value(conditions.get(grouped))
    ):
        # Records without the grouped field form no group ("PRs per milestone" skips unplanned PRs).
        # A condition naming the values already says so (and is asked again of each unwound element).
        add(grouped, _condition(Filter(grouped, "exists", True)))
    elif (
        shape.kind in ("argmin", "argmax", "min", "max", "sum", "avg", "distinct")
        and shape.over == "records"
        and local_grouped
    ):
        add(grouped, _condition(Filter(grouped, "exists", True)))  # a missing measure is no extreme
    if unwound:
        # Full text is a record's, and only a pipeline's first stage may ask for it; every other
        # condition is asked of each element once the array is unwound.
        stages = (
            ([{"$match": searched}] if searched else [])
            + [{"$unwind": f"${unwound}"}]
            + ([{"$match": element_match(conditions, schema, unwound)}] if conditions else [])
        )
    else:
        stages = [{"$match": element_match(conditions, schema)}] if conditions else []
    stages += _joins([f for f in ir.filters if f.via is not None], schema, schemas or {})
    if joined:
        stages += joined.stages()
    if measured:
        expression = (
            duration_expression(measured, schema)
            if isinstance(measured, Duration)
            else length_expression(measured, schema)
        )
        stages.append({"$addFields": {measured.name: expression}})
    if shape.kind == "empty_count":
        stages += _empty_count(ir, shape, grouped or "")
    elif shape.kind == "avg" and shape.over == "groups" and shape.bucket in PERIOD_BUCKETS and _one_whole_range(ir):
        stages += ([] if unwound else _unwind(grouped or "", conditions, schema)) + _period_average(ir, shape)
    elif measured and shape.kind == "list":
        ordered = {measured.name: shape.sort[0].direction}
        stages += [
            {"$sort": ordered},
            *([{"$skip": shape.offset}] if shape.offset else []),
            {"$limit": shape.limit or 1},
        ]
    else:
        stages += _shape_stages(shape, grouped, conditions, schema, unwound)
    if shape.fields and shape.over == "groups":
        stages.append({"$project": {"_id": 1}})  # the group's value ("the most common city"), not its count
    elif shape.fields:
        # The fields the answer shows, and `ref`: a record the answer cites by it.
        stages.append({"$project": {**{resolve(f): 1 for f in shape.fields}, "ref": 1}})
    return stages


MAX_PERIODS = 40_000  # about a century of days: the periods an empty_count counts one by one


def _one_whole_range(ir: PlanIR) -> TimeRange | None:
    """The plan's one time range with both ends, if it has just that: the periods a question counts over."""
    ranges = [t for t in ir.times if t.start is not None and t.end is not None and t.start < t.end]
    return ranges[0] if len(ranges) == 1 and not ir.times_any else None


def _periods(ir: PlanIR, bucket: str) -> int:
    """How many `bucket`s (days, ISO weeks, months, years) the plan's one whole time range touches."""
    whole = _one_whole_range(ir)
    if whole is None or whole.start is None or whole.end is None:
        raise CompileError(f"counting the {bucket}s of a time needs one time range with both ends")
    keys: set[str] = set()
    day = whole.start.replace(hour=0, minute=0, second=0, microsecond=0)
    last = whole.end - timedelta(microseconds=1)
    if (last - day).days > MAX_PERIODS:
        raise CompileError(f"a time range of at most {MAX_PERIODS} days has its periods counted")
    while day <= last:  # each day of the range, and the week, month or year it is in
        keys.add(day.strftime(BUCKET_FORMATS[bucket]))
        day += timedelta(days=1)
    return len(keys)


def _empty_count(ir: PlanIR, shape: Shape, path: str) -> list[dict[str, Any]]:
    """The periods of the time range with no record: all its periods (counted here, from the range's
    ends) minus the distinct periods the records fall in. A range open at either end has no count."""
    bucket = shape.bucket or ""
    periods = _periods(ir, bucket)
    return [
        {"$group": {"_id": bucket_key(bucket, path)}},
        {"$count": "with_records"},
        {"$project": {"count": {"$subtract": [periods, "$with_records"]}, f"{bucket}s": {"$literal": periods}}},
    ]


def _period_average(ir: PlanIR, shape: Shape) -> list[dict[str, Any]]:
    """ "merged PRs per day in March 2021, on average": the records (an array's elements dated, each) over
    every period of the time asked, a period with none counted as 0 (31 days, not the days that had a
    merge); the number of periods is said beside it."""
    bucket = shape.bucket or ""
    periods = _periods(ir, bucket)
    return [
        {"$count": "records"},
        {"$project": {"average": {"$divide": ["$records", periods]}, f"{bucket}s": {"$literal": periods}}},
    ]


def length_expression(length: Length, schema: CollectionSchema) -> dict[str, Any]:
    """A record's length of a field: the elements of an array (`$size`), the characters of a text
    (`$strLenCP`); a record without the field has length 0."""
    path = resolve_field(schema, length.field)
    info = schema.fields.get(path)
    if info is not None and schema.is_array(path):
        if array_prefix(path, schema) != path:  # `reactions.name`: one length per reaction, not per record
            raise CompileError(f"{length.field!r} is a field of an array's elements: no one length per record")
        return {"$size": {"$ifNull": [f"${path}", []]}}
    if info is None or "string" not in info.types:
        raise CompileError(f"a length is of a text or an array field; {length.field!r} is neither")
    return {"$strLenCP": {"$ifNull": [f"${path}", ""]}}


def duration_expression(duration: Duration, schema: CollectionSchema) -> dict[str, Any]:
    """A record's duration: its end date minus its start date (milliseconds), in the duration's unit."""
    start, end = (resolve_field(schema, d, date=True) for d in (duration.start, duration.end))
    return {"$divide": [{"$subtract": [f"${end}", f"${start}"]}, DURATION_UNITS[duration.unit]]}


class _Joined:
    """A plan's `Join`: the joined collection's schema, the conditions on its records and the stages that
    pair each record with them (one row per pair; the executor scopes the joined side)."""

    def __init__(self, join: Join, schema: CollectionSchema, schemas: dict[str, CollectionSchema]):
        self.join = join
        target = schemas.get(join.collection)
        if target is None:
            raise CompileError(f"{join.collection} (which {schema.name} is joined with) has no records to read")
        if schema.has_path(join.collection):
            raise CompileError(f"{schema.name} has a field named {join.collection}: the join cannot be named so")
        self.schema, self.local_schema = target, schema
        self.local = resolve_field(schema, join.local)
        self.foreign = resolve_field(target, join.foreign)
        self.conditions = _Conditions()

    def names(self, name: str) -> bool:
        """Whether a field name is the joined record's (`<collection>.<path>`)."""
        return name.startswith(self.join.collection + ".")

    def rest(self, name: str) -> str:
        return name[len(self.join.collection) + 1 :]

    def resolver(self) -> Callable[[str], str]:
        """The path a field name is, on either side."""

        def resolve(name: str) -> str:
            if self.names(name):
                return f"{self.join.collection}.{resolve_field(self.schema, self.rest(name))}"
            return resolve_field(self.local_schema, name)

        return resolve

    def stages(self) -> list[dict[str, Any]]:
        name = self.join.collection
        stages: list[dict[str, Any]] = [
            {"$lookup": {"from": name, "localField": self.local, "foreignField": self.foreign, "as": name}},
            {"$unwind": f"${name}"},
        ]
        if self.conditions:
            stages.append({"$match": _prefixed(dict(self.conditions), name)})
        return stages


def _prefixed(match: Any, name: str) -> Any:
    """A `$match` on the joined records' fields as fields of `name`, the array they were joined into."""
    if isinstance(match, list):
        return [_prefixed(m, name) for m in match]
    if not isinstance(match, dict):
        return match
    return {
        k if k.startswith("$") else f"{name}.{k}": _prefixed(v, name) if k in ("$and", "$or") else v
        for k, v in match.items()
    }


def _some_value(condition: Any) -> bool:
    """A condition met only by a value: "bug", or one of ["bug", "enhancement"]."""
    return isinstance(condition, str) or (
        isinstance(condition, dict) and list(condition) == ["$in"] and None not in condition["$in"]
    )


def _joins(
    filters: list[Filter], schema: CollectionSchema, schemas: dict[str, CollectionSchema]
) -> list[dict[str, Any]]:
    """Conditions on a record this one references ("incidents whose fix PR was reviewed by priya": the
    incident's `pr` is a pull request's `ref`): each reference joined once with its conditions asked
    inside the join (only matching records are copied; the executor adds the tenant and access scope),
    the records with no such match dropped and the joined records not returned."""
    stages: list[dict[str, Any]] = []
    for via in dict.fromkeys(f.via for f in filters):
        target = schema.kind.references.get(via)
        if target is None or not schema.has_path(via):
            raise CompileError(f"{schema.name} has no reference {via!r} to another collection")
        joined = schemas.get(target)
        if joined is None:
            raise CompileError(f"{target} (which {schema.name}.{via} refers to) has no records to read")
        conditions = _Conditions()
        for f in filters:
            if f.via == via:
                conditions.add_filter(f, joined)
        name = "joined_" + via.replace(".", "_")
        stages += [
            {
                "$lookup": {
                    "from": target,
                    "localField": via,
                    "foreignField": "ref",
                    "as": name,
                    "pipeline": [{"$match": element_match(conditions, joined)}, {"$project": {"ref": 1}}],
                }
            },
            {"$match": {name: {"$ne": []}}},
            {"$project": {name: 0}},
        ]
    return stages


def _unwound(name: str, schema: CollectionSchema) -> str:
    """The array of objects `unwind` names (a role, the array or a field of its elements)."""
    path = resolve_field(schema, name)
    top = array_prefix(path, schema)
    info = schema.fields.get(top)
    if info is None or not info.in_array or "object" not in info.types:
        raise CompileError(f"{schema.name} has no array of objects {name!r} to unwind")
    return top


def _shape_stages(
    shape: Shape, path: str | None, conditions: dict[str, Any], schema: CollectionSchema, unwound: str | None = None
) -> list[dict[str, Any]]:
    kind = shape.kind
    skip = [{"$skip": shape.offset}] if shape.offset else []  # the runner-up: the first skipped
    if kind == "count":
        return [{"$count": "count"}]
    if kind in ("sum", "avg") and shape.over == "records":
        name = "total" if kind == "sum" else "average"
        return [{"$group": {"_id": None, name: {f"${kind}": f"${path}"}}}, {"$project": {"_id": 0}}]
    if kind == "share":  # each record 1 when it meets the part, else 0: their mean is the share
        met = [part_expression(f, schema) for f in shape.part]
        expression = met[0] if len(met) == 1 else {"$and": met}
        share = {"$avg": {"$cond": [expression, 1, 0]}}
        said = {"percent": {"$multiply": [100, "$share"]}} if shape.percent else {}  # the unit the question asked
        if path is None:
            return [{"$group": {"_id": None, "share": share}}, {"$project": {"_id": 0, **said}}]
        # per value or period of `field` ("the merge rate per year"), in key order, or ranked by it (the best year)
        per: Any = bucket_key(shape.bucket, path) if shape.bucket else f"${path}"
        ranked = next((k.direction for k in shape.sort if k.field == "share"), None)
        return [
            *(
                []
                if shape.bucket or (unwound and path.startswith(unwound + "."))
                else _unwind(path, conditions, schema)
            ),
            {"$group": {"_id": per, "share": share}},
            {"$sort": {"_id": 1} if ranked is None else {"share": ranked, "_id": 1}},
            *([{"$limit": shape.limit}] if shape.limit else []),
            *([{"$project": said}] if said else []),
        ]
    if kind == "measures":
        return _measure_stages(shape, path, conditions, schema, unwound)
    if kind == "distinct":
        stages = [] if unwound and path.startswith(unwound + ".") else _unwind(path, conditions, schema)
        if shape.having:  # the values whose groups meet the condition, and only the values
            accumulators = _accumulators([h.measure for h in shape.having], schema)
            stages += [{"$group": {"_id": f"${path}", **accumulators}}, _having(shape.having), {"$project": {"_id": 1}}]
            return stages + [{"$sort": {"_id": 1}}]
        return stages + [{"$group": {"_id": f"${path}"}}, {"$sort": {"_id": 1}}]
    if kind == "list":
        return _sort(shape, schema) + skip + ([{"$limit": shape.limit}] if shape.limit else [])
    if kind == "top":
        rest = {k: v for k, v in _sort_keys(shape, schema).items() if k != path}
        return [{"$sort": {path: -1, **rest}}, *skip, {"$limit": shape.limit or 5}]
    if kind in ("argmin", "argmax", "min", "max") and shape.over == "records":
        if kind in ("min", "max"):
            return [{"$group": {"_id": None, kind: {f"${kind}": f"${path}"}}}, {"$project": {"_id": 0}}]
        return [{"$sort": {path: 1 if kind == "argmin" else -1}}, *skip, {"$limit": 1}]
    stages = [] if unwound and path.startswith(unwound + ".") else _unwind(path, conditions, schema)
    key: Any = bucket_key(shape.bucket, path) if shape.bucket else f"${path}"
    stages.append(
        {"$group": {"_id": key, **_accumulators([Measure("count"), *(h.measure for h in shape.having)], schema)}}
    )
    if kind == "distinct_count":
        return stages + [{"$count": "count"}]
    if kind in TWO_GROUP_SHAPES:
        return stages + _two_groups(shape)
    if kind == "avg":  # the mean count of the groups there are (of a time without both ends: `_period_average`)
        return stages + [{"$group": {"_id": None, "average": {"$avg": "$count"}}}, {"$project": {"_id": 0}}]
    if kind == "group":
        stages += [_having(shape.having)] if shape.having else []
        stages.append({"$sort": {"_id": 1} if shape.bucket else {"count": -1, "_id": 1}})
        return stages + skip + ([{"$limit": shape.limit}] if shape.limit else [])
    # Extremes over groups: the busiest month (argmax), the count of the quietest day (min); an extreme's
    # `limit` keeps that much of the ranking (a nested plan's inner step reads past the first to see a tie).
    rows = shape.limit if kind in ("argmin", "argmax") and shape.limit else 1
    stages += [{"$sort": {"count": 1 if kind in ("argmin", "min") else -1, "_id": 1}}, *skip, {"$limit": rows}]
    return stages + ([{"$project": {"_id": 0, "count": 1}}] if kind in ("min", "max") else [])


def bucket_range(bucket: str, key: str) -> tuple[datetime, datetime]:
    """The half-open range of a time bucket's key as `bucket_key` writes it ("2021-07": July 2021;
    "2019-W14": that ISO week, Monday to Monday)."""
    if bucket == "week":
        year, week = key.split("-W")
        start = datetime.fromisocalendar(int(year), int(week), 1)
        return start, start + timedelta(days=7)
    start = datetime.strptime(key, BUCKET_FORMATS[bucket])
    if bucket == "day":
        return start, start + timedelta(days=1)
    if bucket == "month":
        return start, start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return start, start.replace(year=start.year + 1)


def bind(ir: PlanIR, pipeline: list[dict[str, Any]], rows: list[dict[str, Any]], handle: Any = None) -> PlanIR:
    """A nested plan once its inner step ran (`pipeline`, which returned `rows`: the inner ranking, best
    first): the outer plan with its slot filled by the first row — a condition on the person it names (by
    `handle`, that person's handle in the outer field's kind, when it is another kind than the inner key:
    a GitHub login ranked, a Jira reporter's name asked about), or the range of the period it is — and the
    rows level with it kept as the tie. Without rows nothing is bound (`Nested.value` None): the outer step
    has nothing to run for."""
    nested = ir.nested
    if nested is None:
        raise CompileError("only a nested plan has an inner step to bind")
    top = rows[0] if rows else None
    if top is None or top.get("_id") is None:
        return replace(ir, nested=replace(nested, pipeline=pipeline, value=None, count=None, tie=[]))
    measure = next((k for k in top if k != "_id"), None)
    tie = [r["_id"] for r in rows[1:] if measure and r.get(measure) == top.get(measure)]
    bound = replace(nested, pipeline=pipeline, value=top["_id"], count=top.get(measure), tie=tie)
    if nested.slot == "person":
        person = Filter(nested.field, "eq", top["_id"] if handle is None else handle, span=nested.span)
        return replace(ir, filters=[*ir.filters, person], nested=bound)
    bucket = nested.inner.shape.bucket
    if bucket not in BUCKET_FORMATS or not isinstance(top["_id"], str):
        raise CompileError(f"a nested plan binds a period only from a day, week, month or year, not {bucket!r}")
    start, end = bucket_range(bucket, top["_id"])
    return replace(ir, times=[*ir.times, TimeRange(nested.field, start, end, span=nested.span)], nested=bound)


def _two_groups(shape: Shape) -> list[dict[str, Any]]:
    """The counts of the two groups `sides` names, side by side in one row (a group with no record counts 0),
    then their difference or the percent change from the first to the second (none from 0); the counts are
    kept (`counts`) for the answer to say what was subtracted from what."""
    first, second = ({"$sum": {"$cond": [{"$eq": ["$_id", side]}, "$count", 0]}} for side in shape.sides)
    counts = {"first": "$first", "second": "$second"}
    stages: list[dict[str, Any]] = [{"$group": {"_id": None, "first": first, "second": second}}]
    if shape.kind == "difference":
        return stages + [{"$project": {"_id": 0, "difference": {"$subtract": ["$first", "$second"]}, "counts": counts}}]
    # the growth first, in a stage of its own: the whole expression at once is nested past the validator's bound
    growth = {"$cond": [{"$eq": ["$first", 0]}, None, {"$divide": [{"$multiply": [100, "$growth"]}, "$first"]}]}
    return stages + [
        {"$project": {"_id": 0, "first": 1, "second": 1, "growth": {"$subtract": ["$second", "$first"]}}},
        {"$project": {"percent_change": growth, "counts": counts}},
    ]


def bucket_key(bucket: str, path: str) -> dict[str, Any]:
    """A date's bucket: its period ("2019-W14") or its place in a cycle (`$hour` 0-23, `$dayOfWeek` 1-7, UTC)."""
    if bucket in CYCLIC_BUCKETS:
        return {CYCLIC_BUCKETS[bucket]: f"${path}"}
    return {"$dateToString": {"format": BUCKET_FORMATS[bucket], "date": f"${path}"}}


def part_expression(f: Filter, schema: CollectionSchema) -> dict[str, Any]:
    """A share's part as an expression on each record: a comparison of one field that is no list (a list's
    elements would need another form), `exists` as "greater than null" (missing and null are not); a whole
    list's size ("messages that mention someone": `not_empty`; "2+ labels": `size_gte`), of the list a record
    holds (missing: none)."""
    path = resolve_field(schema, f.field)
    field = f"${path}"
    whole_list = schema.is_array(path) and array_prefix(path, schema) == path
    if whole_list and f.op in ("empty", "not_empty", *SIZE_OPERATORS):
        # at least n elements: an n-th one (`$arrayElemAt` of a missing list is missing, no more than null),
        # a level less than `$size` of `$ifNull`, which the validator's depth bound needs inside `$cond`
        at_least = 1 if f.op in ("empty", "not_empty") else f.value + (1 if f.op == "size_lte" else 0)
        if at_least < 1:
            raise CompileError("a share's part of at least no elements holds for every record")
        holds = (f.op in ("not_empty", "size_gte")) != f.negate
        return {"$gt" if holds else "$lte": [{"$arrayElemAt": [field, at_least - 1]}, None]}
    if schema.is_array(path) or f.op not in (*_COMPARISONS, "eq", "exists"):
        raise CompileError(f"a share's part compares one value of a field, not {f.op} on {path}")
    if f.op == "exists":
        expression = {"$gt": [field, None]}
        holds = f.value
    else:
        expression = {"$in" if f.op == "nin" else "$eq" if f.op == "eq" else _COMPARISONS[f.op]: [field, f.value]}
        holds = f.op != "nin"
    # `$not` with its one argument bare: a level less, which the validator's depth bound needs inside `$cond`
    return expression if holds != f.negate else {"$not": expression}


def _measure_stages(
    shape: Shape, path: str | None, conditions: dict[str, Any], schema: CollectionSchema, unwound: str | None
) -> list[dict[str, Any]]:
    """Several aggregates in one row ("the minimum and maximum salary"), or one row per value of the
    grouped field ("the average price of each category"), narrowed by the conditions on a group; the
    measures a condition needs but the question does not ask for are not shown."""
    stages = [] if path is None or (unwound and path.startswith(unwound + ".")) else _unwind(path, conditions, schema)
    shown = _accumulators(shape.measures, schema)
    needed = {k: v for k, v in _accumulators([h.measure for h in shape.having], schema).items() if k not in shown}
    stages.append({"$group": {"_id": f"${path}" if path else None, **shown, **needed}})
    if shape.having:
        stages.append(_having(shape.having))
    if path is None:
        return stages + [{"$project": {"_id": 0, **dict.fromkeys(needed, 0)}}]
    stages += [{"$project": dict.fromkeys(needed, 0)}] if needed else []
    ranked = {k.field: k.direction for k in shape.sort if k.field in shown}
    if ranked:  # ranked by a measure ("the most replies altogether"): ties in value order
        return stages + [{"$sort": {**ranked, "_id": 1}}] + ([{"$limit": shape.limit}] if shape.limit else [])
    return stages + [{"$sort": {"_id": 1}}]


def _accumulators(measures: list[Measure], schema: CollectionSchema) -> dict[str, Any]:
    """Each measure as a `$group` accumulator, named by the measure (one of each)."""
    return {
        m.name: {"$sum": 1} if m.field is None else {f"${m.op}": f"${resolve_field(schema, m.field)}"} for m in measures
    }


def _having(having: list[Having]) -> dict[str, Any]:
    """The conditions on a group's measures, asked after the `$group` that computed them."""
    conditions = _Conditions()
    for h in having:
        conditions.add(h.measure.name, h.value if h.op == "eq" else {_COMPARISONS[h.op]: h.value})
    return {"$match": dict(conditions)}


def _sort_keys(shape: Shape, schema: CollectionSchema) -> dict[str, Any]:
    # "relevance": the full-text score (BM25 on the embedded store, textScore on MongoDB).
    return (
        {"score": {"$meta": "textScore"}}
        if any(s.field == "relevance" for s in shape.sort)
        else {resolve_field(schema, s.field, date=True): s.direction for s in shape.sort}
    )


def _sort(shape: Shape, schema: CollectionSchema) -> list[dict[str, Any]]:
    keys = _sort_keys(shape, schema)
    return [{"$sort": keys}] if keys else []


def _unwind(path: str, conditions: dict[str, Any], schema: CollectionSchema) -> list[dict[str, Any]]:
    """Counting per element of an array unwinds it, and the conditions on that array apply to each
    element again: the review in the time range, by the named reviewer, is the one counted."""
    if not schema.is_array(path):
        return []
    top = array_prefix(path, schema)
    element = {k: v for k, v in conditions.items() if k.startswith(top + ".")}
    return [{"$unwind": f"${top}"}] + ([{"$match": element}] if element else [])


def array_prefix(path: str, schema: CollectionSchema) -> str:
    """The array to unwind for a path: `fields.components` for `fields.components.name`."""
    parts = path.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        info = schema.fields.get(prefix)
        if info is not None and info.in_array and (i == len(parts) or "object" in info.types):
            return prefix
    return parts[0]


def element_match(match: dict[str, Any], schema: CollectionSchema, unwound: str | None = None) -> dict[str, Any]:
    """Conditions on fields of one array of objects must hold for the same element: the review by
    Jonas *in October*, not a review by Jonas and another one in October. An array already unwound
    holds one element per row: its conditions stay as they are."""
    roots: dict[str, list[str]] = {}
    for key in match:
        root = key.split(".")[0]
        info = schema.fields.get(root)
        if root == unwound:
            continue
        if "." in key and info is not None and info.in_array and "object" in info.types:
            roots.setdefault(root, []).append(key)
    out = dict(match)
    for root, keys in roots.items():
        if len(keys) > 1:
            out[root] = {"$elemMatch": {k[len(root) + 1 :]: out.pop(k) for k in keys}}
    return out

"""Conditions no record can meet together: a plan that holds them is a misreading, not an answer.

"Open PRs ready for review (not drafts) nobody has commented on" read as `draft = false` *and*
`draft = true`, or "Wally's replies" as `user != Wally` *and* `user = Wally`, match nothing; run, such
a plan answers "0" or "no records" and looks like an answer. `contradictions` finds the pairs of
elements of a plan that cannot both hold, so the engine says so instead (`engine.contradiction`).

Only what is certain counts: two different values of one scalar field, a value and its exclusion,
"is empty" and a value, bounds that leave no room, time ranges that do not meet. Two values of an
array field ("labelled bug and docs") can both hold and are not reported; neither are conditions on
different fields, whatever they imply about each other.

The same model answers the dual question, `implies`: whether every record one condition lets in, another
lets in too (a follow-up's "这样的帖子" — threads, 1+ replies — adds nothing to threads with over 20 replies).
On a field the schema has seen hold only whole numbers an exclusive bound is the inclusive one next to it
("> 20" is ">= 21"), so "> 3" and "< 4" leave no room and "> 0" implies ">= 1".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from context_engine.query.compile import OPPOSITE, CompileError, resolve_field
from context_engine.query.ir import Filter, PlanIR, Span
from context_engine.query.schema import CollectionSchema

_LOWER, _UPPER = ("gt", "gte"), ("lt", "lte")
_EMPTY = frozenset({None, "", ()})  # what "is empty" matches: missing, null, "" and []


@dataclass(frozen=True)
class _Condition:
    """One filter or time bound as what it allows on its path: `values` (eq/in: one of them),
    `excluded` (ne/nin), `empty` (True: is empty; False: is not), bounds."""

    span: Span | None
    values: frozenset | None = None
    excluded: frozenset = frozenset()
    empty: bool | None = None
    lower: tuple[Any, bool] | None = None  # (bound, inclusive)
    upper: tuple[Any, bool] | None = None


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _of_filter(f: Filter, whole: bool) -> _Condition | None:
    op = OPPOSITE.get(f.op, f.op) if f.negate else f.op  # a negated operator as the operator it is
    if f.negate and op == f.op and op != "exists":
        return None  # a negated comparison or word pattern: not one of the certain forms
    value = f.value
    if op == "exists":  # present and not null (`compile._condition`), or missing or null
        present = bool(value) != f.negate
        return (
            _Condition(f.span, excluded=frozenset({None})) if present else _Condition(f.span, values=frozenset({None}))
        )
    if op == "eq":
        return _Condition(f.span, values=frozenset({_hashable(value)}))
    if op == "in" and isinstance(value, list):
        return _Condition(f.span, values=frozenset(_hashable(v) for v in value))
    if op == "ne":
        return _Condition(f.span, excluded=frozenset({_hashable(value)}))
    if op == "nin" and isinstance(value, list):
        return _Condition(f.span, excluded=frozenset(_hashable(v) for v in value))
    if op in ("empty", "not_empty"):
        return _Condition(f.span, empty=op == "empty")
    if op in _LOWER:
        return _Condition(f.span, lower=_bound(op, value, whole))
    if op in _UPPER:
        return _Condition(f.span, upper=_bound(op, value, whole))
    return None  # words: any text may hold them


def _bound(op: str, value: Any, whole: bool) -> tuple[Any, bool]:
    """A bound as (value, inclusive); on whole numbers an exclusive whole bound is the inclusive one next to it."""
    if whole and op in ("gt", "lt") and isinstance(value, int) and not isinstance(value, bool):
        return (value + 1 if op == "gt" else value - 1, True)
    return (value, op in ("gte", "lte"))


def _below(value: Any, bound: tuple[Any, bool]) -> bool:
    """Whether `value` is out of an upper bound."""
    try:
        return value > bound[0] or (value == bound[0] and not bound[1])
    except TypeError:
        return False


def _above(value: Any, bound: tuple[Any, bool]) -> bool:
    """Whether `value` is out of a lower bound."""
    try:
        return value < bound[0] or (value == bound[0] and not bound[1])
    except TypeError:
        return False


def _outside(value: Any, c: _Condition) -> bool:
    """Whether a value cannot meet the bounds of `c` (null meets no bound)."""
    if c.lower is None and c.upper is None:
        return False
    if value is None:
        return True
    return (c.lower is not None and _above(value, c.lower)) or (c.upper is not None and _below(value, c.upper))


def _clash(a: _Condition, b: _Condition, array: bool) -> bool:
    """Whether no record can meet both. On an array field a value condition holds of some element,
    so two value sets or bounds never clash there; an exclusion or emptiness holds of them all."""
    for x, y in ((a, b), (b, a)):
        if x.values is not None and x.values <= y.excluded:
            return True
        if x.empty is True and (
            (y.values is not None and not y.values & _EMPTY)
            or y.empty is False
            or y.lower is not None
            or y.upper is not None
        ):
            return True
        if (
            not array
            and x.values is not None
            and all(_outside(v, y) for v in x.values)
            and (y.lower is not None or y.upper is not None)
        ):
            return True
    if not array and a.values is not None and b.values is not None and not a.values & b.values:
        return True
    if (
        not array
        and a.lower is not None
        and b.upper is not None
        and (_below(a.lower[0], b.upper) or (a.lower[0] == b.upper[0] and not (a.lower[1] and b.upper[1])))
    ):
        return True
    if (
        not array
        and b.lower is not None
        and a.upper is not None
        and (_below(b.lower[0], a.upper) or (b.lower[0] == a.upper[0] and not (b.lower[1] and a.upper[1])))
    ):
        return True
    return False


def _within(value: Any, c: _Condition) -> bool:
    """Whether `value` certainly meets the bounds of `c` (null meets none; values that do not compare, none)."""
    try:
        return (
            value is not None
            and (c.lower is None or value > c.lower[0] or (value == c.lower[0] and c.lower[1]))
            and (c.upper is None or value < c.upper[0] or (value == c.upper[0] and c.upper[1]))
        )
    except TypeError:
        return False


def _as_tight(x: tuple[Any, bool] | None, y: tuple[Any, bool] | None, lower: bool) -> bool:
    """Whether a bound `x` lets in nothing the bound `y` on the same side does not (no bound lets in everything)."""
    if y is None:
        return True
    if x is None:
        return False
    try:
        if x[0] == y[0]:
            return y[1] or not x[1]
        return bool(x[0] > y[0]) if lower else bool(x[0] < y[0])
    except TypeError:
        return False


def implies(old: Filter, new: Filter, schema: CollectionSchema) -> bool:
    """Whether every record `old` lets in, `new` lets in too, where that is certain of a bound: `new` bounds the
    same field and `old` bounds it as tightly on that side, or allows only values within it ("> 20 replies", "3
    replies" imply "1 or more")."""
    if old.via or new.via:
        return False
    try:
        path = resolve_field(schema, old.field)
        if resolve_field(schema, new.field) != path:
            return False
    except CompileError:
        return False
    whole = schema.holds_whole_numbers(path)
    a, b = _of_filter(old, whole), _of_filter(new, whole)
    if a is None or b is None or b.values is not None or b.excluded or b.empty is not None:
        return False
    if b.lower is None and b.upper is None:
        return False
    if a.values is not None:
        return all(_within(v, b) for v in a.values)
    return _as_tight(a.lower, b.lower, lower=True) and _as_tight(a.upper, b.upper, lower=False)


def contradictions(ir: PlanIR, schema: CollectionSchema) -> list[tuple[Span | None, Span | None]]:
    """The pairs of a plan's conditions (by their spans) that no record can meet together; a time
    range that ends before it starts is a pair with itself."""
    if ir.pipeline is not None:
        return []
    on_path: dict[str, list[_Condition]] = {}
    for f in ir.filters:
        try:
            path = resolve_field(schema, f.field)
        except CompileError:
            continue  # the compiler reports it
        condition = _of_filter(f, schema.holds_whole_numbers(path))
        if condition is not None:
            on_path.setdefault(path, []).append(condition)
    for t in [] if ir.times_any else ir.times:  # alternative periods need not meet
        try:
            path = resolve_field(schema, t.field, date=True)
        except CompileError:
            continue
        # A range's two ends are two conditions: one that ends before it starts clashes with itself.
        on_path.setdefault(path, []).extend(
            _Condition(t.span, **{key: bound})
            for key, bound in (("lower", (t.start, True)), ("upper", (t.end, False)))
            if bound[0] is not None
        )
    for path, conditions in list(on_path.items()):
        # An empty object or list has no fields: "no milestone" holds of `milestone.title` too.
        for inner in [p for p in on_path if p.startswith(path + ".")]:
            on_path[inner] = on_path[inner] + [c for c in conditions if c.empty is True]
    found: list[tuple[Span | None, Span | None]] = []
    for path, conditions in on_path.items():
        array = schema.is_array(path)
        for i, a in enumerate(conditions):
            for b in conditions[i + 1 :]:
                if _clash(a, b, array):
                    found.append((a.span, b.span))
    return list(dict.fromkeys(found))

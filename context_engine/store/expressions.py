"""MongoDB's semantics for the aggregation expressions the validator allows, where mongomock differs.

The validator (`query/validate.py`) allows a fixed list of expression operators; every one of them
must run on the embedded store (and on `mongomock://`) as it runs on MongoDB. mongomock leaves some
unimplemented (`$substrCP`, `$strLenCP`, `$cmp`, `$dateToString` with a timezone, a date operator's
`{date, timezone}` form with a UTC offset, `$add` of a date), fails a comparison with a missing operand
(a field a record lacks, a `$lookup` variable its row had no value for) and compares `true` equal to
1 (Python's `==`), maps case beyond ASCII (MongoDB's
`$toLower`/`$toUpper` change ASCII letters only) and does arithmetic on Python's
unbounded integers, so a chain of `$multiply` could build numbers of millions of digits (minutes of
CPU, and an integer no JSON encoder will print). MongoDB's integers are 64-bit: an operation whose
result does not fit becomes a double, which is what `arithmetic` does here. Every other operator is
left to mongomock. `tests/security/test_operator_parity.py` walks the allow-list against this.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from context_engine.store.embedded_stages import UnknownType, bson_key
from context_engine.text import ASCII_LOWER, ASCII_UPPER

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# MongoDB's `$dateToString` format specifiers (all of them: an unknown one is an error there too).
DATE_FORMAT_SPECIFIERS = frozenset("dGHjLmMSuUVwYzZ%")
_OFFSET = re.compile(r"([+-])(\d\d)(?::?(\d\d))?")


class ExpressionError(ValueError):
    """An expression MongoDB would refuse at run time (the message is MongoDB's sense, in one line)."""


@lru_cache(maxsize=256)
def parse_timezone(name: str) -> tzinfo:
    """An Olson name (`Asia/Shanghai`) or a UTC offset (`+05:30`, `-0300`, `+08`), as MongoDB takes
    them; ExpressionError for anything else."""
    if not isinstance(name, str):
        raise ExpressionError(f"timezone must be a string; got {name!r}")
    offset = _OFFSET.fullmatch(name)
    if offset:
        sign, hours, minutes = offset.group(1), int(offset.group(2)), int(offset.group(3) or 0)
        if hours > 23 or minutes > 59:
            raise ExpressionError(f"unrecognized time zone offset {name!r}")
        delta = timedelta(hours=hours, minutes=minutes)
        return timezone(-delta if sign == "-" else delta)
    if name in ("UTC", "GMT", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ExpressionError(
            f"unrecognized time zone identifier {name!r}; use an IANA name such as "
            "'Europe/Berlin' or an offset such as '+05:30'"
        ) from None


def check_date_format(fmt: str) -> None:
    """ExpressionError when `fmt` uses a specifier MongoDB's `$dateToString` does not know."""
    for match in re.finditer(r"%(.?)", fmt):
        if match.group(1) not in DATE_FORMAT_SPECIFIERS:
            raise ExpressionError(
                f"$dateToString format {fmt!r} uses %{match.group(1)}, which MongoDB does not "
                "know; use only %" + ", %".join(sorted(DATE_FORMAT_SPECIFIERS - {"%"})) + " and %%"
            )


def _local(date: datetime, zone: tzinfo | None) -> datetime:
    """A stored date (naive UTC, or aware) as wall-clock time in `zone` (UTC when None)."""
    aware = date if date.tzinfo is not None else date.replace(tzinfo=UTC)
    return aware.astimezone(zone or UTC)


def _format(date: datetime, fmt: str) -> str:
    """MongoDB's `$dateToString` formatting of a local time (its %w is 1-7 from Sunday, not 0-6)."""
    offset = date.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    iso_year, iso_week, iso_day = date.isocalendar()
    fields = {
        "d": f"{date.day:02d}",
        "G": f"{iso_year:04d}",
        "H": f"{date.hour:02d}",
        "j": f"{date.timetuple().tm_yday:03d}",
        "L": f"{date.microsecond // 1000:03d}",
        "m": f"{date.month:02d}",
        "M": f"{date.minute:02d}",
        "S": f"{date.second:02d}",
        "u": str(iso_day),
        "U": date.strftime("%U"),
        "V": f"{iso_week:02d}",
        "w": str(date.isoweekday() % 7 + 1),
        "Y": f"{date.year:04d}",
        "z": f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}",
        "Z": f"{minutes:+d}",
        "%": "%",
    }
    check_date_format(fmt)
    return re.sub(r"%(.)", lambda m: fields[m.group(1)], fmt)


DATE_PARTS: dict[str, Callable[[datetime], int]] = {
    "$year": lambda d: d.year,
    "$month": lambda d: d.month,
    "$dayOfMonth": lambda d: d.day,
    "$hour": lambda d: d.hour,
    "$dayOfYear": lambda d: d.timetuple().tm_yday,
    "$dayOfWeek": lambda d: d.isoweekday() % 7 + 1,  # 1 = Sunday
    "$week": lambda d: int(d.strftime("%U")),  # 0-53, weeks begin on Sunday
}


def _number(value: Any, op: str) -> int | float:
    """An operand of arithmetic as MongoDB holds it: an int beyond 64 bits is a double (bool is no number)."""
    if type(value) is bool or not isinstance(value, (int, float)):
        raise ExpressionError(f"{op} only supports numeric types (and dates where stated); got {type(value).__name__}")
    return _fit(value)


def _fit(value: int | float) -> int | float:
    """An integer result that does not fit 64 bits becomes a double, as MongoDB's long arithmetic does."""
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        try:
            return float(value)
        except OverflowError:
            return math.copysign(math.inf, value)
    return value


def _ms(value: int | float) -> timedelta:
    return timedelta(milliseconds=round(value))


def arithmetic(op: str, values: list[Any]) -> Any:
    """`$add`, `$subtract`, `$multiply`, `$divide` over evaluated operands, MongoDB's way."""
    if any(v is None for v in values):
        return None  # null or missing operand: null
    try:
        if op == "$add":
            dates = [v for v in values if isinstance(v, datetime)]
            if len(dates) > 1:
                raise ExpressionError("$add can add only one date")
            total = _fit(sum(_number(v, op) for v in values if not isinstance(v, datetime)))
            return dates[0] + _ms(total) if dates else total
        if op == "$subtract":
            first, second = values
            if isinstance(first, datetime) and isinstance(second, datetime):
                return round((first - second).total_seconds() * 1000)
            if isinstance(first, datetime):
                return first - _ms(_number(second, op))
            return _fit(_number(first, op) - _number(second, op))
        if op == "$multiply":
            product: int | float = 1
            for value in values:
                product = _fit(product * _number(value, op))
            return product
        dividend, divisor = (_number(v, op) for v in values)
        if divisor == 0:
            raise ExpressionError("can't $divide by zero")
        return dividend / divisor  # a double, as in MongoDB
    except OverflowError:
        raise ExpressionError(f"{op}: the result is out of the range of a date") from None


def date_part(op: str, date: Any, zone: Any) -> int | None:
    if date is None:
        return None
    if not isinstance(date, datetime):
        raise ExpressionError(f"{op} needs a date; got {type(date).__name__}")
    return DATE_PARTS[op](_local(date, None if zone is None else parse_timezone(zone)))


def date_to_string(fmt: Any, date: Any, zone: Any) -> str | None:
    if date is None:
        return None
    if not isinstance(date, datetime):
        raise ExpressionError(f"$dateToString needs a date; got {type(date).__name__}")
    if not isinstance(fmt, str):
        raise ExpressionError("$dateToString format must be a string")
    return _format(_local(date, None if zone is None else parse_timezone(zone)), fmt)


def substr_cp(string: Any, start: Any, count: Any) -> str:
    for name, value in (("starting index", start), ("length", count)):
        if type(value) is bool or not isinstance(value, (int, float)) or value != int(value) or value < 0:
            raise ExpressionError(f"$substrCP: {name} must be a non-negative integral number; got {value!r}")
    return _as_string(string, f"$substrCP needs a string; got {type(string).__name__}")[
        int(start) : int(start) + int(count)
    ]


def str_len_cp(string: Any) -> int:
    if not isinstance(string, str):
        raise ExpressionError(f"$strLenCP requires a string argument, found: {type(string).__name__}")
    return len(string)


def if_null(values: list[Any]) -> Any:
    """The first of the inputs that is neither null nor missing, else the replacement (the last)."""
    return next((v for v in values[:-1] if v is not None), values[-1])


def change_case(op: str, value: Any) -> str:
    """`$toLower`/`$toUpper`: ASCII letters only, null is "", numbers and dates as MongoDB prints them."""
    text = _as_string(value, f"{op} can't convert from {type(value).__name__} to a string")
    return text.translate(ASCII_LOWER if op == "$toLower" else ASCII_UPPER)


def _as_string(value: Any, refusal: str) -> str:
    """A string operator's input as MongoDB reads it: null is "", numbers and dates as it prints
    them; anything else (a bool, an array, a document) is refused with `refusal`."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return _format(_local(value, None), "%Y-%m-%dT%H:%M:%S.%LZ")
    if type(value) is not bool and isinstance(value, (int, float)):
        return str(value)
    if not isinstance(value, str):
        raise ExpressionError(refusal)
    return value


def _kind(value: Any) -> str:
    """MongoDB's comparison class of a value: numbers compare with numbers only (a bool is no number)."""
    if type(value) is bool:
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def equal(first: Any, second: Any) -> bool:
    """MongoDB's equality of two values: by type class and value (1 == 1.0, true != 1), arrays and
    objects element by element (objects in field order)."""
    if _kind(first) != _kind(second):
        return False
    if isinstance(first, list):
        return len(first) == len(second) and all(equal(a, b) for a, b in zip(first, second))
    if isinstance(first, dict):
        return list(first) == list(second) and all(equal(first[k], second[k]) for k in first)
    return first == second


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def compare(op: str, first: Any, second: Any, missing: tuple[bool, bool]) -> bool:
    """`$eq` ... `$lte` in MongoDB's order of values (`embedded_stages.bson_key`: numbers by value whatever
    their type, types in BSON order, true never 1); a missing operand (`missing`) is below null and
    equal only to another missing one."""
    try:
        keys = [(0,) if gone else (1, bson_key(value)) for value, gone in zip((first, second), missing)]
    except UnknownType as exc:
        raise ExpressionError(f"{op} cannot compare a value of type {exc}") from None
    return _COMPARISONS[op](keys[0], keys[1])


def is_in(value: Any, array: Any, missing: bool = False) -> bool:
    """`$in`: whether `array` holds `value`; an error when the second argument is not an array."""
    if not isinstance(array, list):
        raise ExpressionError(
            f"$in requires an array as a second argument, found: {'missing' if array is None else type(array).__name__}"
        )
    return not missing and any(equal(value, item) for item in array)


def array_elem_at(array: Any, index: Any) -> tuple[bool, Any]:
    """`$arrayElemAt`: (found, element); null when either argument is null or missing, nothing (found
    False) when the index is out of range, an error for a non-array or a non-integral index."""
    if array is None or index is None:
        return True, None
    if not isinstance(array, list):
        raise ExpressionError(f"$arrayElemAt's first argument must be an array, but is {type(array).__name__}")
    if type(index) is bool or not isinstance(index, (int, float)):
        raise ExpressionError(f"$arrayElemAt's second argument must be a numeric value, but is {type(index).__name__}")
    if not math.isfinite(index) or index != int(index) or not -(2**31) <= index < 2**31:
        raise ExpressionError(
            f"$arrayElemAt's second argument must be representable as a 32-bit integral value: {index}"
        )
    position = int(index)
    if position >= len(array) or position < -len(array):
        return False, None
    return True, array[position]


def truthy(value: Any) -> bool:
    """MongoDB's truth of a value: false, null, missing and zero are false; everything else is true."""
    if value is None or value is False:
        return False
    if type(value) is not bool and isinstance(value, (int, float)):
        return value != 0
    return True


def finite_for_json(value: Any) -> Any:
    """A result with every non-finite double (MongoDB's Infinity, -Infinity, NaN: `$multiply` past
    1.8e308, a NaN stored from an input) spelt as the string MongoDB prints, so that JSON output stays
    JSON (`json.dumps` would write the bare token `Infinity`, which no strict parser reads)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite_for_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_for_json(v) for v in value]
    return value

"""Bounded execution for the embedded store: a deadline, a row cap and a byte cap on every pipeline.

mongomock ignores `maxTimeMS` and has no memory limits, so a validated but hostile pipeline could
run for minutes or grow without end. Here a pipeline runs one stage at a time; between stages the
deadline is checked and the intermediate result is measured (rows, and bytes counted only up to
the cap, so measuring a bomb costs no more than the cap). Regular expressions are evaluated by RE2
(linear time) instead of Python's backtracking `re`, so no pattern can stall the matcher.
MongoDB itself enforces `maxTimeMS`; its results are cut at the same byte cap while reading.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable


class QueryBoundExceeded(RuntimeError):
    """A query hit its deadline or a size cap; the message is one line for the planner and the user."""


@dataclass(frozen=True)
class Bounds:
    max_time_ms: int = 5000
    max_rows: int = 100_000          # rows alive between two stages
    max_bytes: int = 32 * 2**20      # approximate bytes alive between two stages, and of the result

    def deadline(self) -> float:
        return time.monotonic() + self.max_time_ms / 1000


def approx_size(value: Any, cap: int) -> int:
    """Approximate in-memory/JSON size of `value`, counting stops as soon as it passes `cap`."""
    total, stack = 0, [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            total += 2 + 4 * len(node)
            for key, item in node.items():
                total += len(key) if isinstance(key, str) else 8
                stack.append(item)
        elif isinstance(node, (list, tuple)):
            total += 2 + len(node)
            stack.extend(node)
        elif isinstance(node, (str, bytes)):
            total += len(node) + 2
        elif isinstance(node, datetime):
            total += 24
        else:
            total += 8
        if total > cap:
            return total
    return total


def check(rows: list[Any], bounds: Bounds, deadline: float, where: str) -> None:
    if time.monotonic() > deadline:
        raise QueryBoundExceeded(f"the query ran past its {bounds.max_time_ms} ms deadline ({where}); "
                                 "narrow it with a $match or a $limit")
    if len(rows) > bounds.max_rows:
        raise QueryBoundExceeded(f"the query produced more than {bounds.max_rows} rows ({where}); "
                                 "narrow it with a $match, avoid multiplying rows with $unwind")
    if approx_size(rows, bounds.max_bytes) > bounds.max_bytes:
        raise QueryBoundExceeded(f"the query produced more than {bounds.max_bytes // 2**20} MB ({where}); "
                                 "return fewer or smaller fields")


def run_embedded(collection: Any, stages: list[dict[str, Any]], bounds: Bounds,
                 deadline: float | None = None) -> list[dict[str, Any]]:
    """Run a pipeline on a mongomock collection, stage by stage, within `bounds`.

    A leading `$match` is served by `find()` (only matching documents are copied, as MongoDB pushes
    it down to an index); every later stage runs over the rows of the one before.
    """
    from mongomock.aggregate import process_pipeline

    use_re2()
    deadline = deadline if deadline is not None else bounds.deadline()
    stages = list(stages)
    if stages and set(stages[0]) == {"$match"}:
        rows = _bounded_find(collection, stages.pop(0)["$match"], bounds, deadline)
    else:
        rows = _bounded_find(collection, {}, bounds, deadline)
    for number, stage in enumerate(stages, start=1):
        rows = list(process_pipeline(rows, collection.database, [stage], None))
        check(rows, bounds, deadline, f"after {next(iter(stage))}, stage {number}")
    return rows


def run_in_process(rows: list[dict[str, Any]], stages: list[dict[str, Any]], bounds: Bounds,
                   deadline: float) -> list[dict[str, Any]]:
    """The rest of a pipeline over rows already read (used after a BM25-ranked `$text` sort)."""
    from mongomock.aggregate import process_pipeline

    for stage in stages:
        rows = list(process_pipeline(rows, None, [stage], None))
        check(rows, bounds, deadline, f"after {next(iter(stage))}")
    return rows


def _bounded_find(collection: Any, query: dict[str, Any], bounds: Bounds, deadline: float) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for count, row in enumerate(collection.find(query), start=1):
        rows.append(row)
        if count % 2000 == 0:
            check(rows, bounds, deadline, "reading the collection")
    check(rows, bounds, deadline, "reading the collection")
    return rows


def read_cursor(cursor: Iterable[dict[str, Any]], bounds: Bounds) -> list[dict[str, Any]]:
    """Read a MongoDB cursor, stopping with an error once the result passes the byte cap."""
    rows, size = [], 0
    for row in cursor:
        size += approx_size(row, bounds.max_bytes)
        if size > bounds.max_bytes:
            raise QueryBoundExceeded(f"the query result is larger than {bounds.max_bytes // 2**20} MB; "
                                     "return fewer or smaller fields")
        rows.append(row)
    return rows


# -- RE2 for $regex ------------------------------------------------------------------------------

_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))


def compile_re2(pattern: str, flags: str = "") -> Any:
    """An RE2 pattern with MongoDB-style flags (i, m, s); raises ValueError for what RE2 refuses."""
    import re2

    options = re2.Options()
    options.log_errors = False        # a refused pattern is reported to the caller, not to stderr
    options.max_mem = 8 << 20         # RE2's DFA memory per pattern; past it RE2 refuses, never backtracks
    inline = "".join(sorted(set(flags)))
    try:
        return re2.compile(f"(?{inline}){pattern}" if inline else pattern, options=options)
    except Exception as exc:  # re2.error and friends: the message is what matters
        message = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(message or "invalid pattern") from None


def _re2_regex(doc_val: Any, regex: Any) -> bool:
    if isinstance(regex, str):
        compiled = compile_re2(regex)
    elif isinstance(regex, re.Pattern):
        compiled = compile_re2(regex.pattern, "".join(letter for flag, letter in _FLAG_LETTERS if regex.flags & flag))
    else:
        compiled = regex
    values = doc_val if isinstance(doc_val, (list, tuple)) else [doc_val]
    return any(compiled.search(item) for item in values if isinstance(item, str))


def _re2_options(search: dict[str, Any]) -> dict[str, Any]:
    options = search["$options"]
    if not isinstance(options, str):
        raise ValueError("$options has to be a string")
    pattern = search["$regex"]
    pattern = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    rest = {k: v for k, v in search.items() if k not in ("$regex", "$options")}
    return {**rest, "$regex": compile_re2(str(pattern), "".join(c for c in options if c in "ims"))}


def use_re2() -> None:
    """Make mongomock's matcher evaluate `$regex` with RE2 (idempotent)."""
    from mongomock import filtering

    if getattr(filtering, "_uses_re2", False):
        return
    filtering._regex = _re2_regex
    filtering._combine_regex_options = _re2_options
    # The operator map captured the original function when the module was imported.
    filtering._filterer_inst._operator_map["$regex"] = filtering._not_nothing_and(_re2_regex)
    filtering._uses_re2 = True

"""Bounded execution for the embedded store: a deadline, a row cap and a byte cap on every pipeline.

mongomock ignores `maxTimeMS` and has no memory limits, so a validated but hostile pipeline could
run for minutes or grow without end. Here a pipeline runs one stage at a time; between stages the
intermediate result is measured (rows, and bytes counted only up to the cap, so measuring a bomb
costs no more than the cap). Inside a stage the clock is read at every expression mongomock
evaluates (a hook on its expression parser) and between blocks of rows of the per-document stages,
so one stage can never run on past the deadline. `$lookup`, which mongomock has only in its
localField form, runs here in both forms as a hash join (`_lookup`), under the same clock and caps.
The same checks read a `Stop`: a flag another thread sets when the caller is gone (a request timed
out, its client disconnected, the server got SIGTERM), so abandoned work ends at its next document
instead of holding a core for minutes.
Regular expressions are evaluated by RE2 (linear time) instead of Python's backtracking `re`, and
the allowed expression operators by MongoDB's rules (`store.expressions`: 64-bit arithmetic,
time zones), so no pattern or number can stall a stage.
MongoDB itself enforces `maxTimeMS`; its results are cut at the same byte cap while reading.
"""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any


class QueryBoundExceeded(RuntimeError):
    """A query hit its deadline or a size cap; the message is one line for the planner and the user."""


class Cancelled(RuntimeError):
    """The work was stopped because whoever asked for it is gone (not the query's fault: no retry)."""


class Stop:
    """A flag another thread sets to stop work in progress; the work notices at its next document."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = "the work was cancelled"

    def cancel(self, reason: str) -> None:
        """Set the flag; the first reason given is the one reported."""
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


SHUTDOWN = Stop()  # process-wide: the serving commands set it on SIGTERM
# The Stop of the request being served. A context variable: LangChain and Starlette copy the context
# into the worker threads that run a request's nodes, so the graph's queries see their request's flag.
_STOP: ContextVar[Stop | None] = ContextVar("context_engine_stop", default=None)
# The deadline of the query being evaluated in this context (read by the expression hook), its bounds
# and the store's write revision (None off the embedded store), which `$lookup` reads too.
_QUERY: ContextVar[tuple[float, Bounds, int | None] | None] = ContextVar("context_engine_query", default=None)
# The `let` variables of the `$lookup` pipeline being run for one row, by name.
# The default is only read: each row's values are set as a dict of their own.
_LET: ContextVar[dict[str, Any]] = ContextVar("context_engine_let", default={})  # noqa: B039


@contextmanager
def stop_on(stop: Stop) -> Iterator[Stop]:
    """Run the block (and whatever it starts in copied contexts) under `stop`."""
    token = _STOP.set(stop)
    try:
        yield stop
    finally:
        _STOP.reset(token)


def raise_if_stopped() -> None:
    """Cancelled when this context's request, or the whole process, has been told to stop."""
    for stop in (SHUTDOWN, _STOP.get()):
        if stop is not None and stop.is_set():
            raise Cancelled(stop.reason)


def _tick() -> None:
    """The check made at every expression evaluated and every block of rows: stop flags, then clock."""
    raise_if_stopped()
    query = _QUERY.get()
    if query is not None and time.monotonic() > query[0]:
        _late(query[1], "inside a stage")


def _late(bounds: Bounds, where: str) -> None:
    raise QueryBoundExceeded(
        f"the query ran past its {bounds.max_time_ms} ms deadline ({where}); narrow it with a $match or a $limit"
    )


@contextmanager
def running(bounds: Bounds, deadline: float, revision: int | None = None) -> Iterator[None]:
    """Evaluate mongomock expressions and `$lookup` in the block under this query's deadline (and
    MongoDB's rules); `revision`: the embedded store's, so that a join's scope goes through its indexes."""
    use_mongodb_expressions()
    use_lookup()
    token = _QUERY.set((deadline, bounds, revision))
    try:
        yield
    finally:
        _QUERY.reset(token)


@dataclass(frozen=True)
class Bounds:
    max_time_ms: int = 5000
    max_rows: int = 100_000  # rows alive between two stages
    max_bytes: int = 32 * 2**20  # approximate bytes alive between two stages, and of the result
    max_joined: int = 5_000  # documents one $lookup joins to all the rows (each one a copy)

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


# Stages whose output is a subset of their input rows, unchanged (or one small row): they can
# never make the data alive between two stages bigger, so their output is not measured again.
_NEVER_GROW = frozenset({"$match", "$sort", "$limit", "$skip", "$count", "$sample", "$sortByCount"})


def check(rows: list[Any], bounds: Bounds, deadline: float, where: str, *, size: int | None = None) -> None:
    """Stop flags, deadline, row cap and byte cap; `size`: the rows' approximate bytes when already counted."""
    raise_if_stopped()
    if time.monotonic() > deadline:
        _late(bounds, where)
    if len(rows) > bounds.max_rows:
        raise QueryBoundExceeded(
            f"the query produced more than {bounds.max_rows} rows ({where}); "
            "narrow it with a $match, avoid multiplying rows with $unwind"
        )
    if (size if size is not None else approx_size(rows, bounds.max_bytes)) > bounds.max_bytes:
        raise QueryBoundExceeded(
            f"the query produced more than {bounds.max_bytes // 2**20} MB ({where}); return fewer or smaller fields"
        )


def run_embedded(
    collection: Any,
    stages: list[dict[str, Any]],
    bounds: Bounds,
    deadline: float | None = None,
    revision: int | None = None,
) -> list[dict[str, Any]]:
    """Run a pipeline on a mongomock collection, stage by stage, within `bounds`.

    A leading `$match` is served by `find()` (only matching documents are copied, as MongoDB pushes
    it down to an index). Given the store's write `revision`, as MongoDB would with indexes: the
    match goes through the secondary indexes of `store.match_index` (no full scan when a conjunct is
    indexable), the read-only stages right after it (`$sort`, `$limit`, `$skip`, `$match`) run over
    the stored documents themselves, and only what survives them is copied, with only the fields
    later stages can read (`needed_fields`). Every later stage runs over the rows of the one before.
    """
    use_re2()
    deadline = deadline if deadline is not None else bounds.deadline()
    stages = list(stages)
    query = stages.pop(0)["$match"] if stages and set(stages[0]) == {"$match"} else {}
    fields = needed_fields(stages)
    with running(bounds, deadline, revision):
        if revision is None or not hasattr(collection, "_store") or collection.codec_options.tz_aware:
            rows = _bounded_find(collection, query, bounds, deadline, fields)
        else:
            stored = _stored_matches(collection, query, revision, bounds, deadline)
            while stages and len(stages[0]) == 1 and next(iter(stages[0])) in _READ_ONLY:
                stage = stages.pop(0)  # never modifies a document: safe on the stored ones
                stored = _run_stage(stored, collection.database, stage, bounds, deadline, f"after {next(iter(stage))}")
            rows, size = [], 0
            for row in _copies(stored, fields):
                rows.append(row)
                size += approx_size(row, bounds.max_bytes)
                if size > bounds.max_bytes:
                    break
            check(rows, bounds, deadline, "reading the collection", size=size)
        for number, stage in enumerate(stages, start=1):
            rows = _run_stage(
                rows, collection.database, stage, bounds, deadline, f"after {next(iter(stage))}, stage {number}"
            )
    return rows


def run_in_process(
    rows: list[dict[str, Any]], stages: list[dict[str, Any]], bounds: Bounds, deadline: float, database: Any
) -> list[dict[str, Any]]:
    """The rest of a pipeline over rows already read (used after a BM25-ranked `$text` sort);
    `database` holds the collections a `$lookup` among the stages joins."""
    with running(bounds, deadline):
        for stage in stages:
            rows = _run_stage(rows, database, stage, bounds, deadline, f"after {next(iter(stage))}")
    return rows


# Stages that treat each document on its own: run over blocks of rows, the caps and the clock checked
# after each block, so one stage that multiplies rows ($unwind) or is slow per row stops in time.
_PER_DOCUMENT = frozenset({"$match", "$project", "$addFields", "$set", "$unwind"})
_BLOCK = 512


def _run_stage(
    rows: list[Any], database: Any, stage: dict[str, Any], bounds: Bounds, deadline: float, where: str
) -> list[Any]:
    from mongomock.aggregate import process_pipeline

    grows = not set(stage) <= _NEVER_GROW and not _excludes_only(stage)
    if len(stage) != 1 or next(iter(stage)) not in _PER_DOCUMENT:
        out = list(process_pipeline(rows, database, [stage], None))
        check(out, bounds, deadline, where, size=None if grows else 0)
        return out
    out, size = [], 0
    for start in range(0, len(rows), _BLOCK):
        block = list(process_pipeline(rows[start : start + _BLOCK], database, [stage], None))
        out.extend(block)
        if grows:
            size += approx_size(block, bounds.max_bytes)
        check(out, bounds, deadline, where, size=size)
    check(out, bounds, deadline, where, size=size)
    return out


def _excludes_only(stage: dict[str, Any]) -> bool:
    """A `$project` that only removes fields (as every joined pipeline ends): its rows never grow."""
    spec = stage.get("$project")
    return isinstance(spec, dict) and bool(spec) and all(_flag_zero(v) for v in spec.values())


def _flag_zero(value: Any) -> bool:
    return value is False or (type(value) in (int, float) and value == 0)


def _bounded_find(
    collection: Any, query: dict[str, Any], bounds: Bounds, deadline: float, fields: set[str] | None = None
) -> list[dict[str, Any]]:
    """`find(query)` within the bounds (only the top-level `fields` of each document, all when None);
    each row's bytes are counted once, as it is read."""
    projection = None if fields is None else {"_id": 1, **dict.fromkeys(fields, 1)}
    rows: list[dict[str, Any]] = []
    size = 0
    for count, row in enumerate(collection.find(query, projection), start=1):
        rows.append(row)
        size += approx_size(row, bounds.max_bytes)
        if count % 2000 == 0 or size > bounds.max_bytes:
            check(rows, bounds, deadline, "reading the collection", size=size)
    check(rows, bounds, deadline, "reading the collection", size=size)
    return rows


_READ_ONLY = frozenset({"$match", "$sort", "$limit", "$skip"})


def _stored_matches(
    collection: Any, query: dict[str, Any], revision: int, bounds: Bounds, deadline: float
) -> list[dict[str, Any]]:
    """The stored documents (not copies: never to be modified) that `find(query)` would return, in
    the same order: the index candidates (`store.match_index`), else every document, through
    mongomock's own matcher. Rows and deadline are checked as they are read."""
    from mongomock import helpers
    from mongomock.filtering import filter_applies

    from context_engine.store.match_index import candidates

    spec = helpers.patch_datetime_awareness_in_document(query)  # as mongomock's Cursor does
    filter_applies(spec, {})  # an invalid filter fails here as it would on a scan
    found = candidates(collection, spec, revision)
    docs, rest = found if found is not None else (list(collection._store._documents.values()), spec)
    out = []
    for count, doc in enumerate(docs, start=1):
        if not rest or filter_applies(rest, doc):
            out.append(doc)
        if count % 5000 == 0:
            check(out, bounds, deadline, "reading the collection", size=0)
    check(out, bounds, deadline, "reading the collection", size=0)
    return out


def _copies(docs: Iterable[dict[str, Any]], fields: set[str] | None) -> Iterable[dict[str, Any]]:
    """Copies as mongomock's `find` makes them (with only `_id` and `fields` when given)."""
    from mongomock.collection import _copy_field

    if fields is None:
        return (_copy_field(doc, dict) for doc in docs)
    keep = {"_id", *fields}
    return ({k: _copy_field(v, dict) for k, v in doc.items() if k in keep} for doc in docs)


# Stages that pass documents on (maybe fewer, maybe unwound or with fields added), and stages that
# replace them by rows of their own making: after one of the latter, no stored field can matter.
_PASS_ON = frozenset({"$match", "$sort", "$limit", "$skip", "$unwind", "$addFields", "$set", "$sample", "$lookup"})
_RESHAPE = frozenset({"$group", "$count", "$sortByCount", "$bucket", "$bucketAuto"})


def needed_fields(stages: list[dict[str, Any]]) -> set[str] | None:
    """The top-level fields the stages after the leading `$match` can read, when they end in a stage
    that builds rows of its own (a `$group`, an inclusion `$project` ...); None (every field) when the
    documents themselves may reach the result, or a stage is not understood. A superset: any key or
    `$field` reference anywhere in those stages counts."""
    needed: set[str] = set()
    for stage in stages:
        if len(stage) != 1:
            return None
        name, spec = next(iter(stage.items()))
        if not _references(spec, needed):
            return None  # $$ROOT and friends: the whole document
        if name == "$lookup" and isinstance(spec, dict) and isinstance(spec.get("localField"), str):
            needed.add(spec["localField"].split(".")[0])  # a path named without '$
        if name in _RESHAPE:
            return needed
        if name == "$project" and isinstance(spec, dict) and any(v not in (0, False) for v in spec.values()):
            return needed  # an inclusion projection: only what it names goes on
        if name not in _PASS_ON and name != "$project":
            return None
    return None


def _references(spec: Any, needed: set[str]) -> bool:
    """Add every field name `spec` may read (keys and "$path" strings, first path component) to
    `needed`; False when it reads a whole document ("$$ROOT", "$$CURRENT")."""
    stack = [spec]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(key, str) and key and not key.startswith("$"):
                    needed.add(key.split(".")[0])
                stack.append(value)
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
        elif isinstance(node, str) and node.startswith("$"):
            if node.startswith("$$"):
                if node.split(".")[0] in ("$$ROOT", "$$CURRENT"):
                    return False
            else:
                needed.add(node[1:].split(".")[0])
    return True


def read_cursor(cursor: Iterable[dict[str, Any]], bounds: Bounds) -> list[dict[str, Any]]:
    """Read a MongoDB cursor, stopping with an error once the result passes the byte cap."""
    rows, size = [], 0
    for row in cursor:
        size += approx_size(row, bounds.max_bytes)
        if size > bounds.max_bytes:
            raise QueryBoundExceeded(
                f"the query result is larger than {bounds.max_bytes // 2**20} MB; return fewer or smaller fields"
            )
        rows.append(row)
    return rows


# -- RE2 for $regex ------------------------------------------------------------------------------

_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))


def compile_re2(pattern: str, flags: str = "") -> Any:
    """An RE2 pattern with MongoDB-style flags (i, m, s); raises ValueError for what RE2 refuses."""
    import re2

    options = re2.Options()
    options.log_errors = False  # a refused pattern is reported to the caller, not to stderr
    options.max_mem = 8 << 20  # RE2's DFA memory per pattern; past it RE2 refuses, never backtracks
    inline = "".join(sorted(set(flags)))
    try:
        return re2.compile(f"(?{inline}){pattern}" if inline else pattern, options=options)
    except Exception as exc:  # noqa: BLE001 - re2.error and friends: the message is what matters
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


# -- $lookup -----------------------------------------------------------------------------------------


def _lookup(rows: list[dict[str, Any]], database: Any, options: dict[str, Any]) -> list[dict[str, Any]]:
    """`$lookup` with MongoDB's semantics, in both forms and their combination (mongomock has only
    localField/foreignField, scanning the joined collection once per row).

    The joined pipeline's leading `$match` (the tenant and access scope that execution puts first),
    when it reads no `let` variable, is evaluated once, through the store's indexes; localField /
    foreignField is a hash join on the values MongoDB's equality compares (`bson_key`): a localField
    array matches any of its elements, a missing localField matches a foreignField that is null or
    missing. The rest of the joined pipeline runs per row over that row's matches, with `$$name` bound
    to its `let` values, read-only stages on the stored documents and the rest on copies. The clock and
    the stop flags are read at every row, the size of what has been joined so far is capped."""
    query = _QUERY.get()
    deadline, bounds, revision = query if query is not None else (Bounds().deadline(), Bounds(), None)
    foreign = database.get_collection(options["from"])
    stages = list(options.get("pipeline", []))
    filters = []  # the leading filters that read no variable: the same for every row, so applied once
    while stages and set(stages[0]) == {"$match"} and not _reads_variables(stages[0]):
        filters.append(stages.pop(0)["$match"])
    head = filters.pop(0) if filters else {}
    if revision is not None and hasattr(foreign, "_store") and not foreign.codec_options.tz_aware:
        documents = _stored_matches(foreign, head, revision, bounds, deadline)
    else:
        documents = _bounded_find(foreign, head, bounds, deadline)
    for spec in filters:
        documents = _filtered(documents, spec, bounds, deadline)
    positions: dict[tuple[Any, ...], list[int]] | None = None
    if "localField" in options:
        positions = defaultdict(list)
        for position, doc in enumerate(documents):
            for key in {_equality_key(v) for v in _path_values(doc, options["foreignField"], keep_arrays=True)}:
                positions[key].append(position)
            if position % _BLOCK == 0:
                _tick()
    variables = options.get("let", {})
    size = joined_count = 0
    for row in rows:
        _tick()
        matches = documents
        if positions is not None:
            keys = {_equality_key(v) for v in _path_values(row, options["localField"], keep_arrays=False)}
            found = [positions.get(key, []) for key in keys]
            chosen = found[0] if len(found) == 1 else sorted({p for group in found for p in group})
            matches = [documents[p] for p in chosen]
        token = _LET.set(_let_values(row, variables))
        try:
            joined = _joined(matches, database, stages, bounds, deadline)
        finally:
            _LET.reset(token)
        row[options["as"]] = joined
        joined_count += len(joined)
        if joined_count > bounds.max_joined:
            raise QueryBoundExceeded(
                f"the $lookup joined more than {bounds.max_joined} documents in all; narrow "
                "it with a $match before it or in its pipeline"
            )
        size += approx_size(joined, bounds.max_bytes)
        check(rows, bounds, deadline, "in a $lookup", size=size)
    return rows


def _filtered(
    documents: list[dict[str, Any]], query: dict[str, Any], bounds: Bounds, deadline: float
) -> list[dict[str, Any]]:
    """The documents `query` matches, in order, read (never modified) in place."""
    from mongomock import helpers
    from mongomock.filtering import filter_applies

    spec = helpers.patch_datetime_awareness_in_document(query)  # as mongomock's Cursor does
    out = []
    for count, doc in enumerate(documents, start=1):
        if filter_applies(spec, doc):
            out.append(doc)
        if count % 5000 == 0:
            check(out, bounds, deadline, "in a $lookup", size=0)
    return out


def _reads_variables(spec: Any) -> bool:
    """Whether `spec` names a `$$` variable anywhere (then it must be evaluated per row)."""
    stack = [spec]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
        elif isinstance(node, str) and node.startswith("$$"):
            return True
    return False


def _path_values(doc: dict[str, Any], path: str, keep_arrays: bool) -> list[Any]:
    """The values a dotted path reaches in `doc`, arrays crossed as MongoDB's equality match crosses
    them: a final array gives its elements (and itself, for the side matched as a whole: `keep_arrays`);
    an object without the next field gives null (an empty array on the way gives nothing)."""
    nodes: list[Any] = [doc]
    values: list[Any] = []
    for part in path.split("."):
        following = []
        for node in nodes:
            for item in node if isinstance(node, list) else [node]:
                if isinstance(item, dict):
                    if part in item:
                        following.append(item[part])
                    else:
                        values.append(None)
        nodes = following
    for node in nodes:
        if isinstance(node, list):
            values.extend(node)
            if keep_arrays:
                values.append(node)
        else:
            values.append(node)
    return values


def _equality_key(value: Any) -> tuple[Any, ...]:
    """Equal for the values MongoDB's equality finds equal (1 and 1.0; never 1 and "1" or true)."""
    from context_engine.store.embedded_stages import UnknownType, bson_key

    try:
        return bson_key(value)
    except UnknownType:  # an ObjectId or the like (never in the store's JSON records): itself
        return ("other", type(value).__name__, value)


def _let_values(row: dict[str, Any], variables: dict[str, Any]) -> dict[str, Any]:
    """The row's value of each `let` expression; one the row lacks is left unbound (missing, as in MongoDB)."""
    from mongomock.aggregate import _parse_expression

    values = {}
    for name, expression in variables.items():
        try:
            values[name] = _parse_expression(expression, row)
        except KeyError:
            continue
    return values


def _joined(
    documents: list[dict[str, Any]], database: Any, stages: list[dict[str, Any]], bounds: Bounds, deadline: float
) -> list[dict[str, Any]]:
    """A joined pipeline over one row's matches: its read-only stages over the stored documents (a
    `$limit` there bounds what is copied), then copies (without the top-level fields a `$project` next
    removes: the hidden ones, as execution ends every joined pipeline), then the rest."""
    from mongomock.collection import _copy_field

    stages = list(stages)
    while stages and len(stages[0]) == 1 and next(iter(stages[0])) in _READ_ONLY:
        stage = stages.pop(0)
        documents = _run_stage(documents, database, stage, bounds, deadline, f"in a $lookup, after {next(iter(stage))}")
    if stages and _excludes_only(stages[0]) and not any("." in name for name in stages[0]["$project"]):
        removed = set(stages.pop(0)["$project"])
        rows = [{k: _copy_field(v, dict) for k, v in doc.items() if k not in removed} for doc in documents]
    else:
        rows = list(_copies(documents, None))
    for stage in stages:
        rows = _run_stage(rows, database, stage, bounds, deadline, f"in a $lookup, after {next(iter(stage))}")
    return rows


def use_lookup() -> None:
    """Make mongomock run `$lookup` with `_lookup` (idempotent)."""
    from mongomock import aggregate

    aggregate._PIPELINE_HANDLERS["$lookup"] = _lookup


def _bound_variable(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """mongomock's reading of a plain expression, with `$$name` of a `$lookup`'s `let` bound."""
    from mongomock import helpers

    def parse_basic(self: Any, expression: Any) -> Any:
        if type(expression) is str and expression.startswith("$$"):
            variables = _LET.get()
            if expression[2:].partition(".")[0] in variables:
                return helpers.get_value_by_dot(variables, expression[2:], can_generate_array=True)
        return original(self, expression)

    return parse_basic


# -- MongoDB's expression semantics, and the clock inside a stage ------------------------------------


def _argument(parser: Any, expression: Any) -> Any:
    """An operand's value; a missing field is null, as MongoDB's operators below treat it."""
    try:
        return parser.parse(expression)
    except KeyError:
        return None


def _arguments(parser: Any, arg: Any) -> list[Any]:
    return [_argument(parser, item) for item in (arg if isinstance(arg, list) else [arg])]


def _date_operator(parser: Any, op: str, arg: Any) -> Any:
    from context_engine.store.expressions import date_part

    if isinstance(arg, dict) and "date" in arg:
        zone = _argument(parser, arg["timezone"]) if "timezone" in arg else None
        return date_part(op, _argument(parser, arg["date"]), zone)
    return date_part(op, _arguments(parser, arg)[0], None)


def _date_to_string(parser: Any, _op: str, arg: Any) -> Any:
    from context_engine.store.expressions import date_to_string

    zone = _argument(parser, arg["timezone"]) if "timezone" in arg else None
    return date_to_string(_argument(parser, arg.get("format")), _argument(parser, arg.get("date")), zone)


def _compare(parser: Any, _op: str, arg: Any) -> int:
    import operator

    from mongomock.filtering import bson_compare

    first, second = _arguments(parser, arg)
    return -1 if bson_compare(operator.lt, first, second) else 1 if bson_compare(operator.gt, first, second) else 0


def _present(parser: Any, expression: Any) -> tuple[Any, bool]:
    """An operand's value and whether it is missing (a field the document lacks, an unbound variable)."""
    try:
        return parser.parse(expression), False
    except KeyError:
        return None, True


def _comparison(parser: Any, op: str, arg: Any) -> bool:
    from context_engine.store.expressions import compare

    (first, first_missing), (second, second_missing) = (_present(parser, item) for item in arg)
    return compare(op, first, second, (first_missing, second_missing))


def _in(parser: Any, _op: str, arg: Any) -> bool:
    from context_engine.store.expressions import is_in

    value, array = arg
    found, missing = _present(parser, value)
    return is_in(found, _argument(parser, array), missing)


def _array_elem_at(parser: Any, _op: str, arg: Any) -> Any:
    from context_engine.store.expressions import array_elem_at

    found, value = array_elem_at(*_arguments(parser, arg))
    if not found:
        raise KeyError("$arrayElemAt: index out of range")  # mongomock's "missing": the field is left out
    return value


def _not(parser: Any, _op: str, arg: Any) -> bool:
    from context_engine.store.expressions import truthy

    if isinstance(arg, list) and len(arg) == 1:
        arg = arg[0]
    return not truthy(_argument(parser, arg))


def _handlers() -> dict[str, Any]:
    from context_engine.store import expressions as ex

    handlers: dict[str, Any] = {
        op: lambda p, o, a: ex.arithmetic(o, _arguments(p, a)) for op in ("$add", "$subtract", "$multiply", "$divide")
    }
    handlers.update(dict.fromkeys(ex.DATE_PARTS, _date_operator))
    handlers.update(dict.fromkeys(("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"), _comparison))
    handlers.update(
        {
            "$dateToString": _date_to_string,
            "$cmp": _compare,
            "$substrCP": lambda p, o, a: ex.substr_cp(*_arguments(p, a)),
            "$strLenCP": lambda p, o, a: ex.str_len_cp(_arguments(p, a)[0]),
            "$ifNull": lambda p, o, a: ex.if_null(_arguments(p, a)),
            "$in": _in,
            "$arrayElemAt": _array_elem_at,
            "$not": _not,
            "$toLower": lambda p, o, a: ex.change_case(o, _arguments(p, a)[0]),
            "$toUpper": lambda p, o, a: ex.change_case(o, _arguments(p, a)[0]),
        }
    )
    return handlers


def use_mongodb_expressions() -> None:
    """Make mongomock evaluate expressions under the clock, with MongoDB's semantics for the operators
    `store.expressions` implements (idempotent). Every expression mongomock evaluates, in any stage
    and in `$expr`, goes through `_Parser.parse`, so that is where the clock is read."""
    from mongomock import OperationFailure
    from mongomock.aggregate import _Parser

    from context_engine.store.expressions import ExpressionError

    if getattr(_Parser, "_bounded", False):
        return
    original, handlers = _Parser.parse, _handlers()

    def parse(self: Any, expression: Any) -> Any:
        _tick()
        if type(expression) is dict and len(expression) == 1:
            ((op, arg),) = expression.items()
            handler = handlers.get(op)
            if handler is not None:
                try:
                    return handler(self, op, arg)
                except ExpressionError as exc:
                    raise OperationFailure(str(exc)) from None
        if type(expression) is list:
            # An array expression: MongoDB evaluates each element (a missing one is null);
            # mongomock would return the list as written, field paths and operators as text.
            return [_argument(self, item) for item in expression]
        return original(self, expression)

    _Parser.parse = parse
    _Parser._parse_basic_expression = _bound_variable(_Parser._parse_basic_expression)
    _Parser._bounded = True

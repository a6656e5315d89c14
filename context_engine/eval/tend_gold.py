"""The gold side of the TEND benchmark: its queries as mongosh text, read and run.

TEND (`eval/tend.py`) states each gold query the way a person types it into mongosh:
`db.<collection>.aggregate([...])` or `db.<collection>.find(filter, projection)` followed by
`.sort(...)`, `.limit(...)`, `.skip(...)`, `.count()` or `.forEach(printjson)`, with JavaScript object
literals (unquoted keys, `$` operators as bare words, single or double quotes, trailing commas).
No JSON5 parser is installed (json5 would read the literals but not the call chain around them), so
this is a small hand-written reader of exactly that subset; anything else is a `GoldError` naming
where it stopped. A `find` is turned into the aggregation MongoDB runs for it (filter, sort, skip,
limit, then projection), so that every gold query is one (collection, pipeline) pair.

The gold is trusted: it runs on a plain mongomock database built from the benchmark's documents,
with no engine (no scope, no validator) between them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


class GoldError(ValueError):
    """A gold query this reader cannot read; the message says where and what."""


_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_$][\w$]*)
  | (?P<punct>[{}\[\](),:;.])
""",
    re.X | re.S,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_LITERALS = {"true": True, "false": False, "null": None}


def _unquote(text: str) -> str:
    """A JS string literal's value: its escapes read as JavaScript reads them."""
    body, out, i = text[1:-1], [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u":
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise GoldError(f"unexpected {text[pos : pos + 12]!r} at character {pos}")
        if m.lastgroup != "space":
            out.append((m.lastgroup, m.group(), pos))
        pos = m.end()
    return out


class _Reader:
    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "", -1)

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        k, v, pos = self.peek()
        if (value is not None and v != value) or (kind is not None and k != kind):
            raise GoldError(f"expected {value or kind!r} at character {pos}, found {v or 'the end'!r}")
        self.i += 1
        return v

    def accept(self, value: str) -> bool:
        if self.peek()[1] == value and self.peek()[0] == "punct":
            self.i += 1
            return True
        return False

    def value(self) -> Any:
        kind, text, pos = self.peek()
        if text == "{" and kind == "punct":
            return self.object()
        if text == "[" and kind == "punct":
            return self.array()
        self.i += 1
        if kind == "string":
            return _unquote(text)
        if kind == "number":
            number = float(text)
            return int(number) if re.fullmatch(r"-?\d+", text) else number
        if kind == "name" and text in _LITERALS:
            return _LITERALS[text]
        raise GoldError(f"unexpected {text or 'end'!r} at character {pos}")

    def object(self) -> dict[str, Any]:
        self.take("{")
        out: dict[str, Any] = {}
        while not self.accept("}"):
            kind, key, pos = self.peek()
            if kind not in ("name", "string", "number"):
                raise GoldError(f"expected a key at character {pos}, found {key!r}")
            self.i += 1
            self.take(":")
            out[_unquote(key) if kind == "string" else key] = self.value()
            if not self.accept(","):
                self.take("}")
                break
        return out

    def array(self) -> list[Any]:
        self.take("[")
        out = []
        while not self.accept("]"):
            out.append(self.value())
            if not self.accept(","):
                self.take("]")
                break
        return out

    def arguments(self) -> list[Any]:
        self.take("(")
        out = []
        while not self.accept(")"):
            kind, text, _ = self.peek()
            out.append(self.take() if kind == "name" and text not in _LITERALS else self.value())  # forEach(printjson)
            if not self.accept(","):
                self.take(")")
                break
        return out


@dataclass
class GoldQuery:
    collection: str
    pipeline: list[dict[str, Any]]
    counted: bool = False  # `.count()` or a closing `$count`: a number, 0 when nothing matched


def find_pipeline(
    filter_: dict[str, Any], projection: dict[str, Any] | None, cursor: list[tuple[str, list[Any]]]
) -> tuple[list[dict[str, Any]], bool]:
    """The aggregation a `find` with its cursor methods runs: match, sort, skip, limit, project (a
    projection is applied last: a find sorts on fields it does not return); `.count()` counts."""
    pipeline: list[dict[str, Any]] = [{"$match": filter_}] if filter_ else []
    stages = {"sort": "$sort", "skip": "$skip", "limit": "$limit"}
    counted = False
    for order in ("sort", "skip", "limit"):
        for method, args in cursor:
            if method == order and args:
                pipeline.append({stages[order]: args[0]})
    for method, _ in cursor:
        if method == "count":
            counted = True
        elif method not in (*stages, "forEach", "pretty", "toArray"):
            raise GoldError(f"unknown cursor method .{method}()")
    if counted:
        return [*pipeline, {"$count": "count"}], True
    if projection:
        pipeline.append({"$project": projection})
    return pipeline, False


def parse_gold(text: str) -> GoldQuery:
    """(collection, pipeline) of one mongosh statement: `db.C.aggregate([...])` or `db.C.find(...)...`."""
    reader = _Reader(text)
    reader.take("db")
    reader.take(".")
    collection = reader.take(kind="name")
    if collection == "getCollection":
        args = reader.arguments()
        if len(args) != 1 or not isinstance(args[0], str):
            raise GoldError("getCollection takes one collection name")
        collection = args[0]
    reader.take(".")
    method = reader.take(kind="name")
    args = reader.arguments()
    cursor = []
    while reader.accept("."):
        name = reader.take(kind="name")
        cursor.append((name, reader.arguments()))
    reader.accept(";")
    if reader.peek()[0] != "end":
        raise GoldError(f"unexpected {reader.peek()[1]!r} after the query at character {reader.peek()[2]}")
    if method == "aggregate":
        if len(args) < 1 or not isinstance(args[0], list) or not all(isinstance(s, dict) for s in args[0]):
            raise GoldError("aggregate takes a list of stages")
        pipeline = args[0]
        for name, _ in cursor:
            if name not in ("forEach", "pretty", "toArray"):
                raise GoldError(f"unknown method .{name}() after aggregate")
        counted = bool(pipeline) and "$count" in pipeline[-1]
        return GoldQuery(collection, pipeline, counted)
    if method in ("find", "findOne"):
        filter_ = args[0] if args else {}
        projection = args[1] if len(args) > 1 else None
        if not isinstance(filter_, dict) or not (projection is None or isinstance(projection, dict)):
            raise GoldError("find takes a filter object and a projection object")
        if method == "findOne":
            cursor = [*cursor, ("limit", [1])]
        pipeline, counted = find_pipeline(filter_, projection, cursor)
        return GoldQuery(collection, pipeline, counted)
    if method in ("count", "countDocuments"):
        filter_ = args[0] if args else {}
        return GoldQuery(collection, ([{"$match": filter_}] if filter_ else []) + [{"$count": "count"}], True)
    raise GoldError(f"unknown method db.{collection}.{method}()")


def plain_database(data: dict[str, list[dict[str, Any]]]) -> Any:
    """A mongomock database holding one TEND database's documents, as they are (each gets an `_id`)."""
    import mongomock

    db: Any = mongomock.MongoClient().db  # mongomock is untyped
    for name, docs in data.items():
        if docs:
            db[name].insert_many([dict(d) for d in docs])
    return db


def run_gold(db: Any, gold: GoldQuery) -> list[dict[str, Any]]:
    """The gold query's result documents (a `GoldError` when mongomock cannot run it)."""
    try:
        return _aggregate(db, db[gold.collection].find(), _plain_regexes(gold.pipeline))
    except Exception as exc:  # noqa: BLE001 - mongomock lacks an operator, or the gold is wrong: either way not runnable
        raise GoldError(f"{exc.__class__.__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}") from None


def _aggregate(db: Any, docs: Any, pipeline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`pipeline` over `docs`, with the correlated `$lookup` (`let` + `pipeline`) mongomock lacks run
    here: the stages before it run in mongomock, then each document's variables are bound into the
    sub-pipeline as literals and it runs on the joined collection, then the rest runs on the result."""
    from mongomock.aggregate import process_pipeline

    docs = list(docs)
    for i, stage in enumerate(pipeline):
        lookup = stage.get("$lookup")
        if isinstance(lookup, dict) and "pipeline" in lookup:
            docs = list(process_pipeline(docs, db, pipeline[:i], None)) if i else docs
            for doc in docs:
                bound = {name: _value_at(doc, expr) for name, expr in (lookup.get("let") or {}).items()}
                sub = _bind(lookup["pipeline"], bound)
                joined = db[lookup["from"]].find()
                if "localField" in lookup:  # the concise form with a pipeline: both conditions hold
                    value = _value_at(doc, "$" + lookup["localField"])
                    sub = [
                        {"$match": {lookup["foreignField"]: {"$in": value if isinstance(value, list) else [value]}}},
                        *sub,
                    ]
                doc[lookup["as"]] = _aggregate(db, joined, sub)
            return _aggregate(db, docs, pipeline[i + 1 :])
    return list(process_pipeline(docs, db, pipeline, None)) if pipeline else docs


def _value_at(doc: dict[str, Any], expr: Any) -> Any:
    """A `let` variable's value: a `$path` of the document (arrays along the path collected), or a literal."""
    if not (isinstance(expr, str) and expr.startswith("$")):
        return expr
    values: list[Any] = [doc]
    for part in expr[1:].split("."):
        step = []
        for v in values:
            if isinstance(v, dict) and part in v:
                step.append(v[part])
            elif isinstance(v, list):
                step.extend(x[part] for x in v if isinstance(x, dict) and part in x)
        values = step
    return values[0] if len(values) == 1 else values or None


def _bind(node: Any, bound: dict[str, Any]) -> Any:
    """The sub-pipeline with each `$$name` of `bound` replaced by its value as a literal."""
    if isinstance(node, str) and node.startswith("$$") and node[2:] in bound:
        return {"$literal": bound[node[2:]]}
    if isinstance(node, dict):
        return {k: _bind(v, bound) for k, v in node.items()}
    if isinstance(node, list):
        return [_bind(v, bound) for v in node]
    return node


_FLAGS = {"i": re.I, "m": re.M, "s": re.S, "x": re.X}


def _plain_regexes(node: Any) -> Any:
    """`{$not: {$regex, $options}}`, which mongomock refuses, as the compiled pattern MongoDB also takes."""
    if isinstance(node, dict):
        out = {k: _plain_regexes(v) for k, v in node.items()}
        inner = out.get("$not")
        if isinstance(inner, dict) and set(inner) <= {"$regex", "$options"} and isinstance(inner.get("$regex"), str):
            flags = 0
            for letter in inner.get("$options", ""):
                flags |= _FLAGS.get(letter, 0)
            out["$not"] = re.compile(inner["$regex"], flags)
        return out
    if isinstance(node, list):
        return [_plain_regexes(v) for v in node]
    return node


def shape_of(gold: GoldQuery) -> str:
    """The query shape the report is split by: join ($lookup), nested array ($unwind of an embedded
    array, no $lookup), aggregation ($group, $count, .count()), else filter."""
    stages = {name for stage in gold.pipeline for name in stage}
    if "$lookup" in stages:
        return "join"
    if "$unwind" in stages:
        return "nested array"
    if stages & {"$group", "$count", "$bucket", "$sortByCount"} or gold.counted:
        return "aggregation"
    return "filter"


SHAPES = ("filter", "aggregation", "join", "nested array")

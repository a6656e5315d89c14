"""Code corrects a model's pipeline over a tenant's own collections before it is validated.

A small model writes the names and values it half remembers: `lname` for `Lname`, `FirstName` for
`first_name`, `price` for the `Items.price` it unwound, `docs1.name` for the `Name` of what it joined
as `Docs1`, "30" for a number. Each is mapped to the tenant's spelling or the field's type only when
exactly one reading exists; anything else is left as written, for the validator to report and the
model to correct. A name the pipeline itself made (a `$group` total, a `$project` alias, a join's
`as`) is the pipeline's own and is not respelled after the stage that makes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from context_engine.query.schema import CollectionSchema, FieldInfo

_NUMBERS = frozenset({"int", "long", "double", "decimal"})
# Stages whose plain keys are the names they make.
_MAKERS = ("$group", "$addFields", "$set")
# Comparison operators whose operand is a value of the field compared.
_VALUE_OPS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"})


def own_spelling(
    collection: str, pipeline: list[dict[str, Any]] | None, schemas: dict[str, CollectionSchema]
) -> tuple[str, list[dict[str, Any]] | None]:
    """The collection and pipeline with the tenant's spelling: a collection named otherwise (`named`);
    a field read by the pipeline spelled in another case, without its underscores, in the plural, or
    without the parent array it lies in (`spelled`) - in the pipeline's own collection first (`Lname`
    there, `LName` in a joinable one), else in all; a field of what a `$lookup` joined, in the joined
    collection; a name an earlier stage made, in another case. The names a stage makes are its own."""
    collection = named(collection, schemas)
    if pipeline is None:
        return collection, None
    known = {path: info for sc in schemas.values() for path, info in sc.fields.items()}
    home = schemas[collection].fields if collection in schemas else {}
    made: set[str] = set()
    joins: dict[str, dict[str, FieldInfo]] = {}

    def field(path: str) -> str:
        head, _, rest = path.partition(".")
        if path in known or head in made:
            return path
        if (own := _one(m for m in made if m.lower() == head.lower())) is not None:
            return own + path[len(head) :]  # a name an earlier stage made, in another case
        alias = _one(a for a in joins if a.lower() == head.lower())
        if alias is not None:
            return alias + ("." + (spelled(rest, joins[alias]) or rest) if rest else "")
        # A bare leaf is read in the pipeline's own collection only: in all, it names too much.
        return spelled(path, home) or spelled(path, known, leaf=False) or path

    fixed = []
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1:
            fixed.append(stage)
            continue
        ((name, body),) = stage.items()
        fixed.append({name: _walk(body, name, field, schemas)})
        made |= _made(name, fixed[-1][name])
        join = fixed[-1][name]
        if name == "$lookup" and isinstance(join, dict) and isinstance(join.get("as"), str):
            joined = schemas.get(join.get("from", ""))
            if joined is None or "pipeline" in join:
                made.add(join["as"])  # documents its own pipeline shaped: their fields are its names
            else:
                joins[join["as"]] = joined.fields
    return collection, fixed


def _walk(body: Any, stage: str, field: Callable[[str], str], schemas: dict[str, CollectionSchema]) -> Any:
    """One stage with its field names spelled. A key is spelled only where it names a field the stage
    reads: a top-level key of `$match` (and of its `$and`/`$or`/`$nor` branches), of `$sort`, a
    `$project` inclusion. Any other key is a name the stage makes (a `$group` output, a `$project`
    alias, a `let` variable) or is relative to its parent (in `$elemMatch`), and stays as written;
    every `"$field"` value is a field read."""

    def walk(node: Any, reads: bool) -> Any:
        if isinstance(node, list):
            return [walk(n, False) for n in node]
        if isinstance(node, dict):
            out: dict[str, Any] = {}
            for k, v in node.items():
                if stage == "$lookup" and k in ("localField", "foreignField") and isinstance(v, str):
                    out[k] = field(v)
                elif stage == "$lookup" and k in ("from", "as"):
                    out[k] = named(v, schemas) if k == "from" else v
                elif reads and k in ("$and", "$or", "$nor") and isinstance(v, list):
                    out[k] = [walk(n, True) for n in v]
                elif reads and not k.startswith("$") and k != "_id" and (stage != "$project" or _flag(v)):
                    out[field(k)] = walk(v, False)
                else:
                    out[k] = walk(v, False)
            return out
        if isinstance(node, str) and node.startswith("$") and not node.startswith("$$"):
            return "$" + field(node[1:])
        return node

    if stage == "$count":
        return body
    if stage == "$unwind" and isinstance(body, dict):
        return {k: walk(v, False) if k == "path" else v for k, v in body.items()}
    return walk(body, stage in ("$match", "$sort", "$project"))


def _made(stage: str, body: Any) -> set[str]:
    """The top-level names a stage makes."""
    if stage == "$count" and isinstance(body, str):
        return {body}
    if stage == "$lookup" and isinstance(body, dict) and isinstance(body.get("as"), str):
        return set()  # a join's `as` is read through the joined collection's fields
    if not isinstance(body, dict):
        return set()
    if stage in _MAKERS or stage == "$project":
        return {k.split(".")[0] for k, v in body.items() if not k.startswith("$") and not _flag(v)}
    return set()


def _flag(value: Any) -> bool:
    """A `$project` inclusion or exclusion (1, 0, true, false), not an expression."""
    return type(value) is bool or (type(value) is int and value in (0, 1))


def _squeezed(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _one(options: Any) -> Any:
    found = set(options)
    return next(iter(found)) if len(found) == 1 else None


def spelled(path: str, fields: dict[str, Any], leaf: bool = True) -> str | None:
    """The one field of `fields` that `path` means, or None: the same name in another case, else the
    same letters and digits (`FirstName`, `first_name`), else the same in the singular or plural; with
    `leaf`, a single name may also be the leaf of one nested field (`price` for `Items.price`)."""
    if path in fields:
        return path
    rules: list[Callable[[str], str]] = [str.lower, _squeezed, lambda p: _squeezed(p).removesuffix("s")]
    for rule in rules:
        if found := _one(p for p in fields if rule(p) == rule(path)):
            return found
    if leaf and "." not in path:
        for rule in rules[1:]:
            if found := _one(p for p in fields if rule(p.rpartition(".")[2]) == rule(path)):
                return found
    return None


def named(name: Any, schemas: dict[str, CollectionSchema]) -> Any:
    """The tenant's collection a model's name means: itself, the one so named in another case, or the
    one whose words it is; the name as written when none or several are."""
    if not isinstance(name, str) or name in schemas:
        return name
    options = {n for n in schemas if n.lower() == name.lower()} or {
        n
        for n, sc in schemas.items()
        if sc.kind.pattern() and re.fullmatch(sc.kind.pattern(), name.replace("_", " "), re.I | re.ASCII)
    }
    return next(iter(options)) if len(options) == 1 else name


def typed_literals(pipeline: list[dict[str, Any]] | None, schema: CollectionSchema) -> list[dict[str, Any]] | None:
    """A value compared with a field in the pipeline's first `$match` stages written as the field
    stores it: "30" for a field of numbers is 30, 30 for a field of strings is "30". Later stages may
    compare names the pipeline made, whose type the schema does not know."""
    if pipeline is None:
        return None
    out, leading = [], True
    for stage in pipeline:
        leading = leading and isinstance(stage, dict) and set(stage) <= {"$match", "$unwind"}
        if leading and "$match" in stage:
            stage = {"$match": _typed_query(stage["$match"], schema)}
        out.append(stage)
    return out


def _typed_query(query: Any, schema: CollectionSchema) -> Any:
    if not isinstance(query, dict):
        return query
    out = {}
    for k, v in query.items():
        if k in ("$and", "$or", "$nor") and isinstance(v, list):
            out[k] = [_typed_query(q, schema) for q in v]
        elif k.startswith("$") or k not in schema.fields:
            out[k] = v
        else:
            out[k] = _typed_condition(v, schema.fields[k])
    return out


def _typed_condition(condition: Any, info: FieldInfo) -> Any:
    if isinstance(condition, dict):
        return {op: _typed_condition(v, info) if op in _VALUE_OPS or op == "$not" else v for op, v in condition.items()}
    if isinstance(condition, list):
        return [_typed_value(v, info) for v in condition]
    return _typed_value(condition, info)


def _typed_value(value: Any, info: FieldInfo) -> Any:
    kinds = info.types - {"null"}
    if isinstance(value, str) and kinds and kinds <= _NUMBERS and re.fullmatch(r"-?\d+(?:\.\d+)?", value.strip()):
        number = float(value)
        return int(number) if number.is_integer() and "." not in value else number
    if isinstance(value, (int, float)) and not isinstance(value, bool) and kinds == {"string"}:
        return str(int(value)) if float(value).is_integer() else str(value)
    return value

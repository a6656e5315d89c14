"""The gate every aggregation pipeline passes before it reaches MongoDB.

Pipelines are written by an LLM (untrusted) or the deterministic planner. Everything here is an
allow-list: a stage, operator, value type or key that is not explicitly known is rejected, at any
depth, so nothing can be smuggled inside a value. Errors go back to the model for self-correction,
so each one is a single precise, actionable sentence, and all of them are collected (not just the
first) to save correction rounds. The tenant/ACL `$match` is injected after validation, which is
why hidden fields may never be read, written or even named by the pipeline itself.

Three walkers mirror MongoDB's three languages: the query language (`$match`), aggregation
expressions (`$project`, `$addFields`, `$group` keys, `$expr`) and accumulators (`$group` values).
A `_Scope` tracks which fields exist at each point of the pipeline.

`$lookup` joins another of the tenant's collections, and only when the validator is given the
schemas of the collections the asker can read: its `from` must be one of them, its fields are
checked against that collection's schema, its `pipeline` is walked like a pipeline of its own (one
level deep, `$$` variables only those its `let` defines), and after it the `as` field is an array
of the joined collection's fields. Execution injects the scope into the joined side too.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rapidfuzz import fuzz, process

from context_engine.config import HIDDEN_FIELDS
from context_engine.kinds import RESERVED
from context_engine.query.schema import CollectionSchema
from context_engine.query.topic_words import WORD_ENDINGS, family_roots
from context_engine.store.bounded import compile_re2
from context_engine.store.expressions import INT64_MAX, INT64_MIN, ExpressionError, check_date_format, parse_timezone

STAGES = ("$match", "$sort", "$limit", "$skip", "$count", "$group", "$project", "$unwind", "$addFields")
JOIN = "$lookup"  # allowed only given the tenant's schemas (`validate_pipeline(..., schemas=...)`)
_LOOKUP_KEYS = ("from", "localField", "foreignField", "let", "pipeline", "as")
# MongoDB's rule for user variable names (a lower-case first letter keeps ROOT, CURRENT, NOW out).
_VARIABLE = re.compile(r"[a-z][A-Za-z0-9_]{0,39}")
_STAGE_HINTS = {
    "$set": "use $addFields instead",
    "$unset": "use $project with field: 0 instead",
    "$replaceRoot": "use $project instead",
    "$replaceWith": "use $project instead",
    "$sortByCount": "use $group then $sort instead",
}

COMPARISON_OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
QUERY_LOGICAL = ("$and", "$or", "$nor")
FIELD_OPS = COMPARISON_OPS + ("$in", "$nin", "$all", "$exists", "$size", "$not", "$elemMatch")
REGEX_OPS = ("$regex", "$options")

DATE_OPS = ("$year", "$month", "$week", "$dayOfWeek", "$dayOfMonth", "$dayOfYear", "$hour")
# Expression operator -> (min, max) argument count; max None = variadic. Unary operators also
# accept a bare argument (`{"$size": "$labels"}`), as MongoDB does.
EXPR_ARITY: dict[str, tuple[int, int | None]] = {
    **dict.fromkeys(DATE_OPS + ("$size", "$toLower", "$toUpper", "$strLenCP", "$not"), (1, 1)),
    **dict.fromkeys(COMPARISON_OPS + ("$cmp", "$subtract", "$divide", "$in", "$arrayElemAt"), (2, 2)),
    **dict.fromkeys(("$and", "$or", "$add", "$multiply", "$concat"), (1, None)),
    "$substrCP": (3, 3),
    "$cond": (3, 3),
    "$ifNull": (2, None),
}
EXPR_OPS = tuple(EXPR_ARITY) + ("$literal", "$dateToString")
ACCUMULATORS = ("$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet")
_REGEX_FLAGS = set("ims")  # `x` (extended) is refused: RE2 has no equivalent and it hides a pattern's shape
# Operators that build strings: bounded in operand count and kept out of $push/$addToSet, where one
# small expression repeated over every document could return a result of any size.
_STRING_BUILDERS = ("$concat", "$substrCP", "$toUpper", "$toLower", "$dateToString")


# "Any of these words" as a regular expression, in any case (what a `words` filter compiles to): each word's
# family (`topic_words.roots`: "token" of "tokenizers"... "tokeniz" of "tokenization"; "imag": image, images,
# not imagefolder; "deprec": deprecate, deprecated, deprecation), whole words, Chinese characters anywhere.
# Allowed without `allow_regex`: nothing in it but literal words, one fixed group of endings and word boundaries.
_ASCII_WORD = r"[a-z0-9_]{1,40}(?:-[a-z0-9_]{1,40}){0,3}"  # a hyphen only inside a word: "re-frame"
_WORD_ITEM = r"\\b" + _ASCII_WORD + re.escape(WORD_ENDINGS) + r"\\b|[\u4e00-\u9fff]{1,20}"
_EXACT_WORD_ITEM = r"\\b" + _ASCII_WORD + r"\\b|[\u4e00-\u9fff]{1,20}"
_WORD_PATTERN = re.compile(
    rf"\(\?i\)\(\?:(?:{_WORD_ITEM})(?:\|(?:{_WORD_ITEM})){{0,11}}\)"
    rf"|\(\?i\)\(\?:(?:{_EXACT_WORD_ITEM})(?:\|(?:{_EXACT_WORD_ITEM})){{0,11}}\)"
)


def word_pattern(words: list[str]) -> str:
    """The regular expression of a `words` filter (`ir.WORD` words, lower case): the family of each word."""
    return "(?i)(?:" + "|".join(rf"\b{w}{WORD_ENDINGS}\b" if w.isascii() else w for w in family_roots(words)) + ")"


def exact_word_pattern(words: list[str]) -> str:
    """The regular expression of an `exact_words` filter: each word whole, with no ending."""
    return "(?i)(?:" + "|".join(rf"\b{w}\b" if w.isascii() else w for w in words) + ")"


def is_word_pattern(pattern: str) -> bool:
    """One of the two fixed forms above, of literal words: allowed without `allow_regex`."""
    return bool(_WORD_PATTERN.fullmatch(pattern))


@dataclass(frozen=True)
class ValidationPolicy:
    allow_regex: bool = False
    max_limit: int = 200
    max_skip: int = 10_000
    max_stages: int = 12
    max_depth: int = 10  # JSON nesting depth of the whole pipeline
    max_size: int = 8_000  # characters of json.dumps(pipeline, default=str)
    max_unwinds: int = 2  # each $unwind multiplies the rows: two is enough for "per label per reviewer"
    max_lookups: int = 2  # joins per pipeline: "incidents whose fix PR was reviewed by X" needs one
    max_array: int = 100  # elements of one literal array (an $in list of people, labels, refs)
    max_concat: int = 8  # operands of one $concat
    max_operands: int = 8  # operands of one $add or $multiply
    max_expression_nodes: int = 300  # operators, field paths and constants in all expressions: the work per row
    max_regex: int = 256  # characters of one regular expression
    hidden_fields: frozenset[str] = HIDDEN_FIELDS


class ValidationError(Exception):
    """A rejected pipeline; `errors` holds one actionable sentence per problem."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = list(errors)


def validate_pipeline(
    pipeline: object,
    schema: CollectionSchema | None,
    policy: ValidationPolicy = ValidationPolicy(),
    schemas: dict[str, CollectionSchema] | None = None,
) -> list[str]:
    """Return every problem found (empty list = valid). schema None => skip field-existence checks
    against the collection (hidden-field and operator checks still apply). `schemas`: the tenant's
    collections the asker can read, by name; without them `$lookup` is refused."""
    if not isinstance(pipeline, list):
        return [f"The pipeline must be a JSON array of stage objects; got {type(pipeline).__name__}"]
    if not pipeline:
        return ['The pipeline is empty; it needs at least one stage such as {"$match": {...}}']
    # Caps come first and end the walk: a bomb would otherwise produce pages of noise (or recurse).
    if _depth(pipeline, policy.max_depth) > policy.max_depth:
        return [
            (
                f"The pipeline is nested more than {policy.max_depth} levels deep; flatten it "
                "(e.g. one $in instead of nested $or/$and)"
            )
        ]
    try:
        size = len(json.dumps(pipeline, default=str))
    except (TypeError, ValueError) as exc:
        return [f"The pipeline cannot be serialised to JSON ({exc}); use string keys and JSON values"]
    if size > policy.max_size:
        return [f"The pipeline is too large ({size} characters, limit {policy.max_size}); simplify it"]
    errors = []
    stages = _stage_count(pipeline)
    if stages > policy.max_stages:
        errors.append(
            f"The pipeline has {stages} stages (its $lookup pipelines included); at most "
            f"{policy.max_stages} are allowed"
        )
    walker = _Walker(schema, policy, schemas)
    walker.run(pipeline)
    return errors + walker.errors


def ensure_valid(
    pipeline: Any,
    schema: CollectionSchema | None,
    policy: ValidationPolicy = ValidationPolicy(),
    schemas: dict[str, CollectionSchema] | None = None,
) -> list[dict]:
    """Raise ValidationError if invalid; return the pipeline."""
    errors = validate_pipeline(pipeline, schema, policy, schemas)
    if errors:
        raise ValidationError(errors)
    return pipeline


def _stage_count(pipeline: list) -> int:
    """The stages of a pipeline, those of its `$lookup` pipelines included: every one is work per row."""
    count = len(pipeline)
    for stage in pipeline:
        inner = stage.get(JOIN) if isinstance(stage, dict) else None
        if isinstance(inner, dict) and isinstance(inner.get("pipeline"), list):
            count += len(inner["pipeline"])
    return count


def _short(number: int) -> str:
    """A huge integer named without converting all of it to text (which is quadratic, and capped)."""
    return f"with {number.bit_length()} bits" if number.bit_length() > 64 else str(number)


def _depth(value: Any, limit: int) -> int:
    """JSON nesting depth, iterative and stopping past `limit` (safe on bombs and cycles)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, (list, tuple)) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if level > limit:
            return level
        stack.extend((child, level + 1) for child in children)
    return deepest


def _flag(value: Any) -> int | None:
    """1/0 for a projection flag (True/False/1/0), None for anything else."""
    if type(value) is bool or (type(value) is int and value in (0, 1)):
        return int(value)
    return None


def _blend(query: str, choice: str, **_: Any) -> float:
    # Plain ratio keeps `user.name` close to `user.login`; WRatio rescues partial names (`stat`).
    return (fuzz.ratio(query, choice) + fuzz.WRatio(query, choice)) / 2


def _suggest(path: str, known: list[str]) -> list[str]:
    """Up to three close field names; leaves only, since a comparison targets a value, not an object."""
    leaves = [k for k in known if not any(other.startswith(k + ".") for other in known)]
    return [m[0] for m in process.extract(path, leaves, scorer=_blend, limit=3, score_cutoff=55)]


def _allowed(ops: tuple[str, ...] | list[str]) -> str:
    return "use only " + ", ".join(ops)


@dataclass
class _Scope:
    """The fields a stage may reference. `outputs` None means the collection's own document shape;
    after a reshaping stage it maps each output name to the scope it was copied from (a plain
    `$project` inclusion, so its subfields resolve there) or None (computed: shape unknown)."""

    schema: CollectionSchema | None
    outputs: dict[str, _Scope | None] | None = None
    origin: str = ""  # the reshaping stage, for messages
    closed: set[str] = field(default_factory=set)  # outputs whose subfields are all listed
    added: set[str] = field(default_factory=set)  # $addFields names
    excluded: set[str] = field(default_factory=set)  # exclusion-$project names
    id_legit: bool = False  # `_id` is a $group key, not the document id
    joins: dict[str, _Scope] = field(default_factory=dict)  # $lookup `as` -> the joined documents' scope

    def has(self, path: str) -> bool:
        if any(path == p or path.startswith(p + ".") for p in self.excluded):
            return False
        for name, joined in self.joins.items():
            if path == name:
                return True
            if path.startswith(name + "."):  # `as.x`, `as.0.x`: a field of the joined documents
                rest = ".".join(s for s in path[len(name) + 1 :].split(".") if not s.isdigit())
                return not rest or joined.has(rest)
        if any(path == p or path.startswith(p + ".") or p.startswith(path + ".") for p in self.added):
            return True
        if self.outputs is None:
            # Numeric segments are array positions (`labels.0.name`), not schema fields.
            plain = ".".join(s for s in path.split(".") if not s.isdigit())
            return self.schema is None or self.schema.has_path(plain)
        for name, source in self.outputs.items():
            if path == name or name.startswith(path + "."):
                return True
            if path.startswith(name + ".") and name not in self.closed:
                return source is None or source.has(path)
        return False

    def names(self) -> list[str]:
        known = list(self.outputs) if self.outputs is not None else list(self.schema.fields) if self.schema else []
        return [n for n in known + sorted(self.added) + list(self.joins) if n not in self.excluded]

    def add(self, name: str) -> None:
        self.added.add(name)
        self.excluded = {p for p in self.excluded if p != name and not p.startswith(name + ".")}

    def join(self, name: str, joined: _Scope) -> None:
        self.joins[name] = joined
        self.excluded = {p for p in self.excluded if p != name and not p.startswith(name + ".")}

    def exclude(self, name: str) -> None:
        self.excluded.add(name)
        self.added = {p for p in self.added if p != name and not p.startswith(name + ".")}


class _Walker:
    def __init__(
        self,
        schema: CollectionSchema | None,
        policy: ValidationPolicy,
        schemas: dict[str, CollectionSchema] | None = None,
    ):
        self.schema, self.policy = schema, policy
        # The collections a $lookup may join: the tenant's readable ones, never an engine collection.
        self.joinable = None if schemas is None else {n: s for n, s in schemas.items() if n not in RESERVED}
        self.stages = STAGES + ((JOIN,) if self.joinable is not None else ())
        self.scope = _Scope(schema)
        self.errors: list[str] = []
        self.where = ""
        self.has_text = False
        self.variables: set[str] | None = None  # inside a $lookup pipeline: the names its `let` defines
        self.lookups = 0
        self.unwinds = 0
        self.in_collector = ""  # the $push/$addToSet output being walked, if any
        self.expression_nodes = 0
        self.query_ops = FIELD_OPS + QUERY_LOGICAL + ("$text", "$expr") + (REGEX_OPS if policy.allow_regex else ())

    def error(self, message: str) -> None:
        full = f"{self.where}: {message}" if self.where else message
        if full not in self.errors:
            self.errors.append(full)

    # -- stages ---------------------------------------------------------------------------------

    def run(self, pipeline: list, outer: str = "") -> None:
        """Walk the stages; `outer` names the $lookup whose pipeline this is, for messages."""
        label = f"{outer}, its pipeline's stage" if outer else "Stage"
        for index, stage in enumerate(pipeline):
            self.where = f"{label} {index + 1}"
            if not isinstance(stage, dict) or len(stage) != 1:
                got = f"keys {', '.join(map(str, stage))}" if isinstance(stage, dict) else type(stage).__name__
                self.error(
                    f"each stage must be an object with exactly one key (the stage name); got {got}"
                    " - split it into separate stages"
                )
                continue
            ((name, spec),) = stage.items()
            if name not in self.stages:
                hint = f" ({_STAGE_HINTS[name]})" if name in _STAGE_HINTS else ""
                self.where = outer  # the stage name says where; "Stage 2: Stage $out" would stutter
                self.error(f"Stage {name} is not allowed{hint}; {_allowed(self.stages)}")
                continue
            self.where = f"{label} {index + 1} ({name})"
            getattr(self, "stage_" + name[1:].lower())(spec, index)

    def stage_match(self, spec: Any, index: int) -> None:
        # $text is only legal in the first stage (MongoDB's rule), and never in a join's pipeline.
        self.query(spec, top=index == 0 and self.variables is None)

    def stage_sort(self, spec: Any, index: int) -> None:
        if not isinstance(spec, dict) or not spec:
            return self.error('$sort needs a non-empty object like {"created_at": -1}')
        for key, direction in spec.items():
            if direction == {"$meta": "textScore"}:
                if not self.has_text:
                    self.error('sorting by {"$meta": "textScore"} needs a $text match in the first stage')
                self.name(key, dots=False, what="sort key")  # a score's name need not exist
                continue
            self.field(key)
            if type(direction) is not int or direction not in (1, -1):
                self.error(f"sort direction for '{key}' must be 1 or -1; got {direction!r}")

    def stage_limit(self, spec: Any, index: int) -> None:
        if type(spec) is not int or not 1 <= spec <= self.policy.max_limit:  # bool is not a limit
            self.error(f"$limit must be an integer between 1 and {self.policy.max_limit}; got {spec!r}")

    def stage_skip(self, spec: Any, index: int) -> None:
        if type(spec) is not int or not 0 <= spec <= self.policy.max_skip:
            self.error(f"$skip must be an integer between 0 and {self.policy.max_skip}; got {spec!r}")

    def stage_count(self, spec: Any, index: int) -> None:
        if self.name(spec, dots=False, what="$count output name"):
            self.scope = _Scope(self.schema, outputs={spec: None}, origin="$count")

    def stage_group(self, spec: Any, index: int) -> None:
        if not isinstance(spec, dict):
            return self.error('$group needs an object like {"_id": "$state", "n": {"$sum": 1}}')
        if "_id" not in spec:
            self.error("$group needs an _id (use null to group all documents together)")
        group_id = spec.get("_id")
        self.expr(group_id)
        outputs: dict[str, _Scope | None] = {"_id": None}
        closed = set()
        if isinstance(group_id, dict) and not any(str(k).startswith("$") for k in group_id):
            closed.add("_id")  # a compound key: exactly its listed subfields exist
            outputs.update({f"_id.{k}": None for k in group_id if isinstance(k, str)})
        for key, value in spec.items():
            if key == "_id":
                continue
            if self.name(key, dots=False, what="$group output name"):
                outputs[key] = None
            self.accumulator(value, key)
        self.scope = _Scope(self.schema, outputs=outputs, origin="$group", closed=closed, id_legit=True)

    def stage_project(self, spec: Any, index: int) -> None:
        if not isinstance(spec, dict) or not spec:
            return self.error('$project needs a non-empty object like {"title": 1, "_id": 0}')
        include: dict[str, _Scope | None] = {}
        exclude: list[str] = []
        drop_id = False
        for key, value in spec.items():
            flag = _flag(value)
            if key == "_id" and flag == 0:
                drop_id = True  # dropping the document id is always fine, even though `_id` is hidden
            elif flag == 1:
                if self.field(key):
                    include[key] = self.scope
            elif flag == 0:
                if self.field(key):
                    exclude.append(key)
            elif type(value) in (int, float):
                self.error(f"projection of '{key}' must be 1, 0 or an expression; got {value!r}")
            else:
                self.expr(value)
                if self.name(key, dots=True, what="$project output name"):
                    include[key] = None
        if include and exclude:
            self.error(
                f"$project cannot mix inclusion and exclusion (excluded: {', '.join(exclude)}); "
                "only _id: 0 may be combined with included fields"
            )
        if include:
            if self.scope.id_legit and not drop_id:
                include.setdefault("_id", self.scope)
            self.scope = _Scope(
                self.schema, outputs=include, origin="$project", id_legit=self.scope.id_legit and not drop_id
            )
            return
        for name in exclude + (["_id"] if drop_id else []):
            self.scope.exclude(name)

    def stage_addfields(self, spec: Any, index: int) -> None:
        if not isinstance(spec, dict) or not spec:
            return self.error('$addFields needs a non-empty object like {"n_labels": {"$size": "$labels"}}')
        names = []
        for key, value in spec.items():
            self.expr(value)  # evaluated against the incoming document, before any new name exists
            if self.name(key, dots=True, what="$addFields output name"):
                names.append(key)
        for name in names:
            self.scope.add(name)

    def stage_unwind(self, spec: Any, index: int) -> None:
        if isinstance(spec, dict):
            extra = [str(k) for k in spec if k not in ("path", "preserveNullAndEmptyArrays")]
            if extra:
                self.error(
                    f"$unwind option(s) {', '.join(extra)} not allowed; use only path, preserveNullAndEmptyArrays"
                )
            if "preserveNullAndEmptyArrays" in spec and type(spec["preserveNullAndEmptyArrays"]) is not bool:
                self.error("$unwind preserveNullAndEmptyArrays must be true or false")
            spec = spec.get("path")
        if not isinstance(spec, str) or not spec.startswith("$") or spec.startswith("$$"):
            return self.error(f'$unwind needs a field path like "$labels"; got {spec!r}')
        self.unwinds += 1
        if self.unwinds == self.policy.max_unwinds + 1:
            self.error(f"at most {self.policy.max_unwinds} $unwind stages are allowed; filter before unwinding")
        path = spec[1:]
        if not self.field(path):
            return
        joined = self.scope.joins.get(path.split(".")[0])
        if joined is not None and "." not in path:
            return  # a $lookup's documents: as many as the join's cap on each row at most
        if joined is not None:
            rest = path.split(".", 1)[1]
            if joined.outputs is not None or joined.schema is None or not joined.schema.is_array(rest):
                self.error(
                    f"$unwind of '{path}': only the joined array itself or an array field stored in the "
                    "joined records can be unwound"
                )
            return
        # Only an array the records store can be unwound: a computed or literal array could be any size.
        computed = self.scope.outputs is not None or any(
            path == p or path.startswith(p + ".") for p in self.scope.added
        )
        if computed:
            self.error(
                f"$unwind of '{path}': only an array field stored in the records can be unwound, "
                "not one computed by an earlier stage"
            )
        elif self.schema is not None:
            info = self.schema.fields.get(".".join(seg for seg in path.split(".") if not seg.isdigit()))
            if info is None or not info.in_array:
                self.error(f"$unwind of '{path}': it is not an array field of {self.schema.name}")

    def stage_lookup(self, spec: Any, index: int) -> None:
        if self.variables is not None:
            return self.error(
                "a $lookup inside a $lookup's pipeline is not allowed: one level of join is "
                "enough; join from the outer pipeline instead"
            )
        if not isinstance(spec, dict):
            return self.error(
                '$lookup needs an object like {"from": "pull_requests", "localField": "pr", '
                '"foreignField": "ref", "as": "fix_pr"}'
            )
        extra = [str(k) for k in spec if k not in _LOOKUP_KEYS]
        if extra:
            self.error(f"$lookup option(s) {', '.join(extra)} not allowed; use only {', '.join(_LOOKUP_KEYS)}")
        self.lookups += 1
        if self.lookups == self.policy.max_lookups + 1:
            self.error(f"at most {self.policy.max_lookups} $lookup stages are allowed in a pipeline")
        joined = self.joined_schema(spec.get("from"))
        if ("localField" in spec) != ("foreignField" in spec):
            self.error("$lookup needs localField and foreignField together (or neither, with a pipeline)")
        elif "localField" not in spec and "pipeline" not in spec:
            self.error("$lookup needs localField and foreignField, or a pipeline (or both)")
        if "localField" in spec:
            self.field(spec["localField"])  # a field of the documents flowing in
        variables = self.let(spec.get("let", {}))
        outer, where = (self.schema, self.scope, self.has_text), self.where
        self.schema, self.scope, self.has_text = joined, _Scope(joined), False
        try:
            if "foreignField" in spec:
                self.field(spec["foreignField"])  # a field of the joined collection
            if "pipeline" in spec:
                if isinstance(spec["pipeline"], list):
                    self.variables = variables
                    self.run(spec["pipeline"], outer=where)
                else:
                    self.error('$lookup pipeline must be an array of stages, e.g. [{"$match": {"state": "open"}}]')
            joined_scope = self.scope
        finally:
            (self.schema, self.scope, self.has_text), self.where, self.variables = outer, where, None
        name = spec.get("as")
        if "as" not in spec:
            self.error('$lookup needs "as": the name of the new array field that holds the joined documents')
        elif self.name(name, dots=False, what="$lookup as"):
            if self.schema is not None and self.scope.has(name):
                self.error(f"$lookup as '{name}' is already a field; choose a new name")
            else:
                self.scope.join(name, joined_scope)

    def joined_schema(self, name: Any) -> CollectionSchema | None:
        """The schema of the collection a $lookup reads, or None (with an error) when it may not."""
        allowed = sorted(self.joinable or {})
        if not isinstance(name, str) or name not in allowed:
            self.error(
                f"$lookup from {name!r} is not allowed; join one of the collections you can read: "
                + (", ".join(allowed) or "none")
            )
            return None
        return self.joinable[name]  # type: ignore[index]

    def let(self, spec: Any) -> set[str]:
        """A $lookup's `let`: names for values of the incoming document, which its pipeline reads as `$$name`."""
        if not isinstance(spec, dict):
            self.error('$lookup let must be an object like {"pr": "$pr"}')
            return set()
        names = set()
        for name, value in spec.items():
            if isinstance(name, str) and _VARIABLE.fullmatch(name):
                names.add(name)
            else:
                self.error(
                    f"$lookup let variable {name!r} must begin with a lower-case letter and hold only "
                    "letters, digits and _ (at most 40)"
                )
            self.expr(value)  # evaluated on the incoming document
        return names

    # -- names and fields -----------------------------------------------------------------------

    def hidden_segment(self, path: str) -> str | None:
        for position, segment in enumerate(path.split(".")):
            if segment in self.policy.hidden_fields:
                if segment == "_id" and position == 0 and self.scope.id_legit:
                    continue  # after $group, `_id` is the group key
                return segment
        return None

    def path_ok(self, path: Any, what: str) -> bool:
        if not isinstance(path, str):
            self.error(f"{what} must be a string; got {path!r}")
        elif not path or "\x00" in path or any(not s or s.startswith("$") for s in path.split(".")):
            self.error(f"invalid {what} {path!r}: use a plain dotted path without '$', NUL or empty parts")
        elif segment := self.hidden_segment(path):
            self.error(
                f"Field '{path}' uses the hidden field '{segment}', which cannot be read or written; "
                "tenant and access filters are applied automatically"
            )
        else:
            return True
        return False

    def name(self, name: Any, dots: bool, what: str) -> bool:
        """An output name a stage creates: a valid path (or single segment) that is not hidden."""
        if not self.path_ok(name, what):
            return False
        if not dots and "." in name:
            self.error(f"{what} '{name}' must not contain '.'")
            return False
        return True

    def field(self, path: Any) -> bool:
        """A reference to an existing field: valid, not hidden, and present in the current scope."""
        if not self.path_ok(path, "field name"):
            return False
        if self.scope.has(path):
            return True
        if any(path == p or path.startswith(p + ".") for p in self.scope.excluded):
            self.error(f"Field '{path}' was removed by an earlier $project")
            return False
        known = self.scope.names()
        joined = self.scope.joins.get(path.split(".")[0])
        if joined is not None:
            self.error(
                f"Field '{path}' is not in the documents $lookup joined as '{path.split('.')[0]}'; their "
                "fields: " + ", ".join(joined.names())
            )
            return False
        if self.scope.outputs is not None:
            self.error(
                f"Field '{path}' is not available after {self.scope.origin}; available fields: " + ", ".join(known)
            )
            return False
        message = f"Field '{path}' does not exist in {self.schema.name}"  # type: ignore[union-attr]
        if matches := _suggest(path, known):
            message += "; did you mean " + " or ".join(f"'{m}'" for m in matches) + "?"
        self.error(message)
        return False

    # -- query language ($match) ----------------------------------------------------------------

    def query(self, doc: Any, base: str = "", top: bool = False) -> None:
        if not isinstance(doc, dict):
            return self.error(f'a query filter must be an object like {{"state": "open"}}; got {doc!r}')
        for key, value in doc.items():
            if isinstance(key, str) and key.startswith("$"):
                self.query_operator(key, value, base, top)
                continue
            path = f"{base}.{key}" if base and isinstance(key, str) else key
            self.field(path)
            self.condition(value, path)  # walked even for a bad field, so smuggled operators surface

    def query_operator(self, op: str, value: Any, base: str, top: bool) -> None:
        if op in QUERY_LOGICAL:
            if not isinstance(value, list) or not value:
                return self.error(f"{op} needs a non-empty array of filter objects")
            for item in value:
                self.query(item, base)  # never `top`: $text may not hide inside a branch
        elif op == "$expr":
            if base:
                return self.error("$expr cannot be used inside $elemMatch; use query operators on the element")
            self.expr(value)
        elif op == "$text":
            self.text(value, top)
        elif op in FIELD_OPS or op in REGEX_OPS:
            self.error(f'{op} must be applied to a field, e.g. {{"number": {{"{op}": ...}}}}')
        else:
            self.error(f"Query operator {op} is not allowed; {_allowed(self.query_ops)}")

    def text(self, value: Any, top: bool) -> None:
        if not top:
            self.error(
                "$text is only allowed at the top level of the first $match stage "
                "(not inside $or/$and/$nor, $elemMatch or a later stage)"
            )
        elif self.schema is not None and not self.schema.text_index:
            self.error(f"$text is not available: {self.schema.name} has no full-text index; filter on fields")
        if not isinstance(value, dict) or not isinstance(value.get("$search"), str) or not value["$search"].strip():
            return self.error('$text must look like {"$search": "some words"}')
        self.literal(value["$search"], "$text")  # so the hidden-name check sees the search string too
        extra = [str(k) for k in value if k not in ("$search", "$language")]
        if extra:
            self.error(f"$text option(s) {', '.join(extra)} not allowed; use only $search, $language")
        if "$language" in value and not isinstance(value["$language"], str):
            self.error("$text $language must be a string")
        self.has_text = self.has_text or top

    def condition(self, value: Any, path: Any) -> None:
        """The value of a field in a filter: an operator object or a literal to compare with."""
        if isinstance(value, dict) and any(isinstance(k, str) and k.startswith("$") for k in value):
            if not all(isinstance(k, str) and k.startswith("$") for k in value):
                self.error(f"the condition on '{path}' mixes operators and plain keys; use one or the other")
            if "$options" in value and "$regex" not in value:
                self.error(f"$options on '{path}' is only valid together with $regex")
            for op, arg in value.items():
                if isinstance(op, str) and op.startswith("$"):
                    self.field_operator(op, arg, path)
        else:
            self.literal(value, f"the value of '{path}'")

    def field_operator(self, op: str, arg: Any, path: Any) -> None:
        if op in COMPARISON_OPS:
            self.literal(arg, f"{op} on '{path}'")
        elif op in ("$in", "$nin", "$all"):
            if not isinstance(arg, list):
                return self.error(f"{op} on '{path}' needs an array of values")
            if len(arg) > self.policy.max_array:
                return self.error(
                    f"{op} on '{path}' has {len(arg)} values; at most {self.policy.max_array} are allowed"
                )
            for item in arg:
                self.literal(item, f"{op} on '{path}'")
        elif op == "$exists":
            if type(arg) is not bool:
                self.error(f"$exists on '{path}' needs true or false")
        elif op == "$size":
            if type(arg) is not int or arg < 0:
                self.error(f"$size on '{path}' needs a non-negative integer (use $expr for ranges)")
        elif op == "$not":
            if isinstance(arg, dict) and arg and all(isinstance(k, str) and k.startswith("$") for k in arg):
                self.condition(arg, path)
            elif isinstance(arg, re.Pattern):
                self.regex(arg, f"on '{path}'")
            else:
                self.error(f'$not on \'{path}\' needs an operator object, e.g. {{"$not": {{"$in": [...]}}}}')
        elif op == "$elemMatch":
            self.elem_match(arg, path)
        elif op == "$regex":
            self.regex(arg, f"on '{path}'")
        elif op == "$options":
            if not isinstance(arg, str) or not set(arg) <= _REGEX_FLAGS:
                self.error(f"$options on '{path}' must be a string of the flags i, m, s")
        else:
            self.error(f"Query operator {op} is not allowed on '{path}'; {_allowed(self.query_ops)}")

    def elem_match(self, arg: Any, path: Any) -> None:
        if not isinstance(arg, dict) or not arg:
            return self.error(f"$elemMatch on '{path}' needs a non-empty object")
        for key, value in arg.items():
            if isinstance(key, str) and key.startswith("$"):
                if key in FIELD_OPS or key in REGEX_OPS:
                    self.field_operator(key, value, path)  # a condition on the element itself
                else:
                    self.query_operator(key, value, str(path), top=False)
                continue
            sub = f"{path}.{key}" if isinstance(key, str) else key  # keys are relative to the element
            self.field(sub)
            self.condition(value, sub)

    def regex(self, arg: Any, where: str) -> None:
        if not self.policy.allow_regex and isinstance(arg, str) and is_word_pattern(arg):
            return  # any of a few literal words, the compiled form of a `words` filter: linear in the text
        if not self.policy.allow_regex:
            return self.error(
                f"regular expressions are not allowed ({where}); match exact values with $eq/$in, or words with $text"
            )
        pattern = arg.pattern if isinstance(arg, re.Pattern) else arg
        if isinstance(arg, re.Pattern) and arg.flags & ~(re.I | re.M | re.S | re.U):
            return self.error(f"the regular expression {where} may use only the flags i, m, s")
        if not isinstance(pattern, str):
            return self.error(f"$regex {where} must be a string")
        if len(pattern) > self.policy.max_regex:
            return self.error(
                f"the regular expression {where} is {len(pattern)} characters; at most "
                f"{self.policy.max_regex} are allowed"
            )
        try:
            compile_re2(pattern)  # what the store will run: RE2 refuses backreferences and lookaround
        except ValueError as exc:
            self.error(f"invalid regular expression {where} (RE2 syntax, no backreferences or lookaround): {exc}")

    def literal(self, value: Any, what: str) -> None:
        """A plain value: scalars, dates, arrays and operator-free objects only."""
        if type(value) is int and not INT64_MIN <= value <= INT64_MAX:
            return self.error(
                f"the number {_short(value)} in {what} does not fit a 64-bit integer, as MongoDB "
                "stores numbers; use a smaller one"
            )
        if type(value) is float and not math.isfinite(value):
            return self.error(f"the number {value} in {what} is not finite; use a finite number")
        if value is None or type(value) in (bool, int, float) or isinstance(value, datetime):
            return
        if type(value) is str:  # exact type: a str subclass (e.g. bson Code) is not a plain string
            if value.startswith("$") and (segment := self.hidden_segment(value.lstrip("$"))):
                self.error(f"'{value}' in {what} names the hidden field '{segment}', which cannot be used")
        elif isinstance(value, re.Pattern):
            self.regex(value, f"in {what}")
        elif isinstance(value, list):
            if len(value) > self.policy.max_array:
                return self.error(
                    f"an array of {len(value)} values in {what}; at most {self.policy.max_array} are allowed"
                )
            for item in value:
                self.literal(item, what)
        elif isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str) or not key or key.startswith("$") or "\x00" in key:
                    self.error(
                        f"key {key!r} is not allowed inside a literal value ({what}); "
                        f'operators go directly on a field, e.g. {{"number": {{"$gt": 5}}}}'
                    )
                self.literal(item, what)
        else:
            self.error(
                f"unsupported value type {type(value).__name__} in {what}; use strings, numbers, "
                "booleans, null, dates, arrays or objects"
            )

    # -- aggregation expressions and accumulators -----------------------------------------------

    def expr(self, value: Any) -> None:
        self.expression_nodes += 1
        if self.expression_nodes == self.policy.max_expression_nodes + 1:
            self.error(
                f"the expressions have more than {self.policy.max_expression_nodes} parts in all; "
                "compute less per row (or filter first and compute fewer values)"
            )
        if type(value) is str:
            if value.startswith("$$"):
                self.variable(value)
            elif value.startswith("$"):
                self.field(value[1:])
        elif isinstance(value, list):
            if len(value) > self.policy.max_array:
                return self.error(f"an array of {len(value)} expressions; at most {self.policy.max_array} are allowed")
            for item in value:
                self.expr(item)
        elif isinstance(value, dict):
            ops = [k for k in value if isinstance(k, str) and k.startswith("$")]
            if ops and len(value) != 1:
                self.error(f"an expression object must hold exactly one operator; got {', '.join(map(str, value))}")
            for key, item in value.items():
                if key in ops:
                    self.operator(key, item)
                else:  # an object expression: output names mapping to expressions
                    self.name(key, dots=False, what="expression object key")
                    self.expr(item)
        else:
            self.literal(value, "an expression")  # scalars and dates pass; anything exotic is rejected

    def variable(self, value: str) -> None:
        """`$$name[.path]`: only a `let` variable, inside the pipeline of the $lookup that defines it."""
        name, _, rest = value[2:].partition(".")
        if self.variables is None:
            self.error(f"variable '{value}' is not allowed; refer to fields as '$field.path'")
        elif name not in self.variables:
            defined = ", ".join(f"$${v}" for v in sorted(self.variables)) or "none"
            self.error(
                f"variable '{value}' is not defined; a $lookup pipeline may read only its let variables ({defined})"
            )
        elif rest:
            self.path_ok(rest, f"path of '{value}'")

    def operator(self, op: str, arg: Any) -> None:
        if op == "$literal":
            return self.literal(arg, "$literal")
        if op == "$dateToString":
            return self.date_to_string(arg)
        if op not in EXPR_ARITY:
            return self.error(f"Expression operator {op} is not allowed; {_allowed(EXPR_OPS)}")
        if op in _STRING_BUILDERS and self.in_collector:
            return self.error(
                f"{op} cannot be used inside '{self.in_collector}' ($push/$addToSet collect "
                "stored values only); collect the fields and combine them afterwards"
            )
        if op == "$concat" and isinstance(arg, list) and len(arg) > self.policy.max_concat:
            return self.error(f"$concat takes at most {self.policy.max_concat} operands; got {len(arg)}")
        if op in ("$add", "$multiply") and isinstance(arg, list) and len(arg) > self.policy.max_operands:
            return self.error(f"{op} takes at most {self.policy.max_operands} operands; got {len(arg)}")
        if op == "$strLenCP":
            self.text_field(arg)
        low, high = EXPR_ARITY[op]
        if op in DATE_OPS and isinstance(arg, dict) and "date" in arg:
            self.timezone(op, arg)
            return self.keyed(op, arg, required=("date",), optional=("timezone",))
        if op == "$cond" and isinstance(arg, dict):
            return self.keyed(op, arg, required=("if", "then", "else"), optional=())
        if not isinstance(arg, list):
            if high == 1:
                return self.expr(arg)
            self.error(f"{op} needs an array of arguments")
            return self.expr(arg)
        if len(arg) < low or (high is not None and len(arg) > high):
            count = str(low) if low == high else f"at least {low}"
            self.error(f"{op} takes {count} argument(s); got {len(arg)}")
        for item in arg:
            self.expr(item)

    def text_field(self, arg: Any) -> None:
        """`$strLenCP` measures a stored text ("messages over 1000 characters"): a field of the collection
        (alone or in `$ifNull`) must be one of strings, not an array, a number or a date, which the
        operator would fail on at run time, row after row."""
        if isinstance(arg, list) and len(arg) == 1:
            arg = arg[0]
        if isinstance(arg, dict) and isinstance(arg.get("$ifNull"), list) and arg["$ifNull"]:
            arg = arg["$ifNull"][0]
        if not (isinstance(arg, str) and arg.startswith("$") and not arg.startswith("$$")):
            return
        path = arg[1:]
        if self.schema is None or self.scope.outputs is not None or path in self.scope.added:
            return  # a computed value: its type is not known here
        info = self.schema.fields.get(path)
        if info is not None and ("string" not in info.types or self.schema.is_array(path)):
            self.error(f"$strLenCP measures a text field; '{path}' is not one ({'|'.join(sorted(info.types))})")

    def date_to_string(self, arg: Any) -> None:
        if self.in_collector:
            return self.error(
                f"$dateToString cannot be used inside '{self.in_collector}' ($push/$addToSet "
                "collect stored values only)"
            )
        if not isinstance(arg, dict) or not isinstance(arg.get("format"), str):
            return self.error('$dateToString needs {"format": "%Y-%m", "date": "$created_at"}')
        try:
            check_date_format(arg["format"])
        except ExpressionError as exc:
            self.error(str(exc))
        self.timezone("$dateToString", arg)
        self.keyed("$dateToString", arg, required=("format", "date"), optional=("timezone",))

    def timezone(self, op: str, arg: dict) -> None:
        """A `timezone` must be a literal both stores read alike: an IANA name or a UTC offset."""
        if "timezone" not in arg:
            return
        zone = arg["timezone"]
        if type(zone) is not str or zone.startswith("$"):
            return self.error(f"{op} timezone must be a literal string such as 'Europe/Berlin' or '+05:30'")
        try:
            parse_timezone(zone)
        except ExpressionError as exc:
            self.error(f"{op}: {exc}")

    def keyed(self, op: str, arg: dict, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
        """An operator taking named arguments: exactly the known names, each an expression."""
        missing = [k for k in required if k not in arg]
        extra = [str(k) for k in arg if k not in required + optional]
        if missing or extra:
            self.error(
                f"{op} takes {', '.join(required + optional)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; unknown {', '.join(extra)}" if extra else "")
            )
        for key, item in arg.items():
            if key in required + optional:
                self.expr(item)

    def accumulator(self, value: Any, name: Any) -> None:
        if not isinstance(value, dict) or len(value) != 1:
            return self.error(f"$group output '{name}' must be one accumulator object like {{\"$sum\": 1}}")
        ((op, arg),) = value.items()
        if op not in ACCUMULATORS:
            return self.error(f"Accumulator {op} is not allowed (in '{name}'); {_allowed(ACCUMULATORS)}")
        self.in_collector = f"{op} of {name}" if op in ("$push", "$addToSet") else ""
        try:
            self.expr(arg)
        finally:
            self.in_collector = ""

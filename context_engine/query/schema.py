"""Schema discovery: what fields a collection has, found by sampling its documents.

Nested fields become dotted paths (`user.login`, `labels.name`); arrays of objects are walked so
`labels.name` exists as a path whose values sit inside an array. Enumerations are inferred
procedurally: few distinct short tokens with enough support, never free text, URLs or paths.
Hidden fields (tenant, access list, `_id`) are never recorded, so nothing downstream can see them.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from context_engine.config import HIDDEN_FIELDS
from context_engine.kinds import BUILTIN, CollectionSpec

SAMPLE_SIZE = 400
MAX_ENUM_VALUES = 50
MAX_ENUM_VALUE_LENGTH = 40

_PROMPT_NOISE = re.compile(r"(_url|\.url|node_id|gravatar_id|avatar|\.id)$")
# Identifiers and colours repeat like enums but name nothing a question would say.
_OPAQUE_PATH = re.compile(r"(node_id|color|sha|_id)$")
_NOT_ENUM = re.compile(r"://|^/|/.*/|[@\\]|^\d+$|\s{2,}")  # "acme/web" is a value; a path is not


@dataclass
class FieldInfo:
    path: str
    types: set[str] = field(default_factory=set)
    in_array: bool = False
    count: int = 0
    enum: list[Any] | None = None
    examples: list[Any] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "types": sorted(self.types), "count": self.count}
        if self.in_array:
            data["in_array"] = True
        if self.enum is not None:
            data["enum"] = self.enum
        if self.examples:
            data["examples"] = self.examples
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FieldInfo:
        return cls(
            path=data["path"],
            types=set(data["types"]),
            in_array=data.get("in_array", False),
            count=data.get("count", 0),
            enum=data.get("enum"),
            examples=data.get("examples", []),
        )


@dataclass
class CollectionSchema:
    name: str
    fields: dict[str, FieldInfo] = field(default_factory=dict)
    indexes: list[dict[str, Any]] = field(default_factory=list)
    text_fields: list[str] = field(default_factory=list)
    sampled: int = 0
    total: int = 0
    own_kind: CollectionSpec | None = None  # a tenant's own kind; None for a built-in one

    @property
    def kind(self) -> CollectionSpec:
        """What the engine knows of this collection's kind (`kinds`): its own spec, the built-in one,
        or for a collection nobody described (a test's), a spec with its name alone."""
        return self.own_kind or BUILTIN.get(self.name) or CollectionSpec(self.name, noun=self.name)

    @property
    def text_index(self) -> bool:
        return bool(self.text_fields)

    def has_path(self, path: str) -> bool:
        """True for a discovered field or an object prefix of one (`user` for `user.login`)."""
        if path in self.fields:
            return True
        prefix = path + "."
        return any(p.startswith(prefix) for p in self.fields)

    def is_date(self, path: str) -> bool:
        info = self.fields.get(path)
        return info is not None and "date" in info.types

    def holds_whole_numbers(self, path: str) -> bool:
        """Every value seen is a whole number (a count: `comments`, `reply_count`), so "> 20" is ">= 21"."""
        info = self.fields.get(path)
        return info is not None and bool(info.types - {"null"}) and info.types - {"null"} <= {"int", "long"}

    def is_array(self, path: str) -> bool:
        info = self.fields.get(path)
        return info is not None and (info.in_array or "array" in info.types)

    def date_fields(self) -> list[str]:
        return [p for p, f in self.fields.items() if "date" in f.types]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sampled": self.sampled,
            "total": self.total,
            "text_fields": self.text_fields,
            "indexes": self.indexes,
            "fields": [f.to_json() for f in self.fields.values()],
            **({"kind": self.own_kind.to_json()} if self.own_kind else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CollectionSchema:
        infos = [FieldInfo.from_json(f) for f in data["fields"]]
        return cls(
            name=data["name"],
            fields={f.path: f for f in infos},
            indexes=data.get("indexes", []),
            text_fields=data.get("text_fields", []),
            sampled=data.get("sampled", 0),
            total=data.get("total", 0),
            own_kind=CollectionSpec.from_json(data["kind"]) if data.get("kind") else None,
        )

    def describe(self, max_enum: int = 12, for_prompt: bool = False) -> str:
        """One line per field. `for_prompt` leaves out what a model cannot query usefully: API URLs,
        node ids and bare objects whose subfields are listed anyway."""
        lines = [f"collection {self.name} ({self.total} documents)"]
        for info in self.fields.values():
            if for_prompt and (
                (_PROMPT_NOISE.search(info.path) and info.path not in ("html_url", "url", "permalink"))
                or ("object" in info.types and len(info.types) <= 2)
            ):
                continue
            kind = "|".join(sorted(info.types - {"null"}) if for_prompt else sorted(info.types)) or "null"
            extra = " (in array)" if info.in_array else ""
            if info.enum:
                shown = ", ".join(repr(v) for v in info.enum[:max_enum])
                extra += f" one of: {shown}" + (" ..." if len(info.enum) > max_enum else "")
            lines.append(f"  {info.path}: {kind}{extra}")
        if self.text_fields:
            lines.append(f"  full-text ($text) over: {', '.join(self.text_fields)}")
        return "\n".join(lines)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, datetime):
        return "date"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _walk(value: Any, path: str, in_array: bool, out: list[tuple[str, Any, bool]]) -> None:
    if isinstance(value, dict):
        if path:
            out.append((path, value, in_array))
        for key, sub in value.items():
            if not path and key in HIDDEN_FIELDS:
                continue
            if key.startswith("$") or "." in key:
                continue  # not addressable by a dotted path
            _walk(sub, f"{path}.{key}" if path else key, in_array, out)
    elif isinstance(value, (list, tuple)):
        out.append((path, value, in_array))
        for item in value:
            if isinstance(item, (dict, list, tuple)):
                _walk(item, path, True, out)
            else:
                out.append((path, item, True))
    else:
        out.append((path, value, in_array))


def _looks_enum(values: Counter, present: int) -> bool:
    distinct = len(values)
    if distinct == 0 or distinct > MAX_ENUM_VALUES or present < 5:
        return False
    if not all(isinstance(v, str) for v in values):
        return False
    if any(len(v) > MAX_ENUM_VALUE_LENGTH or len(v.split()) > 4 or _NOT_ENUM.search(v) for v in values):
        return False
    # Enough support: values repeat (a unique-per-document field is an identifier, not an enum).
    return distinct <= max(3, present // 2)


def _names_values(values: Counter) -> bool:
    """Short strings, few enough to list: the values of a declared value field."""
    return 0 < len(values) <= MAX_ENUM_VALUES and all(
        isinstance(v, str) and len(v) <= MAX_ENUM_VALUE_LENGTH and len(v.split()) <= 4 for v in values
    )


def schema_from_documents(
    name: str,
    docs: Iterable[dict[str, Any]],
    total: int | None = None,
    indexes: list[dict[str, Any]] | None = None,
    own_kind: CollectionSpec | None = None,
) -> CollectionSchema:
    """Build a schema from sampled documents (pure: no database). `own_kind` is a tenant's own spec
    for the collection (None: a built-in kind, or none)."""
    infos: dict[str, FieldInfo] = {}
    scalars: dict[str, Counter] = defaultdict(Counter)
    presence: Counter = Counter()
    sampled = 0
    for doc in docs:
        sampled += 1
        seen: set[str] = set()
        items: list[tuple[str, Any, bool]] = []
        _walk(doc, "", False, items)
        for path, value, in_array in items:
            info = infos.setdefault(path, FieldInfo(path))
            info.types.add(_type_name(value))
            info.in_array = info.in_array or in_array
            if path not in seen:
                seen.add(path)
                presence[path] += 1
            if isinstance(value, str) and 0 < len(value) <= 200:
                scalars[path][value] += 1
            elif (
                isinstance(value, (int, float, datetime))
                and not isinstance(value, bool)
                and len(info.examples) < 2
                and value not in info.examples
            ):
                info.examples.append(value if not isinstance(value, datetime) else value.isoformat())
    # A tenant's own kind declares its value fields (`values`): they hold values a question names
    # ("sev1", "payments") however few records there are to repeat them.
    declared = {p for paths in own_kind.values.values() for p in paths} if own_kind is not None else set()
    for path, info in infos.items():
        info.count = presence[path]
        # A path seen both as an array and through its elements is an array of scalars.
        if "array" in info.types:
            info.types.discard("array")
            info.in_array = True
            if not info.types:
                info.types.add("array")
        values = scalars.get(path, Counter())
        if (
            _looks_enum(values, sum(values.values())) or (path in declared and _names_values(values))
        ) and not _OPAQUE_PATH.search(path):
            info.enum = [v for v, _ in values.most_common()]
        elif values and not info.examples:
            info.examples = [v[:60] for v, _ in values.most_common(2)]
    schema = CollectionSchema(
        name=name,
        fields=dict(sorted(infos.items())),
        indexes=indexes or [],
        sampled=sampled,
        total=sampled if total is None else total,
        own_kind=own_kind,
    )
    # The kind's free text that these records have is indexed for `$text` (served by the engine's
    # BM25 index, see query.fulltext).
    schema.text_fields = [p for p in schema.kind.text if p in infos]
    return schema


def discover(records: Any, sample_size: int = SAMPLE_SIZE, own_kind: CollectionSpec | None = None) -> CollectionSchema:
    """Describe a collection's records within a scope (`DocumentStore.scoped(name, scope)`: a tenant
    and access filter) from a sample of them. `own_kind`: the tenant's own spec of the collection."""
    total = records.count()
    docs = records.sample(total, sample_size)
    schema = schema_from_documents(records.name, docs, total=total, indexes=_indexes(records), own_kind=own_kind)
    # Enumerations are completed from the distinct values over every record in scope, so a rare
    # label is still a known value.
    enums = {path: info for path, info in schema.fields.items() if info.enum is not None}
    if enums and total > len(docs):
        seen: dict[str, set[str]] = {path: set(info.enum) for path, info in enums.items()}
        # Each enumeration is read at its longest prefix that crosses no array (the database
        # extracts `fields.status.name` itself; for `labels.name` it extracts `labels`), and the
        # rest of its path is walked here over the distinct values only.
        prefixes = {path: _object_prefix(schema, path) for path in enums}
        wanted = sorted(set(prefixes.values()))
        distinct = dict(zip(wanted, records.distinct_values([prefix.split(".") for prefix in wanted])))
        for path, prefix in prefixes.items():
            rest = path[len(prefix) + 1 :]
            for value in distinct[prefix]:
                found = values_at(value, rest) if rest else (value if isinstance(value, list) else [value])
                seen[path].update(v for v in found if isinstance(v, str) and v)
        for path, info in enums.items():
            extra = sorted(seen[path] - set(info.enum))
            if len(info.enum) + len(extra) <= MAX_ENUM_VALUES * 2:
                info.enum += extra
    return schema


def _object_prefix(schema: CollectionSchema, path: str) -> str:
    """The longest prefix of `path` reached through objects only: it ends at the first array seen in
    the sample (or at the path itself)."""
    parts = path.split(".")
    for end in range(1, len(parts)):
        info = schema.fields.get(".".join(parts[:end]))
        if info is None or info.in_array or "object" not in info.types or len(info.types - {"object", "null"}):
            return ".".join(parts[:end])
    return path


def values_at(doc: Any, path: str) -> list[Any]:
    """Every value at a dotted path, walking through arrays as MongoDB does."""
    values = [doc]
    for key in path.split("."):
        nxt: list[Any] = []
        for value in values:
            if isinstance(value, list):
                nxt.extend(v.get(key) for v in value if isinstance(v, dict))
            elif isinstance(value, dict):
                nxt.append(value.get(key))
        values = nxt
    flat: list[Any] = []
    for value in values:
        flat.extend(value if isinstance(value, list) else [value])
    return flat


def _indexes(records: Any) -> list[dict[str, Any]]:
    result = []
    for name, spec in records.index_information().items():
        keys = [k for k, _ in spec.get("key", [])]
        if any(k in HIDDEN_FIELDS for k in keys):
            continue
        result.append({"name": name, "keys": keys})
    return result

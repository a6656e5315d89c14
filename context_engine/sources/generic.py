"""A team's own collections: JSON, JSON lines and CSV files (or a folder of them) and MongoDB
collections read into records of a kind the team describes (`kinds.CollectionSpec`).

Each row becomes one record under `ref` = the spec's `ref_prefix` + its key's value. The engine's own
fields (`_id`, `tenant_id`, `acl`, `source`, `acl_partial`) and keys no store can hold (`$…`, with a
'.') are dropped from every row, and the access list comes only from the operator: an access field
naming principals, `--public`, or nobody.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from context_engine.access import PUBLIC, SYSTEMS, principal
from context_engine.kinds import BUILTIN_NAMES, RESERVED, CollectionSpec, PersonField, SpecError, check_name
from context_engine.kinds.spec import check_path
from context_engine.sources.input_caps import (
    FileTooLarge,
    JsonBomb,
    check_json_size,
    load_weighed_json,
    max_input_values,
    read_capped,
    reading_csv,
)
from context_engine.sources.input_files import NotReadable, input_root, open_input, walk_input
from context_engine.sources.json_files import read_text
from context_engine.sources.normalize import ENGINE_FIELDS, RecordError, convert_dates
from context_engine.sources.problems import ReadProblems, SourceError
from context_engine.text import parse_datetime, to_utc_naive


def normalize_own(record: Any) -> dict[str, Any]:
    """A record of a tenant's own kind as stored: its `ref` (set by the reader) kept, dates converted.
    RecordError for one that cannot be stored."""
    if not isinstance(record, dict):
        raise RecordError(f"expected an object, got {type(record).__name__}")
    ref = record.get("ref")
    if not isinstance(ref, str) or not ref:
        raise RecordError("a record needs a `ref`")
    try:
        doc = {k: convert_dates(v) for k, v in record.items() if k not in ("_id", "tenant_id")}
    except RecursionError:
        raise RecordError("nested too deeply") from None
    acl = doc.get("acl")
    if acl is not None and not (isinstance(acl, list) and all(type(a) is str for a in acl)):
        raise RecordError("`acl` must be a list of principal strings")
    return doc


# ------------------------------------------------------------------------------ the operator's options
@dataclass
class OwnOptions:
    """What the operator says about one own collection (`ingest json|mongodb` options or `--spec`);
    whatever is left unsaid is inferred from the rows."""

    collection: str
    key: str | None = None
    ref_prefix: str | None = None
    noun: str | None = None
    times: dict[str, str] = field(default_factory=dict)  # role -> field
    people: dict[str, tuple[str, str]] = field(default_factory=dict)  # role -> (field, handle kind)
    text: list[str] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)  # role -> field
    references: dict[str, str] = field(default_factory=dict)  # field -> collection
    access_field: str | None = None
    public: bool = False
    spec: CollectionSpec | None = None  # a whole spec (`--spec FILE`): nothing is inferred

    def __post_init__(self) -> None:
        check_name(self.collection)
        if self.collection in BUILTIN_NAMES or self.collection in RESERVED:
            raise SpecError(
                f"collection name {self.collection!r} is taken by the engine; choose another "
                f"(built-in: {', '.join(BUILTIN_NAMES)})"
            )
        if self.access_field is not None:
            check_path(self.access_field, "--access-field")


def spec_file_options(path: Path, collection: str, access_field: str | None, public: bool) -> OwnOptions:
    """`--spec FILE`: a `CollectionSpec.from_json` object plus the ingest-only `access_field`/`public`."""
    try:
        data = json.loads(read_text(path))
    except ValueError as exc:
        raise SourceError(f"--spec {path}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise SourceError(f"--spec {path}: a JSON object is expected")
    access_field = data.pop("access_field", None) if access_field is None else access_field
    public = bool(data.pop("public", False)) or public
    data.pop("access_field", None)
    if data.setdefault("name", collection) != collection:
        raise SourceError(f"--spec {path}: names collection {data['name']!r}, not {collection!r}")
    if data.get("builtin"):
        raise SourceError(f"--spec {path}: a tenant's own kind is never built-in")
    try:
        spec = CollectionSpec.from_json(data)
        return OwnOptions(collection, access_field=access_field, public=public, spec=spec)
    except SpecError as exc:
        raise SourceError(f"--spec {path}: {exc}") from None


@dataclass
class OwnCollection:
    """One own collection read: its spec, its records, and what was inferred (one line per choice)."""

    spec: CollectionSpec
    records: list[dict[str, Any]]
    inferred: list[str]
    warnings: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ reading rows
ROW_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv")


def read_files(paths: list[Path], options: OwnOptions, logins: set[str], problems: ReadProblems) -> OwnCollection:
    """JSON (an array of objects, or an object holding one array of objects), JSON lines and CSV files,
    or folders of them (regular files inside only: `input_files`), into one own collection."""
    rows: list[tuple[str, Any]] = []
    for given in paths:
        root = input_root(given)
        if root.is_dir():
            for rel in walk_input(root, problems, lambda rel: rel.suffix.lower() in ROW_SUFFIXES):
                rows.extend(_file_rows(root / rel, root, rel.as_posix(), problems))
        else:
            if root.suffix.lower() not in ROW_SUFFIXES:
                raise SourceError(f"cannot read {given}: not a .json, .jsonl, .ndjson or .csv file")
            rows.extend(_file_rows(root, root, str(given), problems))
    if not rows:
        why = f" ({problems.examples[0]})" if problems.examples else ""  # "x.json: malformed JSON (...)"
        raise SourceError(f"no rows found in {', '.join(map(str, paths))}{why}")
    return build_collection(rows, options, logins, problems, source="files")


def _file_rows(path: Path, root: Path, where: str, problems: ReadProblems) -> list[tuple[str, Any]]:
    try:
        with open_input(path, root) as fh:
            text = read_capped(fh).decode("utf-8-sig")
    except NotReadable as exc:
        problems.refuse(where, exc.kind)
        return []
    except UnicodeDecodeError:
        problems.add(where, "not UTF-8 text")
        return []
    except (FileTooLarge, OSError) as exc:
        problems.add(where, str(exc))
        return []
    if path.suffix.lower() == ".csv":
        return _csv_rows(text, where)
    return _json_rows(text, where, problems)


def _csv_rows(text: str, where: str) -> list[tuple[str, Any]]:
    """Each row as an object: numbers and ISO dates parsed, empty cells missing."""
    with reading_csv(where):
        reader = csv.DictReader(io.StringIO(text, newline=""))
        return [
            (f"{where}:row {i}", {k: _cell(v) for k, v in row.items() if k is not None and v not in (None, "")})
            for i, row in enumerate(reader, start=2)
        ]


_INT = re.compile(r"-?(?:0|[1-9]\d{0,17})")
_FLOAT = re.compile(r"-?\d+\.\d+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _cell(text: str) -> Any:
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return as_date(text) or text


def as_date(value: Any) -> datetime | None:
    """An ISO date or date-time (a datetime or its text) as naive UTC; None for anything else."""
    if isinstance(value, datetime):
        return to_utc_naive(value)
    if not isinstance(value, str) or len(value) > 40:
        return None
    if _DATE.fullmatch(value):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return parse_datetime(value)


def _json_rows(text: str, where: str, problems: ReadProblems) -> list[tuple[str, Any]]:
    try:
        check_json_size(text)
    except JsonBomb as exc:
        problems.add(where, f"it {exc}")
        return []
    try:
        value = load_weighed_json(text)
    except JsonBomb as exc:
        problems.add(where, str(exc))
        return []
    except json.JSONDecodeError as whole:
        return _json_lines(text, where, whole, problems)
    if isinstance(value, dict):  # {"incidents": [...]}: the one array of objects it holds; else one row
        arrays = [v for v in value.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
        if len(arrays) > 1:
            problems.add(where, "a JSON object holding several arrays of objects: which are the rows is unclear")
            return []
        value = arrays[0] if arrays else [value]
    if not isinstance(value, list):
        problems.add(where, f"a JSON {type(value).__name__}, not an array of objects")
        return []
    return [(f"{where}[{i}]", row) for i, row in enumerate(value)]


def _json_lines(text: str, where: str, whole: json.JSONDecodeError, problems: ReadProblems) -> list[tuple[str, Any]]:
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    out = []
    for n, line in lines:
        try:
            out.append((f"{where}:{n}", load_weighed_json(line)))
        except ValueError as exc:
            if n == lines[0][0]:  # not JSON lines either: one broken document
                problems.add(where, f"malformed JSON ({whole.msg}, line {whole.lineno})")
                return []
            problems.add(f"{where}:{n}", f"malformed JSON ({exc})")
    return out


# ------------------------------------------------------------------------------ rows -> records
def _storable(key: Any) -> bool:
    """A source key kept: a string, no operator (`$…`), no path separator, no NUL, not the engine's."""
    return (
        isinstance(key, str)
        and bool(key)
        and not key.startswith("$")
        and "." not in key
        and "\x00" not in key
        and key not in ENGINE_FIELDS
    )


def _clean(value: Any, dropped: dict[str, int]) -> Any:
    """A source value with the keys no store may hold or the engine states dropped (counted by key), at
    every depth; a value of a type JSON does not have (a BSON ObjectId, a Decimal128) as its text."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if _storable(key):
                out[key] = _clean(item, dropped)
            else:
                dropped[str(key)[:40]] = dropped.get(str(key)[:40], 0) + 1
        return out
    if isinstance(value, (list, tuple)):
        return [_clean(item, dropped) for item in value]
    if value is None or isinstance(value, (str, int, float, bool, datetime)):
        return value
    return str(value)


def _row_access(value: Any, where: str, access_field: str, public: bool) -> list[str]:
    """The access list one row states in the access field: "*" (the whole tenant), a principal, or a
    list of them, each named by its system (`github:login`, `slack:U…`, `email:…`); nothing stated:
    the whole tenant with `--public`, else nobody. A principal without its system is refused outright:
    a bare "dana" would be nobody's account, and guessing the system would grant someone access."""
    if value in (None, "", []):
        return [PUBLIC] if public else []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise SourceError(
            f"{where}: access field {access_field!r} holds {type(value).__name__}; expected a principal "
            "or a list of principals"
        )
    acl = set()
    for item in items:
        if item == PUBLIC:
            acl.add(PUBLIC)
            continue
        system, _, account = item.partition(":")
        if system not in SYSTEMS or not account.strip():
            raise SourceError(
                f"{where}: access field {access_field!r} holds {item[:60]!r}, not a principal; name its "
                f"system: {', '.join(s + ':…' for s in SYSTEMS)} (or '*' for the whole tenant)"
            )
        acl.add(principal(system, account))
    return sorted(acl)


def build_collection(
    rows: list[tuple[str, Any]],
    options: OwnOptions,
    logins: set[str],
    problems: ReadProblems,
    source: str,
    id_field: str | None = None,
) -> OwnCollection:
    """(where, row) pairs -> the collection's spec (given or inferred) and records. `logins`: the GitHub
    logins of the tenant's people directory (a people column holds them). `id_field`: the field that
    holds a MongoDB document's `_id` as text, the key when none is given or found."""
    dropped: dict[str, int] = {}
    objects = []
    for where, row in rows:
        if not isinstance(row, dict):
            problems.add(where, f"a JSON {type(row).__name__}, not an object")
            continue
        objects.append((where, _clean(row, dropped)))
    inferred: list[str] = []
    warnings = [
        f"dropped field {key!r} from {n:,} row(s): the engine states it, or no store can hold its name"
        for key, n in sorted(dropped.items())
    ]
    spec = options.spec or infer_spec([o for _, o in objects], options, logins, inferred, id_field)
    for paths in spec.times.values():  # dates in time fields, whatever their text
        for _, obj in objects:
            for path in paths:
                if "." not in path and (when := as_date(obj.get(path))) is not None:
                    obj[path] = when
    records, seen = [], set()
    for where, obj in objects:
        key = obj.get(spec.key)
        if isinstance(key, bool) or not isinstance(key, (str, int)) or key == "":
            problems.add(where, f"no key: {spec.key!r} is missing or not a string or whole number")
            continue
        ref = f"{spec.ref_prefix}{key}"
        if ref in seen:
            problems.add(where, f"duplicate key {spec.key}={str(key)[:40]!r}: the first row with it is kept")
            continue
        seen.add(ref)
        record = {**obj, "ref": ref, "source": source}
        if options.access_field:
            record["acl"] = _row_access(
                record.pop(options.access_field, None), where, options.access_field, options.public
            )
        records.append(record)
    if options.access_field:
        nobody = sum(1 for r in records if not r["acl"])
        inferred.append(
            f"access: from field {options.access_field!r}"
            + (", else the whole tenant (--public)" if options.public else ", else nobody")
        )
        if nobody:
            warnings.append(f"{nobody:,} record(s) name nobody in {options.access_field!r}: readable by nobody")
    elif options.public:
        inferred.append("access: the whole tenant (--public)")
    else:
        inferred.append("access: nobody (no --access-field and no --public)")
        warnings.append(
            "no --access-field and no --public: nobody can read these records (deny by default); "
            "re-run with one of them"
        )
    return OwnCollection(spec, records, inferred, warnings)


_CREATED_NAMES = ("created", "opened", "started", "timestamp", "date", "time", "_at")
_PERSON_NAME = re.compile(r"author|owner|assignee|reporter|commander|responder|on_?call|user|reviewer|_by$|^by$")
_AUTHOR_NAMES = re.compile(r"author|reporter|owner|_by$|^by$")  # who did it: "deployed_by", "created_by"
_ASSIGNEE_NAMES = re.compile(r"assignee|commander|responder|on_?call")
MAX_NAME_LENGTH = 40  # a value a question names is short: a status, a city, a full name
MAX_NAME_WORDS = 4
_TITLE_NAMES = ("title", "summary", "name", "subject")
_SUBJECT_NAMES = ("title", "summary", "subject")  # a title field that is not someone's or something's name
_TEXT_NAMES = ("description", "notes", "details", "message", "body", "comment", "comments")  # text whatever its values
_REFERENCE_NAMES = {
    re.compile(r"(?:.*_)?(?:pr|pull_request)s?"): "pull_requests",
    re.compile(r"(?:.*_)?(?:issue|ticket)s?"): "issues",
}
_REF_SHAPES = {
    "pull_requests": re.compile(r"[\w.-]+/[\w.-]+#\d+"),
    "issues": re.compile(r"[\w.-]+/[\w.-]+#\d+|[A-Z][A-Z0-9]+-\d+"),
}


def _noun(collection: str) -> str:
    words = collection.lower().replace("_", " ")
    for plural, singular in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"), ("s", "")):
        if words.endswith(plural) and not words.endswith("ss"):
            return words[: -len(plural)] + singular
    return words


def name_paths(objects: list[dict[str, Any]]) -> list[str]:
    """The field paths, through embedded objects and arrays of them, whose values are mostly names: short
    strings ("German", "Suite 634", "Jerry Prince") a question may say, so a value search finds the
    field that holds them (however many distinct values it has: a person's name is unique per row)."""
    strings: dict[str, list[str]] = {}
    others: dict[str, int] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list):
            for item in value:
                walk(item, path)
        elif isinstance(value, str):
            strings.setdefault(path, []).append(value)
        elif value is not None and path:
            others[path] = others.get(path, 0) + 1

    for obj in objects:
        walk(obj, "")
    out = []
    for path, values in strings.items():
        short = [v for v in values if 0 < len(v.strip()) <= MAX_NAME_LENGTH and len(v.split()) <= MAX_NAME_WORDS]
        if len(short) >= 0.8 * (len(values) + others.get(path, 0)) and _path_ok(path):
            out.append(path)
    return out


def _path_ok(path: str) -> bool:
    try:
        check_path(path, "field")
    except SpecError:
        return False
    return True


def _scalars(objects: list[dict[str, Any]], column: str) -> list[Any]:
    """The column's values in the rows that have one (a list's items counted one by one)."""
    out = []
    for obj in objects:
        value = obj.get(column)
        out.extend(value if isinstance(value, list) else [] if value is None else [value])
    return out


def _is_key(objects: list[dict[str, Any]], column: str) -> bool:
    values = [o.get(column) for o in objects]
    return all(isinstance(v, (str, int)) and not isinstance(v, bool) and v != "" for v in values) and len(
        set(map(str, values))
    ) == len(values)


def infer_spec(
    objects: list[dict[str, Any]],
    options: OwnOptions,
    logins: set[str],
    inferred: list[str],
    id_field: str | None = None,
) -> CollectionSpec:
    """The spec of a collection from its rows and what the operator gave, each choice said in `inferred`."""
    name = options.collection
    columns = list(dict.fromkeys(k for o in objects for k in o))
    given = lambda what, value: inferred.append(f"{what}: {value} (given)")  # noqa: E731
    guessed = lambda what, value: inferred.append(f"{what}: {value} (inferred)")  # noqa: E731
    noun = options.noun or _noun(name)
    (given if options.noun else guessed)("noun", noun)

    key = options.key
    if key is None:
        candidates = ["id", "key", f"{noun.replace(' ', '_')}_id", *([id_field] if id_field else []), *columns]
        key = next((c for c in dict.fromkeys(candidates) if c in columns and _is_key(objects, c)), None)
        if key is None:
            raise SourceError(f"no column has a unique value in every row to key {name} by: give --key FIELD")
        guessed("key", key)
    else:
        given("key", key)
    numeric = all(isinstance(o[key], int) for o in objects if key in o)
    prefix = options.ref_prefix if options.ref_prefix is not None else (f"{name}/" if numeric else "")
    (given if options.ref_prefix is not None else guessed)("ref", f"{prefix}<{key}>")
    used = {key, *([options.access_field] if options.access_field else [])}
    used |= set(options.times.values()) | {f for f, _ in options.people.values()} | set(options.text)
    used |= set(options.values.values())

    times = {role: (path,) for role, path in options.times.items()}
    for role, path in options.times.items():
        given(f"time {role}", path)
    dates = [c for c in columns if c not in used and _mostly(objects, c, lambda v: as_date(v) is not None)]
    if dates:
        ranked = sorted(
            dates, key=lambda c: next((i for i, w in enumerate(_CREATED_NAMES) if w in c.lower()), len(_CREATED_NAMES))
        )
        for column in [ranked[0], *(c for c in dates if c != ranked[0])]:
            role = "created" if "created" not in times else _role_of(column, times)
            times[role] = (column,)
            guessed(f"time {role}", column)
        used |= set(dates)

    people = {role: (PersonField(path, handle),) for role, (path, handle) in options.people.items()}
    for role, (path, handle) in options.people.items():
        given(f"person {role}", f"{path} ({handle})")
    folded = {login.lower() for login in logins}
    for column in columns:
        if column in used or not _PERSON_NAME.search(column.lower()):
            continue
        if folded and _mostly(objects, column, lambda v: isinstance(v, str) and v.lower() in folded):
            role = (
                "author"
                if _AUTHOR_NAMES.search(column.lower())
                else "assignee"
                if _ASSIGNEE_NAMES.search(column.lower())
                else column
            )
            role = role if role not in people else column
            people.setdefault(role, (PersonField(column, "github"),))
            guessed(f"person {role}", f"{column} (GitHub logins of the people directory)")
            used.add(column)

    references = dict(options.references)
    for path, target in options.references.items():
        given(f"reference {path}", target)
    for column in columns:
        if column in used:
            continue
        target = next((t for pattern, t in _REFERENCE_NAMES.items() if pattern.fullmatch(column.lower())), None)
        if target and _mostly(objects, column, lambda v: isinstance(v, str) and bool(_REF_SHAPES[target].fullmatch(v))):  # noqa: B023 (called at once)
            references[column] = target
            guessed(f"reference {column}", target)
            used.add(column)

    strings = [c for c in columns if c not in used and _mostly(objects, c, lambda v: isinstance(v, str))]
    values = {role: (path,) for role, path in options.values.items()}
    for role, path in options.values.items():
        given(f"value {role}", path)
    text = list(options.text)
    for path in text:
        given("text", path)
    if not text:
        titles = [c for c in strings if c.lower() in _TITLE_NAMES]
        long = [c for c in strings if c not in titles and (c.lower() in _TEXT_NAMES or _long(objects, c))]
        text = titles + long
        for path in text:
            guessed("text", path + (" (the subject)" if path == text[0] else ""))
    # The rule TEND's specs use too: every field of short strings, nested ones too, is a value field, a
    # text field of names ("Jerry Prince") as well, so that a value a question says finds its field; but
    # not a subject ("Slow search"): its words are a topic, matched by full text, not one exact value.
    given_values = {path for paths in values.values() for path in paths}
    subject = {text[0]} if text and text[0].lower() in _SUBJECT_NAMES else set()
    for path in name_paths(objects):
        if path.split(".")[0] not in used | subject and path not in given_values:
            values.setdefault(path, (path,))
            guessed(f"value {path}", path)
    return CollectionSpec(
        name=name,
        noun=noun,
        key=key,
        ref_prefix=prefix,
        people=people,
        times=times,
        values=values,
        text=tuple(text),
        references=references,
    )


def _role_of(column: str, taken: dict[str, Any]) -> str:
    role = re.sub(r"(?:_at|_date|_time|_on)$", "", column.lower()) or column
    return role if role not in taken else column


def _mostly(objects: list[dict[str, Any]], column: str, test: Any) -> bool:
    """At least 80% of the column's values pass `test` (and it has some)."""
    values = _scalars(objects, column)
    return bool(values) and sum(1 for v in values if test(v)) >= 0.8 * len(values)


def _long(objects: list[dict[str, Any]], column: str) -> bool:
    values = [v for v in _scalars(objects, column) if isinstance(v, str)]
    return bool(values) and (
        sum(map(len, values)) / len(values) > 40
        or (sum(1 for v in values if " " in v.strip()) >= 0.5 * len(values) and len(set(values)) > 0.5 * len(values))
    )


# ------------------------------------------------------------------------------ MongoDB
def read_mongodb(
    client: Any,
    db: str,
    source_collection: str,
    options: OwnOptions,
    logins: set[str],
    problems: ReadProblems,
    query: dict[str, Any] | None = None,
    limit: int = 0,
) -> OwnCollection:
    """A read-only copy of one collection of the team's MongoDB: `find(query)` with no projection, at
    most `limit` documents (0: all, within the input caps). Nothing is ever written to the source.
    A document's `_id` (as text, in field `id`, or `mongo_id` when the documents have their own `id`)
    is the key when none is given or found."""
    cap = max_input_values()
    cursor = (
        client[db][source_collection].find(query or {}, limit=limit)
        if limit
        else client[db][source_collection].find(query or {})
    )
    rows: list[tuple[str, Any]] = []
    id_field = None
    for n, doc in enumerate(cursor):
        if n >= cap:
            raise SourceError(
                f"{db}.{source_collection} holds more than {cap:,} documents (CONTEXT_ENGINE_MAX_INPUT_VALUES); "
                "pass --limit or --filter"
            )
        if not isinstance(doc, dict):
            continue
        row = dict(doc)
        if "_id" in row:
            id_field = id_field or ("mongo_id" if "id" in row else "id")
            row.setdefault(id_field, str(row.pop("_id")))
            row.pop("_id", None)
        rows.append((f"{db}.{source_collection}[{n}]", row))
    if not rows:
        raise SourceError(f"{db}.{source_collection}: no documents" + (" match --filter" if query else ""))
    return build_collection(
        rows, options, logins, problems, source=f"mongodb:{db}.{source_collection}", id_field=id_field
    )

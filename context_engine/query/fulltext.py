"""`$text` for stores without a usable text index: served from the engine's own BM25 index.

The embedded store has no `$text`, and MongoDB's `$text` does not segment Chinese; so a `$text`
clause is answered by BM25 over the collection's text fields and becomes an `_id` pre-filter.

On the embedded store the record-level index is built at ingest (`sync_fulltext`) and persisted
per tenant and collection in `<data-dir>/fulltext/`, so a new process reads it instead of
tokenizing the whole collection for its first question (seconds on the GitHub dump). It is derived
data and only proposes ids: the executor still runs the scoped pipeline over them (tenant and the
asker's principals), so the index never widens access. It records the last store row it has seen;
a record of its tenant and collection written since (a webhook, an ingest interrupted before the
sync) makes it stale, and then the store wins: the index is rebuilt in memory from the records as
they are, as it is on MongoDB. A deleted record's id may linger in it until the next sync; the
scoped pipeline finds no such record.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Any

from context_engine.query.schema import values_at
from context_engine.query.topic_words import SHORT_FORMS, SPELLINGS
from context_engine.retrievers.bm25 import BM25Index
from context_engine.store.bounded import Bounds, run_embedded
from context_engine.store.builds import publish_build
from context_engine.store.regular_files import read_regular_text
from context_engine.text import TOKENIZATION, tokenize

FORMAT = "2"  # 2: the words inside compounds are indexed too (index_words)
DIR_NAME = "fulltext"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")  # tenants and collection names as file names

# (store, collection, tenant, fields) -> ((last row seen, this process's writes) it was built at, fields, index):
# one index each, replaced when the store has been written since, so a long-lived server does not
# keep every old one.
_CACHE: dict[tuple[int, str, str, tuple[str, ...]], tuple[tuple[int, int], tuple[str, ...], BM25Index]] = {}


def _text_of(doc: dict[str, Any], fields: list[str]) -> str:
    return "\n".join(v for path in fields for v in values_at(doc, path) if isinstance(v, str))


def _fit(collection: Any, tenant: str, fields: list[str]) -> BM25Index:
    docs = list(collection.find({"tenant_id": tenant}, dict.fromkeys(fields, 1)))
    return BM25Index().fit_tokens([d["_id"] for d in docs], (index_words(_text_of(d, fields)) for d in docs))


def _root(store: Any, tenant: str, collection: str) -> Path:
    if not (_SAFE_NAME.match(tenant) and _SAFE_NAME.match(collection)):
        raise ValueError(f"not a tenant and collection name: {tenant!r}, {collection!r}")
    return store.data_dir / DIR_NAME / tenant / collection


def _read_manifest(root: Path) -> tuple[Path, dict[str, Any]] | None:
    """The live build of one tenant's collection and its manifest; None when there is none or it is unreadable."""
    try:
        name = read_regular_text(root / "CURRENT").strip()
        if not re.fullmatch(r"build-[0-9a-f]{32}", name):
            return None
        manifest = json.loads(read_regular_text(root / name / "manifest.json"))
    except (OSError, ValueError):
        return None
    return (root / name, manifest) if manifest.get("format") == FORMAT else None


def _is_fresh(store: Any, tenant: str, collection: str, fields: list[str], manifest: dict[str, Any]) -> bool:
    """Built from these fields, tokenized as queries are, and no record of the tenant's collection
    written since: the range of row numbers after `seq` (O(changed))."""
    return (
        manifest.get("fields") == fields
        and manifest.get("tokenization") == TOKENIZATION
        and isinstance(manifest.get("seq"), int)
        and not store.file.written_since(manifest["seq"], tenant, [collection])
    )


def sync_fulltext(store: Any, tenant: str, schemas: dict[str, Any]) -> list[str]:
    """Bring the tenant's persisted full-text indexes up to the store's last commit (embedded store
    only; called by ingest after the commit). Returns the collections rebuilt."""
    if store.file is None:
        return []
    rebuilt = []
    for name, schema in sorted(schemas.items()):
        fields = list(schema.text_fields)
        if not fields:  # a kind without free text (`kind.text`), or records without it
            continue
        root = _root(store, tenant, name)
        current = _read_manifest(root)
        if current is not None and _is_fresh(store, tenant, name, fields, current[1]):
            continue
        seq = store.file.last_seq()  # under the writer lock: nothing is written between this and the read
        index = _fit(store.collection(name), tenant, fields)
        _write_build(
            root,
            index,
            {
                "format": FORMAT,
                "tenant": tenant,
                "collection": name,
                "fields": fields,
                "tokenization": TOKENIZATION,
                "seq": seq,
                "ids": [str(i) for i in index.ids],
            },
        )
        rebuilt.append(name)
    return rebuilt


def _write_build(root: Path, index: BM25Index, manifest: dict[str, Any]) -> None:
    """A complete build in its own directory, then CURRENT switched to it (readers see one or the other)."""

    def write(tmp: Path) -> None:
        index.save(tmp / "bm25.npz")
        with open(tmp / "manifest.json", "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())

    publish_build(root, f"build-{uuid.uuid4().hex}", write)


def _persisted(store: Any, tenant: str, collection: str, fields: list[str]) -> tuple[int, BM25Index] | None:
    """The index ingest built, if it is fresh: (the row number it has seen, the index)."""
    current = _read_manifest(_root(store, tenant, collection))
    if current is None or not _is_fresh(store, tenant, collection, fields, current[1]):
        return None
    build, manifest = current
    try:
        index = BM25Index.load(build / "bm25.npz", manifest["ids"])
    except (OSError, ValueError, KeyError):
        return None
    if index.tokenization != TOKENIZATION or len(index.ids) != index.matrix.shape[0]:
        return None
    return manifest["seq"], index


def text_index(store: Any, collection: str, tenant: str, fields: list[str]) -> BM25Index:
    """The tenant's full-text index of `collection` as the store holds it now."""
    handle = store.collection(collection)
    if store.file is not None:
        key = (id(store.db), collection, tenant, tuple(fields))
        cached = _CACHE.get(key)
        # `revision` counts this process's own writes (a webhook's, before its commit)
        if (
            cached is not None
            and cached[1] == tuple(fields)
            and cached[0][1] == store.revision
            and not store.file.written_since(cached[0][0], tenant, [collection])
        ):
            return cached[2]
        persisted = _persisted(store, tenant, collection, fields) if store.revision == 0 else None
        if persisted is not None:
            _CACHE[key] = ((persisted[0], 0), tuple(fields), persisted[1])
            return persisted[1]
        # Stale or missing: the store wins. Fitted from the records as they are, valid up to the last row.
        seq = store.file.last_seq()
        index = _fit(handle, tenant, fields)
        _CACHE[key] = ((seq, store.revision), tuple(fields), index)
        return index
    # MongoDB: no file, no row numbers; `revision` changes whenever this process writes the store.
    key = (id(store.db), collection, tenant, tuple(fields))
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == (0, store.revision) and cached[1] == tuple(fields):
        return cached[2]
    index = _fit(handle, tenant, fields)
    _CACHE[key] = ((0, store.revision), tuple(fields), index)
    return index


# (store, collection, tenant, subject field) -> ((last row seen, this process's writes), index)
_SUBJECT_CACHE: dict[tuple[int, str, str, str], tuple[tuple[int, int], BM25Index]] = {}
_WORD_PARTS = re.compile(r"[.\-]")
_ABLE = re.compile(r"(?<=[a-z]{4})(?:abl|ibl)$")


def index_words(text: str) -> list[str]:
    """The search tokens of a text and the words inside its dotted or hyphenated compounds:
    "Fix audio-folder in datasets.load_dataset" holds "audio" and "load_dataset" as words (an
    underscore joins an identifier, a dot or a hyphen separates words), and a message about
    "macro-expansion" mentions macros."""
    words = []
    for token in tokenize(text):
        words.append(token)
        if _WORD_PARTS.search(token):
            words.extend(tokenize(" ".join(_WORD_PARTS.split(token))))
    # The stemmer leaves "-able" on ("streamabl"); a "streamable dataset" is about streaming.
    return words + [stem for w in words if (stem := _ABLE.sub("", w)) != w]


def subject_index(store: Any, collection: str, tenant: str, field: str) -> BM25Index:
    """The tenant's index of one short field (the title), fitted in memory (titles are a small part of
    the text) and refitted when the store has been written since."""
    key = (id(store.db), collection, tenant, field)
    version = (store.file.last_seq() if store.file is not None else 0, store.revision)
    cached = _SUBJECT_CACHE.get(key)
    if cached is not None and cached[0] == version:
        return cached[1]
    docs = _projected(store, collection, {"tenant_id": tenant}, field)
    index = BM25Index().fit_tokens([d["_id"] for d in docs], (index_words(_text_of(d, [field])) for d in docs))
    _SUBJECT_CACHE[key] = (version, index)
    return index


@lru_cache(maxsize=1)
def _forms_by_token() -> dict[str, frozenset[str]]:
    forms: dict[str, set[str]] = {}
    pairs = [*SHORT_FORMS.items(), *((b + e, a + e) for b, a in SPELLINGS for e in ("", "s", "ed", "ing", "ation"))]
    for short, full in pairs:
        a, b = tokenize(short)[0], tokenize(full)[0]
        forms.setdefault(a, {a}).add(b)
        forms.setdefault(b, {b}).add(a)
    return {token: frozenset(group) for token, group in forms.items()}


def word_forms(token: str) -> frozenset[str]:
    """A search token and the tokens of its short or long form ("doc": "document") or of its other
    spelling ("colour": "color")."""
    return _forms_by_token().get(token, frozenset({token}))


def text_ids(
    store: Any, collection: str, tenant: str, fields: list[str], search: str, subject: str | None = None
) -> list[Any]:
    """The records matching `search`, best first. With `subject` (a field path: the title), the records
    whose subject holds every search word, ranked over the subject: a topic inside a structured question
    ("open issues about parquet", "typed racket messages") names what the records are about, and an issue
    is about what its title says, not about every module its pasted traceback lists."""
    if subject is None:
        index = text_index(store, collection, tenant, fields)
        tokens = [form for token in index.query_tokens(search) for form in sorted(word_forms(token))]
        return [doc_id for doc_id, _ in index.search_tokens(list(dict.fromkeys(tokens)))]
    # A collection whose only text is its subject (a message) is searched with the index ingest built.
    index = (
        text_index(store, collection, tenant, fields)
        if fields == [subject]
        else subject_index(store, collection, tenant, subject)
    )
    # A compound ("core.async", "syntax-parse") is also inside longer ones ("clojure.core.async",
    # "syntax-parse-example"), which the index holds as their parts: it is looked for by its parts,
    # then as written (a phrase below), so its parts elsewhere in a text do not count.
    words = [
        part
        for token in index.query_tokens(search)
        for part in (tokenize(" ".join(_WORD_PARTS.split(token))) if _WORD_PARTS.search(token) else [token])
    ]
    forms = [sorted(word_forms(word)) for word in dict.fromkeys(words)]
    about = None
    for word_and_forms in forms:  # every word, in one of its forms
        with_word = {doc_id for doc_id, _ in index.search_tokens(word_and_forms)}
        about = with_word if about is None else about & with_word
    phrases = [_phrase(p) for p in re.findall(r'"([^"]+)"', search) if len(p.split()) > 1]
    phrases += [_phrase(w) for w in re.findall(r"\w+(?:[.\-]\w+)+", search)]
    if about and phrases:
        about = {
            d["_id"]
            for d in _projected(store, collection, {"tenant_id": tenant, "_id": {"$in": list(about)}}, subject)
            if all(p.search(_text_of(d, [subject])) for p in phrases)
        }
    ranked = list(dict.fromkeys(form for group in forms for form in group))
    return [doc_id for doc_id, _ in index.search_tokens(ranked) if doc_id in (about or ())]


def _projected(store: Any, collection: str, query: dict[str, Any], field: str) -> list[dict[str, Any]]:
    """One field of the records matching `query`. On the embedded store through its indexes (by
    `_id` from the document map) and copying that field only: its `find` would match every record
    against an id list, and copy every body."""
    if store.embedded:
        stages = [{"$match": query}, {"$project": {field: 1}}]
        return run_embedded(
            store.collection(collection),
            stages,
            Bounds(max_time_ms=60_000, max_rows=10**7, max_bytes=2**31),
            revision=store.revision,
        )
    return list(store.collection(collection).find(query, {field: 1}))


def _phrase(phrase: str) -> re.Pattern:
    """A quoted phrase is a name ("Typed Racket"): its words as written, together, in order and
    separated by spaces only ("typed/racket" is a module path, "type racket" another phrase)."""
    words = [re.escape(w) for w in phrase.split()]
    return re.compile(r"(?<![0-9A-Za-z_])" + r"\s+".join(words) + r"(?![0-9A-Za-z_])", re.I)

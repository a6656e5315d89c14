"""Value search: every linkable value of a tenant, found from the words of a question.

A question says "Quentin", "payments", "v2.6" or "In Review"; the data holds `lhoestq`, the label
`payments`, the milestone `v2.6`, the Jira status `In Review`. At ingest the tenant's records are
read once and every linkable value is indexed: people (every alias the people directory knows:
logins, display names, first and last names, handles, e-mail local parts, Chinese names and their
pinyin), and the values of the role fields of each kind the tenant has (`kinds`: labels, milestones,
repositories, channels, projects, components, statuses ..., a tenant's own kind's value roles), state
reasons, and the other enumerations the schema discovered. Each value remembers where it is stored
(collection, field, the stored value, how many records).

`ValueIndex.search(text)` matches the question's n-grams by exact, prefix, token and fuzzy rules
(ranked in that order, then by how many records carry the value), and returns a value only if the
asker may read a record that carries it *now*: a scoped equality query against the store per place
the value is stored, best match first, until enough are confirmed (the index is derived and may lag
the store). A person is returned only if the asker can read a
record where that person acts. Work is bounded: n-grams per question, matches per n-gram, a
deadline.

The index is a JSON file per tenant (`<data-dir>/values/<tenant>.json`), written atomically and
stamped with its tenant and the store generation it was built from; a missing, damaged or stale one
is rebuilt on use.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein

from context_engine.access import fold_account
from context_engine.config import HIDDEN_FIELDS, Settings, check_tenant
from context_engine.kinds import CollectionSpec
from context_engine.query.catalog import Catalog
from context_engine.query.execute import ExecutionError, run_pipeline
from context_engine.query.fields import people_paths, registry_of
from context_engine.query.identity import ORDINARY_WORDS, PeopleDirectory
from context_engine.store.regular_files import read_regular_text
from context_engine.text import HAN

VALUES_FORMAT = 1

# The built-in kinds' value roles whose values a question names (not titles, URLs, thread ids or
# counts); each value is of the kind its role names. Every value role of a tenant's own kind is named.
NAMED_ROLES = frozenset(
    {
        "label",
        "milestone",
        "repo",
        "channel",
        "project",
        "component",
        "status",
        "priority",
        "type",
        "sprint",
        "space",
        "workspace",
        "team",
        "state",
        "reaction",
    }
)
# Built-in source fields no role names that a question still says: GitHub's `state_reason` ("not
# planned"), Jira's resolution ("Won't Fix"), a Jira project's name beside its key.
EXTRA_FIELDS: dict[str, list[tuple[str, str]]] = {
    "state_reason": [
        ("issues", "state_reason"),
        ("pull_requests", "state_reason"),
        ("issues", "fields.resolution.name"),
    ],
    "project": [("issues", "fields.project.name")],
}
MAX_VALUE_LENGTH = 80  # longer strings are text, not values
MAX_VALUES_PER_FIELD = 20_000  # a field with more distinct strings is free text: the rest is not indexed
MAX_GRAMS = 256  # n-grams looked up per question
MAX_GRAM_WORDS = 4
MAX_MATCHES_PER_GRAM = 8
MAX_CANDIDATES = 64  # entries checked against the store per search
SEARCH_MS = 1000  # the whole search, access check included (a cold store indexes on first use)
RULES = ("exact", "prefix", "token", "fuzzy")
_RULE_SCORE = {"exact": 1.0, "prefix": 0.8, "token": 0.6, "fuzzy": 0.5}

_LATIN = re.compile(r"@?[0-9A-Za-z\u00C0-\u024F](?:[0-9A-Za-z\u00C0-\u024F_.'/+#-]*[0-9A-Za-z\u00C0-\u024F])?")
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")
_TERM_TOKENS = re.compile(r"[^\W_]+")


def normalize(text: str) -> str:
    """How values and question words compare: NFKC, case-folded, inner whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def written(value: str) -> str:
    """A stored value as a pattern for how a question writes it: spaces, hyphens and underscores stand
    for each other ("good-first-issue" names the label "good first issue") and a plural names it
    ("bugs", "priorities")."""
    if value.lower().endswith("ies"):
        return rf"{_loose(value[:-3])}(?:y|ies)"
    if value.lower().endswith("y"):
        return rf"{_loose(value[:-1])}(?:y|ies)"
    return rf"{_loose(value)}(?:s|es)?"


def _loose(value: str) -> str:
    return r"[\s\-_]+".join(re.escape(part) for part in re.split(r"[\s\-_]+", value) if part)


# Where a value written in a question ends: not inside a longer word, nor a longer hyphenated value
# ("wontfix-later" is not the label wontfix), though a word joined to it may say what it is ("bug-labelled").
WHOLE_VALUE_END = r"(?![A-Za-z0-9_]|-(?!(?:label(?:l)?ed|tagged|related|type|kind|ish|like)\b)[A-Za-z0-9])"


def begins_name(word: str, name: str) -> bool:
    """People call a community by a word that begins its name, or nearly does: "elm" is elmlang,
    "clojure" clojurians but for its last letter. A common prefix of characters, not of path parts."""
    word, name = word.lower(), name.lower()
    return name.startswith(word) or len(os.path.commonprefix([name, word])) >= max(3, len(word) - 1)  # noqa: RUF071


@dataclass(frozen=True)
class ValueMatch:
    kind: str  # "person", "label", "milestone", "repo", "channel", "status", "state_reason", ...
    value: str  # the value as stored; for a person, the directory key
    field: str  # where the asker may read it most often
    collection: str
    score: float
    rule: str  # "exact", "prefix", "token" or "fuzzy"
    text: str = ""  # the words of the question it was found from, and where they are
    start: int = 0
    end: int = 0
    label: str = ""  # what to show: a person's display name, else the value
    # Every (collection, field) the asker may read it in. No record count: counted at ingest over
    # every record, it would tell an asker how many records they may not read carry the value.
    where: tuple[tuple[str, str], ...] = ()  # every (collection, field) the asker may read it in

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "value": self.value,
            "field": self.field,
            "collection": self.collection,
            "score": self.score,
            "rule": self.rule,
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "label": self.label,
            "where": [list(w) for w in self.where],
        }


@dataclass
class _Entry:
    kind: str
    value: str
    label: str
    terms: list[str]
    # (collection, field, the value as stored there, records carrying it)
    carriers: list[tuple[str, str, str, int]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(c[3] for c in self.carriers)


class ValueData:
    """The tenant's values with their lookup tables; shared by every asker of the tenant."""

    def __init__(self, tenant: str, generation: int, entries: list[_Entry]):
        self.tenant, self.generation, self.entries = tenant, generation, entries
        self.exact: dict[str, list[int]] = defaultdict(list)
        self.tokens: dict[str, list[int]] = defaultdict(list)
        for i, entry in enumerate(entries):
            for term in entry.terms:
                self.exact[term].append(i)
                words = _TERM_TOKENS.findall(term)
                if len(words) > 1:
                    for word in set(words):
                        self.tokens[word].append(i)
        self.sorted_terms = sorted(self.exact)
        self.fuzzy_terms = [t for t in self.sorted_terms if len(t) >= 4]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": VALUES_FORMAT,
            "tenant": self.tenant,
            "generation": self.generation,
            "entries": [
                {
                    "kind": e.kind,
                    "value": e.value,
                    "label": e.label,
                    "terms": e.terms,
                    "carriers": [list(c) for c in e.carriers],
                }
                for e in self.entries
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ValueData:
        entries = [
            _Entry(
                str(e["kind"]),
                str(e["value"]),
                str(e["label"]),
                [str(t) for t in e["terms"]],
                [(str(c[0]), str(c[1]), str(c[2]), int(c[3])) for c in e["carriers"]],
            )
            for e in data["entries"]
        ]
        return cls(str(data["tenant"]), int(data["generation"]), entries)


# ------------------------------------------------------------------------------------------------
# Building
# ------------------------------------------------------------------------------------------------


def _values_at(doc: Any, parts: Sequence[str]) -> Iterable[Any]:
    """The leaf values at a dotted path, through arrays (as MongoDB's dotted paths read them)."""
    if isinstance(doc, list):
        for item in doc:
            yield from _values_at(item, parts)
        return
    if not parts:
        yield doc
        return
    if isinstance(doc, dict) and parts[0] in doc:
        yield from _values_at(doc[parts[0]], parts[1:])


def _value_fields(
    catalog: Catalog, directory: PeopleDirectory, kinds: dict[str, CollectionSpec]
) -> dict[str, dict[str, str]]:
    """collection -> {path: kind} of the values to index: role fields, state reasons, and every other
    enumeration discovered that is not a people field (one whose values are people's handles)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for spec in kinds.values():
        for role, paths in spec.values.items():
            if role in NAMED_ROLES or (not spec.builtin and role not in ("title", "url")):
                for path in paths:
                    out[spec.name][path] = role
    for kind, places in EXTRA_FIELDS.items():
        for collection, path in places:
            out[collection].setdefault(path, kind)
    for collection, schema in catalog.schemas.items():
        if collection == "people":
            continue  # the directory's own bookkeeping (evidence rules, sources) names nothing
        spec = kinds.get(collection)
        persons = people_paths(spec) if spec is not None else set()
        for path, info in schema.fields.items():
            if not info.enum or path in persons or path.split(".")[0] in HIDDEN_FIELDS:
                continue
            if any(isinstance(v, str) and v.lower() in directory.index for v in info.enum):
                continue  # a field of people's handles or names: people are indexed as people
            out[collection].setdefault(path, "value")
    return out


def build_values(store: Any, catalog: Catalog, kinds: Iterable[CollectionSpec] | None = None) -> ValueData:
    """Read the tenant's records once and index every linkable value with where it is stored.
    `kinds`: the tenant's kinds (default: the built-in ones and those its catalog's schemas carry)."""
    tenant = catalog.tenant
    directory = catalog.directory
    specs = {spec.name: spec for spec in (registry_of(catalog.schemas) if kinds is None else kinds)}
    fields = _value_fields(catalog, directory, specs)
    # (kind of handle, folded handle) -> people, to count where each person acts.
    handles: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, person in enumerate(directory.people):
        for kind in ("github", "slack_id", "jira", "email", "name"):
            handle = person.handle(kind)
            if handle:
                handles[(kind, fold_account(handle))].append(i)
    value_counts: dict[tuple[str, str], Counter] = defaultdict(Counter)  # (kind, value) -> (coll, path) -> n
    person_counts: dict[int, Counter] = defaultdict(Counter)  # person -> (coll, path, stored) -> n
    distinct: Counter = Counter()
    for collection, spec in specs.items():
        if collection == "people":
            continue
        paths = [(p, p.split("."), k) for p, k in fields.get(collection, {}).items()]
        people_paths = [(p, p.split("."), kind) for paths_ in spec.people_roles().values() for p, kind in paths_]
        if not paths and not people_paths:
            continue
        for doc in store.tenant_records(collection, tenant):
            for path, parts, kind in paths:
                for value in {v for v in _values_at(doc, parts) if isinstance(v, str)}:
                    if not 0 < len(value.strip()) <= MAX_VALUE_LENGTH:
                        continue
                    key = (kind, value)
                    if key not in value_counts:
                        if distinct[(collection, path)] >= MAX_VALUES_PER_FIELD:
                            continue
                        distinct[(collection, path)] += 1
                    value_counts[key][(collection, path)] += 1
            for path, parts, kind in people_paths:
                for stored in {v for v in _values_at(doc, parts) if isinstance(v, str)}:
                    for i in handles.get((kind, fold_account(stored)), ()):
                        person_counts[i][(collection, path, stored)] += 1
    entries: list[_Entry] = []
    for i, person in enumerate(directory.people):
        terms = sorted({normalize(a.lstrip("@")) for a in directory.aliases(person)} - {""})
        carriers = sorted(((c, p, s, n) for (c, p, s), n in person_counts[i].items()), key=lambda c: (-c[3], c[:3]))
        entries.append(_Entry("person", person.key, person.name, terms, carriers))
    for (kind, value), places in sorted(value_counts.items()):
        terms = {normalize(value)}
        if kind == "repo" and "/" in value:
            terms.add(normalize(value.rsplit("/", 1)[1]))  # "payments" names acme/payments
        carriers = sorted(((c, p, value, n) for (c, p), n in places.items()), key=lambda c: (-c[3], c[:3]))
        entries.append(_Entry(kind, value, value, sorted(terms - {""}), carriers))
    return ValueData(tenant, store.generation, entries)


def _path(settings: Settings, tenant: str) -> Path:
    return settings.data_dir / "values" / f"{check_tenant(tenant)}.json"


def load_values(store: Any, settings: Settings, catalog: Catalog) -> ValueData:
    """The tenant's value index as of the store's generation: read from the data dir, or rebuilt
    (and written atomically) when missing, damaged, another tenant's or from another generation."""
    path = _path(settings, catalog.tenant)
    try:
        data = json.loads(read_regular_text(path))
        if (data.get("format"), data.get("tenant"), data.get("generation")) == (
            VALUES_FORMAT,
            catalog.tenant,
            store.generation,
        ):
            return ValueData.from_json(data)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass  # missing or damaged: rebuilt below
    values = build_values(store, catalog)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(values.to_json(), ensure_ascii=False))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only or full data dir still answers, from the index built in memory
    return values


# ------------------------------------------------------------------------------------------------
# Searching
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Gram:
    text: str  # as written
    norm: str
    start: int
    end: int
    words: int


def question_grams(text: str) -> list[_Gram]:
    """The question's n-grams, longest first: up to four Latin words, and 2-4 character pieces of
    each run of Chinese characters. A possessive "'s" is not part of a name."""
    words = []
    for m in _LATIN.finditer(text):
        end = m.end() - 2 if m.group(0).lower().endswith("'s") else m.end()
        start = m.start() + (1 if m.group(0).startswith("@") else 0)
        if end > start:
            words.append((start, end))
    grams = []
    for n in range(MAX_GRAM_WORDS, 0, -1):
        for j in range(len(words) - n + 1):
            start, end = words[j][0], words[j + n - 1][1]
            grams.append(_Gram(text[start:end], normalize(text[start:end]), start, end, n))
    for m in _HAN_RUN.finditer(text):
        run = m.group(0)
        for size in range(min(4, len(run)), 1, -1):
            for k in range(len(run) - size + 1):
                piece = run[k : k + size]
                grams.append(_Gram(piece, piece, m.start() + k, m.start() + k + size, size))
    return grams[:MAX_GRAMS]


def _ordinary(gram: _Gram) -> bool:
    return all(w in ORDINARY_WORDS for w in gram.norm.split())


class ValueIndex:
    """A tenant's value index as one asker sees it (`resources.value_index_for`)."""

    def __init__(self, data: ValueData, store: Any, tenant: str, principals: Sequence[str]):
        self.data, self.store, self.tenant, self.principals = data, store, tenant, list(principals)

    def _matches(self, gram: _Gram) -> list[tuple[int, str, float]]:
        """(entry, rule, similarity 0..1) for one n-gram: exact, else prefix, token and fuzzy."""
        data, norm = self.data, gram.norm
        found = [(i, "exact", 1.0) for i in data.exact.get(norm, ())]
        if found or _ordinary(gram) or (len(norm) < 3 and not HAN.search(norm)):
            return found[:MAX_MATCHES_PER_GRAM]
        lo = bisect.bisect_right(data.sorted_terms, norm)
        for term in data.sorted_terms[lo : lo + MAX_MATCHES_PER_GRAM]:
            if not term.startswith(norm):
                break
            found += [(i, "prefix", len(norm) / len(term)) for i in data.exact[term]]
        found += [(i, "token", 1.0) for i in data.tokens.get(norm, ())]
        if not found and len(norm) >= 5 and not HAN.search(norm):
            edits = 1 if len(norm) <= 7 else 2
            for term, distance, _ in process.extract(
                norm, data.fuzzy_terms, scorer=Levenshtein.distance, score_cutoff=edits, limit=MAX_MATCHES_PER_GRAM
            ):
                found += [(i, "fuzzy", 1 - distance / max(len(term), len(norm))) for i in data.exact[term]]
        return found[:MAX_MATCHES_PER_GRAM]

    def search(self, text: str, *, kinds: Iterable[str] | None = None, limit: int = 5) -> list[ValueMatch]:
        """Values the question names, best first (rule, then records carrying it, then longer words),
        each found in a record the asker may read now."""
        deadline = time.monotonic() + SEARCH_MS / 1000
        wanted = set(kinds) if kinds is not None else None
        best: dict[int, tuple[tuple, _Gram, str, float]] = {}
        for gram in question_grams(text):
            if time.monotonic() > deadline:
                break
            for i, rule, similarity in self._matches(gram):
                entry = self.data.entries[i]
                if wanted is not None and entry.kind not in wanted:
                    continue
                rank = (RULES.index(rule), -entry.count, -len(gram.norm), -similarity)
                if i not in best or rank < best[i][0]:
                    best[i] = (rank, gram, rule, similarity)
        ranked = sorted(best.items(), key=lambda item: (item[1][0], item[0]))[:MAX_CANDIDATES]
        visible = self.visible([i for i, _ in ranked], deadline, needed=limit)
        out: list[ValueMatch] = []
        for i, (_, gram, rule, similarity) in ranked:
            if i in visible and len(out) < limit:
                out.append(self._match(i, visible[i], rule, _RULE_SCORE[rule] * similarity, gram))
        return out

    def nearest(self, text: str, *, kinds: Iterable[str] = ("person",), limit: int = 5) -> list[ValueMatch]:
        """The values most like `text` (whatever the rules say), for "did you mean": closest first."""
        deadline = time.monotonic() + SEARCH_MS / 1000
        wanted = set(kinds)
        norm = normalize(text)
        terms = {t for t, ids in self.data.exact.items() if any(self.data.entries[i].kind in wanted for i in ids)}
        scored: dict[int, float] = {}
        for term, score, _ in process.extract(
            norm, list(terms), scorer=fuzz.ratio, score_cutoff=60, limit=MAX_CANDIDATES
        ):
            for i in self.data.exact[term]:
                if self.data.entries[i].kind in wanted:
                    scored[i] = max(scored.get(i, 0.0), score / 100)
        ranked = sorted(scored.items(), key=lambda item: (-item[1], -self.data.entries[item[0]].count, item[0]))
        visible = self.visible([i for i, _ in ranked[:MAX_CANDIDATES]], deadline, needed=limit)
        gram = _Gram(text, norm, 0, len(text), len(norm.split()))
        return [self._match(i, visible[i], "fuzzy", score, gram) for i, score in ranked if i in visible][:limit]

    def of_kind(self, kind: str, *, containing: str = "", limit: int = 5) -> list[str]:
        """Some values of a kind the asker may read now, for "which did you mean" when none is spelt
        like the word asked: those holding `containing` first, then the most used."""
        deadline = time.monotonic() + SEARCH_MS / 1000
        word = normalize(containing)
        ids = sorted(
            (i for i, e in enumerate(self.data.entries) if e.kind == kind),
            key=lambda i: (word not in normalize(self.data.entries[i].value), -self.data.entries[i].count, i),
        )[:MAX_CANDIDATES]
        visible = self.visible(ids, deadline, needed=limit)
        return [self.data.entries[i].label or self.data.entries[i].value for i in ids if i in visible][:limit]

    def visible(
        self, ids: Sequence[int], deadline: float | None = None, needed: int | None = None
    ) -> dict[int, list[tuple[str, str, str, int]]]:
        """entry -> the carriers the asker may read now, entries in the order given until `needed` are
        found: for each (collection, field, value), one scoped query for a readable record that still
        holds it (an equality on the leading `$match`: the store's secondary indexes answer it in well
        under a millisecond). Fails closed: what the deadline or an error left unconfirmed is hidden."""
        deadline = time.monotonic() + SEARCH_MS / 1000 if deadline is None else deadline
        out: dict[int, list[tuple[str, str, str, int]]] = {}
        for i in ids:
            if needed is not None and len(out) >= needed:
                break
            for carrier in self.data.entries[i].carriers:
                remaining = int((deadline - time.monotonic()) * 1000)
                if remaining <= 0:
                    return out
                collection, path, stored, _ = carrier
                pipeline = [{"$match": {path: stored}}, {"$limit": 1}, {"$project": {"_id": 0, "ref": 1}}]
                try:
                    rows = run_pipeline(
                        self.store,
                        collection,
                        pipeline,
                        tenant=self.tenant,
                        principals=self.principals,
                        schema=None,
                        max_rows=1,
                        max_time_ms=remaining,
                    )
                except ExecutionError:
                    continue
                if rows:
                    out.setdefault(i, []).append(carrier)
        return out

    def _match(
        self, i: int, carriers: list[tuple[str, str, str, int]], rule: str, score: float, gram: _Gram
    ) -> ValueMatch:
        entry = self.data.entries[i]
        top = max(carriers, key=lambda c: c[3])
        return ValueMatch(
            entry.kind,
            entry.value,
            top[1],
            top[0],
            round(score, 3),
            rule,
            gram.text,
            gram.start,
            gram.end,
            entry.label,
            tuple(dict.fromkeys((c[0], c[1]) for c in carriers)),
        )


def link_values(question: str, index: ValueIndex, schema_names: Iterable[str], limit: int = 20) -> list[ValueMatch]:
    """The values the question names in the collections the asker has (`schema_names`), each span
    of the question linked at most once: best rule first, then the longer span."""
    names = set(schema_names)
    matches = [m for m in index.search(question, limit=MAX_CANDIDATES) if m.collection in names]
    matches.sort(key=lambda m: (RULES.index(m.rule), -(m.end - m.start)))
    taken: list[tuple[int, int]] = []
    out = []
    for m in matches:
        if all(m.end <= s or m.start >= e for s, e in taken):
            out.append(m)
            taken.append((m.start, m.end))
    return sorted(out, key=lambda m: m.start)[:limit]

"""`eval tend`: execution accuracy on TEND, a public natural-language-to-MongoDB benchmark.

Each TEND database (`mongodb_data/<db>.json`: {collection: [documents]}, child tables embedded as
arrays) is loaded as its own tenant of generic collections (`tend_<db>`) into the engine's store, every
record readable by every member (`acl` public), its `ref` the collection's unique id field when it has
one, else its row number. Each question runs through the engine's structured half (`run_structured`:
resolve, plan, validate, execute with scope) and the rows it returns are compared with the rows of
the gold query (`eval/tend_gold.py`, run on plain mongomock, no engine between).

Scoring (`same_result`), decided on train.json:
- rows are compared as multisets of value tuples: a row's value tuple is every leaf value it holds
  (nested objects and arrays flattened), sorted, field names ignored; numbers as numbers (1 == 1.0,
  rounded to 4 decimals: an average computed in another order), strings as they are, booleans apart;
  the benchmark's storage ids (ObjectId) and the engine's `ref` are not data and are left out;
- a number answers a number: when the gold is a count (`$count`, `.count()`, an empty count is 0) or a
  single row holding one number, the prediction is right when it is one row holding that one number;
- order counts only when the gold sorts and the question asks for an order (`ORDER_WORDS`); a top-N
  question without such a word is compared as a set of N rows.
A declined question (the engine gave no answer: a name it could not resolve, no plan that ran) is wrong
and counted apart.

The model run is slow on small machines, so a run may take a documented sample (`stratified:N`): the
records are dealt round-robin over (database, shape) strata, each stratum shuffled with a fixed seed,
and one of each record's five phrasings is taken (also by the seed).
"""

from __future__ import annotations

import json
import math
import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from context_engine.eval.tend_gold import SHAPES, GoldError, GoldQuery, parse_gold, plain_database, run_gold, shape_of

SPLITS = ("test", "train")
PLANNERS = ("offline", "llm")
SEED = 20260
NOW = datetime(2026, 1, 1, tzinfo=UTC)  # TEND's questions name no relative time
TENANT_PREFIX = "tend_"
# A TEND collection whose name is one of the engine's own kinds is stored under another name (the
# engine's `people` is its identity directory); the gold runs on plain mongomock under the original.
ENGINE_NAMES = {
    "people": "persons",
    "pull_requests": "pull_request_rows",
    "issues": "issue_rows",
    "messages": "message_rows",
    "documents": "document_rows",
    "commits": "commit_rows",
}
# The words that ask for an order (chosen on train.json: 2,453 of its 3,100 sorting golds' questions say
# one of them; "arranged by their age", "from tallest to shortest", "by descennding count" among the rest).
ORDER_WORDS = re.compile(
    r"\b(?:order(?:ed|ing)?|sort(?:ed|ing)?|top|most|least|first|highest|lowest|"
    r"ascen\w*|descen\w*|alphabetical(?:ly)?|rank(?:ed|ing)?|arrang\w*|from \w+est to)\b",
    re.I,
)
_SAMPLE = re.compile(r"stratified:([1-9]\d*)")
MAX_EXAMPLE_CHARS = 600  # a longer example costs a small model more reading than it teaches
# Solved train questions a prompt shows, within EXAMPLE_BUDGET characters (~250 tokens): they were the
# largest part of the prompt (a median 700 of 1,380 characters on train stratified:40), and every prompt
# token cost the loaded 2-core machine 20-200 ms before the model wrote anything.
EXAMPLES = 2
EXAMPLE_BUDGET = 800
# Plans the model writes per question: the first and one correction. On train.json (stratified:30) the
# 1.5B model wrote the same rejected pipeline again on its second and third try; a third costs ~25 s.
LLM_ATTEMPTS = 2


class TendError(ValueError):
    """A TEND folder or option that cannot be evaluated; the message says what is missing."""


# ------------------------------------------------------------------ questions


@dataclass
class Question:
    record_id: int
    db: str
    phrasing: int
    text: str
    gold: GoldQuery
    shape: str


def load_split(data: Path, split: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The split's records whose database is present, and the databases that are missing."""
    if split not in SPLITS:
        raise TendError(f"--split is one of {', '.join(SPLITS)}, not {split!r}")
    path = data / f"{split}.json"
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TendError(f"no {path}: --data is the TEND folder (test.json, train.json, mongodb_data/)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TendError(f"cannot read {path}: {exc.__class__.__name__}") from None
    if not isinstance(records, list) or not all(
        isinstance(r, dict) and {"db_id", "nl_queries", "MQL"} <= set(r) for r in records
    ):
        raise TendError(f"{path} is not a list of TEND records (db_id, nl_queries, MQL)")
    present = {r["db_id"] for r in records if (data / "mongodb_data" / f"{r['db_id']}.json").is_file()}
    missing = sorted({r["db_id"] for r in records} - present)
    return [r for r in records if r["db_id"] in present], missing


def questions_of(records: Iterable[dict[str, Any]]) -> tuple[list[Question], list[tuple[int, str]]]:
    """Every phrasing of every record whose gold parses, and (record id, why) for those that do not."""
    out: list[Question] = []
    unreadable: list[tuple[int, str]] = []
    for r in records:
        try:
            gold = parse_gold(r["MQL"])
        except GoldError as exc:
            unreadable.append((r.get("record_id", -1), str(exc)))
            continue
        shape = shape_of(gold)
        out.extend(
            Question(r.get("record_id", -1), r["db_id"], i, text, gold, shape)
            for i, text in enumerate(r["nl_queries"])
            if isinstance(text, str)
        )
    return out, unreadable


def parse_sample(text: str | None) -> int | None:
    if text is None:
        return None
    m = _SAMPLE.fullmatch(text)
    if m is None:
        raise TendError(f"--sample is stratified:N (N questions, one phrasing per record), not {text!r}")
    return int(m.group(1))


def stratified(questions: list[Question], n: int, seed: int = SEED) -> list[Question]:
    """`n` questions, one phrasing per record, dealt round-robin over (database, shape) strata in an
    order shuffled once: every stratum is represented before any has two. Deterministic for a seed."""
    rng = random.Random(seed)
    records: dict[tuple[str, int], list[Question]] = {}
    for q in questions:
        records.setdefault((q.db, q.record_id), []).append(q)
    strata: dict[tuple[str, str], list[Question]] = {}
    for key in sorted(records):
        phrasings = records[key]
        chosen = phrasings[rng.randrange(len(phrasings))]
        strata.setdefault((chosen.db, chosen.shape), []).append(chosen)
    order = sorted(strata)
    for stratum in order:
        rng.shuffle(strata[stratum])
    rng.shuffle(order)  # a small sample spreads over the databases, not the first ones by name
    picked: list[Question] = []
    depth = 0
    while len(picked) < n and any(depth < len(s) for s in strata.values()):
        picked.extend(strata[k][depth] for k in order if depth < len(strata[k]))
        depth += 1
    return picked[:n]


# ------------------------------------------------------------------ scoring


def _leaves(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _normal(value: Any) -> tuple[str, Any] | None:
    """One leaf value as compared: numbers as rounded floats, booleans and strings apart; None for what
    is not data (a storage ObjectId)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        number = float(value)
        return ("number", round(number, 4) if math.isfinite(number) else str(number))
    if isinstance(value, str):
        return ("string", value)
    if value is None:
        return ("null", None)
    if type(value).__name__ == "ObjectId":
        return None
    if isinstance(value, datetime):
        return ("string", value.isoformat())
    return ("string", str(value))


def row_key(row: dict[str, Any]) -> tuple:
    """A row as a sorted tuple of its leaf values (field names ignored); the engine's `ref` left out."""
    values = (_normal(v) for k, v in row.items() if k != "ref" for v in _leaves(v))
    return tuple(sorted((v for v in values if v is not None), key=repr))


def scalar(rows: list[dict[str, Any]], counted: bool = False) -> float | None:
    """The one number a result is, if it is one: an empty count is 0; one row holding one number (nulls
    aside: a `$group` on null keeps an `_id: null`)."""
    if counted and not rows:
        return 0.0
    if len(rows) != 1:
        return None
    values = [v for v in row_key(rows[0]) if v[0] != "null"]
    if len(values) == 1 and values[0][0] == "number":
        return values[0][1]
    return None


def asks_order(question: str, gold: GoldQuery) -> bool:
    return any("$sort" in stage for stage in gold.pipeline) and bool(ORDER_WORDS.search(question))


def same_result(
    predicted: list[dict[str, Any]], gold_rows: list[dict[str, Any]], gold: GoldQuery, question: str
) -> bool:
    """Execution accuracy of one question (see the module's docstring for the rules)."""
    want = scalar(gold_rows, gold.counted)
    if want is not None:
        got = scalar(predicted, counted=True)
        return got is not None and got == want
    got_keys, want_keys = [row_key(r) for r in predicted], [row_key(r) for r in gold_rows]
    if asks_order(question, gold):
        return got_keys == want_keys
    return Counter(got_keys) == Counter(want_keys)


# ------------------------------------------------------------------ the engine's side


def engine_name(collection: str) -> str:
    return ENGINE_NAMES.get(collection, collection)


def tenant_of(db: str) -> str:
    return TENANT_PREFIX + re.sub(r"[^a-z0-9_]", "_", db.lower())


def _unique_key(docs: list[dict[str, Any]]) -> str | None:
    """The first top-level field named like an id whose values are present, scalar and distinct."""
    if not docs:
        return None
    for name in docs[0]:
        if not re.search(r"id$|_id|^id|code$", name, re.I):
            continue
        values = [d.get(name) for d in docs]
        if all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values) and len(set(values)) == len(
            values
        ):
            return name
    return None


def spec_for(collection: str, docs: list[dict[str, Any]]) -> Any:
    """The generic kind of one TEND collection: its name, the words that name it, its key, its value fields."""
    from context_engine.kinds import CollectionSpec
    from context_engine.sources.generic import name_paths

    name = engine_name(collection)
    said = collection.lower().replace("_", " ")
    noun = said[:-1] if said.endswith("s") and not said.endswith("ss") else said
    words = tuple(dict.fromkeys(rf"\b{re.escape(w)}\b" for w in (noun, noun + "s", said, name.replace("_", " "))))
    key = _unique_key(docs)
    # Every field holding names is a value field (the rule `ingest json` infers by too): a value the
    # question says links to the field that stores it, not to an unknown person.
    values: dict[str, tuple[str, ...]] = {path: (path,) for path in name_paths(docs) if path != key}
    return CollectionSpec(
        name=name, noun=noun, words=words, key=key or "ref", ref_prefix=f"{name}-", values=values, searchable=False
    )


def load_database(store: Any, db: str, data: dict[str, list[dict[str, Any]]]) -> str:
    """One TEND database into the store as tenant `tend_<db>`: a spec per collection, every record
    public to the tenant's members, its ref the unique id's value or the row number."""
    from context_engine.access import PUBLIC

    tenant = tenant_of(db)
    for collection, docs in data.items():
        docs = [d for d in docs if isinstance(d, dict)]
        if not docs:
            continue
        spec = spec_for(collection, docs)
        store.save_kind(tenant, spec)
        key = spec.key if spec.key != "ref" else None
        store.upsert(
            spec.name,
            tenant,
            (
                {**doc, "ref": f"{spec.ref_prefix}{doc[key] if key else row}", "acl": [PUBLIC]}
                for row, doc in enumerate(docs, 1)
            ),
        )
    return tenant


class TrainExamples:
    """Solved training questions close to a question, as examples for the model's prompt: each
    phrasing of each train.json record whose gold reads and uses only stages the validator allows,
    matched by rapidfuzz's token-set score on the question with its values masked (`masked`: "older
    than 30" is close to "older than 45"); one phrasing a record (its other phrasings teach nothing
    more), within `EXAMPLE_BUDGET` characters; never from the database asked about (train.json's
    databases are disjoint from test.json's; on train itself the question's own database is left out)."""

    def __init__(self, data: Path, allow_regex: bool = False, limit: int = EXAMPLES):
        from context_engine.query.validate import JOIN, STAGES

        allowed = (*STAGES, JOIN)  # a join is validated with the tenant's schemas, scope injected
        records, _ = load_split(data, "train")
        self.limit = limit
        self.texts: list[str] = []
        self.items: list[tuple[str, int, str]] = []  # (db, record id, the example line)
        for q in questions_of(records)[0]:
            if any(name not in allowed for stage in q.gold.pipeline for name in stage):
                continue
            plan = json.dumps(
                {"collection": q.gold.collection, "pipeline": _jsonable(q.gold.pipeline)},
                ensure_ascii=False,
                separators=(",", ":"),
            )
            if len(plan) > MAX_EXAMPLE_CHARS or (not allow_regex and "$regex" in plan):
                continue
            self.texts.append(masked(q.text))
            self.items.append((q.db, q.record_id, f"Q: {q.text} -> {plan}"))

    def similar(self, question: str, exclude_db: str = "") -> list[str]:
        from rapidfuzz import fuzz, process, utils

        out: list[str] = []
        records: set[tuple[str, int]] = set()
        used = 0
        for _, _, i in process.extract(
            masked(question),
            self.texts,
            scorer=fuzz.token_set_ratio,
            processor=utils.default_process,
            limit=8 * self.limit,
        ):
            db, record, line = self.items[i]
            if db == exclude_db or (db, record) in records or used + len(line) > EXAMPLE_BUDGET:
                continue
            out.append(line)
            records.add((db, record))
            used += len(line)
            if len(out) == self.limit:
                break
        return out


def masked(question: str) -> str:
    """A question as examples are matched: lower case, its quoted values, numbers and capitalised
    names inside it replaced by one mark each, so the wording of what is asked decides."""
    text = _QUOTED.sub(" val ", question)
    text = _NAME_INSIDE.sub(" val ", text)
    return _NUMBER.sub(" num ", text).lower()


_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
_NAME_INSIDE = re.compile(r"(?<=\w )[A-Z][\w.-]*(?: [A-Z][\w.-]*)*")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")


@dataclass
class Outcome:
    question: str
    db: str
    record_id: int
    phrasing: int
    shape: str
    gold: dict[str, Any]
    predicted: dict[str, Any] | None
    correct: bool
    declined: bool
    why: str
    seconds: float
    planner: str = "-"


def predict(
    question: str, settings: Any, planner: Any
) -> tuple[str, list[dict[str, Any]] | None, dict[str, Any] | None, str, str]:
    """(outcome kind, rows or None when declined, the executed pipeline, why, planner used); `planner`
    is the LLM planner, or None (offline). The question takes the product's path: the offline plan
    when it is confident, the model for the rest and for every correction (`engine.plan`)."""
    from context_engine.assistant.structured_query import run_structured
    from context_engine.query.engine import MaxAttempts, ResolutionFailed

    result = run_structured(question, settings, now=NOW, planner=planner)
    plan = getattr(result, "plan", None)
    attempts = getattr(result, "attempts", None) or []
    planner_used = attempts[-1].plan.planner if attempts else "-"
    shown = plan or (attempts[-1].plan if attempts else None)
    pipeline = {"collection": shown.collection, "pipeline": _jsonable(shown.pipeline)} if shown else None
    if isinstance(result, (ResolutionFailed, MaxAttempts)):
        why = getattr(result, "message", "") or "; ".join(str(a.error) for a in attempts if a.error)
        return result.kind, None, pipeline, why[:300], planner_used
    return result.kind, list(result.rows), pipeline, "", planner_used


def _jsonable(value: Any) -> Any:
    from context_engine.query.plan import to_extended_json

    return json.loads(json.dumps(to_extended_json(value), default=str))


# ------------------------------------------------------------------ the run


@dataclass
class TendReport:
    split: str
    planner: str
    sample: str
    outcomes: list[Outcome] = field(default_factory=list)
    gold_failures: list[tuple[int, str]] = field(default_factory=list)
    missing_databases: list[str] = field(default_factory=list)

    @staticmethod
    def _rate(rows: list[Outcome]) -> dict[str, Any]:
        correct = sum(o.correct for o in rows)
        return {
            "correct": correct,
            "total": len(rows),
            "accuracy": round(correct / len(rows), 4) if rows else 0.0,
            "declined": sum(o.declined for o in rows),
        }

    def summary(self) -> dict[str, Any]:
        times = sorted(o.seconds for o in self.outcomes)
        by_db: dict[str, list[Outcome]] = {}
        by_shape: dict[str, list[Outcome]] = {s: [] for s in SHAPES}
        for o in self.outcomes:
            by_db.setdefault(o.db, []).append(o)
            by_shape[o.shape].append(o)
        return {
            "split": self.split,
            "planner": self.planner,
            "sample": self.sample,
            **self._rate(self.outcomes),
            "median_seconds": round(statistics.median(times), 3) if times else None,
            "p90_seconds": round(times[int(0.9 * (len(times) - 1))], 3) if times else None,
            "by_database": {db: self._rate(rows) for db, rows in sorted(by_db.items())},
            "by_shape": {s: self._rate(rows) for s, rows in by_shape.items() if rows},
            "gold_failures": [{"record_id": r, "why": w} for r, w in self.gold_failures],
            "missing_databases": self.missing_databases,
        }


def evaluate(
    data: Path,
    settings: Any,
    split: str = "test",
    planner: str = "offline",
    limit: int | None = None,
    sample: int | None = None,
    progress: Callable[[Outcome], None] | None = None,
) -> TendReport:
    """Load the split's databases as tenants of `settings`' store, run every (sampled) question, score it."""
    from context_engine.query.llm_planner import LLMPlanner
    from context_engine.resources import chat_model_for
    from context_engine.store.documents import open_store

    if planner not in PLANNERS:
        raise TendError(f"--planner is one of {', '.join(PLANNERS)}, not {planner!r}")
    records, missing = load_split(data, split)
    questions, unreadable = questions_of(records)
    report = TendReport(
        split,
        planner,
        f"stratified:{sample} (seed {SEED}, one phrasing per record)" if sample else "all",
        gold_failures=list(unreadable),
        missing_databases=missing,
    )
    if sample:
        questions = stratified(questions, sample)
    questions = questions[:limit]
    golds = _load(data, sorted({q.db for q in questions}), open_store(settings))
    model = chat_model_for(settings.with_overrides(use_llm=True), "planner") if planner == "llm" else None
    if planner == "llm" and model is None:
        raise TendError("--planner llm needs a chat model: set OPENAI_BASE_URL (and OPENAI_API_KEY)")
    examples = TrainExamples(data, allow_regex=settings.allow_regex) if model is not None else None
    gold_rows: dict[int, list[dict[str, Any]] | None] = {}
    for q in questions:
        if q.record_id not in gold_rows:
            try:
                gold_rows[q.record_id] = run_gold(golds[q.db], q.gold)
            except GoldError as exc:
                gold_rows[q.record_id] = None
                report.gold_failures.append((q.record_id, str(exc)))
        want = gold_rows[q.record_id]
        if want is None:
            continue  # the gold itself does not run: not a question anyone can be scored on
        s = settings.with_overrides(tenant=tenant_of(q.db), use_llm=planner == "llm")
        if planner == "llm":
            s = s.with_overrides(max_attempts=min(s.max_attempts, LLM_ATTEMPTS))
        started = time.perf_counter()
        try:
            kind, rows, pipeline, why, used = predict(
                q.text,
                s,
                model
                and LLMPlanner(
                    model, max_rows=s.max_rows, examples=lambda text, db=q.db: examples.similar(text, exclude_db=db)
                ),
            )
        except Exception as exc:  # noqa: BLE001 - an engine bug is a wrong answer with its reason, not the end of the run
            kind, rows, pipeline, why, used = "error", None, None, f"{exc.__class__.__name__}: {exc}"[:300], "-"
        seconds = time.perf_counter() - started
        correct = rows is not None and same_result(rows, want, q.gold, q.text)
        if rows is not None and not correct and not why:
            why = f"{kind}: {len(rows)} rows, gold {len(want)}"
        report.outcomes.append(
            Outcome(
                q.text,
                q.db,
                q.record_id,
                q.phrasing,
                q.shape,
                {"collection": q.gold.collection, "pipeline": _jsonable(q.gold.pipeline)},
                pipeline,
                correct,
                kind in ("resolution_failed", "max_attempts"),
                why,
                round(seconds, 3),
                used,
            )
        )
        if progress:
            progress(report.outcomes[-1])
    return report


def _load(data: Path, dbs: list[str], store: Any) -> dict[str, Any]:
    """Each database into the engine's store (one commit) and into a plain mongomock database for the gold."""
    golds = {}
    for db in dbs:
        try:
            content = json.loads((data / "mongodb_data" / f"{db}.json").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TendError(f"cannot read mongodb_data/{db}.json: {exc.__class__.__name__}") from None
        if not isinstance(content, dict) or not all(isinstance(v, list) for v in content.values()):
            raise TendError(f"mongodb_data/{db}.json is not {{collection: [documents]}}")
        golds[db] = plain_database(content)
        load_database(store, db, content)
    store.commit()
    return golds


def write_outcomes(report: TendReport, path: Path) -> None:
    """Every question's result, one JSON object a line, after the summary line."""
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"summary": report.summary()}, ensure_ascii=False) + "\n")
        for o in report.outcomes:
            out.write(json.dumps(asdict(o), ensure_ascii=False, default=str) + "\n")

"""Feedback that teaches: 👍/👎 on an answer, with a note or a corrected plan, kept per tenant.

    <data-dir>/feedback.sqlite   last_ask (tenant, asker) -> the last question, plan, answer, now
                                 feedback  one row per 👍/👎: tenant, asker, question, plan, corrected
                                           plan, answer, note, time, the template it became

The asker and the tenant of a feedback row are the caller's (the CLI's flags, the server's API key,
MCP's identity), never the feedback's own text. A 👍 on a structured answer, or a corrected plan
(validated first: a plan the validator refuses is refused here too), becomes a template of the
tenant's context set, its people, times and numbers turned into parameters.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from context_engine.config import check_question, check_tenant
from context_engine.query import context_sets
from context_engine.query.catalog import Catalog
from context_engine.query.engine import resolve
from context_engine.query.plan import from_extended_json, to_extended_json
from context_engine.query.schema import CollectionSchema
from context_engine.query.validate import ValidationPolicy, validate_pipeline
from context_engine.text import parse_datetime

RATINGS = ("up", "down")
MAX_NOTE = 2_000  # characters: a note is a sentence or two, not a document
MAX_ANSWER = 20_000  # characters of the answer kept beside the feedback
MAX_PLAN = 16_000  # characters of a plan's JSON (the validator's own cap is half of it)


class FeedbackError(ValueError):
    """Feedback that cannot be taken: one line saying why."""


@dataclass
class Feedback:
    id: int
    tenant: str
    asker: str
    rating: str
    question: str
    plan: dict[str, Any] | None
    corrected: dict[str, Any] | None
    answer: str
    note: str
    now: str
    created: str
    template: str = ""


def check_note(note: Any) -> str:
    if note is None:
        return ""
    if not isinstance(note, str):
        raise FeedbackError("the note must be text")
    if len(note) > MAX_NOTE:
        raise FeedbackError(f"the note is {len(note):,} characters; at most {MAX_NOTE:,}")
    return note.strip()


def check_plan(
    plan: Any, schemas: dict[str, CollectionSchema], policy: ValidationPolicy = ValidationPolicy()
) -> dict[str, Any]:
    """A plan `{collection, pipeline}` (Extended JSON) that the validator accepts for this tenant's
    data, in Extended JSON; FeedbackError with the validator's first sentence otherwise."""
    if isinstance(plan, str):
        if len(plan) > MAX_PLAN:
            raise FeedbackError(f"the plan is over {MAX_PLAN:,} characters")
        try:
            plan = json.loads(plan)
        except json.JSONDecodeError as exc:
            raise FeedbackError(f"the plan is not valid JSON: {exc.msg} at position {exc.pos}") from None
        except (ValueError, RecursionError):
            raise FeedbackError("the plan cannot be read: a number too long or nesting too deep") from None
    if (
        not isinstance(plan, dict)
        or set(plan) - {"collection", "pipeline"}
        or not isinstance(plan.get("collection"), str)
    ):
        raise FeedbackError('a plan is {"collection": NAME, "pipeline": [stages]}')
    schema = schemas.get(plan["collection"])
    if schema is None:
        raise FeedbackError(
            f"the plan's collection {plan['collection']!r} has no records here "
            f"(known: {', '.join(sorted(schemas)) or 'none'})"
        )
    try:
        size = len(json.dumps(plan))
    except (TypeError, ValueError, RecursionError):
        raise FeedbackError("the plan cannot be written as JSON") from None
    if size > MAX_PLAN:
        raise FeedbackError(f"the plan is over {MAX_PLAN:,} characters")
    errors = validate_pipeline(from_extended_json(plan.get("pipeline")), schema, policy)
    if errors:
        raise FeedbackError(f"the plan was refused: {errors[0]}")
    return {"collection": plan["collection"], "pipeline": to_extended_json(from_extended_json(plan["pipeline"]))}


class FeedbackStore:
    """One SQLite file per data dir, rows per tenant. WAL and a busy timeout: the server's threads,
    an MCP process and the CLI may write at once; each write is one short transaction."""

    def __init__(self, data_dir: Path):
        self.path = Path(data_dir) / "feedback.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as db, db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS last_ask (tenant TEXT, asker TEXT, question TEXT, plan TEXT, "
                "answer TEXT, now TEXT, at TEXT, PRIMARY KEY (tenant, asker))"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS feedback (id INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT, "
                "asker TEXT, rating TEXT, question TEXT, plan TEXT, corrected TEXT, answer TEXT, note TEXT, "
                "now TEXT, created TEXT, template TEXT DEFAULT '')"
            )

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        db.execute("PRAGMA busy_timeout=30000")
        return db

    def record_ask(
        self, tenant: str, asker: str | None, question: str, plan: dict[str, Any] | None, answer: str, now: str
    ) -> None:
        """What was last asked by this asker of this tenant: what a feedback without a question is about."""
        with closing(self._connect()) as db, db:
            db.execute(
                "INSERT OR REPLACE INTO last_ask VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    check_tenant(tenant),
                    asker or "",
                    question,
                    json.dumps(plan) if plan else None,
                    str(answer or "")[:MAX_ANSWER],
                    now,
                    _utcnow(),
                ),
            )

    def last_ask(self, tenant: str, asker: str | None = None) -> dict[str, Any] | None:
        """This asker's last question (`asker` "" for a run without one); None: the tenant's newest, whoever asked."""
        sql = "SELECT asker, question, plan, answer, now FROM last_ask WHERE tenant = ?"
        args: tuple[Any, ...] = (check_tenant(tenant),)
        if asker is not None:
            sql, args = sql + " AND asker = ?", args + (asker,)
        with closing(self._connect()) as db:
            row = db.execute(sql + " ORDER BY at DESC LIMIT 1", args).fetchone()
        if row is None:
            return None
        return {
            "asker": row[0],
            "question": row[1],
            "plan": json.loads(row[2]) if row[2] else None,
            "answer": row[3],
            "now": row[4],
        }

    def add(
        self,
        tenant: str,
        asker: str,
        rating: str,
        question: str,
        plan: dict[str, Any] | None,
        corrected: dict[str, Any] | None,
        answer: str,
        note: str,
        now: str,
    ) -> Feedback:
        created = _utcnow()
        with closing(self._connect()) as db, db:
            cursor = db.execute(
                "INSERT INTO feedback (tenant, asker, rating, question, plan, corrected, answer, note, now, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    check_tenant(tenant),
                    asker,
                    rating,
                    question,
                    json.dumps(plan) if plan else None,
                    json.dumps(corrected) if corrected else None,
                    answer[:MAX_ANSWER],
                    note,
                    now,
                    created,
                ),
            )
            row_id = cursor.lastrowid
        return Feedback(
            int(row_id or 0), tenant, asker, rating, question, plan, corrected, answer[:MAX_ANSWER], note, now, created
        )

    def set_template(self, feedback_id: int, name: str) -> None:
        with closing(self._connect()) as db, db:
            db.execute("UPDATE feedback SET template = ? WHERE id = ?", (name, feedback_id))

    def all(self, tenant: str) -> list[Feedback]:
        with closing(self._connect()) as db:
            rows = db.execute(
                "SELECT id, tenant, asker, rating, question, plan, corrected, answer, note, now, "
                "created, template FROM feedback WHERE tenant = ? ORDER BY id",
                (check_tenant(tenant),),
            ).fetchall()
        return [
            Feedback(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                json.loads(r[5]) if r[5] else None,
                json.loads(r[6]) if r[6] else None,
                r[7],
                r[8],
                r[9],
                r[10],
                r[11] or "",
            )
            for r in rows
        ]


def remember_ask(
    data_dir: Path, tenant: str, asker: str | None, question: str, result: dict[str, Any], now: str
) -> None:
    """A finished run (the graph's output: its queries and answer) as the asker's last question.
    Best effort: a read-only or full data dir must not cost the person the answer they were given."""
    plan = next(
        (
            {"collection": q["collection"], "pipeline": q["pipeline"]}
            for q in result.get("queries") or []
            if isinstance(q, dict) and "pipeline" in q
        ),
        None,
    )
    with suppress(OSError, sqlite3.Error):
        FeedbackStore(data_dir).record_ask(tenant, asker, question, plan, str(result.get("answer") or ""), now)


def _utcnow() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def give(
    store: FeedbackStore,
    *,
    tenant: str,
    asker: str | None,
    rating: str,
    question: str | None = None,
    note: Any = None,
    corrected: Any = None,
    schemas: dict[str, CollectionSchema],
    policy: ValidationPolicy = ValidationPolicy(),
) -> tuple[Feedback, dict[str, Any] | None]:
    """Check and store one feedback of `asker` (the caller's identity, never the body's). Without a
    question it is about the asker's last question (`asker` None: the tenant's last, the CLI's case).
    Returns the row and the plan to teach (the corrected plan, else a 👍's plan), already validated."""
    if rating not in RATINGS:
        raise FeedbackError(f"rating must be one of {', '.join(RATINGS)}")
    note = check_note(note)
    fixed = check_plan(corrected, schemas, policy) if corrected is not None else None
    last = store.last_ask(tenant, asker)
    if question is not None:
        try:
            question = check_question(question.strip() if isinstance(question, str) else question)
        except ValueError as exc:
            raise FeedbackError(str(exc)) from None
        if last is not None and last["question"] != question:
            last = None  # feedback on another question than the last: no stored plan or answer is about it
    elif last is None:
        raise FeedbackError("no question asked yet to give feedback on; ask one first or name it with --question")
    if question is None:
        question = last["question"]  # type: ignore[index]
    plan = last["plan"] if last else None
    row = store.add(
        tenant,
        last["asker"] if last and asker is None else (asker or ""),
        rating,
        question,
        plan,
        fixed,
        str(last["answer"] if last else ""),
        note,
        str(last["now"] if last else ""),
    )
    teach = fixed if fixed is not None else (plan if rating == "up" and plan else None)
    if teach is not None and fixed is None:
        teach = check_plan(teach, schemas, policy)  # the stored plan was valid when it ran; the data may have moved
    return row, teach


def teach(
    data_dir: Path,
    row: Feedback,
    plan: dict[str, Any],
    catalog: Catalog,
    store: FeedbackStore,
    policy: ValidationPolicy = ValidationPolicy(),
) -> str:
    """The plan becomes a template of the tenant's context set (its people, times and numbers as
    parameters, found by resolving the question as it was asked); returns the template's name."""
    asker = catalog.directory.asker(row.asker) if row.asker else None
    now = parse_datetime(row.now) if row.now else None
    ctx, _ = resolve(row.question, now or datetime.now(UTC).replace(tzinfo=None), catalog, asker)
    slots = context_sets.slots_for(row.question, ctx.mentions, ctx.times) if ctx is not None else []
    path = context_sets.tenant_file(data_dir, row.tenant)
    existing = context_sets.read_file(path) if path is not None else context_sets.shipped()
    name = context_sets.unique_name(existing, f"feedback-{row.id}")
    template = context_sets.templatize(
        name,
        row.question,
        plan["collection"],
        from_extended_json(plan["pipeline"]),
        slots,
        source=f"feedback #{row.id} ({row.rating}) by {row.asker or 'anonymous'}",
    )
    context_sets.add_template(data_dir, row.tenant, template, catalog.schemas, policy)
    store.set_template(row.id, name)
    return name


def submit(
    data_dir: Path,
    catalog: Catalog,
    *,
    asker: str | None,
    rating: str,
    question: str | None = None,
    note: Any = None,
    corrected: Any = None,
    policy: ValidationPolicy = ValidationPolicy(),
) -> dict[str, Any]:
    """`give`, then `teach` what it confirmed or corrected: what every surface calls."""
    store = FeedbackStore(data_dir)
    row, plan = give(
        store,
        tenant=catalog.tenant,
        asker=asker,
        rating=rating,
        question=question,
        note=note,
        corrected=corrected,
        schemas=catalog.schemas,
        policy=policy,
    )
    name = teach(data_dir, row, plan, catalog, store, policy) if plan is not None else ""
    return {
        "id": row.id,
        "rating": row.rating,
        "question": row.question,
        "asker": row.asker,
        "plan": bool(row.plan),
        "corrected": bool(row.corrected),
        "template": name,
    }


def regression_items(store: FeedbackStore, tenant: str) -> list[dict[str, Any]]:
    """All feedback with a plan as a structured regression set (`eval structured` lines): a 👍's
    plan or a corrected plan is the gold; a 👎 without a correction has no gold and is left out."""
    items = []
    for row in store.all(tenant):
        gold = row.corrected or (row.plan if row.rating == "up" else None)
        if not gold:
            continue
        stages = [next(iter(stage), "") for stage in gold["pipeline"]]
        compare = "count" if stages and stages[-1] == "$count" else "groups" if "$group" in stages else "refs"
        items.append(
            {
                "id": f"fb-{row.id}",
                "question": row.question,
                "now": row.now or None,
                "as": row.asker or None,
                "tenant": tenant,
                "collection": gold["collection"],
                "gold": gold["pipeline"],
                "compare": compare,
            }
        )
    return items

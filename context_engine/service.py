"""The engine as a service: every operation a surface offers (CLI, LangServe server, MCP), once.

Each operation takes a scoped configuration (`config.Settings`: tenant, asker, data dir, caps) and
returns plain results (dataclasses, JSON-ready dicts); a problem the caller can fix is raised as one
of `USER_ERRORS`, whose message is one sentence for the person or agent who asked. Surfaces only
parse their input, call an operation and present its result: none of them builds pipelines, scopes
or retrievers from engine parts, so what one surface does the others do too (`tests/test_layers.py`
holds them to it).

Access: every read goes through the asker's principals (`runtime.principals_for`: the one account
group `settings.asker` names exactly, none for no asker) and the tenant, injected by code; nothing an
operation is given can widen them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from context_engine.config import Settings, TenantError, check_question
from context_engine.kinds import BUILTIN, Registry
from context_engine.query.context_sets import ContextSetError
from context_engine.query.execute import ExecutionError, run_pipeline, scope_filter
from context_engine.query.feedback import FeedbackError, remember_ask, submit
from context_engine.query.identity import AmbiguousPerson, Person, UnknownPerson
from context_engine.query.plan import from_extended_json
from context_engine.query.schema import CollectionSchema
from context_engine.query.validate import ValidationPolicy, validate_pipeline
from context_engine.retrievers.index import IndexDamaged, IndexMissing
from context_engine.runtime import catalog_for, chat_model_for, principals_for, store_for
# What a surface needs beside the operations: a Stop that the operation it started reads (a cancelled
# MCP call, a client gone), and JSON without non-finite numbers for what it returns.
from context_engine.store.bounded import Cancelled, Stop, stop_on
from context_engine.store.documents import StoreError, strip_hidden
from context_engine.store.expressions import finite_for_json
from context_engine.store.sqlite_file import StoreFileError
from context_engine.text import TimeRangeError, parse_now

__all__ = [
    "USER_ERRORS", "AmbiguousPerson", "Answer", "ContextSetError", "ExecutionError", "FeedbackError",
    "IndexDamaged", "IndexMissing", "NoTenantData", "PeopleReport", "PipelineRejected", "RecordNotFound",
    "RecordView", "SearchHit", "StoreError", "StoreFileError", "TenantError", "TimeRangeError",
    "UnknownCollection", "UnknownPerson", "ask", "check_scope", "feedback", "find_people", "get_record",
    "people", "query", "schema", "search", "status",
    "BUILTIN", "Cancelled", "Stop", "stop_on", "finite_for_json",
]


class NoTenantData(LookupError):
    """The tenant asked about holds no records in this data dir."""


class UnknownCollection(LookupError):
    """A collection the tenant does not have."""


class PipelineRejected(ValueError):
    """A hand-written pipeline the validator refused; `errors` holds one sentence per problem."""

    def __init__(self, errors: list[str]):
        super().__init__("rejected: " + " | ".join(errors))
        self.errors = errors


class RecordNotFound(LookupError):
    """No record by that ref that the asker may read (absent and forbidden look the same)."""


# What a surface reports as the caller's problem, in one line (CLI exit 2, MCP tool error, HTTP 4xx):
# the input, the scope or the data dir it points at, never an engine fault. StoreFileError (a full
# disk, a damaged file) is a StoreError too; the CLI tells it apart for its exit code.
USER_ERRORS: tuple[type[Exception], ...] = (
    ValueError,  # a question, time, tenant name, feedback or context set the rules refuse
    NoTenantData, UnknownCollection, RecordNotFound, UnknownPerson, AmbiguousPerson,
    ExecutionError, StoreError, IndexMissing, IndexDamaged,
)


def check_scope(settings: Settings) -> None:
    """The tenant has data and `settings.asker` (if any) names exactly one account of its directory;
    raises `NoTenantData`, `UnknownPerson` or `AmbiguousPerson`. Surfaces check it once up front
    (a CLI command, an MCP stdio server, an API key at start), so a typo is said before any work."""
    tenants = store_for(settings).tenants()
    if settings.tenant not in tenants:
        raise NoTenantData(f"tenant {settings.tenant!r} has no data (tenants with data: "
                           f"{', '.join(tenants) or 'none'})")
    principals_for(settings)


def _policy(settings: Settings) -> ValidationPolicy:
    return ValidationPolicy(allow_regex=settings.allow_regex, max_limit=settings.max_rows)


def _kinds(settings: Settings) -> Registry:
    """The kinds the tenant has: the built-in ones and its own, as its store keeps them."""
    return store_for(settings).kinds(settings.tenant)


def _known(settings: Settings, collection: str) -> None:
    kinds = _kinds(settings)
    if collection not in kinds:
        raise UnknownCollection(f"unknown collection {collection[:80]!r}; use one of: {', '.join(kinds.names())}")


# ------------------------------------------------------------------------------------------- ask
ANSWER_FIELDS = ("route", "answer", "queries", "records", "citations", "reflection", "declined")
"""The graph output fields an answer carries to a caller (the rest is the graph's working state)."""


@dataclass
class Answer:
    """One question through the graph: the question as asked, when, and the graph's output."""

    question: str
    now: datetime
    output: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """JSON throughout: pipelines in Extended JSON (re-runnable with `query`), documents as text + metadata."""
        return {"question": self.question, **{key: self.output.get(key) for key in ANSWER_FIELDS},
                "documents": [{"text": d.page_content, "metadata": d.metadata} for d in self.output.get("documents", [])]}


def ask(settings: Settings, question: str, now: str | datetime | None = None) -> Answer:
    """The question through the graph (`assistant.graph.graph`, the one Studio and LangServe run) as
    the settings' asker, then kept as the asker's last question (what `feedback` rates by default).
    Raises ValueError for an empty or over-long question or a malformed `now`."""
    question = check_question(question.strip() if isinstance(question, str) else question)
    when = parse_now(now)
    from context_engine.assistant.graph import graph  # imported on use: the other operations never pay for it

    context = {"tenant": settings.tenant, "user": settings.asker or "", "anonymous": settings.asker is None,
               "data_dir": str(settings.data_dir), "use_llm": settings.use_llm}
    output = graph.invoke({"question": question, "now": when.isoformat()}, context=context)
    remember_ask(settings.data_dir, settings.tenant, settings.asker, question, output,
                 when.strftime("%Y-%m-%dT%H:%M:%SZ"))
    return Answer(question, when, output)


# ----------------------------------------------------------------------------------------- query
def query(settings: Settings, collection: str, pipeline: Any) -> list[dict[str, Any]]:
    """One hand-written aggregation pipeline (parsed JSON; dates in Extended JSON) on one of the
    tenant's collections: validated against the asker's schema with the settings' policy, then run
    with the tenant and the asker's access as its first stage and the settings' row and time caps.
    Raises `UnknownCollection`, `PipelineRejected` (every problem) or `ExecutionError`."""
    _known(settings, collection)
    pipeline = from_extended_json(pipeline)
    catalog = catalog_for(settings)
    schema_ = catalog.schemas.get(collection)
    errors = validate_pipeline(pipeline, schema_, _policy(settings), schemas=catalog.schemas)
    if errors:
        raise PipelineRejected(errors)
    return run_pipeline(store_for(settings), collection, pipeline, tenant=settings.tenant,
                        principals=principals_for(settings), schema=schema_, max_rows=settings.max_rows,
                        max_time_ms=settings.max_time_ms)


# ---------------------------------------------------------------------------------------- search
@dataclass
class SearchHit:
    """One record found by `search`: its best matching chunk as `text`."""

    ref: str
    collection: str
    title: str | None
    url: str | None
    date: str | None
    score: float         # the fused score (BM25 + dense)
    rerank_score: float  # the reranker's; hits are in this order
    text: str

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


def search(settings: Settings, text: str, k: int = 8) -> list[SearchHit]:
    """Hybrid search as the graph's content half does it: BM25 and dense lists over the tenant's
    index, checked against the store's current access, fused per record (`settings.fusion`), the
    top `settings.rerank_k` reranked (`settings.reranker`, with the judge model when it is "llm");
    the best `k` records, each once. Raises ValueError for empty or over-long text, `IndexMissing`
    when the tenant was never indexed."""
    from context_engine.assistant.retriever import make_retriever
    from context_engine.retrievers.rerank import make_reranker

    text = check_question(text)
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    fused = make_retriever(settings.with_overrides(retrieve_k=max(settings.rerank_k, k))).invoke(text)
    reranker = make_reranker(settings, llm=chat_model_for(settings, "judge") if settings.reranker == "llm" else None)
    ranked = reranker.rerank(text, fused[:max(settings.rerank_k, k)], top_n=k)
    return [SearchHit(ref=doc.metadata["doc_ref"], collection=doc.metadata["collection"],
                      title=doc.metadata.get("title"), url=doc.metadata.get("url"), date=doc.metadata.get("date"),
                      score=round(float(doc.metadata["score"]), 4), rerank_score=round(doc.metadata["rerank_score"], 4),
                      text=doc.page_content) for doc in ranked]


# ------------------------------------------------------------------------------------ get_record
@dataclass
class RecordView:
    """One record (hidden fields stripped), the links around it and the linked records' headers."""

    collection: str
    record: dict[str, Any]
    links: list[dict[str, Any]]
    linked: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


LINKED_FIELDS = ("ref", "collection", "title", "url", "date")


def get_record(settings: Settings, ref: str, max_links: int = 20) -> RecordView:
    """The record `ref` names, in whichever of the tenant's collections holds it, with what it links
    to and what links to it (one hop, access-scoped). Raises `RecordNotFound` when the asker may not
    read it or it does not exist: the two look the same."""
    from context_engine.answering.links import follow_links

    store = store_for(settings)
    mine = principals_for(settings)
    scope = scope_filter(settings.tenant, mine)
    for collection in _kinds(settings).names():
        found = store.find_refs(collection, scope, [ref])
        if found:
            chain = follow_links(store, settings.tenant, mine, [ref], max_hops=1, limit=12).to_json()
            return RecordView(collection, strip_hidden(found[0]), chain["links"][:max_links],
                              [{k: r[k] for k in LINKED_FIELDS} for r in chain["records"] if r["ref"] != ref])
    raise RecordNotFound(f"no record {ref!r} that you can read")


# ---------------------------------------------------------------------------------------- schema
def schema(settings: Settings, collection: str | None = None) -> dict[str, CollectionSchema]:
    """The discovered schema of each collection (or of `collection`), from the records the asker may
    read only: a private record's fields and values never show to anyone else."""
    if collection is not None:
        _known(settings, collection)
    schemas = catalog_for(settings).schemas
    return {name: s for name, s in schemas.items() if collection in (None, name)}


# ---------------------------------------------------------------------------------------- people
@dataclass
class PeopleReport:
    """The tenant's identity directory: each person with their accounts and the evidence that joined
    them, and the possible matches left apart (`sources.people.Conflict`)."""

    people: list[dict[str, Any]]
    conflicts: list[Any] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"people": self.people, "conflicts": [vars(c) for c in self.conflicts]}


def people(settings: Settings) -> PeopleReport:
    """The tenant's directory as ingest stored it (an operator's view: every account and principal),
    sorted by name."""
    from context_engine.sources.connectors import saved_overrides
    from context_engine.sources.people import merge_people

    stored = [strip_hidden(p) for p in store_for(settings).collection("people").find({"tenant_id": settings.tenant})]
    # Merging the stored directory again changes nothing and recovers the conflicts left apart.
    directory = merge_people(stored, saved_overrides(settings.data_dir, settings.tenant))
    ordered = sorted(directory.people, key=lambda p: str(p.get("name") or p.get("login") or "").lower())
    return PeopleReport(ordered, list(directory.conflicts))


def find_people(settings: Settings, name: str, limit: int = 10) -> list[Person]:
    """The people one alias (name, login, Slack handle, e-mail, Chinese name or pinyin) names in the
    tenant's directory: one, or the candidates of a tie. Raises `UnknownPerson`."""
    directory = catalog_for(settings).directory
    try:
        return [directory.lookup(name)]
    except AmbiguousPerson as exc:
        return list(exc.candidates[:limit])


# ---------------------------------------------------------------------------------------- status
def status(settings: Settings, tenants: list[str] | None = None) -> dict[str, Any]:
    """Per tenant (all with data, or `tenants`): record counts, the semantic index (chunks, still
    embedding, how far it lags the store), whether an ingest is writing, and damaged rows skipped."""
    from context_engine.retrievers.index import index_lag, index_status
    from context_engine.store.writer_lock import writer_busy

    store = store_for(settings)
    report: dict[str, Any] = {"data_dir": str(settings.data_dir), "store_generation": store.generation,
                              "writer": writer_busy(settings.data_dir), "tenants": {}}
    for tenant in store.tenants() if tenants is None else tenants:
        counts = {name: n for name in store.kinds(tenant).names() if (n := store.count(name, tenant))}
        index = index_status(settings, tenant)
        if index is not None and not index.get("damaged"):
            index["lag"] = index_lag(settings, tenant, store)
        report["tenants"][tenant] = {"records": counts, "index": index}
    report["damaged_rows"] = store.damaged_rows()  # skipped wherever read; of no tenant one can name
    return report


# -------------------------------------------------------------------------------------- feedback
def feedback(settings: Settings, rating: str, *, question: str | None = None, note: Any = None,
             corrected: Any = None) -> dict[str, Any]:
    """👍/👎 from the settings' asker on their last answer (or `question`); a confirmed or corrected
    plan (`{"collection", "pipeline"}`, validated with the settings' policy) becomes a template of the
    tenant's context set. Raises `FeedbackError` or `ContextSetError`."""
    return submit(settings.data_dir, catalog_for(settings), asker=settings.asker, rating=rating, question=question,
                  note=note, corrected=corrected, policy=_policy(settings))


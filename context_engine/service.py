"""The engine as a service: every operation a surface offers (CLI, LangServe server, MCP), once.

Each operation takes a scoped configuration (`config.Settings`: tenant, asker, data dir, caps) and
returns plain results (dataclasses, JSON-ready dicts); a problem the caller can fix is raised as one
of `USER_ERRORS`, whose message is one sentence for the person or agent who asked. Surfaces only
parse their input, call an operation and present its result: none of them builds pipelines, scopes
or retrievers from engine parts, so what one surface does the others do too (`tests/test_layers.py`
holds them to it).

Access: every read goes through the asker's principals (`resources.principals_for`: the one account
group `settings.asker` names exactly, none for no asker) and the tenant, injected by code; nothing an
operation is given can widen them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from context_engine.config import Settings, TenantError, check_question
from context_engine.kinds import BUILTIN, Registry
from context_engine.kinds.spec import HANDLE_KINDS
from context_engine.query.context_sets import ContextSetError
from context_engine.query.execute import ExecutionError, run_pipeline, scope_filter
from context_engine.query.feedback import FeedbackError, remember_ask, submit
from context_engine.query.identity import AmbiguousPerson, Person, UnknownPerson
from context_engine.query.plan import from_extended_json
from context_engine.query.schema import CollectionSchema
from context_engine.query.validate import ValidationPolicy, validate_pipeline
from context_engine.resources import catalog_for, chat_model_for, principals_for, store_for
from context_engine.retrievers.index import IndexDamaged, IndexMissing
from context_engine.retrievers.rerank import RerankerError, make_reranker
from context_engine.sources.connectors import ReadResult, SourceRequest
from context_engine.sources.generic import OwnOptions
from context_engine.sources.problems import ReadProblems

# A surface stops an operation it started (a cancelled MCP call, a client gone) with a Stop the
# operation's queries read (`stop_on`; `Cancelled` when they do).
from context_engine.store.bounded import SHUTDOWN, Cancelled, Stop, raise_if_stopped, stop_on
from context_engine.store.documents import StoreError, strip_hidden
from context_engine.store.expressions import finite_for_json
from context_engine.store.sqlite_file import StoreFileError
from context_engine.text import TimeRangeError, parse_now

__all__ = [
    "BUILTIN",
    "HANDLE_KINDS",
    "SHUTDOWN",
    "USER_ERRORS",
    "AmbiguousPerson",
    "Answer",
    "Cancelled",
    "ContextSetError",
    "ContextSetView",
    "ExecutionError",
    "FeedbackError",
    "IndexDamaged",
    "IndexMissing",
    "InvalidInput",
    "NoTenantData",
    "OwnOptions",
    "PeopleReport",
    "PipelineRejected",
    "RecordNotFound",
    "RecordView",
    "RerankerError",
    "SearchHit",
    "SourceReading",
    "SourceRequest",
    "Stop",
    "StoreError",
    "StoreFileError",
    "TenantError",
    "TimeRangeError",
    "UnknownCollection",
    "UnknownPerson",
    "UnknownTemplate",
    "add_template",
    "ask",
    "check_scope",
    "commit_records",
    "context_set",
    "export_context_set",
    "feedback",
    "feedback_questions",
    "find_people",
    "finite_for_json",
    "get_record",
    "github_event_records",
    "ingest",
    "mongodb_filter",
    "own_options",
    "own_options_from_spec",
    "parse_now",
    "people",
    "query",
    "raise_if_stopped",
    "read_source",
    "remember_ask",
    "remove_template",
    "schema",
    "search",
    "slack_event_records",
    "status",
    "stop_on",
    "sync_index",
    "try_template",
]


class InvalidInput(ValueError):
    """An operation's own input the rules refuse (an empty or over-long question, a malformed time):
    said before any work is done."""


class NoTenantData(LookupError):
    """The tenant asked about holds no records in this data dir."""


class UnknownCollection(LookupError):
    """A collection the tenant does not have."""


class PipelineRejected(ValueError):
    """A hand-written pipeline the validator refused; `errors` holds one sentence per problem."""

    def __init__(self, errors: list[str]):
        super().__init__("rejected: " + " | ".join(errors))
        self.errors = errors


class UnknownTemplate(LookupError):
    """No template of that name in the tenant's context set."""


class RecordNotFound(LookupError):
    """No record by that ref that the asker may read (absent and forbidden look the same)."""


# What a surface reports as the caller's problem, in one line (CLI exit 2, MCP tool error, HTTP 4xx):
# the input, the scope or the data dir it points at, never an engine fault. StoreFileError (a full
# disk, a damaged file) is a StoreError too; the CLI tells it apart for its exit code.
USER_ERRORS: tuple[type[Exception], ...] = (
    ValueError,  # InvalidInput, a tenant name, feedback or a context set the rules refuse, a time out of range
    NoTenantData,
    UnknownCollection,
    RecordNotFound,
    UnknownTemplate,
    UnknownPerson,
    AmbiguousPerson,
    ExecutionError,
    StoreError,
    IndexMissing,
    IndexDamaged,
    RerankerError,  # a reranker the configuration names that cannot run here
)


def check_scope(settings: Settings) -> None:
    """The tenant has data and `settings.asker` (if any) names exactly one account of its directory;
    raises `NoTenantData`, `UnknownPerson` or `AmbiguousPerson`. Surfaces check it once up front
    (a CLI command, an MCP stdio server, an API key at start), so a typo is said before any work."""
    tenants = store_for(settings).tenants()
    if settings.tenant not in tenants:
        raise NoTenantData(
            f"tenant {settings.tenant!r} has no data (tenants with data: {', '.join(tenants) or 'none'})"
        )
    principals_for(settings)


def check_key_people(settings: Settings, keys: Mapping[str, Any]) -> None:
    """Every API key's person (`entry.user`, in `entry.tenant`) names one account of its tenant's
    directory exactly, as `--as` does, checked before serving (LangServe and MCP over HTTP read the same
    keys file), so that a key never fails, is guessed or falls back to anyone at request time.
    ValueError names the key by its first characters only."""
    for key, entry in keys.items():
        if entry.user is None:
            continue
        try:
            check_scope(settings.with_overrides(tenant=entry.tenant, asker=entry.user))
        except USER_ERRORS as exc:
            raise ValueError(f"API key {key[:4]}...: {exc.args[0] if exc.args else exc}") from None


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
ANSWER_FIELDS = ("route", "answer", "queries", "records", "citations", "reflection", "declined", "model_error")
"""The graph output fields an answer carries to a caller (the rest is the graph's working state)."""


@dataclass
class Answer:
    """One question through the graph: the question as asked, when, and the graph's output."""

    question: str
    now: datetime
    output: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """JSON throughout: pipelines in Extended JSON (re-runnable with `query`), documents as text + metadata."""
        return {
            "question": self.question,
            **{key: self.output.get(key) for key in ANSWER_FIELDS},
            "documents": [{"text": d.page_content, "metadata": d.metadata} for d in self.output.get("documents", [])],
        }


def ask(settings: Settings, question: str, now: str | datetime | None = None) -> Answer:
    """The question through the graph (`assistant.graph.graph`, the one Studio and LangServe run) as
    the settings' asker, then kept as the asker's last question (what `feedback` rates by default).
    Raises `InvalidInput` for an empty or over-long question or a malformed or out-of-range `now`."""
    try:
        question = check_question(question.strip() if isinstance(question, str) else question)
        when = parse_now(now)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    from context_engine.assistant.context import Context
    from context_engine.assistant.graph import graph  # imported on use: the other operations never pay for it

    context = Context(
        tenant=settings.tenant,
        user=settings.asker or "",
        anonymous=settings.asker is None,
        data_dir=str(settings.data_dir),
        use_llm=settings.use_llm,
    )
    output = graph.invoke({"question": question, "now": when.isoformat()}, context=context)
    remember_ask(
        settings.data_dir, settings.tenant, settings.asker, question, output, when.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
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
    return run_pipeline(
        store_for(settings),
        collection,
        pipeline,
        tenant=settings.tenant,
        principals=principals_for(settings),
        schema=schema_,
        max_rows=settings.max_rows,
        max_time_ms=settings.max_time_ms,
    )


# ---------------------------------------------------------------------------------------- search
@dataclass
class SearchHit:
    """One record found by `search`: its best matching chunk as `text`."""

    ref: str
    collection: str
    title: str | None
    url: str | None
    date: str | None
    score: float  # the fused score (BM25 + dense)
    rerank_score: float  # the reranker's; hits are in this order
    text: str

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


def search(settings: Settings, text: str, k: int = 8) -> list[SearchHit]:
    """Hybrid search as the graph's content half does it: BM25 and dense lists over the tenant's
    index, checked against the store's current access, fused per record (`settings.fusion`), the
    top `settings.rerank_k` reranked (`settings.reranker`, with the judge model when it is "llm");
    the best `k` records, each once. Raises `InvalidInput` for empty or over-long text or k < 1,
    `IndexMissing` when the tenant was never indexed, `RerankerError` for a reranker that cannot run."""
    from context_engine.assistant.retriever import make_retriever

    try:
        text = check_question(text)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    if k < 1:
        raise InvalidInput(f"k must be at least 1, not {k}")
    fused = make_retriever(settings.with_overrides(retrieve_k=max(settings.rerank_k, k))).invoke(text)
    reranker = make_reranker(settings, llm=chat_model_for(settings, "judge") if settings.reranker == "llm" else None)
    ranked = reranker.rerank(text, fused[: max(settings.rerank_k, k)], top_n=k)
    return [
        SearchHit(
            ref=doc.metadata["doc_ref"],
            collection=doc.metadata["collection"],
            title=doc.metadata.get("title"),
            url=doc.metadata.get("url"),
            date=doc.metadata.get("date"),
            score=round(float(doc.metadata["score"]), 4),
            rerank_score=round(doc.metadata["rerank_score"], 4),
            text=doc.page_content,
        )
        for doc in ranked
    ]


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
            return RecordView(
                collection,
                strip_hidden(found[0]),
                chain["links"][:max_links],
                [{k: r[k] for k in LINKED_FIELDS} for r in chain["records"] if r["ref"] != ref],
            )
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
    report: dict[str, Any] = {
        "data_dir": str(settings.data_dir),
        "store_generation": store.generation,
        "writer": writer_busy(settings.data_dir),
        "tenants": {},
    }
    for tenant in store.tenants() if tenants is None else tenants:
        counts = {name: n for name in store.kinds(tenant).names() if (n := store.count(name, tenant))}
        index = index_status(settings, tenant)
        if index is not None and not index.get("damaged"):
            index["lag"] = index_lag(settings, tenant, store)
        report["tenants"][tenant] = {"records": counts, "index": index}
    report["damaged_rows"] = store.damaged_rows()  # skipped wherever read; of no tenant one can name
    return report


# -------------------------------------------------------------------------------------- feedback
def feedback(
    settings: Settings, rating: str, *, question: str | None = None, note: Any = None, corrected: Any = None
) -> dict[str, Any]:
    """👍/👎 from the settings' asker on their last answer (or `question`); a confirmed or corrected
    plan (`{"collection", "pipeline"}`, validated with the settings' policy) becomes a template of the
    tenant's context set. Raises `FeedbackError` or `ContextSetError`."""
    return submit(
        settings.data_dir,
        catalog_for(settings),
        asker=settings.asker,
        rating=rating,
        question=question,
        note=note,
        corrected=corrected,
        policy=_policy(settings),
    )


def feedback_questions(settings: Settings) -> list[dict[str, Any]]:
    """The tenant's feedback that carries a plan (a 👍's plan, a corrected one), as structured
    evaluation questions whose gold is that plan (`eval structured --from-feedback`)."""
    from context_engine.query.feedback import FeedbackStore, regression_items

    return regression_items(FeedbackStore(settings.data_dir), settings.tenant)


# ----------------------------------------------------------------------------------- context set
@dataclass
class ContextSetView:
    """The tenant's context set as the engine uses it: where it comes from (the tenant's file or the
    shipped defaults), the templates and facets that fit the tenant's data, and those set aside."""

    source: str
    context_set: Any  # query.context_sets.ContextSet

    def to_json(self) -> dict[str, Any]:
        return {"file": self.source, **self.context_set.to_json(), "inactive": self.context_set.inactive}


def context_set(settings: Settings) -> ContextSetView:
    """The tenant's context set, validated against the asker's schemas. Raises `ContextSetError`."""
    from context_engine.query import context_sets

    loaded = context_sets.load(settings.data_dir, settings.tenant, catalog_for(settings).schemas, _policy(settings))
    return ContextSetView(
        str(context_sets.tenant_file(settings.data_dir, settings.tenant) or "shipped defaults"), loaded
    )


def export_context_set(settings: Settings) -> dict[str, Any]:
    """The whole context set as JSON, templates that do not fit this tenant's data included."""
    from context_engine.query import context_sets

    path = context_sets.tenant_file(settings.data_dir, settings.tenant)
    return (context_sets.read_file(path) if path else context_sets.shipped()).to_json()


def add_template(settings: Settings, template: Any, *, replace: bool = False) -> str:
    """A template (parsed JSON), validated against the tenant's schemas, added to its context set;
    returns its name. Raises `ContextSetError` (also for a name already there, unless `replace`)."""
    from context_engine.query import context_sets

    parsed = context_sets.template_from_json(template)
    context_sets.add_template(
        settings.data_dir, settings.tenant, parsed, catalog_for(settings).schemas, _policy(settings), replace=replace
    )
    return parsed.name


def remove_template(settings: Settings, name: str) -> None:
    """Raises `ContextSetError` when the tenant's context set has no template `name`."""
    from context_engine.query import context_sets

    context_sets.remove_template(settings.data_dir, settings.tenant, name, catalog_for(settings).schemas)


def try_template(settings: Settings, name: str, now: str | datetime | None = None) -> dict[str, Any]:
    """A template's example question through the engine's structured half: the engine's plan beside
    the template's own (bound to the example's values), both run as the asker, and whether their
    results agree. Raises `UnknownTemplate`, `InvalidInput` (no example, a malformed `now`)."""
    from context_engine.assistant.structured_query import jsonable, run_structured
    from context_engine.query.context_sets import slots_for
    from context_engine.query.engine import resolve
    from context_engine.query.plan import to_extended_json
    from context_engine.resources import asker_for

    cs = context_set(settings).context_set
    template = cs.template(name)
    if template is None:
        raise UnknownTemplate(f"no template {name!r} here")
    question = template.example.get("question")
    if not question:
        raise InvalidInput(f"template {template.name!r} has no example question to test")
    try:
        when = parse_now(now)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    catalog = catalog_for(settings)
    expected = template.instantiate(template.example_bindings())
    want = jsonable(
        run_pipeline(
            store_for(settings),
            template.collection,
            expected,
            tenant=settings.tenant,
            principals=principals_for(settings),
            schema=catalog.schemas.get(template.collection),
            max_rows=settings.max_rows,
            max_time_ms=settings.max_time_ms,
        )
    )
    result = run_structured(question, settings, now=when)
    plan = result.attempts[-1].plan if getattr(result, "attempts", None) else None
    ctx, _ = resolve(question, when, catalog, asker_for(settings, catalog))
    matched = cs.match_template(question, slots_for(question, ctx.mentions, ctx.times)) if ctx else None
    same = (
        plan is not None and result.kind == "success" and plan.collection == template.collection and result.rows == want
    )
    return {
        "template": template.name,
        "question": question,
        "template_plan": {"collection": template.collection, "pipeline": to_extended_json(expected)},
        "engine_plan": (
            {"collection": plan.collection, "pipeline": to_extended_json(plan.pipeline), "planner": plan.planner}
            if plan
            else None
        ),
        "engine_outcome": result.kind,
        "engine_message": getattr(result, "message", ""),
        "template_rows": len(want),
        "engine_rows": len(result.rows),
        "same_result": same,
        "matched_template": matched[0].name if matched else None,
        "match_score": round(matched[2], 1) if matched else None,
    }


# ---------------------------------------------------------------------------------------- ingest
def own_options(collection: str, **described: Any) -> OwnOptions:
    """The operator's description of an own collection (`ingest json|mongodb`; `described`: the other
    fields of `sources.generic.OwnOptions`), every name and field in it checked by the spec itself
    before any file is read. Raises `InvalidInput`."""
    from context_engine.kinds import CollectionSpec, PersonField, SpecError

    try:
        options = OwnOptions(collection, **described)
        CollectionSpec(
            name=options.collection,
            noun=options.noun or options.collection,
            key=options.key or "id",
            times={r: (p,) for r, p in options.times.items()},
            people={r: (PersonField(p, h),) for r, (p, h) in options.people.items()},
            values={r: (p,) for r, p in options.values.items()},
            text=tuple(options.text),
            references=options.references,
        )
    except SpecError as exc:
        raise InvalidInput(str(exc)) from None
    return options


def own_options_from_spec(path: Path, collection: str, access_field: str | None, public: bool) -> OwnOptions:
    """`--spec FILE`: a JSON collection spec plus the ingest-only access field and public switch."""
    from context_engine.kinds import SpecError
    from context_engine.sources.generic import spec_file_options
    from context_engine.sources.problems import SourceError

    try:
        return spec_file_options(path, collection, access_field, public)
    except (SpecError, SourceError) as exc:
        raise InvalidInput(str(exc)) from None


def mongodb_filter(value: Any) -> dict[str, Any]:
    """A MongoDB query (parsed JSON, dates in Extended JSON) for `ingest mongodb`."""
    query_ = from_extended_json(value)
    if not isinstance(query_, dict):
        raise InvalidInput('a JSON object is expected, e.g. \'{"team": "payments"}\'')
    return query_


def _tenant_logins(settings: Settings) -> set[str]:
    """The GitHub logins of the tenant's people directory (none before its first ingest)."""
    from context_engine.store.documents import has_data, open_store

    if not has_data(settings):
        return set()
    people_ = open_store(settings).collection("people").find({"tenant_id": settings.tenant}, {"login": 1})
    return {p["login"] for p in people_ if isinstance(p.get("login"), str)}


@dataclass
class SourceReading:
    """One source read for a tenant, not yet written: the records per tenant, what was inferred of an
    own collection (`read.notes`), warnings, and the records skipped while reading (`problems`)."""

    read: ReadResult
    problems: ReadProblems
    own: bool


def read_source(settings: Settings, request: SourceRequest) -> SourceReading:
    """Read one source (`sources.connectors`) for the settings' tenant, within the input caps; an own
    collection's people columns are found among the tenant's logins. Raises `InvalidInput` when the
    source cannot be read at all."""
    from context_engine.sources.connectors import read_source as read
    from context_engine.sources.problems import SourceError

    problems = ReadProblems()
    if request.own is not None:
        request.logins = _tenant_logins(settings)
    try:
        return SourceReading(
            read(request, settings.tenant, settings.data_dir, problems), problems, own=request.own is not None
        )
    except SourceError as exc:
        raise InvalidInput(str(exc)) from None


def ingest(
    settings: Settings,
    reading: SourceReading,
    *,
    progress: Callable[[str, int], None] | None = None,
    index: bool = True,
    prune: bool = False,
    public: bool = False,
) -> list[dict[str, Any]]:
    """Write what `read_source` read (`ingest.ingest`: records, people, catalogs, the semantic index
    unless `index` is False; `progress(label, count)` hears the counts), then run the source's own
    after-commit step (a sync cursor saved only once the data is in). Returns one report per tenant
    written, with the records skipped while reading. Raises `InvalidInput` (e.g. a prune the records
    cannot support)."""
    from context_engine.ingest import ingest as write

    read = reading.read
    try:
        reports = write(
            settings, read.per_tenant, progress=progress, index=index, prune=prune, public=public, kinds=read.kinds
        )
    except ValueError as exc:  # e.g. --prune of records that do not say which source they are from
        raise InvalidInput(str(exc)) from None
    if read.after_commit:
        read.after_commit()
    out = [r.to_json() for r in reports]
    for item in out:
        item["skipped"] += reading.problems.count
        item["problems"] = reading.problems.examples + item["problems"]
        if reading.own:
            item["inferred"] = read.notes
    return out


# ------------------------------------------------------------------------------------- webhooks
def _stored(settings: Settings):
    """The store as it is now, or None before anything was ingested (a first delivery makes it)."""
    from context_engine.resources import NoData

    try:
        return store_for(settings)
    except NoData:
        return None


def github_event_records(settings: Settings, event: str, payload: dict[str, Any]) -> dict[str, list[dict]] | None:
    """The records a GitHub webhook event stands for, per collection, leaving out every record the
    store already holds in a newer version (a replayed or late delivery never rolls back); None for an
    event of no interest. Raises ValueError, KeyError, TypeError or AttributeError on a payload that
    is not what `event` says it is."""
    from context_engine.sources.webhooks import github_batches, newer_than_stored

    store = _stored(settings)
    batches = github_batches(store, settings.tenant, event, payload)
    return None if batches is None else newer_than_stored(store, settings.tenant, batches)


def slack_event_records(settings: Settings, payload: dict[str, Any]) -> dict[str, list[dict]] | None:
    """The messages a Slack Events API payload stands for: a new or edited message, a deleted one, or
    — for a member who left a private channel — every message of it with the new member list (an
    empty list: nothing stored to change); None for an event of no interest."""
    from context_engine.sources.webhooks import member_left, slack_message

    store = _stored(settings)
    left = member_left(store, settings.tenant, payload)
    if left is not None:
        return {"messages": left}
    record = slack_message(store, settings.tenant, payload)
    return None if record is None else {"messages": [record]}


def commit_records(settings: Settings, batches: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Commit records to the settings' tenant now, without indexing them (`sync_index` does, so that a
    burst of webhook events never waits on embedding); cached state is dropped at once. The report's
    `changed` says whether the index needs a sync."""
    from context_engine.ingest import ingest as write
    from context_engine.resources import forget

    report = write(settings, {settings.tenant: batches}, index=False)[0]
    forget(settings)
    return {**report.to_json(), "changed": report.changed}


def sync_index(settings: Settings, tenant: str) -> None:
    """Bring one tenant's semantic index up to the store's last commit."""
    from context_engine.ingest import sync_tenant_index

    sync_tenant_index(settings, tenant)

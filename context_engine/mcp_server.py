"""The engine for coding agents: an MCP server (official `mcp` SDK) over the same graph, validator
and scope as `ask`, `query` and `serve`.

    context-engine mcp [--tenant T] [--as PERSON]          stdio: a local agent, identity from flags/env
    context-engine mcp --http --keys FILE [--port P]       streamable HTTP at /mcp: Bearer key -> tenant, person

Every tool resolves who asks before anything else: over HTTP from the request's key (checked by
the ASGI guard in front of the MCP app, so an unknown key never reaches a tool), over stdio from the
operator's flags. A key without a person reads public records only. Every tool is a thin adapter
over `context_engine.service`, the operations the CLI and the server run too.

A result is structured content within RESULT_BUDGET characters plus a text summary within
SUMMARY_BUDGET (see there), paged where it is a list; every failure is an MCP tool error
(`is_error`) with one sentence, never a crash.
"""

from __future__ import annotations

import json
import re
from functools import partial
from typing import Annotated, Any, Literal, NotRequired

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict  # pydantic reads typing's TypedDict only from Python 3.12

from context_engine import service
from context_engine.config import Settings
from context_engine.service import BUILTIN

MAX_ROWS_PER_PAGE = 50
# The budget of one tool result, so that one call cannot flood an agent's context: the structured
# result (its JSON) at most RESULT_BUDGET characters, and beside it a text summary of at most
# SUMMARY_BUDGET characters, never the same data twice. To fit, string fields are cut to the first of
# FIELD_LIMITS at which the whole result fits, lists inside a record to MAX_ITEMS, and then a page
# carries fewer rows; the result's `truncated` says what was cut and how to read the rest.
RESULT_BUDGET = 12_000
SUMMARY_BUDGET = 1_000
FIELD_LIMITS = (4_000, 1_000, 300, 100)
MAX_ITEMS = 20
SNIPPET = 300  # characters of a search hit's snippet
MAX_TASK = 2_000  # characters of `context_for_change`'s task

_BUDGET_NOTE = (
    f"Results are bounded: at most {RESULT_BUDGET:,} characters of structured content plus a text "
    f"summary of at most {SUMMARY_BUDGET:,}; what was cut is said in `truncated`."
)

# The kinds every tenant may have, named from the registry; a team's own collections (`ingest json`,
# `ingest mongodb`) differ per tenant, so the tools say where to find them (`schema`).
_BUILTIN_KINDS = ", ".join(kind.plural for kind in BUILTIN.values() if kind.searchable)
_BUILTIN_NAMES = ", ".join(BUILTIN)

INSTRUCTIONS = (
    f"Engineering context for this team: {_BUILTIN_KINDS} (with reviews and Slack threads), and any "
    "collection of its own the team ingested (`schema` lists them), scoped to what the caller may read. "
    "Use `ask` for a question in plain language (it "
    "answers with citations and shows the queries it ran), `search` to find records about a topic, "
    "`get_record` to read one record and what links to it, `query` for an exact MongoDB aggregation "
    "pipeline, `find_people` to turn a name into accounts, `schema` to see fields and values, "
    "`feedback` to say whether an answer was right. " + _BUDGET_NOTE
)


# Read-only tools: they read the team's records and change nothing an agent must be asked about.
# Not idempotent where a chat model may word the same answer differently.
def _reading(title: str, idempotent: bool = True) -> ToolAnnotations:
    return ToolAnnotations(title=title, read_only_hint=True, idempotent_hint=idempotent, open_world_hint=False)


class Truncated(TypedDict):
    """Present only when the budget cut something."""

    truncated: NotRequired[str]


class AskResult(Truncated):
    answer: str
    route: str | None
    declined: bool  # the graph's `declined`: the engine would not answer (the answer says why)
    citations: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    model_error: NotRequired[str]  # a configured chat model failed and the answer was made without it


class QueryPage(Truncated):
    rows: list[dict[str, Any]]
    total: int
    next_offset: int | None


class SearchHit(TypedDict):
    ref: str
    collection: str
    title: str | None
    url: str | None
    date: str | None
    score: float  # the fused score (BM25 + dense)
    rerank_score: float  # the reranker's: hits come in this order
    snippet: str


class SearchResult(Truncated):
    results: list[SearchHit]


class RecordResult(Truncated):
    collection: str
    record: dict[str, Any]
    links: list[dict[str, Any]]
    linked: list[dict[str, Any]]


class PeopleResult(TypedDict):
    people: list[dict[str, Any]]


class SchemaResult(Truncated):
    collections: dict[str, str]


class _Cuts:
    """What fitting a result into the budget cut: string fields (by dotted path) and lists."""

    def __init__(self) -> None:
        self.fields: set[str] = set()
        self.lists: set[str] = set()

    def clip(self, value: Any, limit: int, path: str = "") -> Any:
        """`value` with strings cut to `limit` characters and lists to MAX_ITEMS, at any depth."""
        if isinstance(value, str):
            if len(value) <= limit:
                return value
            self.fields.add(path or "value")
            return value[:limit] + " …"
        if isinstance(value, dict):
            return {k: self.clip(v, limit, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
        if isinstance(value, list):
            if len(value) > MAX_ITEMS:
                self.lists.add(path or "value")
            return [self.clip(v, limit, path) for v in value[:MAX_ITEMS]]
        return value

    def said(self, limit: int) -> list[str]:
        said = []
        if self.fields:
            said.append(f"fields cut to {limit:,} characters: {', '.join(sorted(self.fields)[:8])}")
        if self.lists:
            said.append(f"lists cut to {MAX_ITEMS} items: {', '.join(sorted(self.lists)[:8])}")
        return said


def _size(value: Any, cap: int | None = None) -> int:
    """Characters of `value` as compact JSON, the form the result travels in; with `cap`, counting
    stops once past it (a page far over the budget is not serialised whole only to be cut)."""
    total, stack = 0, [value]
    while stack and (cap is None or total <= cap):
        item = stack.pop()
        if isinstance(item, dict):
            # braces, a colon per key, commas between
            total += (
                2 + len(item) + max(len(item) - 1, 0) + sum(len(json.dumps(str(k), ensure_ascii=False)) for k in item)
            )
            stack.extend(item.values())
        elif isinstance(item, list):
            total += 2 + max(len(item) - 1, 0)  # brackets, commas between
            stack.extend(item)
        else:
            total += len(json.dumps(item, ensure_ascii=False, default=str))
    return total


def _fit(items: list[Any], room: int) -> tuple[list[Any], list[str]]:
    """As many of `items` as fit in `room` characters of JSON, their strings cut as little as that
    allows (the first of FIELD_LIMITS at which all fit, else the smallest and fewer items), and what
    was cut, in words."""
    for limit in FIELD_LIMITS:
        cuts, kept, used = _Cuts(), [], 2
        for item in items:
            clipped = cuts.clip(item, limit)
            used += _size(clipped, cap=room) + 1
            if used > room:
                break
            kept.append(clipped)
        if len(kept) == len(items):
            return kept, cuts.said(limit)
    return kept, cuts.said(limit)  # the smallest limit, and the items that fit at it


MAX_NOTE = 900  # characters of a result's `truncated` note, held back from the items' room


def _room(envelope: dict[str, Any]) -> int:
    """Characters left for a result's items once its other fields and a `truncated` note are counted."""
    return RESULT_BUDGET - _size(envelope) - MAX_NOTE - len('"truncated":"",')


def _with_summary(data: dict[str, Any], summary: str) -> CallToolResult:
    """The structured result, and a short text summary for a client that shows text only."""
    if len(data.get("truncated", "")) > MAX_NOTE:
        data = {**data, "truncated": data["truncated"][: MAX_NOTE - 2] + " …"}
    if len(summary) > SUMMARY_BUDGET:
        summary = summary[: SUMMARY_BUDGET - 2] + " …"
    return CallToolResult(content=[TextContent(type="text", text=summary)], structured_content=_jsonable(data))


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(service.finite_for_json(value), default=str, ensure_ascii=False, allow_nan=False))


def server_version() -> str:
    """The installed distribution's version: `context_engine.__version__` where the package has it,
    else the metadata of the names this distribution has had (`relational-context-engine`, before
    it `context-engine`), so that `serverInfo.version` is never empty."""
    from importlib.metadata import PackageNotFoundError, version

    import context_engine

    known = getattr(context_engine, "__version__", "unknown")
    if known != "unknown":
        return known
    for name in ("relational-context-engine", "context-engine"):
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return "unknown"


def build_server(settings: Settings, keys: dict[str, Any] | None = None) -> MCPServer:
    """The MCP server for one data dir. `keys` (HTTP) map Bearer keys to `server.ApiKey`s; without
    keys (stdio) every call runs as `settings` says."""

    def caller(ctx: Context) -> Settings:
        if keys is None:
            return settings
        scheme, _, token = ((ctx.headers or {}).get("authorization") or "").partition(" ")
        key = keys.get(token.strip()) if scheme.lower() == "bearer" else None
        if key is None:  # the ASGI guard already refused it; never fall back to anyone
            raise ToolError("missing or unknown API key")
        scoped = settings.with_overrides(tenant=key.tenant)
        return scoped.with_overrides(asker=key.user) if key.user else _anonymous(scoped)

    server = MCPServer(
        name="context-engine",
        title="Context engine",
        version=server_version(),
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    @server.tool(
        title="Ask a question",
        description="Answer a question about the team's engineering work (PRs, reviews, issues, Slack "
        "threads, docs, commits, the team's own collections) in English or Chinese. "
        "Returns the answer, its numbered "
        "citations (with URLs) and every database query it ran. Use for 'why', 'who', "
        "'how many', 'what happened with' questions. " + _BUDGET_NOTE,
        # It remembers the caller's last question so that `feedback` can refer to it; the team's
        # records are only read.
        annotations=_reading("Ask a question", idempotent=False),
    )
    async def ask(
        question: Annotated[str, Field(description="The question, in plain language")],
        ctx: Context,
        now: Annotated[str | None, Field(description="ISO 8601 time the question is asked at (default: now)")] = None,
    ) -> Annotated[CallToolResult, AskResult]:
        scoped = caller(ctx)
        result = (await _in_worker(lambda: service.ask(scoped, question, now))).output
        queries = [
            {k: q.get(k) for k in ("collection", "pipeline", "first_step", "outcome", "error") if k in q}
            for q in result.get("queries", [])
        ][:10]
        # one dict per part, so that what the budget cut is named by its field ("answer", "citations.quote")
        parts = [
            {"answer": result.get("answer", "")},
            {"citations": result.get("citations", [])[:20]},
            {"queries": queries},
        ]
        envelope = {
            "answer": "",
            "route": result.get("route"),
            "declined": bool(result.get("declined")),
            "citations": [],
            "queries": [],
        }
        fitted, said = _fit(parts, _room(envelope))
        data = {**envelope}
        for part in fitted:
            data.update(part)
        if len(fitted) < len(parts):
            said.append(
                "the queries it ran did not fit" if data["citations"] else "the citations and queries did not fit"
            )
        if result.get("model_error"):
            data["model_error"] = str(result["model_error"])
        if said:
            data["truncated"] = "; ".join(said) + "."
        return _with_summary(data, _ask_summary(data))

    @server.tool(
        title="Rate an answer",
        description="Tell the engine whether its last answer to you (or the answer to `question`) was "
        "right: rating 'up' or 'down', with an optional note and, when it was wrong, the "
        "right plan {collection, pipeline}. A confirmed or corrected plan is validated and "
        "becomes a template the engine uses for similar questions of your team.",
        annotations=ToolAnnotations(
            title="Rate an answer",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    async def feedback(
        rating: Annotated[Literal["up", "down"], Field(description="'up': right; 'down': wrong")],
        ctx: Context,
        note: Annotated[
            str | None, Field(description="What was right or wrong, in a sentence", max_length=2000)
        ] = None,
        question: Annotated[
            str | None, Field(description="The question it is about (default: your last `ask`)")
        ] = None,
        corrected_plan: Annotated[
            dict[str, Any] | None,
            Field(description=('The right plan: {"collection": ..., "pipeline": [...]}, dates as {"$date": ...}')),
        ] = None,
    ) -> Annotated[CallToolResult, dict[str, Any]]:
        scoped = caller(ctx)  # who gives it: the key's person (HTTP) or the flags' (stdio), never an argument
        given = await _in_worker(
            lambda: service.feedback(scoped, rating, question=question, note=note, corrected=corrected_plan)
        )
        given = _jsonable(given)
        return _with_summary(given, f"Feedback '{rating}' recorded: " + json.dumps(given, ensure_ascii=False))

    @server.tool(
        title="Run an aggregation pipeline",
        description="Run one MongoDB aggregation pipeline on a collection, through the same allow-list "
        "validator and tenant/access scope as every other query. Rejections come back as "
        f"errors with one sentence per problem. Paged: `offset` and at most {MAX_ROWS_PER_PAGE} "
        "rows a page, fewer when long rows would pass the budget. "
        + _BUDGET_NOTE
        + " To read more: the next page at `next_offset`, one record whole with `get_record`, "
        'the rest of a long field with {"$project": {"body": {"$substrCP": ["$body", 4000, '
        "4000]}}}, or fewer fields with `$project`.",
        annotations=_reading("Run an aggregation pipeline"),
    )
    async def query(
        collection: Annotated[
            str,
            Field(description=f"One of: {_BUILTIN_NAMES}, or one of the team's own collections that `schema` lists"),
        ],
        pipeline: Annotated[
            list[dict[str, Any]],
            Field(description='e.g. [{"$match": {"state": "open"}}]; dates as {"$date": "2026-11-01T00:00:00Z"}'),
        ],
        ctx: Context,
        offset: Annotated[int, Field(ge=0, le=10_000, description="rows to skip (paging)")] = 0,
    ) -> Annotated[CallToolResult, QueryPage]:
        scoped = caller(ctx)
        rows = await _in_worker(lambda: service.query(scoped, collection, pipeline))
        return _with_summary(*_query_page(_jsonable(rows), offset))

    @server.tool(
        title="Search the team's records",
        description="Hybrid search (BM25 + embeddings, fused and reranked) over PRs, issues, Slack "
        "threads, docs, commits and the team's own collections the caller may read. "
        f"Returns ranked records with snippets ({SNIPPET} characters) and refs to pass to "
        "`get_record`. " + _BUDGET_NOTE,
        annotations=_reading("Search the team's records"),
    )
    def search(
        query: Annotated[str, Field(description="Words or a question about a topic")],
        ctx: Context,
        k: Annotated[int, Field(ge=1, le=25, description="how many records")] = 8,
    ) -> Annotated[CallToolResult, SearchResult]:
        data = _search(caller(ctx), query, k)
        lines = [f"{len(data['results'])} records (full hits with snippets in the structured result):"]
        lines += [f"- {hit['ref']} [{hit['collection']}] {hit['title'] or ''}" for hit in data["results"]]
        return _with_summary(data, _lines_within(lines, data.get("truncated")))

    @server.tool(
        title="Read a record",
        description="One record by its ref (a PR 'acme/web#42', an issue 'ENG-231', a Slack thread "
        "'C01ABC:1709550000.000100', a document or a commit sha), with the records it links "
        "to and that link to it (fixes, implements, discussed in). "
        + _BUDGET_NOTE
        + ' The rest of a cut field: `query` with [{"$match": {"ref": REF}}, {"$project": '
        '{"body": {"$substrCP": ["$body", 4000, 4000]}}}].',
        annotations=_reading("Read a record"),
    )
    def get_record(
        ref: Annotated[str, Field(description="The record's ref, as `search` returns it")], ctx: Context
    ) -> Annotated[CallToolResult, RecordResult]:
        view = _run(lambda: service.get_record(caller(ctx), ref))
        return _with_summary(*_record_result(view.collection, ref, _jsonable(view.record), view.links, view.linked))

    @server.tool(
        title="Find a person",
        description="Look a person up in the team's identity directory by any alias (name, GitHub "
        "login, Slack handle, e-mail, a Chinese name or its pinyin). Returns their accounts "
        "(at most 10 candidates).",
        annotations=_reading("Find a person"),
    )
    def find_people(
        name: Annotated[str, Field(description="Any alias")], ctx: Context
    ) -> Annotated[CallToolResult, PeopleResult]:
        people = _run(lambda: service.find_people(caller(ctx), name))
        found = _jsonable([{**p.to_json(), "team": p.team} for p in people[:10]])
        cuts = _Cuts()
        found = [cuts.clip(person, FIELD_LIMITS[-1]) for person in found]  # a person is names and accounts
        lines = [f"{len(found)} {'person' if len(found) == 1 else 'candidates'}:"]
        lines += [
            f"- {p.get('name') or ''} " + json.dumps({k: v for k, v in p.items() if k != "name"}, ensure_ascii=False)
            for p in found
        ]
        return _with_summary({"people": found}, _lines_within(lines, None))

    @server.tool(
        title="Describe the collections",
        description="The fields of each collection (types, known values, examples), as discovered from "
        "the records the caller may read. Read before writing a `query` pipeline. "
        + _BUDGET_NOTE
        + " Name one collection to see it whole.",
        annotations=_reading("Describe the collections"),
    )
    def schema(
        ctx: Context,
        collection: Annotated[str | None, Field(description="one collection, or all")] = None,
    ) -> Annotated[CallToolResult, SchemaResult]:
        described = _describe(caller(ctx), collection)
        pairs, said = _fit([[name, text] for name, text in described.items()], _room({"collections": {}}))
        data: dict[str, Any] = {"collections": dict(pairs)}
        left = [name for name in described if name not in data["collections"]]
        if left:
            said.append(f"not shown: {', '.join(left)}")
        if said:
            data["truncated"] = "; ".join(said) + ". Call `schema` with one `collection` to read it whole."
        lines = [
            f"{len(data['collections'])} collections described in the structured result: "
            + ", ".join(data["collections"])
        ]
        return _with_summary(data, _lines_within(lines, data.get("truncated")))

    @server.resource(
        "schema://{collection}",
        title="Collection schema",
        description="The discovered schema of one collection, as the caller may see it",
        mime_type="text/plain",
    )
    def schema_resource(collection: str, ctx: Context) -> str:
        # A resource has no error result: an unknown collection is "not found" (invalid params), any
        # other problem of the caller's a resource error, each with its sentence instead of a crash.
        try:
            return service.schema(caller(ctx), collection)[collection].describe()
        except service.UnknownCollection as exc:
            raise ResourceNotFoundError(str(exc)) from None
        except service.USER_ERRORS as exc:
            raise ResourceError(_sentence(exc)) from None

    @server.prompt(
        title="Context for a change",
        description="What context do I need for this change? Given a file path: the commits and pull "
        "requests that touched it (then its directory), the issues, threads and decisions "
        "linked to them, and who changed it. Given a task description: the records a "
        "search finds about it.",
    )
    def context_for_change(
        task: Annotated[
            str,
            Field(
                description="The change: a file path (e.g. "
                "src/checkout/session.py) or a task description "
                f"(at most {MAX_TASK:,} characters)"
            ),
        ],
        ctx: Context,
    ) -> str:
        try:
            return _context_for_change(caller(ctx), task)
        except ToolError as exc:  # a prompt has no error result: the request's error, with the sentence
            raise MCPError(INVALID_PARAMS, str(exc)) from None

    return server


def _context_for_change(scoped: Settings, task: str) -> str:
    """The prompt's text: for a path, the changes that touched it (`_path_context`); for a task in
    words, the records a search finds about it and the authors of the pull requests among them."""
    if not task.strip():
        raise ToolError("the task is empty: give a file path or a task description")
    if len(task) > MAX_TASK:
        raise ToolError(f"the task is {len(task):,} characters; at most {MAX_TASK:,}")
    if _is_path(task):
        return _path_context(scoped, task.strip())
    found = _search(scoped, task, 10)["results"]
    owners = _owners(scoped, [hit["ref"] for hit in found if hit["collection"] == "pull_requests"])
    lines = [
        f"I am about to work on: {task}",
        "",
        "Records from the team's history found by searching for it (read them with get_record before changing code):",
    ]
    lines += [
        f"- [{hit['collection']}] {hit['ref']}: {hit['title']} ({hit['url'] or 'no url'})\n  {hit['snippet']}"
        for hit in found
    ]
    if owners:
        lines += ["", "People who changed this area recently: " + ", ".join(owners)]
    lines += [
        "",
        "Summarise the decisions and constraints these records establish, who to ask, and what could break; cite refs.",
    ]
    return "\n".join(lines)


def _ask_summary(data: dict[str, Any]) -> str:
    """The answer as text (what a text-only client shows), with a failed model said first."""
    head = f"The chat model failed ({data['model_error']}); answered without it.\n\n" if data.get("model_error") else ""
    tail = (
        f"\n\n({len(data['citations'])} citations and {len(data['queries'])} queries in the structured result"
        + (f"; {data['truncated']}" if data.get("truncated") else "")
        + ")"
    )
    head = head[: SUMMARY_BUDGET // 4]
    answer = data["answer"]
    room = SUMMARY_BUDGET - len(head) - len(tail)
    if len(answer) > room:
        answer = answer[: max(0, room - 40)] + " … (whole answer: structured `answer`)"
    return head + answer + tail


def _lines_within(lines: list[str], truncated: str | None) -> str:
    """Summary lines, as many as the summary budget holds, and what the budget cut."""
    tail = f"\nTruncated: {truncated}" if truncated else ""
    kept: list[str] = []
    used = len(tail)
    for line in lines:
        if used + len(line) + 1 > SUMMARY_BUDGET - 40:
            kept.append(f"… {len(lines) - len(kept)} more lines in the structured result")
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join(kept) + tail


def _query_page(rows: list[Any], offset: int) -> tuple[dict[str, Any], str]:
    """One page of a query's rows within the budget, and its summary."""
    page = rows[offset : offset + MAX_ROWS_PER_PAGE]
    kept, said = _fit(page, _room({"rows": [], "total": len(rows), "next_offset": len(rows)}))
    end = offset + len(kept)
    if page and not kept:
        said.append(f"row {offset} alone is larger than the budget: `$project` fewer fields")
        end = offset + 1  # past the row no page can hold, so paging cannot stall on it
    elif len(kept) < len(page):
        said.append(f"this page holds {len(kept)} rows instead of {len(page)} to stay within the budget")
    more = end < len(rows)
    data: dict[str, Any] = {"rows": kept, "total": len(rows), "next_offset": end if more else None}
    if said:
        data["truncated"] = (
            "; ".join(said) + ". Read one record whole with `get_record`, the rest of a field "
            'with {"$project": {"FIELD": {"$substrCP": ["$FIELD", START, 4000]}}}, or fewer '
            "fields with `$project`."
        )
    head = (
        f"{len(kept)} of {len(rows)} rows from offset {offset}" + (f"; next page: offset={end}" if more else "") + "."
    )
    shown = json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
    body = shown if len(head) + len(shown) + 1 <= SUMMARY_BUDGET // 2 else "The rows are in the structured result."
    return data, _lines_within([head, body], data.get("truncated"))


def _search(scoped: Settings, query: str, k: int) -> dict[str, Any]:
    """The `k` best records for `query` (fused and reranked, one hit per record) within the budget."""
    found = _run(lambda: service.search(scoped, query, k))
    hits = _jsonable(
        [
            {
                "ref": hit.ref,
                "collection": hit.collection,
                "title": hit.title,
                "url": hit.url,
                "date": hit.date,
                "score": hit.score,
                "rerank_score": hit.rerank_score,
                "snippet": _Cuts().clip(hit.text, SNIPPET),
            }
            for hit in found
        ]
    )
    kept, said = _fit(hits, _room({"results": []}))
    if len(kept) < len(hits):
        said.append(f"{len(hits) - len(kept)} of {len(hits)} hits did not fit; ask for fewer (`k`)")
    return {"results": kept, **({"truncated": "; ".join(said) + "."} if said else {})}


def _record_result(
    collection: str, ref: str, record: dict[str, Any], links: list[dict[str, Any]], linked: list[dict[str, Any]]
) -> tuple[dict[str, Any], str]:
    """One record with its links within the budget (the links first cut small), and its summary."""
    cuts = _Cuts()
    links = [cuts.clip(link, FIELD_LIMITS[-1]) for link in links[:MAX_ITEMS]]
    linked = [cuts.clip(record_header, FIELD_LIMITS[-1]) for record_header in linked[:MAX_ITEMS]]
    envelope = {"collection": collection, "record": {}, "links": _jsonable(links), "linked": _jsonable(linked)}
    fitted, said = _fit([record], _room(envelope))
    data = {**envelope, "record": fitted[0] if fitted else {"ref": ref}}
    if not fitted:
        said.append("the record is larger than the budget even with every field cut: read its fields with `query`")
    said += cuts.said(FIELD_LIMITS[-1])
    if said:
        data["truncated"] = (
            "; ".join(said) + '. The rest of a field: `query` with [{"$match": {"ref": REF}}, '
            '{"$project": {"FIELD": {"$substrCP": ["$FIELD", START, 4000]}}}].'
        )
    title = next(
        (v for k, v in record.items() if k in ("title", "name", "summary", "message") and isinstance(v, str)), ""
    )
    lines = [
        f"{ref} [{collection}] {title.splitlines()[0] if title else ''}".rstrip(),
        "The record is in the structured result. Linked records:",
    ]
    lines += [f"- {r['ref']} [{r['collection']}] {r.get('title') or ''}" for r in linked]
    return data, _lines_within(lines, data.get("truncated"))


_PATH_LIKE = re.compile(r"^[\w.@+-]+(?:/[\w.@+-]+)*/?$")


def _is_path(task: str) -> bool:
    """A file or directory path ("src/session/cache.py", "cache.py"), not a task in words."""
    task = task.strip()
    return bool(_PATH_LIKE.match(task)) and ("/" in task or "." in task.strip("."))


def _describe(scoped: Settings, collection: str | None) -> dict[str, str]:
    return {name: found.describe() for name, found in _run(lambda: service.schema(scoped, collection)).items()}


def _owners(scoped: Settings, refs: list[str]) -> list[str]:
    """The authors of these pull requests, as the caller may read them."""
    if not refs:
        return []
    rows = _run(
        lambda: service.query(
            scoped, "pull_requests", [{"$match": {"ref": {"$in": refs}}}, {"$project": {"user.login": 1}}]
        )
    )
    logins = [(row.get("user") or {}).get("login") for row in rows]
    return list(dict.fromkeys(login for login in logins if login))[:8]


def _path_context(scoped: Settings, path: str) -> str:
    """The prompt for changing one file or directory: the records that list it among their changed
    files (`files.filename`: commits, and pull requests where a source gives theirs), then those that
    changed another file of its directory, newest first; the pull requests, issues, threads and
    decisions linked to them; who made them. Every read is scoped like a query. When nothing touches
    the path it says so, instead of offering records about other code."""
    path = path.removeprefix("./")
    directory = path.rstrip("/") if path.endswith("/") else path.rpartition("/")[0]
    exact = (
        re.compile(rf"(?:^|/){re.escape(directory)}/")
        if path.endswith("/")
        else re.compile(rf"(?:^|/){re.escape(path)}$")
    )
    nearby = re.compile(rf"(?:^|/){re.escape(directory)}/[^/]+$") if directory else exact
    # The pattern is this prompt's own, every part of the path escaped, so a regex is allowed for it
    # whatever the caller's policy; the service still validates, scopes and bounds the query.
    matching = scoped.with_overrides(allow_regex=True)
    touching: list[tuple[int, str, dict[str, Any]]] = []  # (0 the path itself | 1 its directory, date, entry)
    for name, schema in _run(lambda: service.schema(scoped)).items():
        if not schema.has_path("files.filename"):
            continue
        pipeline = [{"$match": {"files.filename": {"$regex": nearby.pattern}}}, {"$limit": min(500, scoped.max_rows)}]
        for row in _run(partial(service.query, matching, name, pipeline)):
            entry = _touching_entry(name, schema.kind, row)
            rank = 0 if any(exact.search(f) for f in entry["files"]) else 1
            touching.append((rank, entry["date"], entry))
    # newest first within each rank, the path itself before its directory
    touching.sort(key=lambda t: t[1], reverse=True)
    touching.sort(key=lambda t: t[0])
    itself = [entry for rank, _, entry in touching if rank == 0][:10]
    beside = [entry for rank, _, entry in touching if rank == 1][: max(0, 10 - len(itself))]
    # A bare file name matches that name in any directory, so it has no directory of its own to widen to.
    unknown = f"{path} or another file of {directory}/" if directory else f"a file named {path}"
    if not itself and not beside:
        return "\n".join(
            [
                f"I am about to change: {path}",
                "",
                (
                    f"No commit or pull request I can read changed {unknown}, so the team's "
                    "history holds no context for this path. Records about other code would mislead: do not take "
                    "their decisions as this file's. To look further, `search` for words about the change."
                ),
            ]
        )
    refs = [entry["ref"] for entry in itself + beside]
    linked, relation = _linked_to(scoped, refs)
    lines = [f"I am about to change: {path}", ""]
    if itself:
        lines.append(f"Changes to {path} itself, newest first (read them with get_record before changing code):")
        lines += [_entry_line(entry) for entry in itself]
    else:
        lines.append(f"Nothing I can read changed {path} itself.")
    if beside:
        lines += ["", f"Changes to other files of {directory}/, newest first:"]
        lines += [_entry_line(entry) for entry in beside]
    if linked:
        lines += ["", "Linked to those changes (their pull requests, issues, threads and decisions):"]
        lines += [
            f"- [{r['collection']}] {r['ref']}: {r['title']} ({r['url'] or 'no url'}; "
            f"{relation.get(r['ref'], 'linked')})"
            for r in linked
        ]
    people = list(dict.fromkeys(entry["author"] for entry in itself + beside if entry["author"]))[:8]
    if people:
        lines += ["", "People who changed it: " + ", ".join(people)]
    lines += [
        "",
        "Summarise the decisions and constraints these records establish, who to ask, and what could break; cite refs.",
    ]
    return "\n".join(lines)


def _linked_to(scoped: Settings, refs: list[str]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The records linked to these changes (their pull requests, the issues those fix, the threads
    and decisions about them): one hop from each change, one more from each pull request reached;
    and how each is linked."""
    linked: dict[str, dict[str, Any]] = {}
    relation: dict[str, str] = {}

    def follow(ref: str) -> list[dict[str, Any]]:
        view = _run(lambda: service.get_record(scoped, ref))
        for link in view.links:
            relation.setdefault(link["target"] if link["source"] == ref else link["source"], link["relation"])
        fresh = [r for r in view.linked if r["ref"] not in linked and r["ref"] not in refs]
        linked.update((r["ref"], r) for r in fresh)
        return fresh

    reached = [record for ref in refs for record in follow(ref)]
    for pull in [r for r in reached if r["collection"] == "pull_requests"][:6]:
        follow(pull["ref"])
    return list(linked.values())[:12], relation


def _touching_entry(collection: str, kind: Any, row: dict[str, Any]) -> dict[str, Any]:
    """What the prompt says of one record that changed files: its ref, subject, date, url, author."""

    def first(paths: tuple[str, ...]) -> str:
        found = next((v for p in paths for v in _values_at(row, p) if v not in (None, "")), "")
        return str(found)

    subject = first(kind.values.get("title", ()) or kind.text[:1]).strip().splitlines()
    author = next(
        (
            first((field.path,))
            for fields in kind.people.values()
            for field in fields
            if field.handle in ("name", "login") and first((field.path,))
        ),
        "",
    )
    return {
        "collection": collection,
        "ref": kind.ref_prefix + str(row.get(kind.key, "")),
        "title": subject[0] if subject else "",
        "date": first(next(iter(kind.times.values()), ())),
        "url": first(kind.values.get("url", ())),
        "author": author,
        "files": [str(f) for f in _values_at(row, "files.filename")],
    }


def _values_at(doc: Any, path: str) -> list[Any]:
    """The values at a dotted path, through lists ("files.filename" of a commit: every file's name)."""
    values = [doc]
    for part in path.split("."):
        values = [
            v.get(part) for item in values for v in (item if isinstance(item, list) else [item]) if isinstance(v, dict)
        ]
    return [v for item in values for v in (item if isinstance(item, list) else [item]) if v is not None]


def _entry_line(entry: dict[str, Any]) -> str:
    short = entry["ref"][:12] if entry["collection"] == "commits" else entry["ref"]
    who = f" — {entry['author']}" if entry["author"] else ""
    return (
        f"- [{entry['collection']}] {short}: {entry['title']}{who}, {entry['date'][:10] or 'undated'} "
        f"({entry['url'] or 'no url'})"
    )


def _anonymous(settings: Settings) -> Settings:
    from dataclasses import replace

    return replace(settings, asker=None)


def _run(work):
    """The caller's problems (`service.USER_ERRORS`) as tool errors: one sentence, never a stack trace
    or a server path to the agent."""
    try:
        return work()
    except service.ExecutionError as exc:
        raise ToolError(f"the database refused the query: {exc}") from None
    except service.USER_ERRORS as exc:
        raise ToolError(_sentence(exc)) from None


def _sentence(exc: BaseException) -> str:
    """An error's first argument, without the server path a store or index error may end with."""
    return str(exc.args[0] if exc.args else exc).split(" in /")[0]


async def _in_worker(work):
    """`_run(work)` in a worker thread under its own Stop. Why: the SDK runs a tool in a thread and,
    when the client cancels the call (or the session ends), stops waiting, but the thread would run
    on; here the cancellation sets the Stop, and the work's queries and graph steps end at their next
    document. The same Stop reads SIGTERM's process-wide one."""
    import anyio

    stop = service.Stop()

    def in_thread():
        with service.stop_on(stop):
            try:
                return _run(work)
            except service.Cancelled as exc:
                raise ToolError(str(exc)) from None

    try:
        return await anyio.to_thread.run_sync(in_thread, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        stop.cancel("the MCP call was cancelled; its work was stopped")
        raise


def http_app(settings: Settings, keys: dict[str, Any]):
    """The streamable HTTP app at /mcp behind Bearer keys (the same keys file as `serve`): an unknown
    or missing key is a 401 before the MCP session is touched."""
    from starlette.responses import JSONResponse

    service.check_key_people(settings, keys)
    inner = build_server(settings, keys).streamable_http_app()

    async def app(scope, receive, send):
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or token.strip() not in keys:
                response = JSONResponse(
                    {"error": "missing or unknown API key: send `Authorization: Bearer KEY`"}, status_code=401
                )
                return await response(scope, receive, send)
        return await inner(scope, receive, send)

    return app

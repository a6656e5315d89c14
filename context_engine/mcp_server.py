"""The engine for coding agents: an MCP server (official `mcp` SDK) over the same graph, validator
and scope as `ask`, `query` and `serve`.

    context-engine mcp [--tenant T] [--as PERSON]          stdio: a local agent, identity from flags/env
    context-engine mcp --http --keys FILE [--port P]       streamable HTTP at /mcp: Bearer key -> tenant, person

Every tool resolves who asks before anything else: over HTTP from the request's key (checked by
the ASGI guard in front of the MCP app, so an unknown key never reaches a tool), over stdio from the
operator's flags. A key without a person reads public records only. Outputs are bounded and paged;
every failure is an MCP tool error (`is_error`) with one sentence, never a crash.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from context_engine.config import Settings, check_question
from context_engine.kinds import BUILTIN, Registry

MAX_ROWS_PER_PAGE = 50
MAX_TEXT = 600          # characters of one snippet or field value in a tool result
MAX_ANSWER = 6000       # characters of an answer

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
    "`feedback` to say whether an answer was right.")


def _clip(value: Any, limit: int = MAX_TEXT) -> Any:
    """Long strings cut, at any depth, so one record cannot flood an agent's context."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + " …"
    if isinstance(value, dict):
        return {k: _clip(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip(v, limit) for v in value[:MAX_ROWS_PER_PAGE]]
    return value


def _jsonable(value: Any) -> Any:
    from context_engine.store.expressions import finite_for_json

    return json.loads(json.dumps(finite_for_json(value), default=str, ensure_ascii=False, allow_nan=False))


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

    def principals(scoped: Settings) -> list[str]:
        from context_engine.runtime import principals_for

        # The key's person was checked exactly at start; one the directory lost since is refused here.
        return _run(lambda: principals_for(scoped))

    server = MCPServer(name="context-engine", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(description="Answer a question about the team's engineering work (PRs, reviews, issues, Slack "
                             "threads, docs, commits, the team's own collections) in English or Chinese. "
                             "Returns the answer, its numbered "
                             "citations (with URLs) and every database query it ran. Use for 'why', 'who', "
                             "'how many', 'what happened with' questions.")
    async def ask(question: Annotated[str, Field(description="The question, in plain language")],
            ctx: Context,
            now: Annotated[str | None, Field(description="ISO 8601 time the question is asked at (default: now)")] = None,
            ) -> dict[str, Any]:
        from context_engine.assistant.graph import graph
        from context_engine.text import parse_now

        scoped = caller(ctx)
        try:
            check_question(question)
            when = parse_now(now).isoformat()
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        context = {"tenant": scoped.tenant, "user": scoped.asker, "anonymous": scoped.asker is None,
                   "data_dir": str(scoped.data_dir)}
        result = await _in_worker(lambda: graph.invoke({"question": question, "now": when}, context=context))
        from context_engine.query.feedback import remember_ask

        await _in_worker(lambda: remember_ask(scoped.data_dir, scoped.tenant, scoped.asker or "", question, result,
                                              when))
        return _jsonable({"answer": _clip(result.get("answer", ""), MAX_ANSWER), "route": result.get("route"),
                          "citations": _clip(result.get("citations", [])[:20]),
                          "queries": [{k: q.get(k) for k in ("collection", "pipeline", "outcome", "error") if k in q}
                                      for q in result.get("queries", [])][:10]})

    @server.tool(description="Tell the engine whether its last answer to you (or the answer to `question`) was "
                             "right: rating 'up' or 'down', with an optional note and, when it was wrong, the "
                             "right plan {collection, pipeline}. A confirmed or corrected plan is validated and "
                             "becomes a template the engine uses for similar questions of your team.",
                 annotations=ToolAnnotations(title="Rate an answer", read_only_hint=False, destructive_hint=False,
                                             idempotent_hint=False, open_world_hint=False))
    async def feedback(rating: Annotated[Literal["up", "down"], Field(description="'up': right; 'down': wrong")],
                       ctx: Context,
                       note: Annotated[str | None, Field(description="What was right or wrong, in a sentence",
                                                         max_length=2000)] = None,
                       question: Annotated[str | None, Field(description="The question it is about (default: "
                                                                         "your last `ask`)")] = None,
                       corrected_plan: Annotated[dict[str, Any] | None, Field(description=(
                           'The right plan: {"collection": ..., "pipeline": [...]}, dates as {"$date": ...}'))] = None,
                       ) -> dict[str, Any]:
        from context_engine.query.context_sets import ContextSetError
        from context_engine.query.feedback import FeedbackError, submit
        from context_engine.query.validate import ValidationPolicy
        from context_engine.runtime import catalog_for

        scoped = caller(ctx)  # who gives it: the key's person (HTTP) or the flags' (stdio), never an argument
        policy = ValidationPolicy(allow_regex=scoped.allow_regex, max_limit=scoped.max_rows)

        def give() -> dict[str, Any]:
            try:
                return submit(scoped.data_dir, catalog_for(scoped), asker=scoped.asker or "", rating=rating,
                              question=question, note=note, corrected=corrected_plan, policy=policy)
            except (FeedbackError, ContextSetError) as exc:
                raise ToolError(str(exc)) from None

        return _jsonable(await _in_worker(give))

    @server.tool(description="Run one MongoDB aggregation pipeline on a collection, through the same allow-list "
                             "validator and tenant/access scope as every other query. Rejections come back as "
                             "errors with one sentence per problem. Paged: `offset` and at most 50 rows a page.")
    async def query(collection: Annotated[str, Field(description=f"One of: {_BUILTIN_NAMES}, or one of the "
                                                                 "team's own collections that `schema` lists")],
              pipeline: Annotated[list[dict[str, Any]], Field(description='e.g. [{"$match": {"state": "open"}}]; '
                                                                          'dates as {"$date": "2026-11-01T00:00:00Z"}')],
              ctx: Context,
              offset: Annotated[int, Field(ge=0, le=10_000, description="rows to skip (paging)")] = 0,
              ) -> dict[str, Any]:
        from context_engine.query.execute import ExecutionError, run_pipeline
        from context_engine.query.plan import from_extended_json
        from context_engine.query.validate import ValidationPolicy, validate_pipeline
        from context_engine.runtime import catalog_for, store_for

        scoped = caller(ctx)
        _known(_kinds_of(scoped), collection)
        pipeline = from_extended_json(pipeline)
        schemas = _run(lambda: catalog_for(scoped)).schemas
        schema = schemas.get(collection)
        errors = validate_pipeline(pipeline, schema, ValidationPolicy(allow_regex=scoped.allow_regex,
                                                                      max_limit=scoped.max_rows), schemas=schemas)
        if errors:
            raise ToolError("rejected: " + " | ".join(errors))
        try:
            rows = await _in_worker(lambda: run_pipeline(store_for(scoped), collection, pipeline, tenant=scoped.tenant,
                                                         principals=principals(scoped), schema=schema,
                                                         max_rows=scoped.max_rows, max_time_ms=scoped.max_time_ms))
        except ExecutionError as exc:
            raise ToolError(f"the database refused the query: {exc}") from None
        page = rows[offset:offset + MAX_ROWS_PER_PAGE]
        more = offset + len(page) < len(rows)
        return _jsonable({"rows": _clip(page), "total": len(rows),
                          "next_offset": offset + len(page) if more else None})

    @server.tool(description="Hybrid search (BM25 + embeddings, fused and reranked) over PRs, issues, Slack "
                             "threads, docs, commits and the team's own collections the caller may read. "
                             "Returns ranked records with "
                             "snippets and refs to pass to `get_record`.")
    def search(query: Annotated[str, Field(description="Words or a question about a topic")],
               ctx: Context,
               k: Annotated[int, Field(ge=1, le=25, description="how many records")] = 8) -> dict[str, Any]:
        from context_engine.assistant.retriever import make_retriever

        scoped = caller(ctx)
        try:
            check_question(query)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        docs = _run(lambda: make_retriever(scoped.with_overrides(retrieve_k=max(k * 3, 20))).invoke(query))
        seen, hits = set(), []
        for doc in docs:
            meta = doc.metadata
            if meta["doc_ref"] in seen:
                continue
            seen.add(meta["doc_ref"])
            hits.append({"ref": meta["doc_ref"], "collection": meta["collection"], "title": meta.get("title"),
                         "url": meta.get("url"), "date": meta.get("date"), "score": round(float(meta["score"]), 4),
                         "snippet": _clip(doc.page_content, 300)})
            if len(hits) == k:
                break
        return _jsonable({"results": hits})

    @server.tool(description="One record by its ref (a PR 'acme/web#42', an issue 'ENG-231', a Slack thread "
                             "'C01ABC:1709550000.000100', a document or a commit sha), with the records it links "
                             "to and that link to it (fixes, implements, discussed in).")
    def get_record(ref: Annotated[str, Field(description="The record's ref, as `search` returns it")],
                   ctx: Context) -> dict[str, Any]:
        from context_engine.query.execute import scope_filter
        from context_engine.answering.links import follow_links
        from context_engine.runtime import store_for
        from context_engine.store.documents import strip_hidden

        scoped = caller(ctx)
        store = _run(lambda: store_for(scoped))
        mine = principals(scoped)
        scope = scope_filter(scoped.tenant, mine)
        for collection in _kinds_of(scoped).names():
            found = store.find_refs(collection, scope, [ref])
            if found:
                chain = _run(lambda: follow_links(store, scoped.tenant, mine, [ref], max_hops=1, limit=12))
                return _jsonable({"collection": collection, "record": _clip(strip_hidden(found[0])),
                                  "links": [link for link in chain.to_json()["links"]][:20],
                                  "linked": [{k: r[k] for k in ("ref", "collection", "title", "url", "date")}
                                             for r in chain.to_json()["records"] if r["ref"] != ref]})
        raise ToolError(f"no record {ref!r} that you can read")  # absent and forbidden look the same

    @server.tool(description="Look a person up in the team's identity directory by any alias (name, GitHub "
                             "login, Slack handle, e-mail, a Chinese name or its pinyin). Returns their accounts.")
    def find_people(name: Annotated[str, Field(description="Any alias")], ctx: Context) -> dict[str, Any]:
        from context_engine.query.identity import AmbiguousPerson, UnknownPerson
        from context_engine.runtime import catalog_for

        scoped = caller(ctx)
        directory = _run(lambda: catalog_for(scoped)).directory
        try:
            people = [directory.lookup(name)]
        except UnknownPerson as exc:
            raise ToolError(str(exc)) from None
        except AmbiguousPerson as exc:
            people = exc.candidates
        return _jsonable({"people": [{**p.to_json(), "team": p.team} for p in people[:10]]})

    @server.tool(description="The fields of each collection (types, known values, examples), as discovered from "
                             "the records the caller may read. Read before writing a `query` pipeline.")
    def schema(ctx: Context,
               collection: Annotated[str | None, Field(description="one collection, or all")] = None) -> dict[str, Any]:
        return {"collections": _describe(caller(ctx), collection)}

    @server.resource("schema://{collection}", description="The discovered schema of one collection, as the "
                                                           "caller may see it", mime_type="text/plain")
    def schema_resource(collection: str, ctx: Context) -> str:
        described = _describe(caller(ctx), collection)
        return described.get(collection, "")

    @server.prompt(description="What context do I need for this change? Bundles the PRs, threads, decisions and "
                               "owners relevant to a task description or a file path.")
    def context_for_change(task: Annotated[str, Field(description="The change: a task description or a file path")],
                           ctx: Context) -> str:
        found = search(task, ctx, k=10)["results"]
        owners = _owners(caller(ctx), [hit["ref"] for hit in found if hit["collection"] == "pull_requests"])
        lines = [f"I am about to work on: {task}", "",
                 "Relevant records from the team's history (read them with get_record before changing code):"]
        lines += [f"- [{hit['collection']}] {hit['ref']}: {hit['title']} ({hit['url'] or 'no url'})\n  {hit['snippet']}"
                  for hit in found]
        if owners:
            lines += ["", "People who changed this area recently: " + ", ".join(owners)]
        lines += ["", "Summarise the decisions and constraints these records establish, who to ask, and what "
                      "could break; cite refs."]
        return "\n".join(lines)

    return server


def _describe(scoped: Settings, collection: str | None) -> dict[str, str]:
    from context_engine.runtime import catalog_for

    if collection is not None:
        _known(_kinds_of(scoped), collection)
    schemas = _run(lambda: catalog_for(scoped)).schemas
    return {name: s.describe() for name, s in schemas.items() if collection in (None, name)}


def _kinds_of(scoped: Settings) -> Registry:
    """The kinds the caller's tenant has: the built-in ones and its own, as its store keeps them."""
    from context_engine.runtime import store_for

    return _run(lambda: store_for(scoped).kinds(scoped.tenant))


def _known(kinds: Registry, collection: str) -> None:
    if collection not in kinds:
        raise ToolError(f"unknown collection {collection!r}; use one of: {', '.join(kinds.names())}")


def _owners(scoped: Settings, refs: list[str]) -> list[str]:
    from context_engine.query.execute import scope_filter
    from context_engine.runtime import principals_for, store_for

    records = store_for(scoped).find_refs("pull_requests", scope_filter(scoped.tenant, principals_for(scoped)),
                                          refs)
    logins = [(r.get("user") or {}).get("login") for r in records]
    return list(dict.fromkeys(login for login in logins if login))[:8]


def _anonymous(settings: Settings) -> Settings:
    from dataclasses import replace

    return replace(settings, asker=None)


def _run(work):
    """Library failures as tool errors: one sentence, never a stack trace to the agent."""
    from context_engine.query.identity import AmbiguousPerson, UnknownPerson
    from context_engine.retrievers.index import IndexDamaged, IndexMissing
    from context_engine.store.documents import StoreError

    try:
        return work()
    except (StoreError, IndexMissing, IndexDamaged, UnknownPerson, AmbiguousPerson, ValueError) as exc:
        raise ToolError(str(exc.args[0] if exc.args else exc).split(" in /")[0]) from None


async def _in_worker(work):
    """`_run(work)` in a worker thread under its own Stop. Why: the SDK runs a tool in a thread and,
    when the client cancels the call (or the session ends), stops waiting, but the thread would run
    on; here the cancellation sets the Stop, and the work's queries and graph steps end at their next
    document. The same Stop reads SIGTERM's process-wide one."""
    import anyio

    from context_engine.store.bounded import Cancelled, Stop, stop_on

    stop = Stop()

    def in_thread():
        with stop_on(stop):
            try:
                return _run(work)
            except Cancelled as exc:
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

    from context_engine.server import check_key_people

    check_key_people(settings, keys)
    inner = build_server(settings, keys).streamable_http_app()

    async def app(scope, receive, send):
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or token.strip() not in keys:
                response = JSONResponse({"error": "missing or unknown API key: send `Authorization: Bearer KEY`"},
                                        status_code=401)
                return await response(scope, receive, send)
        return await inner(scope, receive, send)

    return app

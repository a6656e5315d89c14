"""The HTTP app: the context graph over LangServe behind API keys, with limits, the playground, feedback,
health and the ingest webhooks. Routes: see the package's docstring."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse
from langchain_core.callbacks import BaseCallbackHandler
from langserve import APIHandler, add_routes
from sse_starlette import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from context_engine import service
from context_engine.assistant.context import Context
from context_engine.config import Settings
from context_engine.server.auth import (
    LOGIN_PATH,
    LOGOUT_PATH,
    SESSION_COOKIE,
    ApiKey,
    RateLimiter,
    Sessions,
    bearer,
    login_page,
    safe_next,
    same_origin,
    signed_in_page,
)
from context_engine.server.http_errors import HANDLED_ERRORS, error_for, error_response, json_error
from context_engine.server.indexer import BackgroundIndexer
from context_engine.server.playground import ASK, PLAYGROUND, add_playground, playground_runnable
from context_engine.server.runnable import RUN_CONTEXT_KEY, served_runnable
from context_engine.server.webhook_routes import WEBHOOK_PREFIX, add_webhook_routes
from context_engine.service import Stop, parse_now, raise_if_stopped, stop_on

API = "/context"
# No key needed: health (counts only) and the API's documentation (routes and schemas, never data).
PUBLIC_PATHS = ("/healthz", "/docs", "/redoc", "/openapi.json")
FEEDBACK_PATH = "/feedback"
FEEDBACK_FIELDS = frozenset({"rating", "note", "question", "plan"})


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1_000_000  # GitHub webhook payloads are the largest bodies we accept
    max_run_body_bytes: int = 64_000  # a question (<= 4,000 characters) and its config, or a batch of them
    requests_per_minute: int = 60  # per API key; each item of a /batch counts
    timeout_seconds: float = 120.0  # until the response starts (a stream's first byte); the run stops too
    body_seconds: float = 10.0  # to receive a whole request body: a client trickling one is cut (408)
    session_seconds: int = 8 * 3600  # a browser login (the playground's cookie) lasts a working day
    login_attempts_per_minute: int = 10  # per client address, right or wrong


async def _read_capped(request: Request, cap: int, seconds: float) -> bytes | None:
    """The body, counted while it streams in and abandoned past `cap` (None): a declared length is
    not trusted, and nothing over the cap is ever held in memory. TimeoutError when the whole body
    has not arrived within `seconds`: a client trickling bytes cannot hold a connection open."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        return None
    chunks, size = [], 0
    async with asyncio.timeout(seconds):
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                return None
            chunks.append(chunk)
    return b"".join(chunks)


async def _stop_when_gone(receive: Any, stop: Stop) -> None:
    """Once the body is read, the next ASGI message is the end of the exchange: a client that hangs
    up before its answer stops the run it asked for (after a normal answer there is nothing left)."""
    if (await receive())["type"] == "http.disconnect":
        stop.cancel("the client disconnected; the run was stopped")


def _batch_size(path: str, body: bytes) -> int:
    """How many runs a request asks for: each input of a /batch is one."""
    return max(1, len(_inputs(body))) if path.endswith("/batch") else 1


class _Deadline(BaseCallbackHandler):
    """Stops a run between two steps once its request has timed out, its client has gone or the
    server is shutting down: the work is abandoned instead of running on (and holding shutdown) for
    minutes. Inside a step, a query stops at its next document (`store.bounded.Stop`)."""

    raise_error = True

    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds

    def on_chain_start(self, *_args: Any, **_kwargs: Any) -> None:
        raise_if_stopped()
        if time.monotonic() > self.deadline:
            raise TimeoutError("the request timed out; the run was stopped")


def _inputs(body: bytes) -> list[Any]:
    """The inputs a run request carries (`input`, or a batch's `inputs`); none when it is not JSON
    (LangServe refuses it with a 422 of its own)."""
    try:
        request = json.loads(body or b"null")
    except (ValueError, RecursionError):
        return []
    if not isinstance(request, dict):
        return []
    inputs = request.get("inputs")
    return inputs if isinstance(inputs, list) else [request.get("input")]


def _errors_as_events(
    endpoint: Callable[[Request], Awaitable[EventSourceResponse]],
) -> Callable[[Request], Awaitable[EventSourceResponse]]:
    """A LangServe streaming endpoint whose failed run ends with the same status and message an
    `invoke` answers with (`{"status_code", "message"}`, LangServe's error event), without re-raising."""

    async def stream(request: Request) -> EventSourceResponse:
        response = await endpoint(request)
        response.body_iterator = _error_event_last(response.body_iterator)
        return response

    return stream


async def _error_event_last(events: AsyncIterable[Any]) -> AsyncIterator[Any]:
    try:
        async for event in events:
            if isinstance(event, dict) and event.get("event") == "error":
                continue  # LangServe's own, always "500 Internal Server Error": the exception it re-raises follows
            yield event
    except Exception as exc:  # noqa: BLE001 - the client gets the error as an event; the server stays quiet
        status, message = error_for(exc)
        yield {
            "event": "error",
            "data": json.dumps(
                {"status_code": status, "message": message if isinstance(message, str) else json.dumps(message)}
            ),
        }


def create_app(settings: Settings, keys: dict[str, ApiKey], limits: Limits = Limits()) -> FastAPI:
    """The server for one data directory; `keys` map API keys to the tenant and asker they fix."""
    app = FastAPI(title="context-engine", description="Answers questions over a team's engineering records.")
    service.check_key_people(settings, keys)
    limiter = RateLimiter(limits.requests_per_minute)

    watchers: set[asyncio.Task] = set()  # each request's disconnect watcher, held until it ends
    rate_limited = f"rate limit: at most {limits.requests_per_minute} runs a minute per key (each /batch input counts)"

    sessions = Sessions(limits.session_seconds)
    login_limiter = RateLimiter(limits.login_attempts_per_minute)
    unknown_key = "missing or unknown API key: send `Authorization: Bearer KEY` (a browser: log in at /login)"

    def caller_key(request: Request) -> tuple[str | None, bool]:
        """The API key a request carries and whether it came from the session cookie. The Bearer
        header, when sent, decides alone; a key is never read from the query string."""
        token = bearer(request)
        if token is not None:
            return token, False
        token = sessions.key(request.cookies.get(SESSION_COOKIE))
        return token, token is not None

    @app.middleware("http")
    async def guard(request: Request, call_next):
        path = request.url.path
        login = path in (LOGIN_PATH, LOGOUT_PATH)
        public = path in PUBLIC_PATHS or path.startswith(WEBHOOK_PREFIX) or login
        token = None
        if not public:
            token, by_cookie = caller_key(request)
            if token is None or token not in keys:
                if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
                    return RedirectResponse(f"{LOGIN_PATH}?next={quote(path)}", status_code=303)  # a person
                return json_error(401, unknown_key)
            if by_cookie and request.method not in ("GET", "HEAD") and not same_origin(request):
                # SameSite=Strict already keeps the cookie off other sites' requests; this also refuses
                # a page of another port on the same host (the same "site" to a browser)
                return json_error(
                    403, "a request authenticated by the session cookie must come from this server's pages"
                )
            request.state.api_key = keys[token]
            # the playground's own files are not runs: a person reloading the page is never rate limited
            static = request.method == "GET" and path.startswith(PLAYGROUND) and path != PLAYGROUND
            if not static and not limiter.allow(token):
                return json_error(429, rate_limited)
        elif login and request.method == "POST":
            if not same_origin(request) and ("origin" in request.headers or "referer" in request.headers):
                return json_error(403, "log in from this server's own login page")
            if not login_limiter.allow(f"{path}:{request.client.host if request.client else ''}"):
                return json_error(429, f"too many login attempts: at most {limits.login_attempts_per_minute} a minute")
        cap = limits.max_body_bytes if path.startswith(WEBHOOK_PREFIX) else limits.max_run_body_bytes
        try:
            body = await _read_capped(request, cap, limits.body_seconds)
        except TimeoutError:
            return json_error(408, f"request body not received within {limits.body_seconds:g} s")
        if body is None:
            return json_error(413, f"request body over {cap:,} bytes")
        request._body = body  # what the route reads (Starlette replays a body read in middleware)
        if not public and (extra := _batch_size(path, body) - 1) and not limiter.allow(token, extra):
            return json_error(429, rate_limited)
        # The run sees this request's Stop through the context its worker threads copy.
        with stop_on(Stop()) as stop:
            watcher = asyncio.create_task(_stop_when_gone(request.receive, stop))
            watchers.add(watcher)
            watcher.add_done_callback(watchers.discard)
            answering = asyncio.ensure_future(call_next(request))
            if not (await asyncio.wait({answering}, timeout=limits.timeout_seconds))[0]:
                stop.cancel("the request timed out; the run was stopped")  # before the 504 ends the exchange
                answering.cancel()
                return json_error(504, f"no response within {limits.timeout_seconds:g} s")
            return answering.result()

    @app.get(LOGIN_PATH, include_in_schema=False)
    async def login_form(request: Request, next: str | None = None):
        token = sessions.key(request.cookies.get(SESSION_COOKIE))
        if token in keys:
            return signed_in_page(keys[token])
        return login_page(safe_next(next), limits.session_seconds / 3600)

    @app.post(LOGIN_PATH, include_in_schema=False)
    async def login(request: Request):
        form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=10)
        key, next_path = (form.get("key") or [""])[0].strip(), safe_next((form.get("next") or [""])[0] or None)
        if key not in keys:
            return login_page(next_path, limits.session_seconds / 3600, "Unknown API key.", status=401)
        sessions.end(request.cookies.get(SESSION_COOKIE))  # a new login never reuses an old session
        response = RedirectResponse(next_path, status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            sessions.start(key),
            max_age=limits.session_seconds,
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https",
        )
        return response

    @app.post(LOGOUT_PATH, include_in_schema=False)
    async def logout(request: Request):
        sessions.end(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse(LOGIN_PATH, status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    # Each type a handler of its own: Starlette gives the handler for `Exception` to its outermost
    # middleware, which re-raises after answering (a traceback in the log for a mere bad input).
    for handled in HANDLED_ERRORS:
        app.add_exception_handler(handled, error_response)

    def key_settings(key: ApiKey) -> Settings:
        # A key without a person reads public records only: never the server environment's asker.
        return replace(settings.with_overrides(tenant=key.tenant, asker=key.user), asker=key.user)

    def run_config(_config: dict[str, Any], request: Request) -> dict[str, Any]:
        # The client's config is dropped whole: only the key decides who asks, for which tenant.
        key: ApiKey = request.state.api_key
        # A key without a person reads public records only: never the server environment's asker.
        context = Context(
            tenant=key.tenant,
            user=key.user or "",
            anonymous=key.user is None,
            data_dir=str(settings.data_dir),
            model=settings.model,
            use_llm=settings.use_llm,
        )
        return {"configurable": {RUN_CONTEXT_KEY: context}, "callbacks": [_Deadline(limits.timeout_seconds)]}

    async def checked_run_config(config: dict[str, Any], request: Request) -> dict[str, Any]:
        # Input a run would refuse at its first step is refused before a stream starts: a 400 from
        # `stream` as from `invoke`, not a 200 whose stream then fails.
        for question in _inputs(await request.body()):
            if isinstance(question, dict) and isinstance(question.get("now"), str):
                parse_now(question["now"])  # ValueError: a 400 with its sentence
        return run_config(config, request)

    # The streaming endpoints first, so they are the ones that answer: LangServe's own (registered by
    # `add_routes` below for their documentation) end a failed run with a bare 500 event and re-raise.
    api = APIHandler(served_runnable(), path=API, per_req_config_modifier=checked_run_config)
    for endpoint, method in (
        ("stream", api.stream),
        ("stream_log", api.stream_log),
        ("stream_events", api.astream_events),
    ):
        app.add_api_route(f"{API}/{endpoint}", _errors_as_events(method), methods=["POST"], include_in_schema=False)
    add_routes(
        app,
        served_runnable(),
        path=API,
        per_req_config_modifier=checked_run_config,
        enabled_endpoints=(
            "invoke",
            "batch",
            "stream",
            "stream_log",
            "stream_events",
            "input_schema",
            "output_schema",
            "config_schema",
        ),
    )
    add_playground(app, APIHandler(playground_runnable(), path=ASK, per_req_config_modifier=run_config))

    @app.post(FEEDBACK_PATH)
    async def feedback(request: Request):
        """👍/👎 on an answer: JSON {"rating": "up"|"down", "note"?, "question"?, "plan"?}. Who gives it and
        for which tenant are the key's (or the session's); a body naming either is refused."""
        try:
            body = json.loads(await request.body() or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            return json_error(400, 'the body must be JSON: {"rating": "up" or "down", "note"?, "question"?, "plan"?}')
        if not isinstance(body, dict):
            return json_error(400, "the body must be a JSON object")
        unknown = sorted(set(body) - FEEDBACK_FIELDS)
        if unknown:
            return json_error(
                400,
                f"unknown field(s) {', '.join(map(repr, unknown))}: the tenant and the asker come from "
                f"the API key; a feedback has {', '.join(sorted(FEEDBACK_FIELDS))}",
            )
        try:
            out = await run_in_threadpool(
                lambda: service.feedback(
                    key_settings(request.state.api_key),
                    body.get("rating"),
                    question=body.get("question"),
                    note=body.get("note"),
                    corrected=body.get("plan"),
                )
            )
        except (service.FeedbackError, service.ContextSetError) as exc:
            return json_error(400, str(exc))
        return JSONResponse(out)

    @app.get("/healthz")
    async def healthz():
        report = await run_in_threadpool(readiness, settings, sorted({k.tenant for k in keys.values()}))
        report["indexing"] = indexer.state()
        return JSONResponse(report, status_code=200 if report["store"] == "ok" else 503)

    indexer = app.state.indexer = BackgroundIndexer(settings)
    add_webhook_routes(app, settings, indexer)
    return app


def readiness(settings: Settings, tenants: list[str]) -> dict[str, Any]:
    """Healthy when the store is readable; how many served tenants have records and a semantic index
    is reported beside it (as counts: health is public, tenant names are not)."""
    try:
        report = service.status(settings, tenants)["tenants"]
    except service.StoreError as exc:
        return {"store": "unavailable", "detail": str(exc).split(":")[0]}
    return {
        "store": "ok",
        "tenants": len(tenants),
        "tenants_with_records": sum(bool(report[t]["records"]) for t in tenants),
        "tenants_indexed": sum(report[t]["index"] is not None for t in tenants),
    }

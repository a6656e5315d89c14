"""The HTTP server: the context graph over LangServe, behind API keys, with limits and ingest webhooks.

    POST /context/invoke | /batch | /stream | /stream_events, GET /context/playground/,
         /context/input_schema, /context/output_schema      (LangServe; `Authorization: Bearer KEY`)
    POST /context/stream_log                                 (the playground's feed: its steps, then the answer, as text)
    GET  /login, POST /login, POST /logout                   (a browser's session cookie, for the playground)
    GET  /docs                                               (Swagger UI: its script and style load from a CDN)
    GET  /healthz                                            (no auth: store and index readiness)
    POST /feedback                                           (👍/👎 on the asker's last answer; the key decides who)
    POST /ingest/github, /ingest/slack                       (signed webhooks, no API key)

An API key fixes the run's tenant and asker: the per-request config modifier replaces whatever config
the client sent with a run context built from the key, so a request body can never widen either (the
config schema is empty: no configurable key is accepted from a client). The input is a question as a
plain string or `{"question": ..., "now": ...}`.

A person uses the playground after logging in at /login with an API key: the server answers with an
HttpOnly, SameSite=Strict session cookie (a random token, never the key) that the guard accepts in
place of `Authorization: Bearer`; a state-changing request carrying only the cookie must come from
the server's own origin. A key is never read from a query string.
Every error is JSON `{"error": ...}` with its status code, never a stack trace.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import html
import json
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any
from urllib.parse import parse_qs, quote, urlsplit

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import Runnable, RunnableConfig, RunnableGenerator, RunnableLambda
from langserve import APIHandler, add_routes
from pydantic import BeforeValidator
from typing_extensions import TypedDict
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from context_engine.config import Settings, check_tenant
from context_engine.query.identity import AmbiguousPerson, UnknownPerson
from context_engine.retrievers.index import IndexDamaged, IndexMissing
from context_engine.store.bounded import Cancelled, Stop, raise_if_stopped, stop_on
from context_engine.store.documents import StoreError
from context_engine.assistant.context import Context
from context_engine.assistant.graph import as_graph_input, graph as context_graph

log = logging.getLogger(__name__)

KEYS_ENV = "CONTEXT_ENGINE_API_KEYS"
GITHUB_SECRET_ENV = "GITHUB_WEBHOOK_SECRET"
SLACK_SECRET_ENV = "SLACK_SIGNING_SECRET"
SLACK_MAX_SKEW_SECONDS = 300  # Slack's own advice: reject replays older than five minutes
# Events API `channel_type`s that say the channel is private: a private channel, a DM, a group DM.
SLACK_PRIVATE_CHANNEL_TYPES = ("group", "im", "mpim")
# `issues` and `repository` actions after which it is no longer in the repository that delivered it.
GITHUB_REMOVALS = ("deleted", "transferred")
WEBHOOK_PREFIX = "/ingest/"
PUBLIC_PATHS = ("/healthz",)
LOGIN_PATH, LOGOUT_PATH = "/login", "/logout"
SESSION_COOKIE = "context_engine_session"
PLAYGROUND = "/context/playground/"
RUN_CONTEXT_KEY = "context_engine_run_context"  # where the per-request modifier leaves the run's Context
FEEDBACK_PATH = "/feedback"
FEEDBACK_FIELDS = frozenset({"rating", "note", "question", "plan"})
FEEDBACK_SCRIPT = "feedback.js"
# The playground's 👍/👎: when a run's stream ends, a bar under its output posts to /feedback with the
# session cookie (same origin). The question is the form's; the asker and tenant are the session's.
_FEEDBACK_JS = r"""(() => {
  const question = () => (document.querySelector("textarea[id='#/properties/question-input']") || {}).value || "";
  function place(bar) {
    const outputs = [...document.querySelectorAll("body *")].filter(
      (el) => el.children.length === 0 && /\u2713 (route|respond)/.test(el.textContent || ""));
    const anchor = outputs.length ? outputs[outputs.length - 1] : null;
    if (anchor && anchor.parentElement) anchor.parentElement.after(bar); else document.body.append(bar);
  }
  function show(asked) {
    document.querySelectorAll(".ce-feedback").forEach((old) => old.remove());
    const bar = document.createElement("div");
    bar.className = "ce-feedback";
    bar.style.cssText = "margin:.6rem 0;padding:.5rem;border:1px solid #d0d7de;border-radius:6px;background:#fff;" +
      "font:14px system-ui,sans-serif;display:flex;gap:.5rem;align-items:center;flex-wrap:wrap";
    bar.innerHTML = '<span>Was this answer right?</span>' +
      '<button type="button" data-rating="up" aria-label="Right">\ud83d\udc4d Right</button>' +
      '<button type="button" data-rating="down" aria-label="Wrong">\ud83d\udc4e Wrong</button>' +
      '<input class="ce-note" maxlength="2000" placeholder="note (optional)" style="flex:1;min-width:12rem">' +
      '<span class="ce-status" role="status"></span>';
    bar.querySelectorAll("button").forEach((button) => button.addEventListener("click", async () => {
      const status = bar.querySelector(".ce-status");
      const note = bar.querySelector(".ce-note").value;
      const body = {rating: button.dataset.rating, question: asked};
      if (note) body.note = note;
      const response = await fetch("/feedback", {method: "POST", credentials: "same-origin",
        headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
      const out = await response.json().catch(() => ({}));
      status.textContent = response.ok ? "Thanks: feedback #" + out.id + " stored" +
        (out.template ? " (now template " + out.template + ")" : "") : "Not stored: " + (out.error || response.status);
      if (response.ok) bar.querySelectorAll("button").forEach((b) => (b.disabled = true));
    }));
    place(bar);
  }
  const fetched = window.fetch;
  window.fetch = async (...args) => {
    const response = await fetched(...args);
    const url = String(args[0] && args[0].url || args[0]);
    if (url.endsWith("/stream_log") && response.ok && response.body) {
      const asked = question();
      // The playground aborts the request once it reads the stream's end event, which rejects the
      // clone's read: the run is over either way.
      const done = () => setTimeout(() => show(asked), 50);
      response.clone().text().then(done, done);
    }
    return response;
  };
})();
"""


@dataclass(frozen=True)
class ApiKey:
    tenant: str
    user: str | None = None


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1_000_000      # GitHub webhook payloads are the largest bodies we accept
    max_run_body_bytes: int = 64_000     # a question (<= 4,000 characters) and its config, or a batch of them
    requests_per_minute: int = 60        # per API key; each item of a /batch counts
    timeout_seconds: float = 120.0       # until the response starts (a stream's first byte); the run stops too
    body_seconds: float = 10.0           # to receive a whole request body: a client trickling one is cut (408)
    session_seconds: int = 8 * 3600      # a browser login (the playground's cookie) lasts a working day
    login_attempts_per_minute: int = 10  # per client address, right or wrong


def load_keys(path: str | Path | None = None) -> dict[str, ApiKey]:
    """API keys from a JSON file `{"KEY": {"tenant": ..., "user": ...}}`, else from the same JSON in
    $CONTEXT_ENGINE_API_KEYS. Raises ValueError on a malformed entry or when there are no keys."""
    if path is not None:
        text = Path(path).read_text(encoding="utf-8")
    else:
        text = os.environ.get(KEYS_ENV, "")
    if not text.strip():
        raise ValueError(f"no API keys: pass --keys FILE or set ${KEYS_ENV}")
    raw = json.loads(text)
    if not isinstance(raw, dict):
        raise ValueError('API keys must be a JSON object {"KEY": {"tenant": ..., "user": ...}}')
    keys = {}
    for key, entry in raw.items():
        if not key.isascii() or not key.isprintable() or " " in key:
            raise ValueError(f"API key {key[:4]!r}...: a key is printable ASCII without spaces")
        if not isinstance(entry, dict) or not isinstance(entry.get("tenant"), str) or not entry["tenant"]:
            raise ValueError(f"API key {key[:4]}...: needs a non-empty string `tenant`")
        user = entry.get("user")
        if user is not None and (not isinstance(user, str) or not user.strip()):
            raise ValueError(f"API key {key[:4]}...: `user` must name one account (a GitHub login, Slack id, "
                             "Jira/Linear account, verified e-mail or system:account)")
        keys[key] = ApiKey(tenant=check_tenant(entry["tenant"]), user=user)
    return keys


def check_key_people(settings: Settings, keys: dict[str, ApiKey]) -> None:
    """Every key's person must name one account group of its tenant's directory exactly, as `--as`
    does (checked before serving, so a key can never fail, be guessed, or fall back to anyone else at
    request time). ValueError names the key."""
    from context_engine.runtime import NoData, principals_for

    for key, entry in keys.items():
        if entry.user is None:
            continue
        try:
            principals_for(settings.with_overrides(tenant=entry.tenant, asker=entry.user))
        except (UnknownPerson, AmbiguousPerson, NoData) as exc:
            raise ValueError(f"API key {key[:4]}...: {exc.args[0] if exc.args else exc}") from None


class RateLimiter:
    """A sliding one-minute window of request times per key."""

    def __init__(self, per_minute: int):
        self.per_minute = per_minute
        self._seen: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()

    def allow(self, key: str, runs: int = 1) -> bool:
        now = time.monotonic()
        with self._lock:
            seen = self._seen[key]
            while seen and now - seen[0] >= 60:
                seen.popleft()
            if len(seen) + runs > self.per_minute:
                return False
            seen.extend([now] * runs)
            return True


def _error(status: int, message: Any) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _unsigned(secret_env: str, service: str, signed: bytes, prefix: str, request: Request,
              header: str) -> JSONResponse | None:
    """The error response for a webhook call not signed with the service's secret (HMAC-SHA256 of
    `signed`, hex, after `prefix`, in `header`); None when the signature is right."""
    secret = os.environ.get(secret_env, "")
    if not secret:
        return _error(503, f"{service} webhooks are off: ${secret_env} is not set")
    expected = prefix + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    # Headers arrive as latin-1 text: compared as bytes, a non-ASCII signature is a 401, not a 500.
    given = request.headers.get(header.lower(), "").encode("latin-1", "replace")
    if not hmac.compare_digest(expected.encode(), given):
        return _error(401, f"bad {header}")
    return None


def _bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


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
    if not path.endswith("/batch"):
        return 1
    try:
        inputs = json.loads(body).get("inputs")
    except (ValueError, AttributeError):
        return 1  # LangServe refuses it with a 422 of its own
    return max(1, len(inputs)) if isinstance(inputs, list) else 1


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


class QuestionInput(TypedDict, total=False):
    question: str
    now: str  # ISO 8601; the clock when absent


# What a client may send: `{"question": ..., "now": ...}`, or the question as a plain string. The schema
# is the object (two text fields in the playground's form; a union would draw as an anyOf), while
# validation first turns a string into it, so `RemoteRunnable(...).invoke("open PRs by Rashid")` works.
# (Chat input, `{"messages": [...]}`, is for Python and Studio: the playground's form cannot draw it.)
Question = Annotated[QuestionInput, BeforeValidator(as_graph_input)]


class Answer(TypedDict, total=False):
    """The output as its schema shows it: the plain-JSON fields. The response also carries the graph's
    `messages` and `documents` (LangChain objects, serialised by LangServe), left out of the schema
    because their unions break the playground's renderer."""
    question: str
    answer: str
    citations: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    records: list[dict[str, Any]]
    route: str
    outcome: str
    declined: bool
    followup: str
    reflection: dict[str, Any]


def served_runnable(graph: Runnable = context_graph) -> Runnable:
    """The graph as LangServe serves it: the input coerced to the graph's dict, then the graph run with
    the request's Context passed the public way (`context=`), streaming as the graph itself streams.
    The Context travels from the per-request config modifier under `configurable[RUN_CONTEXT_KEY]`."""

    def in_run_context(_inputs: Any, config: RunnableConfig) -> Runnable:
        # Returning a runnable makes RunnableLambda invoke or stream it with the same input and config.
        context = (config.get("configurable") or {}).get(RUN_CONTEXT_KEY)
        return graph.bind(context=context)

    return (RunnableLambda(as_graph_input, name="question") | RunnableLambda(in_run_context, name=graph.get_name())
            ).with_types(input_type=Question, output_type=Answer)


def _readable_steps(updates: Iterator[dict[str, Any]], config: RunnableConfig) -> Iterator[str]:
    """A run as a person reads it in the playground: a line per graph step as it finishes, then the
    answer and its sources (the graph's own node updates are JSON the size of the records found).
    The run is remembered as its asker's last question first: what the page's 👍/👎 are about."""
    final: dict[str, Any] = {}
    for update in updates:
        yield from _step_lines(update, final)
    _remember_ask(final, config)
    yield "\n" + _answer_text(final)


async def _areadable_steps(updates: AsyncIterator[dict[str, Any]], config: RunnableConfig) -> AsyncIterator[str]:
    final: dict[str, Any] = {}
    async for update in updates:
        for line in _step_lines(update, final):
            yield line
    await run_in_threadpool(_remember_ask, final, config)
    yield "\n" + _answer_text(final)


def _remember_ask(final: dict[str, Any], config: RunnableConfig) -> None:
    """The run's question, plan and answer as the last ask of the request's own tenant and asker
    (the run context its key made, never the body)."""
    from context_engine.query.feedback import remember_ask

    context = (config.get("configurable") or {}).get(RUN_CONTEXT_KEY)
    if context is None or not final.get("question"):
        return
    remember_ask(Path(context.data_dir), context.tenant, "" if context.anonymous else context.user,
                 str(final["question"]), final, str(final.get("now") or ""))


def _step_lines(update: dict[str, Any] | None, final: dict[str, Any]) -> list[str]:
    """`\u2713 node` for each node of one update (with the route chosen); `final` gathers the values."""
    lines = []
    for node, values in (update or {}).items():
        values = values if isinstance(values, dict) else {}
        note = f": {values['route']}" if node == "route" and values.get("route") else ""
        lines.append(f"\u2713 {node}{note}\n")
        final.update(values)
    return lines


def _answer_text(final: dict[str, Any]) -> str:
    answer = str(final.get("answer") or "(no answer)")
    sources = [f"[{c['n']}] {c.get('title') or c.get('id') or ''} {c.get('url') or ''}".rstrip()
               for c in final.get("citations") or [] if isinstance(c, dict) and c.get("n") is not None
               and not (c.get("url") and c["url"] in answer)]
    return answer + ("\n\nSources:\n" + "\n".join(sources) if sources else "")


def playground_runnable(graph: Runnable = context_graph) -> Runnable:
    """What the playground runs: the served runnable, its node updates turned into readable text."""
    return served_runnable(graph) | RunnableGenerator(_readable_steps, _areadable_steps, name="answer")


class Sessions:
    """Browser logins: a random token (the cookie) -> the API key it stands for, until it expires.
    In memory: a restart or a logout ends them (the person logs in again)."""

    MAX = 10_000

    def __init__(self, seconds: int):
        self.seconds = seconds
        self._tokens: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def start(self, key: str) -> str:
        token = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._lock:
            for old in [t for t, (_, until) in self._tokens.items() if until <= now]:
                del self._tokens[old]
            while len(self._tokens) >= self.MAX:
                del self._tokens[next(iter(self._tokens))]  # the oldest login
            self._tokens[token] = (key, now + self.seconds)
        return token

    def key(self, token: str | None) -> str | None:
        if not token:
            return None
        with self._lock:
            key, until = self._tokens.get(token, (None, 0.0))
            if key is not None and until <= time.monotonic():
                del self._tokens[token]
                return None
            return key

    def end(self, token: str | None) -> None:
        with self._lock:
            self._tokens.pop(token or "", None)


def _same_origin(request: Request) -> bool:
    """True when the request says it comes from this server's own pages (`Origin`, else `Referer`)."""
    source = request.headers.get("origin") or request.headers.get("referer") or ""
    return bool(source) and urlsplit(source).netloc == request.headers.get("host", "")


def _safe_next(target: str | None) -> str:
    """Where to go after logging in: a path of this server only (never another site)."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return PLAYGROUND


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>context-engine: log in</title><link rel="icon" href="data:,">
<style>
 body {{ font-family: system-ui, sans-serif; background: #f6f7f9; color: #1b1f24; margin: 0; }}
 main {{ max-width: 26rem; margin: 12vh auto; background: #fff; padding: 2rem; border-radius: 10px;
        box-shadow: 0 1px 4px rgba(0,0,0,.12); }}
 h1 {{ font-size: 1.3rem; margin-top: 0; }}
 label {{ display: block; font-weight: 600; margin-bottom: .4rem; }}
 input[type=password] {{ width: 100%; box-sizing: border-box; padding: .6rem; font-size: 1rem;
        border: 1px solid #c4c9d0; border-radius: 6px; }}
 button {{ margin-top: 1rem; padding: .6rem 1.2rem; font-size: 1rem; border: 0; border-radius: 6px;
        background: #1f6feb; color: #fff; cursor: pointer; }}
 .error {{ color: #b42318; }} .muted {{ color: #57606a; font-size: .9rem; }}
</style></head>
<body><main>
<h1>context-engine</h1>
{body}
</main></body></html>"""


def _login_page(next_path: str, hours: float, error: str = "", status: int = 200) -> HTMLResponse:
    body = (f'<p class="error" role="alert">{html.escape(error)}</p>' if error else "") + f"""
<form method="post" action="{LOGIN_PATH}">
 <label for="key">API key</label>
 <input id="key" name="key" type="password" autocomplete="current-password" required autofocus>
 <input type="hidden" name="next" value="{html.escape(next_path)}">
 <button type="submit">Log in</button>
</form>
<p class="muted">The key decides your team and who you are. The browser keeps a session cookie (never
the key itself) for {hours:g} hours; log out on this page.</p>"""
    return _html(body, status)


def _signed_in_page(key: ApiKey) -> HTMLResponse:
    who = f"as <b>{html.escape(key.user)}</b>" if key.user else "without a person (public records only)"
    body = f"""<p>Logged in to team <b>{html.escape(key.tenant)}</b> {who}.</p>
<p><a href="{PLAYGROUND}">Open the playground</a> &middot; <a href="/docs">API docs</a></p>
<form method="post" action="{LOGOUT_PATH}"><button type="submit">Log out</button></form>"""
    return _html(body)


def _html(body: str, status: int = 200) -> HTMLResponse:
    # never framed (no clickjacking of the form), never cached (it shows who is logged in)
    return HTMLResponse(_PAGE.format(body=body), status_code=status,
                        headers={"Content-Security-Policy": "frame-ancestors 'none'", "X-Frame-Options": "DENY",
                                 "Cache-Control": "no-store"})


def create_app(settings: Settings, keys: dict[str, ApiKey], limits: Limits = Limits()) -> FastAPI:
    """The server for one data directory; `keys` map API keys to the tenant and asker they fix."""
    app = FastAPI(title="context-engine", description="Answers questions over a team's engineering records.")
    check_key_people(settings, keys)
    limiter = RateLimiter(limits.requests_per_minute)
    ingest_lock = threading.Lock()  # one writer at a time within this process (the data dir has its own lock)
    deliveries = DeliveryLog(settings.data_dir / "webhook-deliveries.sqlite")

    watchers: set[asyncio.Task] = set()  # each request's disconnect watcher, held until it ends
    rate_limited = f"rate limit: at most {limits.requests_per_minute} runs a minute per key (each /batch input counts)"

    sessions = Sessions(limits.session_seconds)
    login_limiter = RateLimiter(limits.login_attempts_per_minute)
    unknown_key = "missing or unknown API key: send `Authorization: Bearer KEY` (a browser: log in at /login)"

    def caller_key(request: Request) -> tuple[str | None, bool]:
        """The API key a request carries and whether it came from the session cookie. The Bearer
        header, when sent, decides alone; a key is never read from the query string."""
        token = _bearer(request)
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
                return _error(401, unknown_key)
            if by_cookie and request.method not in ("GET", "HEAD") and not _same_origin(request):
                # SameSite=Strict already keeps the cookie off other sites' requests; this also refuses
                # a page of another port on the same host (the same "site" to a browser)
                return _error(403, "a request authenticated by the session cookie must come from this server's pages")
            request.state.api_key = keys[token]
            # the playground's own files are not runs: a person reloading the page is never rate limited
            static = request.method == "GET" and path.startswith(PLAYGROUND) and path != PLAYGROUND
            if not static and not limiter.allow(token):
                return _error(429, rate_limited)
        elif login and request.method == "POST":
            if not _same_origin(request) and ("origin" in request.headers or "referer" in request.headers):
                return _error(403, "log in from this server's own login page")
            if not login_limiter.allow(f"{path}:{request.client.host if request.client else ''}"):
                return _error(429, f"too many login attempts: at most {limits.login_attempts_per_minute} a minute")
        cap = limits.max_body_bytes if path.startswith(WEBHOOK_PREFIX) else limits.max_run_body_bytes
        try:
            body = await _read_capped(request, cap, limits.body_seconds)
        except TimeoutError:
            return _error(408, f"request body not received within {limits.body_seconds:g} s")
        if body is None:
            return _error(413, f"request body over {cap:,} bytes")
        request._body = body  # what the route reads (Starlette replays a body read in middleware)
        if not public and (extra := _batch_size(path, body) - 1) and not limiter.allow(token, extra):
            return _error(429, rate_limited)
        # The run sees this request's Stop through the context its worker threads copy.
        with stop_on(Stop()) as stop:
            watcher = asyncio.create_task(_stop_when_gone(request.receive, stop))
            watchers.add(watcher)
            watcher.add_done_callback(watchers.discard)
            answering = asyncio.ensure_future(call_next(request))
            if not (await asyncio.wait({answering}, timeout=limits.timeout_seconds))[0]:
                stop.cancel("the request timed out; the run was stopped")  # before the 504 ends the exchange
                answering.cancel()
                return _error(504, f"no response within {limits.timeout_seconds:g} s")
            return answering.result()

    @app.get(LOGIN_PATH, include_in_schema=False)
    async def login_form(request: Request, next: str | None = None):
        token = sessions.key(request.cookies.get(SESSION_COOKIE))
        if token in keys:
            return _signed_in_page(keys[token])
        return _login_page(_safe_next(next), limits.session_seconds / 3600)

    @app.post(LOGIN_PATH, include_in_schema=False)
    async def login(request: Request):
        form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=10)
        key, next_path = (form.get("key") or [""])[0].strip(), _safe_next((form.get("next") or [None])[0])
        if key not in keys:
            return _login_page(next_path, limits.session_seconds / 3600, "Unknown API key.", status=401)
        sessions.end(request.cookies.get(SESSION_COOKIE))  # a new login never reuses an old session
        response = RedirectResponse(next_path, status_code=303)
        response.set_cookie(SESSION_COOKIE, sessions.start(key), max_age=limits.session_seconds, path="/",
                            httponly=True, samesite="strict",
                            secure=request.url.scheme == "https"
                            or request.headers.get("x-forwarded-proto") == "https")
        return response

    @app.post(LOGOUT_PATH, include_in_schema=False)
    async def logout(request: Request):
        sessions.end(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse(LOGIN_PATH, status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException):
        return _error(exc.status_code, exc.detail)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError):
        return _error(422, [{"loc": list(e.get("loc", ())), "msg": e.get("msg")} if isinstance(e, dict) else str(e)
                            for e in exc.errors()])

    @app.exception_handler(IndexMissing)
    @app.exception_handler(IndexDamaged)
    async def index_unavailable(_request: Request, exc: Exception):
        return _error(503, str(exc).split(" in /")[0])  # the message, without the server's paths

    @app.exception_handler(UnknownPerson)
    @app.exception_handler(AmbiguousPerson)
    async def person_error(_request: Request, exc: Exception):
        return _error(403, "this key's person is no longer in the directory")

    @app.exception_handler(Cancelled)
    async def cancelled(_request: Request, exc: Cancelled):
        return _error(503, str(exc))  # its client is gone or the server is stopping: nobody waits for more

    @app.exception_handler(ValueError)
    async def input_error(_request: Request, exc: ValueError):
        # The graph raises ValueError for bad input it only finds while running (e.g. a malformed `now`).
        if "integer string conversion" in str(exc):  # Python's own message names an interpreter setting
            return _error(400, "a number in the request has too many digits to read; numbers fit 64 bits")
        return _error(400, str(exc))

    @app.exception_handler(Exception)
    async def unexpected_error(_request: Request, exc: Exception):
        log.exception("unhandled error")
        return _error(500, f"internal error ({type(exc).__name__})")

    def run_config(_config: dict[str, Any], request: Request) -> dict[str, Any]:
        # The client's config is dropped whole: only the key decides who asks, for which tenant.
        key: ApiKey = request.state.api_key
        # A key without a person reads public records only: never the server environment's asker.
        context = Context(tenant=key.tenant, user=key.user or "", anonymous=key.user is None,
                          data_dir=str(settings.data_dir), model=settings.model, use_llm=settings.use_llm)
        return {"configurable": {RUN_CONTEXT_KEY: context}, "callbacks": [_Deadline(limits.timeout_seconds)]}

    # The API endpoints serve the graph's own output; the playground, a person's page, runs the same
    # graph but streams readable text (its steps, then the answer) to its own /stream_log feed.
    add_routes(app, served_runnable(), path="/context", per_req_config_modifier=run_config,
               enabled_endpoints=("invoke", "batch", "stream", "stream_events", "input_schema", "output_schema",
                                  "config_schema", "config_hashes"))
    playground = APIHandler(playground_runnable(), path="/context", per_req_config_modifier=run_config)

    @app.post("/context/stream_log", include_in_schema=False)
    async def playground_stream(request: Request) -> Response:
        return await playground.stream_log(request)

    @app.get(PLAYGROUND + "{file_path:path}", include_in_schema=False)
    async def playground_page(file_path: str, request: Request) -> Response:
        if file_path == FEEDBACK_SCRIPT:
            return Response(_FEEDBACK_JS, media_type="application/javascript", headers={"Cache-Control": "no-store"})
        page = await playground.playground(file_path, request)
        if file_path in ("", "index.html") and page.media_type == "text/html":
            # The playground is LangServe's built page: the 👍/👎 under each answer are one more script.
            body = page.body.replace(b"</body>", f'<script src="{PLAYGROUND}{FEEDBACK_SCRIPT}"></script></body>'.encode())
            return Response(body, media_type="text/html", headers={"Cache-Control": "no-store"})
        return page

    @app.post(FEEDBACK_PATH)
    async def feedback(request: Request):
        """👍/👎 on an answer: JSON {"rating": "up"|"down", "note"?, "question"?, "plan"?}. Who gives it and
        for which tenant are the key's (or the session's); a body naming either is refused."""
        from context_engine.query.context_sets import ContextSetError
        from context_engine.query.feedback import FeedbackError, submit
        from context_engine.query.validate import ValidationPolicy
        from context_engine.runtime import catalog_for

        try:
            body = json.loads(await request.body() or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            return _error(400, "the body must be JSON: {\"rating\": \"up\" or \"down\", \"note\"?, \"question\"?, \"plan\"?}")
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object")
        unknown = sorted(set(body) - FEEDBACK_FIELDS)
        if unknown:
            return _error(400, f"unknown field(s) {', '.join(map(repr, unknown))}: the tenant and the asker come from "
                               f"the API key; a feedback has {', '.join(sorted(FEEDBACK_FIELDS))}")
        key: ApiKey = request.state.api_key
        scoped = settings.with_overrides(tenant=key.tenant, asker=key.user)
        if key.user is None:
            from dataclasses import replace

            scoped = replace(scoped, asker=None)  # a key without a person: never the server environment's asker
        policy = ValidationPolicy(allow_regex=settings.allow_regex, max_limit=settings.max_rows)

        def give() -> dict[str, Any]:
            return submit(settings.data_dir, catalog_for(scoped), asker=key.user or "", rating=body.get("rating"),
                          question=body.get("question"), note=body.get("note"), corrected=body.get("plan"),
                          policy=policy)

        try:
            out = await run_in_threadpool(give)
        except (FeedbackError, ContextSetError) as exc:
            return _error(400, str(exc))
        return JSONResponse(out)

    @app.get("/healthz")
    async def healthz():
        report = await run_in_threadpool(readiness, settings, sorted({k.tenant for k in keys.values()}))
        report["indexing"] = indexer.state()
        return JSONResponse(report, status_code=200 if report["store"] == "ok" else 503)

    indexer = app.state.indexer = BackgroundIndexer(settings)

    def ingest_now(tenant: str, batches: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        """Commit the records now (the answer to the webhook says what was written); their chunks are
        indexed in the background, so a burst of events never waits on embedding."""
        from context_engine.runtime import forget
        from context_engine.ingest import ingest

        with ingest_lock:
            report = ingest(settings, {tenant: batches}, index=False)[0]
            forget(settings)
        if report.changed:
            indexer.request(tenant)
        return {**report.to_json(), "index": "queued" if report.changed else "unchanged"}

    @app.post("/ingest/github")
    async def ingest_github(request: Request):
        body = await request.body()
        refused = _unsigned(GITHUB_SECRET_ENV, "GitHub", body, "sha256=", request, "X-Hub-Signature-256")
        if refused:
            return refused
        event = request.headers.get("x-github-event", "")
        if event == "ping":
            return {"ok": True}
        if not deliveries.first_time("github", request.headers.get("x-github-delivery", "")):
            return {"ignored": "duplicate delivery"}  # GitHub redelivers; each delivery is applied once
        if not deliveries.first_time("github-body", hashlib.sha256(body).hexdigest()):
            # The delivery id is a header the signature does not cover: an old signed body replayed
            # under a new id is the same content, and is applied once like any redelivery.
            return {"ignored": "duplicate content"}
        try:
            payload = json.loads(body)
            batches = await run_in_threadpool(github_batches, settings, event, payload)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return _error(400, f"unusable {event or 'GitHub'} payload: {exc}")
        if batches is None:
            return {"ignored": event}
        batches = await run_in_threadpool(newer_than_stored, settings, batches)
        if not any(batches.values()):
            return {"ignored": "older than what is stored"}  # a replayed or late delivery never rolls back
        return {"ingested": await run_in_threadpool(ingest_now, settings.tenant, batches)}

    @app.post("/ingest/slack")
    async def ingest_slack(request: Request):
        body = await request.body()
        stamp = request.headers.get("x-slack-request-timestamp", "")
        refused = _unsigned(SLACK_SECRET_ENV, "Slack", f"v0:{stamp}:".encode() + body, "v0=", request,
                            "X-Slack-Signature")
        if refused:
            return refused
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > SLACK_MAX_SKEW_SECONDS:
            return _error(401, "missing or stale X-Slack-Request-Timestamp")  # a replayed request
        try:
            payload = json.loads(body)
        except ValueError as exc:
            return _error(400, f"unusable Slack payload: {exc}")
        if not isinstance(payload, dict):
            return _error(400, "unusable Slack payload: not an object")
        if payload.get("type") == "url_verification":
            return {"challenge": payload.get("challenge")}
        if not deliveries.first_time("slack", str(payload.get("event_id") or "")):
            return {"ignored": "duplicate delivery"}  # Slack retries; each event is applied once
        if not deliveries.first_time("slack-body", hashlib.sha256(body).hexdigest()):
            return {"ignored": "duplicate content"}  # the same signed event, whatever its id says
        left = await run_in_threadpool(member_left, settings, payload)
        if left is not None:
            if not left:
                return {"ignored": "member_left_channel"}
            return {"ingested": await run_in_threadpool(ingest_now, settings.tenant, {"messages": left})}
        record = await run_in_threadpool(slack_message, settings, payload)
        if record is None:
            return {"ignored": (payload.get("event") or {}).get("type") or payload.get("type")}
        return {"ingested": await run_in_threadpool(ingest_now, settings.tenant, {"messages": [record]})}

    return app


def readiness(settings: Settings, tenants: list[str]) -> dict[str, Any]:
    """Healthy when the store is readable; how many served tenants have records and a semantic index
    is reported beside it (as counts: health is public, tenant names are not)."""
    from context_engine.retrievers.index import live_generation
    from context_engine.runtime import store_for

    try:
        with_data = set(store_for(settings).tenants())
    except StoreError as exc:
        return {"store": "unavailable", "detail": str(exc).split(":")[0]}
    return {"store": "ok", "tenants": len(tenants), "tenants_with_records": sum(t in with_data for t in tenants),
            "tenants_indexed": sum(live_generation(settings, t) is not None for t in tenants)}


class BackgroundIndexer:
    """One thread that syncs tenants' semantic indexes after webhook commits. Requests for a tenant
    already waiting coalesce into one sync; a failed sync is logged and retried on the next request."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._waiting: set[str] = set()
        self._running: str | None = None
        self._failed: dict[str, str] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def request(self, tenant: str) -> None:
        with self._wake:
            self._waiting.add(tenant)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="background-indexer", daemon=True)
                self._thread.start()
            self._wake.notify()

    def state(self) -> dict[str, Any]:
        """For /healthz: counts only (health is public, tenant names are not)."""
        with self._wake:
            return {"queued": len(self._waiting), "running": self._running is not None, "failed": len(self._failed)}

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until nothing is queued or running (tests, shutdown); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._wake:
            while self._waiting or self._running is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._wake.wait(left)
        return True

    def _run(self) -> None:
        from context_engine.ingest import sync_tenant_index

        while True:
            with self._wake:
                while not self._waiting:
                    if not self._wake.wait(timeout=60):
                        self._thread = None  # idle: a later request starts a new thread
                        return
                tenant = self._waiting.pop()
                self._running = tenant
            failure = None
            try:
                sync_tenant_index(self.settings, tenant)
            except Exception as exc:  # noqa: BLE001 - the server stays up; /healthz counts the failure
                log.warning("background index sync failed: %s", exc.__class__.__name__)
                failure = exc.__class__.__name__
            finally:
                with self._wake:
                    if failure is None:
                        self._failed.pop(tenant, None)
                    else:
                        self._failed[tenant] = failure
                    self._running = None
                    self._wake.notify_all()


class DeliveryLog:
    """Webhook delivery ids already applied, persisted (a restart does not re-apply a redelivery) and
    bounded (ids older than a week are forgotten: GitHub and Slack redeliver within hours)."""

    KEEP_SECONDS = 7 * 24 * 3600

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS seen (id TEXT PRIMARY KEY, at REAL NOT NULL)")
        self.lock = threading.Lock()

    def first_time(self, service: str, delivery_id: str) -> bool:
        """True once per id (an event without an id cannot be deduplicated and is applied)."""
        if not delivery_id:
            return True
        now = time.time()
        with self.lock:
            self.conn.execute("DELETE FROM seen WHERE at < ?", (now - self.KEEP_SECONDS,))
            cur = self.conn.execute("INSERT OR IGNORE INTO seen (id, at) VALUES (?, ?)",
                                    (f"{service}:{delivery_id[:200]}", now))
            return cur.rowcount == 1


def newer_than_stored(settings: Settings, batches: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Only the records at least as new (`updated_at`) as what is stored: an old delivery replayed
    later cannot turn a merged PR back into an open one. One as new as what is stored (a review on an
    unchanged PR) is applied, and like every webhook record its access list may only narrow the
    stored one (`github_batches`), so an equal timestamp never widens."""
    from context_engine.runtime import NoData, store_for
    from context_engine.sources.normalize import normalize

    try:
        store = store_for(settings)
    except NoData:
        return batches
    out = {}
    for collection, records in batches.items():
        incoming = [(record, normalize(collection, record)) for record in records]
        stored = {d["ref"]: d.get("updated_at") for d in store.find_refs(
            collection, {"tenant_id": settings.tenant}, [n["ref"] for _, n in incoming])}
        out[collection] = [record for record, norm in incoming
                           if not (isinstance(stored.get(norm["ref"]), datetime) and isinstance(norm.get("updated_at"), datetime)
                                   and norm["updated_at"] < stored[norm["ref"]])]
    return out


def github_batches(settings: Settings, event: str, payload: dict[str, Any]) -> dict[str, list[dict]] | None:
    """The records a GitHub webhook delivers: the PR (pull_request, pull_request_review) or the issue
    (issues; a PR seen as an issue goes to pull_requests). None for events we do not store.

    Access: the event's repository states its visibility (`private: true`: nobody until collaborators
    are known; false: everyone). That statement is applied as a narrowing (`ACL_PARTIAL`): it makes a
    new record's list, and may narrow a stored one (a repository made private), never widen it. Only
    an authoritative ingest (a dump or the API) can open a record again: a webhook delivery is easy to
    replay out of order, and a dump that narrowed a record must not be undone by an older event."""
    from context_engine.ingest import ACL_PARTIAL
    from context_engine.sources.github import is_pull_request, visibility_acl
    from context_engine.sources.normalize import normalize, source_fields

    # Without a stated visibility the record keeps what is stored (or is readable by nobody), never
    # everyone.
    if event == "pull_request":
        collection, record = "pull_requests", payload["pull_request"]
    elif event == "issues":
        record = payload["issue"]
        collection = "pull_requests" if is_pull_request(record) else "issues"
        if payload.get("action") in GITHUB_REMOVALS:
            # Gone from this repository: its text goes and nobody reads the stored record. No
            # `updated_at`, so no stored state counts as newer than the removal.
            kept = {k: record[k] for k in ("id", "number", "html_url", "repository_url", "url", "pull_request",
                                           "created_at") if k in record}
            return {collection: [{**kept, "title": "", "state": payload["action"], "acl": [], ACL_PARTIAL: True}]}
    elif event == "pull_request_review":
        collection, record = "pull_requests", with_review(settings, payload["pull_request"], payload["review"])
    else:
        # `repository` `privatized` (it says private), `deleted` or `transferred` (gone from here).
        gone = event == "repository" and payload.get("action") in GITHUB_REMOVALS
        closed = closed_repository(settings, payload, gone=gone)
        return closed if any(closed.values()) else None
    # Two statements (the event's repository, the record's own base repository): privacy wins.
    stated = [a for a in (visibility_acl(payload), visibility_acl(record)) if a is not None]
    acl = [] if [] in stated else stated[0] if stated else None
    record = source_fields(record)  # a delivery never speaks for the engine (`acl`, `source` ...)
    delivered = {collection: [record if acl is None else {**record, "acl": acl, ACL_PARTIAL: True}]}
    try:
        ref = normalize(collection, record)["ref"]
    except ValueError:
        return delivered  # refused in one line where every delivered record is normalised
    for name, records in closed_repository(settings, payload).items():
        delivered.setdefault(name, []).extend(r for r in records if not (name == collection and r["ref"] == ref))
    return delivered


def closed_repository(settings: Settings, payload: dict[str, Any], gone: bool = False) -> dict[str, list[dict]]:
    """Privacy is the repository's: a signed event whose `repository` says `private: true` (a
    `repository` event `privatized`, or any PR / issue / review event of a private repository) closes
    every stored record of that repository that is still open to anyone, not only the one it
    delivers; so does a `repository` event `deleted` or `transferred` (`gone`). Each is written again as stored with a partial list of nobody (it can only narrow).
    Records already closed are not written again."""
    from context_engine.ingest import ACL_PARTIAL
    from context_engine.runtime import NoData, store_for
    from context_engine.store.documents import strip_hidden

    repository = payload.get("repository")
    if not (isinstance(repository, dict) and (gone or repository.get("private") is True)
            and isinstance(repository.get("full_name"), str) and repository["full_name"]):
        return {}
    try:
        store = store_for(settings)
    except NoData:
        return {}
    name = repository["full_name"].lower()  # GitHub compares repository names without case
    out: dict[str, list[dict]] = {}
    for collection in ("pull_requests", "issues"):
        out[collection] = [{**strip_hidden(doc), "acl": [], ACL_PARTIAL: True}
                           for doc in store.collection(collection).find(
                               {"tenant_id": settings.tenant, "acl": {"$ne": []}})
                           if isinstance(doc.get("repo"), str) and doc["repo"].lower() == name]
    return out


def with_review(settings: Settings, pull: dict[str, Any], review: dict[str, Any]) -> dict[str, Any]:
    """The PR with its stored reviews plus this one (the review payload's PR carries no reviews)."""
    from context_engine.runtime import NoData, store_for
    from context_engine.sources.normalize import normalize
    from context_engine.store.documents import record_id

    ref = normalize("pull_requests", pull)["ref"]
    try:
        stored = store_for(settings).collection("pull_requests").find_one({"_id": record_id(settings.tenant, ref)})
    except NoData:
        stored = None
    reviews = [r for r in (stored or {}).get("reviews", []) if r.get("id") != review.get("id")]
    return {**pull, "reviews": reviews + [review]}


def slack_message(settings: Settings, payload: dict[str, Any]) -> dict[str, Any] | None:
    """A stored message record from an Events API `event_callback` of a plain `message`, or of a
    `message_deleted` (`deleted_message`: the stored message closed); None for anything else (other
    events, edits, bot and system subtypes).

    Access, never wider than what is stored for the channel (its newest message's list):
    - the event says the channel is private (`channel_type` group, im or mpim, or `is_private`): the
      stored list when it names members, nobody when it is public or unknown (an event never lists
      members, and a channel made private must not keep its public list);
    - the event says it is a public channel (`channel_type: channel`): the stored list, or the whole
      tenant for a channel never seen;
    - it says neither: the stored list, else nobody.
    The list is marked partial: a re-delivery can only narrow what is stored for the message itself.
    """
    from context_engine.access import PUBLIC
    from context_engine.ingest import ACL_PARTIAL

    event = payload.get("event") or {}
    if payload.get("type") != "event_callback" or event.get("type") != "message":
        return None
    if event.get("subtype") == "message_deleted":
        return deleted_message(settings, event)
    if event.get("subtype"):
        return None
    record = {k: event[k] for k in ("type", "user", "text", "ts", "thread_ts") if k in event}
    record["channel_id"] = event.get("channel")
    stored = channel_acl(settings, record["channel_id"])
    if event.get("channel_type") in SLACK_PRIVATE_CHANNEL_TYPES or event.get("is_private") is True:
        record["acl"] = [] if stored is None or PUBLIC in stored else stored
    elif event.get("channel_type") == "channel":
        record["acl"] = [PUBLIC] if stored is None else stored
    else:
        record["acl"] = stored or []
    record[ACL_PARTIAL] = True  # an event never widens what is stored; only an export states membership
    return record


def member_left(settings: Settings, payload: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A `member_left_channel` event: the member no longer reads the channel, so every stored message
    of it that names them loses them (a partial list: it only narrows; a public channel's `*` is the
    whole tenant's and stays). None for any other event."""
    from context_engine.access import principal
    from context_engine.ingest import ACL_PARTIAL
    from context_engine.runtime import NoData, store_for
    from context_engine.store.documents import strip_hidden

    event = payload.get("event") or {}
    if payload.get("type") != "event_callback" or event.get("type") != "member_left_channel":
        return None
    channel, user = event.get("channel"), event.get("user")
    if not isinstance(channel, str) or not isinstance(user, str) or not user:
        return []
    member = principal("slack", user)
    try:
        stored = store_for(settings).collection("messages").find(
            {"tenant_id": settings.tenant, "channel_id": channel, "acl": member})
    except NoData:
        return []
    return [{**strip_hidden(doc), "acl": [p for p in doc["acl"] if p != member], ACL_PARTIAL: True}
            for doc in stored]


def deleted_message(settings: Settings, event: dict[str, Any]) -> dict[str, Any] | None:
    """A `message_deleted` event as the stored message closed: its text gone, readable by nobody
    (partial: it only narrows). It keeps its place in its thread, so the thread's unit of index text,
    which may still hold the deleted text, is served to nobody (`hybrid.LiveAccess`). None when no such
    message is stored."""
    from context_engine.ingest import ACL_PARTIAL
    from context_engine.runtime import NoData, store_for

    channel, ts = event.get("channel"), event.get("deleted_ts")
    if not isinstance(channel, str) or not isinstance(ts, str):
        return None
    try:
        stored = store_for(settings).find_refs("messages", {"tenant_id": settings.tenant}, [f"{channel}:{ts}"])
    except NoData:
        return None
    if not stored:
        return None
    record = {"type": "message", "channel_id": channel, "ts": ts, "text": "", "deleted": True, "acl": [],
              ACL_PARTIAL: True}
    if isinstance(stored[0].get("thread_ts"), str):
        record["thread_ts"] = stored[0]["thread_ts"]
    return record


def channel_acl(settings: Settings, channel_id: Any) -> list[str] | None:
    """The access list stored for a Slack channel's newest message; None when no message of it is
    stored ([] is a channel known to be readable by nobody)."""
    from context_engine.runtime import NoData, store_for

    if not isinstance(channel_id, str):
        return None
    try:
        # A deleted message's tombstone (readable by nobody) says nothing about the channel.
        newest = store_for(settings).collection("messages").find(
            {"tenant_id": settings.tenant, "channel_id": channel_id, "deleted": {"$ne": True}},
            {"acl": 1}).sort("ts", -1).limit(1)
    except NoData:
        return None
    return next((list(d.get("acl") or []) for d in newest), None)

"""Who calls: API keys (each fixes a tenant and an asker), browser sessions for the playground, the
login pages, and the per-key and per-address rate limits.

A person uses the playground after logging in at /login with an API key: the server answers with an
HttpOnly, SameSite=Strict session cookie (a random token, never the key) that the guard accepts in
place of `Authorization: Bearer`; a state-changing request carrying only the cookie must come from
the server's own origin. A key is never read from a query string.
"""

from __future__ import annotations

import html
import json
import os
import secrets
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import Request
from fastapi.responses import HTMLResponse

from context_engine.config import check_tenant
from context_engine.server.playground import PLAYGROUND

KEYS_ENV = "CONTEXT_ENGINE_API_KEYS"
LOGIN_PATH, LOGOUT_PATH = "/login", "/logout"
SESSION_COOKIE = "context_engine_session"


@dataclass(frozen=True)
class ApiKey:
    tenant: str
    user: str | None = None


def load_keys(path: str | Path | None = None) -> dict[str, ApiKey]:
    """API keys from a JSON file `{"KEY": {"tenant": ..., "user": ...}}`, else from the same JSON in
    $CONTEXT_ENGINE_API_KEYS. Raises ValueError on a malformed entry or when there are no keys."""
    text = Path(path).read_text(encoding="utf-8") if path is not None else os.environ.get(KEYS_ENV, "")
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
            raise ValueError(
                f"API key {key[:4]}...: `user` must name one account (a GitHub login, Slack id, "
                "Jira/Linear account, verified e-mail or system:account)"
            )
        keys[key] = ApiKey(tenant=check_tenant(entry["tenant"]), user=user)
    return keys


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


def bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


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


def same_origin(request: Request) -> bool:
    """True when the request says it comes from this server's own pages (`Origin`, else `Referer`)."""
    source = request.headers.get("origin") or request.headers.get("referer") or ""
    return bool(source) and urlsplit(source).netloc == request.headers.get("host", "")


def safe_next(target: str | None) -> str:
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


def login_page(next_path: str, hours: float, error: str = "", status: int = 200) -> HTMLResponse:
    body = (
        (f'<p class="error" role="alert">{html.escape(error)}</p>' if error else "")
        + f"""
<form method="post" action="{LOGIN_PATH}">
 <label for="key">API key</label>
 <input id="key" name="key" type="password" autocomplete="current-password" required autofocus>
 <input type="hidden" name="next" value="{html.escape(next_path)}">
 <button type="submit">Log in</button>
</form>
<p class="muted">The key decides your team and who you are. The browser keeps a session cookie (never
the key itself) for {hours:g} hours; log out on this page.</p>"""
    )
    return _html(body, status)


def signed_in_page(key: ApiKey) -> HTMLResponse:
    who = f"as <b>{html.escape(key.user)}</b>" if key.user else "without a person (public records only)"
    body = f"""<p>Logged in to team <b>{html.escape(key.tenant)}</b> {who}.</p>
<p><a href="{PLAYGROUND}">Open the playground</a> &middot; <a href="/docs">API docs</a></p>
<form method="post" action="{LOGOUT_PATH}"><button type="submit">Log out</button></form>"""
    return _html(body)


def _html(body: str, status: int = 200) -> HTMLResponse:
    # never framed (no clickjacking of the form), never cached (it shows who is logged in)
    return HTMLResponse(
        _PAGE.format(body=body),
        status_code=status,
        headers={
            "Content-Security-Policy": "frame-ancestors 'none'",
            "X-Frame-Options": "DENY",
            "Cache-Control": "no-store",
        },
    )

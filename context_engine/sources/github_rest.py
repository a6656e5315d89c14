"""A small GitHub REST client: auth headers, `Link` pagination, rate limits and retries.

GitHub's conventions, as documented for the REST API (2022-11-28):
- List endpoints page with a `Link: <url>; rel="next"` header; the next URL carries every query
  parameter (it may name the repository by id, `/repositories/{id}/...`).
- The primary rate limit answers 403 or 429 with `X-RateLimit-Remaining: 0` and
  `X-RateLimit-Reset` (epoch seconds); secondary limits send `Retry-After` (seconds), or only a
  "rate limit" message, in which case the advice is to wait at least a minute.
- 5xx and dropped connections are transient: retried with exponential backoff.
Anything else that is not 2xx stops the sync with a one-line `SourceError`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from context_engine.sources.problems import SourceError

API_VERSION = "2022-11-28"
MAX_TRIES = 5  # per request, for 5xx and transport errors
BACKOFF_SECONDS = 1.0  # waits 1, 2, 4, 8 s between the tries
MAX_RATE_LIMIT_WAIT = 3700.0  # the hourly limit resets within an hour; more means a broken header or clock
MAX_RATE_LIMIT_WAITS = 5  # per request: a limit that keeps coming back is not going away
SECONDARY_LIMIT_WAIT = 60.0
CLOCK_SKEW_SLACK = 1.0  # waiting until exactly X-RateLimit-Reset can land a hair early on a skewed clock


class NotFound(SourceError):
    """404: the repository (or one item in it) does not exist or the token cannot see it."""


class GitHubRest:
    def __init__(
        self,
        token: str,
        *,
        client: httpx.Client,
        base_url: str,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client, self.sleep, self.clock = client, sleep, clock
        self.base_url = base_url.rstrip("/")
        self.host = httpx.URL(self.base_url).host
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "context-engine",
        }

    def get(self, url: str, params: dict[str, Any] | None = None) -> httpx.Response:
        """One GET, retried through rate limits, 5xx and transport errors."""
        failures = waits = 0
        while True:
            try:
                response = self.client.get(url, params=params, headers=self.headers)
            except httpx.TransportError as exc:
                failures += 1
                if failures >= MAX_TRIES:
                    raise SourceError(f"GitHub unreachable after {failures} tries: {exc}") from None
                self.sleep(BACKOFF_SECONDS * 2 ** (failures - 1))
                continue
            if response.is_success:
                return response
            wait = rate_limit_wait(response, self.clock())
            if wait is not None:
                waits += 1
                if wait > MAX_RATE_LIMIT_WAIT:
                    raise SourceError(f"GitHub rate limit asks for a {wait:.0f} s wait; try again later")
                if waits > MAX_RATE_LIMIT_WAITS:
                    raise SourceError(f"GitHub still rate-limited after {MAX_RATE_LIMIT_WAITS} waits")
                self.sleep(wait)
                continue
            if response.status_code >= 500:
                failures += 1
                if failures >= MAX_TRIES:
                    raise SourceError(
                        f"GitHub answered {response.status_code} {failures} times for {response.url.path}"
                    )
                self.sleep(BACKOFF_SECONDS * 2 ** (failures - 1))
                continue
            raise error_for(response)

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> tuple[Any, httpx.Response]:
        response = self.get(self.url(path), params)
        try:
            return response.json(), response
        except ValueError:
            raise SourceError(f"GitHub sent a non-JSON answer for {response.url.path}") from None

    def paginate(self, path: str, params: dict[str, Any] | None) -> Iterator[list[Any]]:
        """Each page of a list endpoint, following `rel="next"` links."""
        url: str | None = self.url(path)
        while url:
            page, response = self.get_json(url, params)
            if not isinstance(page, list):
                raise SourceError(f"GitHub sent {type(page).__name__} instead of a list for {response.url.path}")
            yield page
            url, params = response.links.get("next", {}).get("url"), None  # the next URL carries the query
            if url and httpx.URL(url).host != self.host:
                # The token goes with every request: never follow a link off the API host.
                raise SourceError(f"GitHub pagination link points off {self.host}: {url}")

    def url(self, path_or_url: str) -> str:
        return path_or_url if "://" in path_or_url else f"{self.base_url}{path_or_url}"


def rate_limit_wait(response: httpx.Response, now: float) -> float | None:
    """Seconds to wait before retrying, or None when the response is not a rate limit."""
    if response.status_code not in (403, 429):
        return None
    retry_after = response.headers.get("Retry-After")
    if retry_after is not None:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            pass  # an HTTP-date; GitHub sends seconds, so fall back to the documented minute
    reset = response.headers.get("X-RateLimit-Reset")
    if response.headers.get("X-RateLimit-Remaining") == "0" and reset is not None:
        try:
            return max(0.0, float(reset) - now) + CLOCK_SKEW_SLACK
        except ValueError:
            pass
    if response.status_code == 429 or "rate limit" in error_message(response).lower():
        return SECONDARY_LIMIT_WAIT
    return None


def error_for(response: httpx.Response) -> SourceError:
    status, path, message = response.status_code, response.url.path, error_message(response)
    if status == 401:
        return SourceError(f"bad token: GitHub answered 401 ({message}); check GITHUB_TOKEN")
    if status == 404:
        return NotFound(f"no such repo or no access: GitHub answered 404 for {path}")
    if status == 403:
        return SourceError(f"GitHub denied access (403) to {path}: {message}")
    return SourceError(f"GitHub answered {status} for {path}: {message}")


def error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    text = body.get("message") if isinstance(body, dict) else None
    return " ".join(str(text or response.text or response.reason_phrase).split())[:200]

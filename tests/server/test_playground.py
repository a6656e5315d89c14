"""LangServe a person can use: a plain-string question over `RemoteRunnable`, schemas the playground's
form can draw, the browser login (session cookie), and the playground driven in headless Chromium."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import httpx
import pytest

from context_engine.config import Settings
from context_engine.server import SESSION_COOKIE, ApiKey, Limits, create_app
from tests.serving import Server

NOW = "2026-11-30T12:00:00Z"
KEY = "acme-playground-key"
KEYS = {KEY: ApiKey(tenant="acme", user="priyar"), "globex-playground-key": ApiKey(tenant="globex")}
CHROMIUM = Path("/usr/bin/chromium")
QUESTION = "open PRs by Rashid"


@pytest.fixture(scope="module")
def server(sample_dir, tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("playground") / "data"
    shutil.copytree(sample_dir, data_dir)
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    with Server(create_app(settings, KEYS, Limits(requests_per_minute=200, login_attempts_per_minute=30))) as running:
        running.data_dir = data_dir  # where the playground's feedback lands
        yield running


@pytest.fixture(autouse=True)
def offline_env(monkeypatch):
    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _login(server, client: httpx.Client, key: str = KEY, next_path: str | None = None) -> httpx.Response:
    form = {"key": key, **({"next": next_path} if next_path else {})}
    return client.post(f"{server.url}/login", data=form, follow_redirects=False)


def _schema_nodes(schema):
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from _schema_nodes(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _schema_nodes(value)


# -- RemoteRunnable ---------------------------------------------------------------------------


def test_remote_runnable_takes_a_plain_string_or_a_question(server):
    client = server.client(KEY)
    out = client.invoke(QUESTION)
    assert out["route"] == "structured" and out["records"]
    assert len(out["records"]) == 8 and all(r["user"]["login"] == "rsh-dev" for r in out["records"])
    assert client.invoke({"question": QUESTION, "now": NOW})["answer"] == out["answer"]
    streamed: dict = {}
    for chunk in client.stream(QUESTION):  # what each step changed in the output
        streamed.update(chunk)
    assert streamed["answer"] == out["answer"] and streamed["records"] == out["records"]
    both = client.batch([QUESTION, {"question": QUESTION}])
    assert both[0]["answer"] == both[1]["answer"] == out["answer"]

    async def events():
        return [e async for e in client.astream_events(QUESTION, version="v2")]

    seen = asyncio.run(events())
    assert {"on_chain_start", "on_chain_stream", "on_chain_end"} <= {e["event"] for e in seen}
    assert any(
        e["event"] == "on_chain_end"
        and isinstance(e["data"].get("output"), dict)
        and e["data"]["output"].get("answer") == out["answer"]
        for e in seen
    )


def test_bad_input_is_still_refused(server):
    headers = {"Authorization": f"Bearer {KEY}"}
    for body in ({"input": 5}, {"input": {"question": 5}}, {"input": ["open PRs"]}):
        response = httpx.post(f"{server.url}/context/invoke", headers=headers, json=body, timeout=60)
        assert response.status_code == 422 and "error" in response.json(), (body, response.text)


# -- schemas -----------------------------------------------------------------------------------


def test_schemas_have_no_null_type_and_no_client_configurable(server):
    headers = {"Authorization": f"Bearer {KEY}"}
    config = httpx.get(f"{server.url}/context/config_schema", headers=headers).json()
    assert config.get("properties", {}) == {}  # the key fixes tenant and asker: nothing to configure
    # What a form draws: the API's config and input, and the playground's three (its output is text; the
    # API's output holds LangChain messages, a union, and is for clients, not forms).
    schemas = [config, httpx.get(f"{server.url}/context/input_schema", headers=headers).json()]
    page = httpx.get(f"{server.url}/ask/playground/", headers=headers).text
    embedded = [
        json.loads(page.split(f"window.{name} = ", 1)[1].split(";\n", 1)[0])
        for name in ("CONFIG_SCHEMA", "INPUT_SCHEMA", "OUTPUT_SCHEMA")
    ]
    for schema in schemas + embedded:
        for node in _schema_nodes(schema):
            assert node.get("type") != "null" and "null" not in (node.get("type") or []), schema
            assert not {"anyOf", "oneOf", "allOf"} & set(node), schema  # the form draws none of them
    assert set(schemas[1]["$defs"]["QuestionInput"]["properties"]) == {"question", "now"}
    # a client's configurable keys are not accepted: the run stays the key's tenant
    out = server.client("globex-playground-key").invoke(
        QUESTION, config={"configurable": {"tenant": "acme", "user": "rsh-dev", "data_dir": "/"}}
    )
    assert not any("acme/" in (c.get("id") or "") for c in out["citations"])


# -- the browser login -------------------------------------------------------------------------


def test_login_sets_an_httponly_strict_session_cookie_and_logout_ends_it(server):
    with httpx.Client(timeout=60) as browser:
        # a person without a session is sent to the login page; an API client gets a JSON 401
        sent = browser.get(f"{server.url}/ask/playground/", headers={"Accept": "text/html"})
        assert sent.status_code == 303 and sent.headers["location"] == "/login?next=/ask/playground/"
        assert browser.get(f"{server.url}/context/input_schema").status_code == 401
        form = browser.get(f"{server.url}/login")
        assert form.status_code == 200 and 'type="password"' in form.text and 'method="post"' in form.text

        wrong = _login(server, browser, key="guessed")
        assert wrong.status_code == 401 and "Unknown API key" in wrong.text and SESSION_COOKIE not in browser.cookies

        right = _login(server, browser, next_path="//elsewhere.example/")  # never a redirect off this server
        assert right.status_code == 303 and right.headers["location"] == "/ask/playground/"
        cookie = right.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict") and "Path=/" in cookie
        token = browser.cookies[SESSION_COOKIE]
        assert KEY not in cookie and token != KEY  # the cookie is a session token, never the key

        # the playground, its files and its run feed work with the cookie alone
        page = browser.get(f"{server.url}/ask/playground/")
        assert page.status_code == 200 and "window.INPUT_SCHEMA" in page.text
        for asset in {part.split('"')[0] for part in page.text.split('src="/')[1:] + page.text.split('href="/')[1:]}:
            assert browser.get(f"{server.url}/{asset}").status_code == 200, asset
        assert browser.get(f"{server.url}/context/input_schema").status_code == 200
        assert "logged in to team <b>acme</b>" in browser.get(f"{server.url}/login").text.lower()
        own = {"Origin": server.url}
        feed = browser.post(f"{server.url}/ask/stream_log", json={"input": {"question": QUESTION}}, headers=own)
        assert feed.status_code == 200 and "Found 8 pull requests" in feed.text
        ran = browser.post(f"{server.url}/context/invoke", json={"input": QUESTION}, headers=own)
        assert ran.status_code == 200 and ran.json()["output"]["route"] == "structured"

        # a cookie-only run must come from this server's pages: another origin (even the same host on
        # another port) or none is refused
        for headers in ({}, {"Origin": "http://127.0.0.1:1"}, {"Origin": "https://evil.example"}):
            refused = browser.post(f"{server.url}/context/invoke", json={"input": QUESTION}, headers=headers)
            assert refused.status_code == 403 and "error" in refused.json(), headers

        out = browser.post(f"{server.url}/logout", follow_redirects=False)
        assert out.status_code == 303 and out.headers["location"] == "/login"
        assert SESSION_COOKIE not in browser.cookies
    # the old token is dead on the server too, not just forgotten by the browser
    stale = httpx.get(f"{server.url}/context/input_schema", headers={"Cookie": f"{SESSION_COOKIE}={token}"})
    assert stale.status_code == 401


def test_the_key_is_never_read_from_a_query_string_or_a_made_up_cookie(server):
    for query in (f"api_key={KEY}", f"key={KEY}", f"token={KEY}", f"{SESSION_COOKIE}={KEY}"):
        assert httpx.get(f"{server.url}/context/input_schema?{query}").status_code == 401, query
        assert httpx.post(f"{server.url}/context/invoke?{query}", json={"input": QUESTION}).status_code == 401
    assert (
        httpx.get(f"{server.url}/context/input_schema", headers={"Cookie": f"{SESSION_COOKIE}={KEY}"}).status_code
        == 401
    )
    # a login by GET with the key in the URL logs nobody in
    got = httpx.get(f"{server.url}/login?key={KEY}")
    assert got.status_code == 200 and "set-cookie" not in got.headers
    # a wrong Bearer header is not rescued by a valid cookie
    with httpx.Client(timeout=60) as browser:
        assert _login(server, browser).status_code == 303
        assert (
            browser.get(f"{server.url}/context/input_schema", headers={"Authorization": "Bearer guessed"}).status_code
            == 401
        )


def test_login_attempts_are_rate_limited(sample_dir):
    settings = Settings(data_dir=sample_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    with Server(create_app(settings, KEYS, Limits(login_attempts_per_minute=3))) as tight:
        codes = [httpx.post(f"{tight.url}/login", data={"key": f"guess-{i}"}).status_code for i in range(5)]
        assert codes[:3] == [401] * 3 and codes[3:] == [429, 429]
        assert httpx.post(f"{tight.url}/login", data={"key": KEY}).status_code == 429  # even the right key


# -- a real browser ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is not installed")
def test_a_person_logs_in_and_asks_in_the_playground(server, tmp_path):
    np = pytest.importorskip("numpy")
    image = pytest.importorskip("PIL.Image")
    sync_api = pytest.importorskip("playwright.sync_api")

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            failed = []
            page.on("requestfailed", lambda request: failed.append(f"{request.failure} {request.url}"))
            page.on(
                "response",
                lambda response: response.status >= 400 and failed.append(f"{response.status} {response.url}"),
            )
            page.goto(f"{server.url}/ask/playground/")
            assert page.url.endswith("/login?next=/ask/playground/")  # sent to log in first
            page.fill("#key", KEY)
            page.click("button[type=submit]")
            page.wait_for_url("**/ask/playground/")
            cookie = next(c for c in page.context.cookies() if c["name"] == SESSION_COOKIE)
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
            assert page.evaluate("document.cookie") == ""  # the page's scripts cannot read it

            question = page.locator("textarea[id='#/properties/question-input']")
            question.click()
            question.fill(QUESTION)  # (keyboard.type drops keys while the auto-growing box re-renders)
            assert question.input_value() == QUESTION
            # The answer shows while the run's event stream is still open; wait for the stream to end
            # so closing the browser does not abort it (an abort would count as a failed request).
            with page.expect_event(
                "requestfinished", timeout=120_000, predicate=lambda request: request.url.endswith("/stream_log")
            ):
                page.get_by_role("button", name="Start").click()
                page.get_by_text("Found 8 pull requests").wait_for(timeout=90_000)
            page.get_by_text("https://github.com/acme/infra/pull/749").wait_for(timeout=30_000)  # the last of them
            output = page.inner_text("body")
            assert "route: structured" in output and "acme/infra#863" in output
            shot = tmp_path / "playground.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert failed == [], failed  # every asset, schema and run request of the page succeeded

    pixels = np.asarray(image.open(shot).convert("L"), dtype=float)
    assert pixels.shape[0] >= 900 and pixels.std() > 10, pixels.std()  # not a blank page
    dark = (pixels < 100).mean()
    assert 0.005 < dark < 0.5, dark  # text on a light page
    if target := os.environ.get("PLAYGROUND_SCREENSHOT"):
        shutil.copy(shot, target)


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is not installed")
def test_the_playground_rates_an_answer_with_its_buttons(server):
    from context_engine.query.feedback import FeedbackStore

    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{server.url}/login?next=/ask/playground/")
            page.fill("#key", KEY)
            page.click("button[type=submit]")
            page.wait_for_url("**/ask/playground/")
            question = page.locator("textarea[id='#/properties/question-input']")
            question.click()
            question.fill(QUESTION)
            page.get_by_role("button", name="Start").click()
            page.get_by_text("Found 8 pull requests").wait_for(timeout=90_000)
            page.locator(".ce-feedback button[data-rating=up]").click(timeout=30_000)
            page.get_by_text("Thanks: feedback #").wait_for(timeout=30_000)
            status = page.inner_text(".ce-feedback .ce-status")
        finally:
            browser.close()
    assert "now template feedback-" in status
    rows = FeedbackStore(server.data_dir).all("acme")
    assert [(r.asker, r.rating, r.question) for r in rows][-1] == ("priyar", "up", QUESTION)


def test_the_playground_page_carries_the_feedback_buttons_and_the_endpoint_wants_this_origin(server):
    with httpx.Client(timeout=60) as client:
        _login(server, client)
        page = client.get(f"{server.url}/ask/playground/")
        assert page.status_code == 200 and '<script src="/ask/playground/feedback.js"></script></body>' in page.text
        script = client.get(f"{server.url}/ask/playground/feedback.js")
        assert script.status_code == 200 and "/feedback" in script.text and "data-rating" in script.text
        # The session cookie alone, from another site: refused before the body is read.
        forged = client.post(
            f"{server.url}/feedback", json={"rating": "up"}, headers={"Origin": "https://evil.example"}
        )
        assert forged.status_code == 403
    assert httpx.get(f"{server.url}/ask/playground/feedback.js", timeout=30).status_code == 401  # no session


# -- the playground's page and feed, apart from the API ----------------------------------------


def _feed_output(response: httpx.Response) -> str:
    """The text a stream_log feed streamed (its `streamed_output` additions), as the page shows it."""
    text = []
    for line in response.text.splitlines():
        if line.startswith("data: ") and line != "data: ":
            for op in (json.loads(line[6:]) or {}).get("ops", []):
                if op.get("path") == "/streamed_output/-":
                    text.append(op["value"])
    return "".join(text)


def test_the_playground_feed_is_its_own_and_shows_a_failed_run(server):
    headers = {"Authorization": f"Bearer {KEY}"}
    # LangServe's own stream_log under the API: JSON patches of the run, its output the graph's
    api = httpx.post(f"{server.url}/context/stream_log", json={"input": QUESTION}, headers=headers, timeout=60)
    assert api.status_code == 200 and '"path":"/final_output"' in api.text.replace(" ", "")
    assert "\u2713 route" not in api.text  # never the playground's text
    # the playground's feed: readable text, only the run's own output (no log of every step)
    feed = httpx.post(f"{server.url}/ask/stream_log", json={"input": QUESTION}, headers=headers, timeout=60)
    shown = _feed_output(feed)
    assert "\u2713 route: structured" in shown and "Found 8 pull requests" in shown
    assert len(feed.content) < 20_000 and '"logs":{}' in feed.text.replace(" ", "")
    # a run that fails shows why, with the status an API client would get
    for question, message in (
        ({"question": QUESTION, "now": "last blue moon"}, "malformed time 'last blue moon'"),
        ({"question": "PRs merged since 0001-01-01"}, "'since 0001-01-01' (0001-01-01) is out of range"),
    ):
        failed = httpx.post(f"{server.url}/ask/stream_log", json={"input": question}, headers=headers, timeout=60)
        assert failed.status_code == 200 and "\u2717 the run failed (400): " in _feed_output(failed)
        assert message in _feed_output(failed), _feed_output(failed)
    # where LangServe users look first
    moved = httpx.get(f"{server.url}/context/playground/", headers=headers)
    assert moved.status_code == 307 and moved.headers["location"] == "/ask/playground/"


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is not installed")
def test_the_playground_shows_a_failed_runs_error(server):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{server.url}/context/playground/")  # sent to log in, then on to the playground
            page.fill("#key", KEY)
            page.click("button[type=submit]")
            page.wait_for_url("**/ask/playground/")
            page.locator("textarea[id='#/properties/question-input']").fill("PRs merged since 0001-01-01")
            page.get_by_role("button", name="Start").click()
            page.get_by_text("the run failed (400)").wait_for(timeout=90_000)
            output = page.inner_text("body")
            page.wait_for_timeout(500)  # the 👍/👎 bar would be placed 50 ms after the feed ends
            bars = page.locator(".ce-feedback").count()
        finally:
            browser.close()
    assert "is out of range: times run from 1900 to 2999" in output
    assert bars == 0  # a failed run has no answer to rate

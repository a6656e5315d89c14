"""The playground: LangServe's page, running the graph with its node updates turned into readable text
(a line per step, then the answer and its sources), with 👍/👎 under each answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from langchain_core.runnables import Runnable, RunnableConfig, RunnableGenerator
from langserve import APIHandler
from starlette.concurrency import run_in_threadpool

from context_engine.assistant.graph import graph as context_graph
from context_engine.server.http_errors import error_for
from context_engine.server.runnable import RUN_CONTEXT_KEY, Question, graph_in_run_context

# The playground is a page of its own, beside the API: LangServe's page posts its runs to the
# `stream_log` next to it, so under `/context` it took over the API's `astream_log` with readable text.
ASK = "/ask"
PLAYGROUND = f"{ASK}/playground/"
LANGSERVE_PLAYGROUND = "/context/playground/"  # where LangServe users look first: sent on to PLAYGROUND
FEEDBACK_SCRIPT = "feedback.js"
# The playground's 👍/👎: when a run's stream ends, a bar under its output posts to /feedback with the
# session cookie (same origin). The question is the form's; the asker and tenant are the session's.
FEEDBACK_JS = r"""(() => {
  const FEED = "/ask/stream_log";
  const question = () => (document.querySelector("textarea[id='#/properties/question-input']") || {}).value || "";
  function answered() {
    // The run's output once it reached `respond`; a failed run (its error instead) has nothing to rate.
    const outputs = [...document.querySelectorAll("body *")].filter(
      (el) => el.children.length === 0 && /\u2713 respond/.test(el.textContent || ""));
    return outputs.length ? outputs[outputs.length - 1] : null;
  }
  function show(asked) {
    document.querySelectorAll(".ce-feedback").forEach((old) => old.remove());
    const anchor = answered();
    if (!anchor) return;
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
    if (anchor.parentElement) anchor.parentElement.after(bar); else document.body.append(bar);
  }
  const fetched = window.fetch;
  window.fetch = async (...args) => {
    const response = await fetched(...args);
    const url = String(args[0] && args[0].url || args[0]);
    if (url.endsWith(FEED) && response.ok && response.body) {
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


def _readable_steps(updates: Iterator[dict[str, Any]], config: RunnableConfig) -> Iterator[str]:
    """A run as a person reads it in the playground: a line per graph step as it finishes, then the
    answer and its sources (the graph's own node updates are JSON the size of the records found).
    The run is remembered as its asker's last question first: what the page's 👍/👎 are about."""
    final: dict[str, Any] = {}
    try:
        for update in updates:
            yield from _step_lines(update, final)
    except Exception as exc:  # noqa: BLE001 - the page shows why the run failed instead of nothing
        yield _failure_text(exc)
        return
    _remember_ask(final, config)
    yield "\n" + _answer_text(final)


async def _areadable_steps(updates: AsyncIterator[dict[str, Any]], config: RunnableConfig) -> AsyncIterator[str]:
    final: dict[str, Any] = {}
    try:
        async for update in updates:
            for line in _step_lines(update, final):
                yield line
    except Exception as exc:  # noqa: BLE001 - the page shows why the run failed instead of nothing
        yield _failure_text(exc)
        return
    await run_in_threadpool(_remember_ask, final, config)
    yield "\n" + _answer_text(final)


def _remember_ask(final: dict[str, Any], config: RunnableConfig) -> None:
    """The run's question, plan and answer as the last ask of the request's own tenant and asker
    (the run context its key made, never the body)."""
    from context_engine.service import remember_ask

    context = (config.get("configurable") or {}).get(RUN_CONTEXT_KEY)
    if context is None or not final.get("question"):
        return
    remember_ask(
        Path(context.data_dir),
        context.tenant,
        "" if context.anonymous else context.user,
        str(final["question"]),
        final,
        str(final.get("now") or ""),
    )


def _step_lines(update: dict[str, Any] | None, final: dict[str, Any]) -> list[str]:
    """`\u2713 node` for each node of one update (with the route chosen); `final` gathers the values."""
    lines = []
    for node, values in (update or {}).items():
        values = values if isinstance(values, dict) else {}
        note = f": {values['route']}" if node == "route" and values.get("route") else ""
        lines.append(f"\u2713 {node}{note}\n")
        final.update(values)
    return lines


def _failure_text(exc: Exception) -> str:
    """A failed run as the page shows it: the status and message an API client would get."""
    status, message = error_for(exc)
    return f"\n\u2717 the run failed ({status}): {message if isinstance(message, str) else json.dumps(message)}"


def _answer_text(final: dict[str, Any]) -> str:
    answer = str(final.get("answer") or "(no answer)")
    sources = [
        f"[{c['n']}] {c.get('title') or c.get('id') or ''} {c.get('url') or ''}".rstrip()
        for c in final.get("citations") or []
        if isinstance(c, dict) and c.get("n") is not None and not (c.get("url") and c["url"] in answer)
    ]
    return answer + ("\n\nSources:\n" + "\n".join(sources) if sources else "")


def playground_runnable(graph: Runnable = context_graph) -> Runnable:
    """What the playground runs: the graph's node updates turned into readable text."""
    return (
        graph_in_run_context(graph, stream_mode="updates")
        | RunnableGenerator(_readable_steps, _areadable_steps, name="answer")
    ).with_types(input_type=Question)


def add_playground(app: FastAPI, playground: APIHandler) -> None:
    """The page at PLAYGROUND (LangServe's, plus the 👍/👎 script) and its feed, `POST /ask/stream_log`;
    `/context/playground/` sends a browser on to it."""

    @app.post(f"{ASK}/stream_log", include_in_schema=False)
    async def playground_feed(request: Request) -> Response:
        # The page shows the run's output only: no log of every step's input and output (x100 the text).
        try:
            asked = json.loads(await request.body() or b"null")
        except (ValueError, RecursionError):
            asked = None  # LangServe refuses it with a 422 of its own
        if isinstance(asked, dict):
            request._body = json.dumps({**asked, "include_names": [], "include_types": [], "include_tags": []}).encode()
        return await playground.stream_log(request)

    @app.get(PLAYGROUND + "{file_path:path}", include_in_schema=False)
    async def playground_page(file_path: str, request: Request) -> Response:
        if file_path == FEEDBACK_SCRIPT:
            return Response(FEEDBACK_JS, media_type="application/javascript", headers={"Cache-Control": "no-store"})
        page = await playground.playground(file_path, request)
        if file_path in ("", "index.html") and page.media_type == "text/html":
            # The playground is LangServe's built page: the 👍/👎 under each answer are one more script.
            body = page.body.replace(
                b"</body>", f'<script src="{PLAYGROUND}{FEEDBACK_SCRIPT}"></script></body>'.encode()
            )
            return Response(body, media_type="text/html", headers={"Cache-Control": "no-store"})
        return page

    @app.get(LANGSERVE_PLAYGROUND, include_in_schema=False)
    async def langserve_playground() -> RedirectResponse:
        return RedirectResponse(PLAYGROUND, status_code=307)

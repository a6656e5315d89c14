"""The HTTP server: the context graph over LangServe, behind API keys, with limits and ingest webhooks.

    POST /context/invoke | /batch | /stream | /stream_log | /stream_events,
    GET  /context/input_schema | /output_schema | /config_schema   (LangServe's own; `Authorization: Bearer KEY`)
    GET  /ask/playground/, POST /ask/stream_log              (the playground and its feed: steps, then the answer, as text)
    GET  /context/playground/                                (sends a browser on to /ask/playground/)
    GET  /login, POST /login, POST /logout                   (a browser's session cookie, for the playground)
    GET  /docs, /redoc, /openapi.json                        (no auth: routes and schemas, never data)
    GET  /healthz                                            (no auth: store and index readiness, as counts)
    POST /feedback                                           (👍/👎 on the asker's last answer; the key decides who)
    POST /ingest/github, /ingest/slack                       (signed webhooks, no API key)

An API key fixes the run's tenant and asker: the per-request config modifier replaces whatever config
the client sent with a run context built from the key, so a request body can never widen either (the
config schema is empty: no configurable key is accepted from a client). The input is a question as a
plain string or `{"question": ..., "now": ...}`; the output is the graph's (`runnable.Answer`: the
answer, citations, queries, records, `messages` and `documents` as LangChain objects), and a stream is
what each step changed in it (chunks that add up to the output).

Every error is JSON `{"error": ...}` with its status code, never a stack trace; a bad `now` is refused
before any stream starts, and a run failing mid-stream ends with LangServe's `error` event carrying
the same status and message (`http_errors`).

Modules: `app` (create_app, routes, LangServe wiring), `runnable` (what LangServe runs and its types),
`playground` (the person's page), `auth` (keys, sessions, login pages, rate limits), `webhook_routes`
(signatures, delivery log; the event-to-record translation is `sources.webhooks`), `indexer` (the
background index sync), `http_errors` (one error shape for every route).
"""

from context_engine.server.app import Limits, create_app
from context_engine.server.auth import SESSION_COOKIE, ApiKey, load_keys
from context_engine.service import check_key_people

__all__ = ["SESSION_COOKIE", "ApiKey", "Limits", "check_key_people", "create_app", "load_keys"]

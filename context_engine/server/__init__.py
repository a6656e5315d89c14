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

Every error is JSON `{"error": ...}` with its status code, never a stack trace.

Modules: `app` (create_app, routes, LangServe wiring), `runnable` (what LangServe runs and its types),
`playground` (the person's page), `auth` (keys, sessions, login pages, rate limits), `webhook_routes`
(signatures, delivery log; the event-to-record translation is `sources.webhooks`), `indexer` (the
background index sync), `http_errors` (one error shape for every route).
"""

from context_engine.server.app import Limits, create_app
from context_engine.server.auth import SESSION_COOKIE, ApiKey, check_key_people, load_keys

__all__ = ["SESSION_COOKIE", "ApiKey", "Limits", "check_key_people", "create_app", "load_keys"]

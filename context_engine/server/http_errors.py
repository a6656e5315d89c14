"""One error shape for every route: `{"error": message}` with its status code, and the same status and
message in a stream's `error` event, so a failure reads the same from `invoke` and from `stream`."""

from __future__ import annotations

import logging
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from context_engine.service import AmbiguousPerson, Cancelled, IndexDamaged, IndexMissing, UnknownPerson

log = logging.getLogger(__name__)


# What `error_for` tells apart (the app registers a handler for each), then everything else.
HANDLED_ERRORS = (
    HTTPException,
    RequestValidationError,
    IndexMissing,
    IndexDamaged,
    UnknownPerson,
    AmbiguousPerson,
    Cancelled,
    TimeoutError,
    ValueError,
    Exception,
)


def json_error(status: int, message: Any) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def error_for(exc: BaseException) -> tuple[int, Any]:
    """The status and message a client gets for an exception raised while serving a request."""
    if isinstance(exc, HTTPException):
        return exc.status_code, exc.detail
    if isinstance(exc, RequestValidationError):
        return 422, [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg")} if isinstance(e, dict) else str(e)
            for e in exc.errors()
        ]
    if isinstance(exc, (IndexMissing, IndexDamaged)):
        return 503, str(exc).split(" in /")[0]  # the message, without the server's paths
    if isinstance(exc, (UnknownPerson, AmbiguousPerson)):
        return 403, "this key's person is no longer in the directory"
    if isinstance(exc, Cancelled):
        return 503, str(exc)  # its client is gone or the server is stopping: nobody waits for more
    if isinstance(exc, TimeoutError):
        return 504, str(exc)  # the run passed its request's deadline between two steps
    if isinstance(exc, ValueError):
        # The graph raises ValueError for bad input it only finds while running (e.g. a malformed `now`).
        if "integer string conversion" in str(exc):  # Python's own message names an interpreter setting
            return 400, "a number in the request has too many digits to read; numbers fit 64 bits"
        return 400, str(exc)
    log.error("unhandled error", exc_info=exc)
    return 500, f"internal error ({type(exc).__name__})"


async def error_response(_request: Any, exc: Exception) -> JSONResponse:
    """The app's exception handler for every exception (FastAPI's and the run's)."""
    return json_error(*error_for(exc))

"""The background indexer: webhook commits are answerable at once, their chunks indexed after."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from context_engine.config import Settings

log = logging.getLogger(__name__)


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
        from context_engine import service  # lazy: the engine loads when a sync is first asked for

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
                service.sync_index(self.settings, tenant)
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

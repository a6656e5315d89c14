"""A real uvicorn server on a loopback port, in a thread, for tests that drive the app over HTTP."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from langserve import RemoteRunnable


class Server:
    def __init__(self, app):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)

    def client(self, key: str | None) -> RemoteRunnable:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return RemoteRunnable(f"{self.url}/context", headers=headers, timeout=60)

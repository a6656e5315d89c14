"""One writer per data dir: an exclusive `flock` on `<data-dir>/writer.lock`.

Two ingests at once would each decide what is new, changed or narrowed (access lists) against a
store the other is changing; with one writer at a time every writer starts from the last commit.
A second writer waits (saying once whom it waits for) and gives up with a one-line error after
`CONTEXT_ENGINE_LOCK_WAIT` seconds (default 120). The lock is released by the kernel when the holder
exits, so a killed ingest never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from context_engine.store.documents import StoreError

LOCK_NAME = "writer.lock"


def _wait_seconds() -> float:
    raw = os.environ.get("CONTEXT_ENGINE_LOCK_WAIT", "")
    try:
        return max(0.0, float(raw)) if raw else 120.0
    except ValueError:
        return 120.0


@contextmanager
def writer_lock(data_dir: Path, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + _wait_seconds()
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                if time.monotonic() >= deadline:
                    raise StoreError(
                        f"another writer (pid {holder}) is still writing to {data_dir}; try again when it has finished"
                    ) from None
                if not told and on_wait is not None:
                    on_wait(f"waiting for another writer (pid {holder}) to finish with {data_dir} ...")
                    told = True
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def writer_busy(data_dir: Path) -> str | None:
    """The pid of the writer holding the data dir's lock, or None when nobody writes."""
    path = data_dir / LOCK_NAME
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO left there must not block `status`
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        return os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
    finally:
        os.close(fd)

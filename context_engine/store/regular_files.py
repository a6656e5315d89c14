"""Reading the data dir's own files (catalog, semantic index, lock) without hanging on what another
process left there.

The data dir is a trust boundary (another process, a crash): a FIFO where a derived file belongs
would block `open()` or `read()` forever, in every reader of that tenant (a server's worker threads
pile up behind it), and a device such as /dev/zero would be read without end. Every read of a
derived file goes through `open_regular`: the file is opened with O_NONBLOCK (opening a FIFO for
reading then returns at once) and must be a regular file on the opened descriptor, else OSError,
which each reader already treats as a damaged file (rebuilt, or one line)."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path
from typing import IO, Any


class NotRegularFile(OSError):
    """A derived file that is a FIFO, a socket, a device or a folder."""


def check_regular(path: str | os.PathLike) -> None:
    """NotRegularFile unless `path` (followed, as `open` would) is a regular file."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(f"{path} is not a regular file")


def open_regular(path: str | os.PathLike, mode: str = "r", encoding: str | None = "utf-8") -> IO[Any]:
    """`open(path, mode)` for reading ("r" or "rb"), refusing anything but a regular file, without
    ever blocking on a FIFO."""
    if mode not in ("r", "rb"):
        raise ValueError("open_regular reads only")
    fd = os.open(Path(path), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"{path} is not a regular file")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, mode, encoding=None if "b" in mode else encoding)
    except BaseException:
        os.close(fd)
        raise


def read_regular_text(path: str | os.PathLike) -> str:
    with open_regular(path) as fh:
        return fh.read()

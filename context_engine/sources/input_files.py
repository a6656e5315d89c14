"""What an ingest reads: regular files inside the input it was given, and nothing else.

The rule, for every connector that reads files (docs folders, Slack exports unpacked or zipped,
JSON/CSV dump files):

- The path the operator names is trusted and resolved once (`input_root`): a symlink given on the
  command line is followed to what it names. Everything found *inside* it is not trusted.
- Inside an input only regular files are read: a symlink (to a file or a folder, inside or out), a
  FIFO, a socket or a device is refused, counted and named (`ReadProblems.refuse`). Folders are
  walked without following symlinks, and a file is opened with O_NOFOLLOW and O_NONBLOCK (a FIFO
  can neither redirect the read nor hang it), checked to be a regular file on the opened
  descriptor, and checked to lie inside the input's resolved root.
- Archive members are read only when they are regular files (not symlinks, devices or FIFOs, by
  the mode the archive records) whose name stays inside the archive (no `..`, no absolute path).

/proc, /sys and friends need no rule of their own: they can only be reached through a symlink, which
is refused, or by the operator naming them.
"""

from __future__ import annotations

import errno
import os
import stat
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from context_engine.sources.problems import ReadProblems, SourceError


class NotReadable(OSError):
    """An entry of an input that the rule above refuses; `kind` says what it is."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISDIR(mode):
        return "folder"
    return "file" if stat.S_ISREG(mode) else "special file"


def input_root(path: Path) -> Path:
    """The operator's input path, resolved once (a symlink named on the command line is followed)."""
    try:
        return Path(path).resolve(strict=True)
    except (OSError, RuntimeError):
        raise SourceError(f"cannot read {path}: no such file or directory") from None


def _inside(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(str(root).rstrip(os.sep) + os.sep)


def open_input(path: Path, root: Path) -> BinaryIO:
    """`path` opened for reading, when it is a regular file inside `root` (resolved); else NotReadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink
            raise NotReadable("symlink") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotReadable(_kind(mode))
        # A symlinked folder on the way (the last component alone is covered by O_NOFOLLOW): where
        # the descriptor really points must be inside the root.
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            real = os.path.realpath(path)
        if not _inside(real, root):
            raise NotReadable("outside the input")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def walk_input(root: Path, problems: ReadProblems, wanted: Callable[[Path], bool] = lambda rel: True) -> Iterator[Path]:
    """Every regular file under `root` (resolved) that the connector `wanted` (by its relative path),
    in sorted order, as paths relative to it. Hidden entries (`.git`, `.DS_Store`) are not part of an
    input. Wanted symlinks and special files, and symlinks to folders, are refused and named; no
    symlinked folder is descended into."""

    def walk(folder: Path) -> Iterator[Path]:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            problems.add(str(folder.relative_to(root)), f"unreadable folder ({exc.strerror or exc})")
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = Path(entry.path).relative_to(root)
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                yield from walk(Path(entry.path))
            elif not wanted(rel) and not (stat.S_ISLNK(mode) and os.path.isdir(entry.path)):
                continue
            elif stat.S_ISREG(mode):
                yield rel
            else:
                problems.refuse(rel.as_posix(), _kind(mode))

    yield from walk(root)


def zip_member_refusal(info: zipfile.ZipInfo) -> str | None:
    """Why a zip member may not be read (None: a regular file inside the archive)."""
    name = PurePosixPath(info.filename.replace("\\", "/"))
    if name.is_absolute() or ".." in name.parts or ":" in (name.parts[0] if name.parts else ""):
        return "path outside the archive"
    mode = info.external_attr >> 16  # Unix mode when the archiver recorded one; many record only permissions
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return _kind(mode)
    return None

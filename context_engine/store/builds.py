"""Derived indexes published whole: a build is written in a directory of its own, then one pointer file
(`CURRENT`) is switched to it, so a reader sees the previous build or the new one, never a half-written one."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path


def publish_build(root: Path, name: str, write: Callable[[Path], None]) -> None:
    """`write` fills a fresh directory; it becomes `root/name` and `CURRENT` names it; superseded builds
    and leftovers of failed ones are removed."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{name}.tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        write(tmp)
        os.rename(tmp, root / name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    pointer = root / "CURRENT.tmp"
    pointer.write_text(name)
    os.replace(pointer, root / "CURRENT")
    for old in root.iterdir():
        if old.is_dir() and old.name != name:
            shutil.rmtree(old, ignore_errors=True)

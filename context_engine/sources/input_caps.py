"""Size caps on what a source file may expand to, so a hostile export fails fast and small.

A compressed input (a Slack zip, a gzipped dump) is checked before anything is inflated: each
member's declared size and compression ratio, and the archive's total. zipfile never returns more
than a member's declared size (it stops there and checks the CRC), so declared sizes bound the
work; gzip has no trustworthy header, so it is read in blocks and cut at the cap.
Caps can be raised for very large real exports with environment variables (in MB).
"""

from __future__ import annotations

import os
import zipfile
from typing import BinaryIO

from context_engine.sources.problems import SourceError

_MB = 1 << 20


def _cap(name: str, default_mb: int) -> int:
    raw = os.environ.get(name, "")
    return int(raw) * _MB if raw.isdigit() and int(raw) > 0 else default_mb * _MB


def max_file_bytes() -> int:
    """One file (or archive member) after decompression."""
    return _cap("CONTEXT_ENGINE_MAX_FILE_MB", 256)


def max_archive_bytes() -> int:
    """A whole archive after decompression."""
    return _cap("CONTEXT_ENGINE_MAX_ARCHIVE_MB", 8192)


MAX_RATIO = 200  # JSON compresses 5-30x; a member inflating 200x and more is a bomb, not an export
_RATIO_FLOOR = _MB  # small members may compress extremely well (runs of spaces); only large ones count


class FileTooLarge(ValueError):
    """One file or member is over its cap: it is skipped and counted, the rest goes in."""


def check_zip(archive: zipfile.ZipFile, where: str) -> None:
    """Refuse the archive when its members together expand past the total cap (a SourceError)."""
    total = sum(info.file_size for info in archive.infolist())
    if total > max_archive_bytes():
        raise SourceError(f"{where}: the archive expands to {total // _MB:,} MB, over the "
                          f"{max_archive_bytes() // _MB:,} MB cap (CONTEXT_ENGINE_MAX_ARCHIVE_MB)")


def read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    """A member's bytes, refused (FileTooLarge) before inflating when it is too large or too compressed."""
    info = archive.getinfo(name)
    if info.file_size > max_file_bytes():
        raise FileTooLarge(f"expands to {info.file_size // _MB:,} MB, over the {max_file_bytes() // _MB:,} MB "
                           "cap (CONTEXT_ENGINE_MAX_FILE_MB)")
    if info.file_size > _RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise FileTooLarge(f"compressed {info.file_size // max(info.compress_size, 1):,}:1, a zip bomb "
                           f"(over {MAX_RATIO}:1)")
    return archive.read(name)


def read_capped(stream: BinaryIO, limit: int | None = None) -> bytes:
    """Read a stream to its end, raising FileTooLarge as soon as it passes `limit` bytes."""
    limit = max_file_bytes() if limit is None else limit
    blocks, size = [], 0
    while block := stream.read(_MB):
        size += len(block)
        if size > limit:
            raise FileTooLarge(f"larger than the {limit // _MB:,} MB cap (CONTEXT_ENGINE_MAX_FILE_MB)")
        blocks.append(block)
    return b"".join(blocks)

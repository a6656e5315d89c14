"""JSON values from an export file: one pretty-printed JSON document (an API response page, an array)
or JSON lines, optionally gzipped. Tracker exports come in all three, often mixed in one folder.

The file is read by the input rule (`input_files`: the operator's path, resolved once, must be a
regular file) and within the caps of `input_caps` (size, gzip ratio, JSON values, record size).
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from context_engine.sources.input_caps import (
    FileTooLarge,
    JsonBomb,
    check_json_size,
    load_weighed_json,
    max_record_bytes,
    read_capped,
)
from context_engine.sources.input_files import NotReadable, input_root, open_input
from context_engine.sources.problems import ReadProblems, SourceError


def read_text(path: Path) -> str:
    """The file's text; a missing, unreadable, non-regular, oversized or non-UTF-8 file is a SourceError."""
    real = input_root(path)
    try:
        with open_input(real, real) as raw:
            if path.suffix == ".gz":
                with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                    return read_capped(fh, packed=raw).decode("utf-8-sig")
            return read_capped(raw).decode("utf-8-sig")
    except NotReadable as exc:
        raise SourceError(f"cannot read {path}: a {exc.kind}, not a regular file") from None
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile, zlib.error, FileTooLarge) as exc:
        raise SourceError(f"cannot read {path}: {exc}") from None


def json_values(path: Path, problems: ReadProblems) -> Iterator[tuple[str, Any]]:
    """(where, value) for the whole file if it is one JSON document, else for each JSON line.

    A broken JSON document is one problem; in JSON lines, each bad or oversized line is one problem.
    A file that would build too much in memory is a SourceError (one line), before it is parsed."""
    text = read_text(path)
    try:
        check_json_size(text)
    except JsonBomb as exc:
        raise SourceError(f"cannot read {path}: it {exc}") from None
    try:
        yield str(path), load_weighed_json(text)
        return
    except JsonBomb as exc:
        problems.add(str(path), str(exc))
        return
    except json.JSONDecodeError as exc:
        whole_file_error = exc
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    del text
    if not lines or not _parses(lines[0][1]):  # a broken JSON document, not JSON lines: one problem
        problems.add(str(path), f"malformed JSON ({whole_file_error.msg}, line {whole_file_error.lineno})")
        return
    for lineno, line in lines:
        if len(line) > max_record_bytes():
            problems.add(
                f"{path}:{lineno}",
                f"a record over the {max_record_bytes() >> 20} MB cap (CONTEXT_ENGINE_MAX_RECORD_MB)",
            )
            continue
        try:
            yield f"{path}:{lineno}", load_weighed_json(line)
        except JsonBomb as exc:
            problems.add(f"{path}:{lineno}", str(exc))
        except json.JSONDecodeError as exc:
            problems.add(f"{path}:{lineno}", f"malformed JSON ({exc.msg})")


def _parses(line: str) -> bool:
    try:
        load_weighed_json(line)
    except ValueError:  # JSONDecodeError or JsonBomb
        return False
    return True

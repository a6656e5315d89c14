"""JSON values from an export file: one pretty-printed JSON document (an API response page, an array)
or JSON lines, optionally gzipped. Tracker exports come in all three, often mixed in one folder.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Iterator

from context_engine.sources.input_caps import FileTooLarge, read_capped
from context_engine.sources.problems import ReadProblems, SourceError


def read_text(path: Path) -> str:
    """The file's text; a missing, unreadable or non-UTF-8 file is a SourceError."""
    if not path.is_file():
        raise SourceError(f"cannot read {path}: no such file")
    try:
        with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as fh:
            return read_capped(fh).decode("utf-8-sig")
    except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile, FileTooLarge) as exc:
        raise SourceError(f"cannot read {path}: {exc}") from None


def json_values(path: Path, problems: ReadProblems) -> Iterator[tuple[str, Any]]:
    """(where, value) for the whole file if it is one JSON document, else for each JSON line.

    A broken JSON document is one problem; in JSON lines, each bad line is one problem."""
    text = read_text(path)
    try:
        yield str(path), json.loads(text)
        return
    except json.JSONDecodeError as exc:
        whole_file_error = exc
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines or not _parses(lines[0][1]):  # a broken JSON document, not JSON lines: one problem
        problems.add(str(path), f"malformed JSON ({whole_file_error.msg}, line {whole_file_error.lineno})")
        return
    for lineno, line in lines:
        try:
            yield f"{path}:{lineno}", json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(f"{path}:{lineno}", f"malformed JSON ({exc.msg})")


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True

"""Size caps on what a source file may expand to, so a hostile export fails fast and small.

A compressed input (a Slack zip, a gzipped dump) is checked before anything is inflated: each
member's declared size and compression ratio, and the archive's total. zipfile never returns more
than a member's declared size (it stops there and checks the CRC), so declared sizes bound the
work; gzip has no trustworthy header, so it is read in blocks and cut at the cap, or as soon as
it has inflated more than MAX_RATIO times what it has read.

What JSON text turns into in memory is bounded too, before it is parsed (`parse_json`): a file may
hold at most `max_json_values()` objects and arrays, and not more than one per
`_MIN_BYTES_PER_VALUE` bytes (`{},` repeated builds a 64-byte dict per 3 bytes of text); a JSON
line (one record) is at most `max_record_bytes()`; nesting past Python's recursion limit is refused.

A whole input (every file of one `ingest`, however many files or members) is bounded as well:
`input_budget()` counts the bytes read and the JSON objects and arrays weighed, and the read stops
with one line (a SourceError) past `max_input_bytes()` or `max_input_values()`.
Caps can be raised for very large real exports with environment variables.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, BinaryIO

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


def max_record_bytes() -> int:
    """One record (a JSON line)."""
    return _cap("CONTEXT_ENGINE_MAX_RECORD_MB", 16)


def max_json_values() -> int:
    """Objects and arrays in one JSON file (a GitHub pull request with its reviews holds ~60)."""
    raw = os.environ.get("CONTEXT_ENGINE_MAX_JSON_VALUES", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else 5_000_000


def max_input_bytes() -> int:
    """Every file of one ingest together, after decompression."""
    return _cap("CONTEXT_ENGINE_MAX_INPUT_MB", 16384)


def max_input_values() -> int:
    """JSON objects and arrays in every file of one ingest together (600k Slack messages hold ~6M)."""
    raw = os.environ.get("CONTEXT_ENGINE_MAX_INPUT_VALUES", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else 50_000_000


@dataclass
class _Budget:
    bytes: int = 0
    values: int = 0


_budget: ContextVar[_Budget | None] = ContextVar("input_budget", default=None)


@contextmanager
def input_budget() -> Iterator[None]:
    """Count what one ingest reads against the whole-input caps (outside it, files are capped one by one)."""
    token = _budget.set(_Budget())
    try:
        yield
    finally:
        _budget.reset(token)


def _charge(size: int = 0, values: int = 0) -> None:
    budget = _budget.get()
    if budget is None:
        return
    budget.bytes += size
    budget.values += values
    if budget.bytes > max_input_bytes():
        raise SourceError(
            f"the input expands to more than {max_input_bytes() // _MB:,} MB in total (CONTEXT_ENGINE_MAX_INPUT_MB)"
        )
    if budget.values > max_input_values():
        raise SourceError(
            f"the input holds more than {max_input_values():,} JSON objects and arrays in total "
            "(CONTEXT_ENGINE_MAX_INPUT_VALUES)"
        )


_MIN_BYTES_PER_VALUE = 8  # real exports spend 20+ bytes per object or array; a bomb of `{},` spends 3
_DENSITY_FLOOR = 100_000  # small files may be dense: only this many values and more are weighed

MAX_RATIO = 200  # JSON compresses 5-30x; a member inflating 200x and more is a bomb, not an export
_RATIO_FLOOR = _MB  # small members may compress extremely well (runs of spaces); only large ones count


class FileTooLarge(ValueError):
    """One file or member is over its cap: it is skipped and counted, the rest goes in."""


class JsonBomb(ValueError):
    """JSON text that would build far more in memory than it weighs: refused before parsing."""


def check_zip(archive: zipfile.ZipFile, where: str) -> None:
    """Refuse the archive when its members together expand past the total cap (a SourceError)."""
    total = sum(info.file_size for info in archive.infolist())
    if total > max_archive_bytes():
        raise SourceError(
            f"{where}: the archive expands to {total // _MB:,} MB, over the "
            f"{max_archive_bytes() // _MB:,} MB cap (CONTEXT_ENGINE_MAX_ARCHIVE_MB)"
        )
    # Many members each under the per-member ratio floor (which `read_member` lets through at any
    # ratio) add up to a bomb as well.
    small = [info for info in archive.infolist() if info.file_size <= _RATIO_FLOOR]
    expanded, packed = sum(i.file_size for i in small), max(sum(i.compress_size for i in small), 1)
    if expanded > _RATIO_FLOOR and expanded > MAX_RATIO * packed:
        raise SourceError(
            f"{where}: its small members are compressed {expanded // packed:,}:1, a zip bomb (over {MAX_RATIO}:1)"
        )


def read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    """A member's bytes, refused (FileTooLarge) before inflating when it is too large or too compressed."""
    info = archive.getinfo(name)
    if info.file_size > max_file_bytes():
        raise FileTooLarge(
            f"expands to {info.file_size // _MB:,} MB, over the {max_file_bytes() // _MB:,} MB "
            "cap (CONTEXT_ENGINE_MAX_FILE_MB)"
        )
    if info.file_size > _RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise FileTooLarge(
            f"compressed {info.file_size // max(info.compress_size, 1):,}:1, a zip bomb (over {MAX_RATIO}:1)"
        )
    _charge(info.file_size)
    return archive.read(name)


def read_capped(stream: BinaryIO, limit: int | None = None, packed: BinaryIO | None = None) -> bytes:
    """Read a stream to its end, raising FileTooLarge as soon as it passes `limit` bytes. `packed`: the
    compressed file under a decompressing `stream`; reading stops as soon as the stream has inflated
    more than MAX_RATIO times what was read of it."""
    limit = max_file_bytes() if limit is None else limit
    blocks, size = [], 0
    while block := stream.read(_MB):
        size += len(block)
        if size > limit:
            raise FileTooLarge(f"larger than the {limit // _MB:,} MB cap (CONTEXT_ENGINE_MAX_FILE_MB)")
        if packed is not None and size > _RATIO_FLOOR and size > MAX_RATIO * max(packed.tell(), 1):
            raise FileTooLarge(f"compressed over {MAX_RATIO}:1, a gzip bomb")
        _charge(len(block))
        blocks.append(block)
    return b"".join(blocks)


def check_json_size(text: str | bytes) -> None:
    """Refuse (JsonBomb) JSON text that would build too many objects and arrays for its size."""
    values = text.count("{" if isinstance(text, str) else b"{") + text.count("[" if isinstance(text, str) else b"[")
    if values > max_json_values():
        raise JsonBomb(
            f"holds {values:,} objects and arrays, over the {max_json_values():,} cap (CONTEXT_ENGINE_MAX_JSON_VALUES)"
        )
    if values > _DENSITY_FLOOR and len(text) < values * _MIN_BYTES_PER_VALUE:
        raise JsonBomb(
            f"holds {values:,} objects and arrays in {len(text):,} bytes, a JSON bomb "
            f"(fewer than {_MIN_BYTES_PER_VALUE} bytes each)"
        )
    _charge(values=values)


def parse_json(text: str | bytes) -> Any:
    """json.loads within the caps above: JsonBomb (a ValueError) for a bomb or nesting too deep,
    json.JSONDecodeError for malformed text."""
    check_json_size(text)
    return load_weighed_json(text)


def load_weighed_json(text: str | bytes) -> Any:
    """json.loads of text already weighed by `check_json_size` (a JSON line of a weighed file):
    JsonBomb for nesting too deep, json.JSONDecodeError for malformed text."""
    try:
        return json.loads(text)
    except RecursionError:
        raise JsonBomb("nested too deeply") from None


def parse_yaml(text: str) -> Any:
    """yaml.safe_load within the same rule as JSON: what the text becomes in memory is weighed before
    it is built. YAML's aliases (`*name`) share a node, so 500 bytes of `&a [*b, *b, ...]` nested nine
    deep stand for a billion values, which anything that walks the result (`str`, `json.dumps`)
    expands. The composed document is weighed with every alias counted at its full size, and refused
    (a yaml.YAMLError, as for bad YAML) past one node per byte of text plus 10,000, or when an alias
    refers to a node that holds it (a cycle); nesting past Python's recursion limit is refused too."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise yaml.YAMLError("the YAML is nested too deeply") from None
        if node is None:
            return None
        _weigh_yaml(node, len(text) + 10_000)
        try:
            return loader.construct_document(node)
        except RecursionError:
            raise yaml.YAMLError("the YAML is nested too deeply") from None
    finally:
        loader.dispose()


def _weigh_yaml(root: Any, limit: int) -> None:
    import yaml

    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        children = (
            [n for pair in node.value for n in pair]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
            if isinstance(node, yaml.SequenceNode)
            else []
        )
        if done:
            open_nodes.discard(id(node))
            sizes[id(node)] = size = 1 + sum(sizes[id(child)] for child in children)
            if size > limit:
                raise yaml.YAMLError(
                    f"the YAML expands to more than {limit} values (aliases repeat what they name); "
                    "it is refused, not built"
                )
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            raise yaml.YAMLError("a YAML alias refers to a node that holds it (a cycle)")
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)


@contextmanager
def reading_csv(where: str) -> Iterator[None]:
    """Reading CSV in the block: a field up to the record cap (`max_record_bytes()`, not csv's 128 KB:
    a long issue description is a real record), and a file csv cannot read (a field past the cap, a
    NUL) one line naming it (SourceError), never a `_csv.Error` traceback."""
    import csv

    if csv.field_size_limit() < max_record_bytes():
        csv.field_size_limit(max_record_bytes())
    try:
        yield
    except csv.Error as exc:
        raise SourceError(f"{where} cannot be read as CSV: {exc}") from None

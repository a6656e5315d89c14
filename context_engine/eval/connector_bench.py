"""Connector throughput: records/s per connector into the embedded store, and the cost of re-syncing
an unchanged source.

    python -m context_engine.eval.connector_bench [--runs 3] [--index]

Sources, each read and ingested end to end (`read_source` + `ingest`, as `context-engine ingest` does):
- slack: the three real workspace exports in $CONTEXT_ENGINE_EVAL_DATA/slack (52,739 messages, 1,563 people);
- github: the real GitHub API dump in $CONTEXT_ENGINE_EVAL_DATA/github (7,258 PRs and issues);
- git: a generated repository of `--commits` commits (git fast-import: 200 files, 3 changed per
  commit, a merge-commit PR every 10th commit, squash-style "(#N)" subjects every 3rd);
- jira, linear, docs: the test fixtures multiplied to `--copies` records with new keys.

Per source: records/s of a first ingest into an empty data dir, structured only (median of `--runs`
fresh runs), then the seconds of re-ingesting the unchanged source into the same dir. With
`--index` also one first ingest with the semantic index (embedding through the per-user embedding
cache: the `embedded` column says how many chunks were really embedded) and its unchanged re-sync,
which must embed nothing. Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from context_engine.config import Settings
from context_engine.eval import eval_data
from context_engine.ingest import ingest
from context_engine.sources.connectors import SourceRequest, read_source
from context_engine.sources.problems import ReadProblems

SHARED = eval_data()
FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "data" / "connectors"


def generate_git_repo(root: Path, commits: int, seed: int = 1) -> None:
    """A repository of `commits` commits written with one `git fast-import` (seconds, not minutes)."""
    rng = random.Random(seed)
    stream: list[bytes] = []
    mark = 0
    files = {f"src/mod{i:03d}.py": [f"line {j}\n" for j in range(50)] for i in range(200)}

    def blob(lines: list[str]) -> int:
        nonlocal mark
        mark += 1
        data = "".join(lines).encode()
        stream.append(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(data), data))
        return mark

    def commit(ref: bytes, message: str, when: int, changes: list[tuple[str, int]], parents: list[int]) -> int:
        nonlocal mark
        mark += 1
        who = rng.choice([b"Ann Lee <ann@example.com>", b"Ben Ode <ben@example.com>", b"Cy Park <cy@example.com>"])
        text = message.encode()
        head = b"commit %s\nmark :%d\nauthor %s %d +0000\ncommitter %s %d +0000\ndata %d\n%s\n" % (
            ref,
            mark,
            who,
            when,
            who,
            when,
            len(text),
            text,
        )
        head += b"".join(b"%s :%d\n" % (b"from" if i == 0 else b"merge", p) for i, p in enumerate(parents))
        head += b"".join(b"M 100644 :%d %s\n" % (m, path.encode()) for path, m in changes)
        stream.append(head + b"\n")
        return mark

    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    t0 = 1_700_000_000
    head = commit(b"refs/heads/main", "Initial import", t0, [(p, blob(c)) for p, c in files.items()], [])
    i = 1
    while i < commits:
        changes = []
        for path in rng.sample(list(files), 3):
            lines = files[path]
            lines[rng.randrange(len(lines))] = f"changed {i}\n"
            changes.append((path, blob(lines)))
        if i % 10 == 0:
            side = commit(b"refs/heads/side", f"Work {i}", t0 + i * 60, changes, [head])
            i += 1
            head = commit(
                b"refs/heads/main",
                f"Merge pull request #{i} from ann/work-{i}\n\nWork {i}",
                t0 + i * 60,
                [],
                [head, side],
            )
        else:
            head = commit(
                b"refs/heads/main", f"Change {i} (#{i})" if i % 3 == 0 else f"Change {i}", t0 + i * 60, changes, [head]
            )
        i += 1
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(stream), check=True)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=root, check=True)


def _multiply_issues(fixture: Path, key: str, prefix: str, out: Path, copies: int) -> None:
    """`copies` issues cycling through a fixture's, each with a new `key` ("BENCH-7") and id."""
    from context_engine.sources.json_files import json_values

    issues = [v for _, v in json_values(fixture, ReadProblems()) if isinstance(v, dict) and v.get(key)]
    with open(out / "issues.jsonl", "w", encoding="utf-8") as fh:
        for n in range(copies):
            issue = copy.deepcopy(issues[n % len(issues)])
            issue[key], issue["id"] = f"{prefix}-{n + 1}", str(900_000 + n)
            fh.write(json.dumps(issue) + "\n")


def _multiply_docs(out: Path, copies: int) -> None:
    pages = [p for p in (FIXTURES / "docs").rglob("*.md") if "broken" not in p.parts and ".trash" not in p.parts]
    for n in range(copies):
        page = pages[n % len(pages)]
        (out / f"page-{n:05d}.md").write_text(page.read_text(encoding="utf-8") + f"\n\nCopy {n}.\n", encoding="utf-8")


def _sources(work: Path, commits: int, copies: int) -> dict[str, Callable[[], SourceRequest]]:
    def made(name: str, build: Callable[[Path], None]) -> Path:
        path = work / name
        if not path.exists():
            path.mkdir(parents=True)
            build(path)
        return path

    return {
        "slack": lambda: SourceRequest("slack", sorted(SHARED.joinpath("slack").glob("*-slack-export.zip"))),
        "github": lambda: SourceRequest("github", sorted(SHARED.joinpath("github").glob("*.jsonl.gz"))),
        "git": lambda: SourceRequest("git", [made("git", lambda p: (p.rmdir(), generate_git_repo(p, commits)))]),
        "jira": lambda: SourceRequest(
            "jira",
            [
                made(
                    "jira",
                    lambda p: _multiply_issues(
                        FIXTURES / "jira" / "cloud-v2-issues.jsonl.gz", "key", "BENCH", p, copies
                    ),
                )
                / "issues.jsonl"
            ],
        ),
        "linear": lambda: SourceRequest(
            "linear",
            [
                made(
                    "linear",
                    lambda p: _multiply_issues(FIXTURES / "linear" / "nodes.jsonl", "identifier", "LIN", p, copies),
                )
                / "issues.jsonl"
            ],
        ),
        "docs": lambda: SourceRequest("docs", [made("docs", lambda p: _multiply_docs(p, copies))]),
    }


def _ingest_once(request: SourceRequest, data_dir: Path, index: bool) -> dict[str, Any]:
    settings = Settings().with_overrides(data_dir=str(data_dir), tenant="bench")
    started = time.perf_counter()
    read = read_source(request, "bench", data_dir, ReadProblems())
    (report,) = ingest(settings, read.per_tenant, index=index, public=True)  # bench fixtures: public sources
    seconds = time.perf_counter() - started
    return {
        "records": report.records,
        "seconds": seconds,
        "changed": report.changed,
        "embedded": report.index.embedded if report.index else None,
    }


def run(runs: int, index: bool, commits: int, copies: int, only: list[str] | None) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="connector-bench-") as tmp:
        work = Path(tmp)
        for name, request in _sources(work / "sources", commits, copies).items():
            if only and name not in only:
                continue
            firsts = []
            for r in range(runs):
                data_dir = work / f"{name}-{r}"
                firsts.append(_ingest_once(request(), data_dir, index=False))
            resync = _ingest_once(request(), work / f"{name}-0", index=False)
            row = {
                "records": firsts[0]["records"],
                "records_per_s": round(statistics.median(f["records"] / f["seconds"] for f in firsts)),
                "first_s": round(statistics.median(f["seconds"] for f in firsts), 2),
                "resync_unchanged_s": round(resync["seconds"], 2),
                "resync_changed": resync["changed"],
            }
            if index:
                indexed = _ingest_once(request(), work / f"{name}-idx", index=True)
                again = _ingest_once(request(), work / f"{name}-idx", index=True)
                row.update(
                    {
                        "indexed_records_per_s": round(indexed["records"] / indexed["seconds"]),
                        "indexed_first_s": round(indexed["seconds"], 1),
                        "embedded": indexed["embedded"],
                        "indexed_resync_s": round(again["seconds"], 2),
                        "resync_embedded": again["embedded"],
                    }
                )
            results[name] = row
            for r in range(runs):
                shutil.rmtree(work / f"{name}-{r}", ignore_errors=True)
            print(f"{name:7s} " + "  ".join(f"{k}={v}" for k, v in row.items()), file=sys.stderr, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--index", action="store_true", help="also ingest with the semantic index")
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--copies", type=int, default=5000)
    parser.add_argument("--only", nargs="*", help="only these sources")
    args = parser.parse_args(argv)
    results = run(args.runs, args.index, args.commits, args.copies, args.only)
    header = f"{'source':8s}{'records':>9s}{'records/s':>11s}{'first s':>9s}{'re-sync s':>11s}"
    print(header)
    for name, row in results.items():
        print(
            f"{name:8s}{row['records']:>9,}{row['records_per_s']:>11,}{row['first_s']:>9}{row['resync_unchanged_s']:>11}"
        )
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

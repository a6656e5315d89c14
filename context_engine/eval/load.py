"""A bounded load run against the LangServe server on loopback (`python -m context_engine.eval.load`).

Ingests the sample corpus (or uses `--data-dir`), starts `context_engine.server` in its own process
on a free loopback port with one API key per client (the per-key rate limit raised so that it is the
engine, not the limiter, that is measured), then `--clients` threads post questions to
`/context/invoke` for `--seconds`. Reports throughput, p50/p95/p99 latency and errors as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

QUESTIONS = [
    "PRs Rashid merged last week",
    "how many open PRs are labelled security?",
    "open issues assigned to me",
    "why did we switch the session cache to Redis?",
    "what happened with the duplicate charges in payments in September?",
    "为什么要把 CI 迁移到自托管 runner？",
]
NOW = "2026-11-30T12:00:00Z"
SERVER = """
import sys, uvicorn
from pathlib import Path
from context_engine.config import Settings
from context_engine.server import Limits, create_app, load_keys
app = create_app(Settings(data_dir=Path(sys.argv[1]), mongodb_uri=None), load_keys(), Limits(requests_per_minute=1_000_000))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def run(data_dir: Path, clients: int, seconds: float) -> dict:
    port = _free_port()
    keys = {f"load-key-{i}": {"tenant": "acme", "user": "rsh-dev"} for i in range(clients)}
    env = {**os.environ, "CONTEXT_ENGINE_API_KEYS": json.dumps(keys), "OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""}
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(data_dir), str(port)], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            raise RuntimeError("the server did not become ready within 60 s")
        # Warm-up: the first answers load the store, the catalog, the index and the embedding model.
        warm = httpx.Client(base_url=base, headers={"Authorization": "Bearer load-key-0"}, timeout=60)
        for question in QUESTIONS:
            warm.post("/context/invoke", json={"input": {"question": question, "now": NOW}})
        latencies: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()
        stop = time.monotonic() + seconds

        def client(i: int) -> None:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer load-key-{i}"}, timeout=30) as http:
                n = i
                while time.monotonic() < stop:
                    question = QUESTIONS[n % len(QUESTIONS)]
                    n += 1
                    started = time.perf_counter()
                    try:
                        response = http.post("/context/invoke", json={"input": {"question": question, "now": NOW}})
                        ok = response.status_code == 200 and "answer" in response.json().get("output", {})
                        problem = None if ok else f"HTTP {response.status_code}"
                    except httpx.HTTPError as exc:
                        problem = type(exc).__name__
                    elapsed = time.perf_counter() - started
                    with lock:
                        latencies.append(elapsed)
                        if problem:
                            errors.append(problem)

        started = time.perf_counter()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {
        "clients": clients,
        "seconds": round(wall, 1),
        "requests": len(latencies),
        "errors": len(errors),
        "error_kinds": sorted(set(errors)),
        "throughput_rps": round(len(latencies) / wall, 1),
        "p50_ms": round(_pct(latencies, 0.50) * 1000, 1),
        "p95_ms": round(_pct(latencies, 0.95) * 1000, 1),
        "p99_ms": round(_pct(latencies, 0.99) * 1000, 1),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 1) if latencies else None,
        "load_avg": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--data-dir", type=Path, help="a data dir with the sample corpus (default: ingest one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="load-") as tmp:
        data_dir = args.data_dir
        if data_dir is None:
            from context_engine.config import Settings
            from context_engine.ingest import ingest
            from context_engine.sources.sample import generate

            data_dir = Path(tmp)
            ingest(Settings(data_dir=data_dir, mongodb_uri=None), generate())
        print(json.dumps(run(data_dir, args.clients, args.seconds), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

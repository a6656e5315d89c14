"""Class 6, work escaping its bounds inside a stage: the deadline and the stop flags hold inside one
stage, arithmetic keeps to MongoDB's 64 bits, every integer of a result prints, times out of range
are a one-line refusal (CLI and HTTP), slow request bodies are cut, SIGTERM stops `serve` and `mcp`
with a query running, and a request whose client left (or that timed out) stops its work."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import mongomock
import pytest

from context_engine.config import Settings
from context_engine.query import execute
from context_engine.query.execute import run_pipeline
from context_engine.query.validate import validate_pipeline
from context_engine.server import ApiKey, Limits, create_app
from context_engine.store.bounded import Bounds, Cancelled, QueryBoundExceeded, Stop, run_embedded, stop_on
from tests.conftest import run_cli
from tests.serving import Server

REPO = Path(__file__).resolve().parents[2]
NOW = "2026-11-30T12:00:00Z"
KEYS = {"member-key": ApiKey(tenant="acme", user="sokafor")}
INT64_MAX = 2**63 - 1

# One stage that is slow per row but passes the validator: 8 x ($multiply of 8) per field, 2 fields.
_PRODUCT = {"$multiply": ["$n", "$m", 2, 3, 4, 5, 6, 7]}
SLOW_STAGE = {"$addFields": {"x0": {"$add": [_PRODUCT] * 8}, "x1": {"$add": [_PRODUCT] * 8}}}


def _rows(count: int):
    collection = mongomock.MongoClient().db.rows
    collection.insert_many([{"_id": i, "tenant_id": "acme", "acl": ["*"], "n": i, "m": 3} for i in range(count)])
    return collection


def _store(collection) -> SimpleNamespace:
    return SimpleNamespace(embedded=True, revision=None, collection=lambda _name: collection)


# -- inside one stage ----------------------------------------------------------------------------


def test_the_slow_stage_is_one_the_validator_accepts():
    assert validate_pipeline([SLOW_STAGE], None) == []


def test_one_slow_stage_stops_at_the_deadline_not_after_it():
    """5,000 rows of this stage take about two seconds: the 150 ms deadline ends it inside the stage."""
    collection = _rows(5000)
    started = time.monotonic()
    with pytest.raises(QueryBoundExceeded, match="150 ms deadline"):
        run_embedded(collection, [SLOW_STAGE], Bounds(max_time_ms=150))
    assert time.monotonic() - started < 0.8


def test_a_stop_set_from_another_thread_ends_a_running_stage():
    collection, stop, outcome = _rows(20000), Stop(), []

    def work():
        with stop_on(stop):
            try:
                run_embedded(collection, [SLOW_STAGE], Bounds(max_time_ms=600_000))
                outcome.append("finished")
            except Cancelled as exc:
                outcome.append((str(exc), time.monotonic()))

    worker = threading.Thread(target=work)
    worker.start()
    time.sleep(0.3)
    stop.cancel("the client disconnected")
    cancelled_at = time.monotonic()
    worker.join(5)
    assert outcome and outcome[0][0] == "the client disconnected" and outcome[0][1] - cancelled_at < 0.3


# -- numbers ---------------------------------------------------------------------------------------


def test_chained_arithmetic_is_64_bit_fast_and_prints():
    """Each stage multiplies the previous product by itself eight times: on unbounded integers the
    third stage alone would hold 10^1200 digits. MongoDB's long overflows to a double instead."""
    collection = _rows(200)
    big = [INT64_MAX] * 8
    pipeline = [
        {"$addFields": {"a": {"$multiply": big}}},
        {"$addFields": {"b": {"$multiply": ["$a"] * 8}}},
        {"$addFields": {"c": {"$multiply": ["$b"] * 8}}},
        {"$project": {"a": 1, "b": 1, "c": 1, "fits": {"$add": [INT64_MAX - 1, 1]}}},
    ]
    assert validate_pipeline(pipeline, None) == []
    started = time.monotonic()
    rows = run_pipeline(_store(collection), "rows", pipeline, tenant="acme", principals=[], schema=None)
    assert time.monotonic() - started < 2
    assert rows[0]["fits"] == INT64_MAX and type(rows[0]["fits"]) is int
    assert all(type(row[k]) is float for row in rows for k in "abc")
    json.dumps(rows)  # every value prints


@pytest.mark.parametrize(
    "pipeline, refusal",
    [
        ([{"$project": {"x": {"$multiply": ["$n"] * 9}}}], "$multiply takes at most 8 operands"),
        ([{"$project": {"x": {"$add": ["$n", 2**64]}}}], "does not fit a 64-bit integer"),
        ([{"$match": {"n": {"$gt": -(2**63) - 1}}}], "does not fit a 64-bit integer"),
        ([{"$match": {"n": float("inf")}}], "is not finite"),
        ([{"$addFields": {f"x{i}": {"$add": ["$n"] * 8} for i in range(40)}}], "more than 300 parts"),
    ],
)
def test_numbers_and_expressions_that_could_explode_are_refused(pipeline, refusal):
    errors = validate_pipeline(pipeline, None)
    assert len(errors) == 1 and refusal in errors[0], errors


def test_a_sum_beyond_64_bits_is_a_double_as_in_mongodb():
    """Stored numbers fit 64 bits (ingest refuses others); a $sum of many can still pass them, and
    MongoDB answers with a double: so does the embedded store."""
    collection = mongomock.MongoClient().db.rows
    collection.insert_many([{"_id": i, "tenant_id": "acme", "acl": ["*"], "n": INT64_MAX} for i in range(3)])
    (row,) = run_pipeline(
        _store(collection),
        "rows",
        [{"$group": {"_id": None, "total": {"$sum": "$n"}}}],
        tenant="acme",
        principals=[],
        schema=None,
    )
    assert row["total"] == float(3 * INT64_MAX) and type(row["total"]) is float


def test_cli_prints_a_huge_product_and_refuses_a_huge_literal_in_one_line(sample_dir):
    chain = json.dumps([{"$project": {"x": {"$multiply": [INT64_MAX] * 8}}}, {"$limit": 1}])
    out = run_cli("query", "pull_requests", chain, "--data-dir", str(sample_dir))
    assert out.returncode == 0, out.stderr
    assert isinstance(json.loads(out.stdout)["records"][0]["x"], float)
    for number, code in (("9" * 5000, 2), ("9" * 30, 3)):
        out = run_cli(
            "query", "pull_requests", f'[{{"$match": {{"number": {number}}}}}]', "--data-dir", str(sample_dir)
        )
        assert out.returncode == code and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "Traceback" not in out.stderr and "64" in out.stderr


# -- times -----------------------------------------------------------------------------------------

OUT_OF_RANGE_QUESTIONS = [
    "PRs merged in the last 99999999999 days",
    "PRs merged since 0001-01-01",
    "PRs merged after 9999-12-31",
    "PRs merged in the past 200000 weeks",
]


@pytest.mark.parametrize("question", OUT_OF_RANGE_QUESTIONS)
def test_cli_refuses_a_time_out_of_range_in_one_line(sample_dir, question):
    out = run_cli("ask", question, "--now", NOW, "--data-dir", str(sample_dir))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "1900" in out.stderr


@pytest.mark.parametrize("now", ["0001-01-01", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59", "1899-12-31"])
def test_cli_refuses_a_now_out_of_range_in_one_line(sample_dir, now):
    out = run_cli("ask", "PRs merged last week", "--now", now, "--data-dir", str(sample_dir))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "out of range" in out.stderr, (
        out.stderr
    )


@pytest.fixture(scope="module")
def server(sample_dir):
    settings = Settings(data_dir=sample_dir, mongodb_uri=None, tenant="acme", use_llm=False)
    with Server(create_app(settings, KEYS, Limits(timeout_seconds=3, body_seconds=1))) as running:
        yield running


def _invoke(server, question: str, now: str = NOW, timeout: float = 60) -> httpx.Response:
    return httpx.post(
        f"{server.url}/context/invoke",
        headers={"Authorization": "Bearer member-key"},
        json={"input": {"question": question, "now": now}},
        timeout=timeout,
    )


@pytest.mark.parametrize(
    "question, now",
    [(q, NOW) for q in OUT_OF_RANGE_QUESTIONS]
    + [("PRs merged last week", "0001-01-01T00:00:00Z"), ("PRs merged last week", "9999-12-31")],
)
def test_http_refuses_a_time_out_of_range_with_400(server, question, now):
    response = _invoke(server, question, now)
    assert response.status_code == 400, response.text
    assert "1900" in response.json()["error"]


def test_http_answers_a_number_too_long_to_read_with_a_json_400(server):
    body = '{"input": {"question": "open PRs", "now": "%s"}, "kwargs": {"n": %s}}' % (NOW, "9" * 5000)  # noqa: UP031 (JSON braces)
    response = httpx.post(
        f"{server.url}/context/invoke",
        content=body,
        timeout=30,
        headers={"Authorization": "Bearer member-key", "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["error"] == "a number in the request has too many digits to read; numbers fit 64 bits"


# -- slow request bodies ---------------------------------------------------------------------------


def test_slow_bodies_are_cut_with_408_and_others_are_served_meanwhile(server):
    """Twenty clients each declare a body and trickle a few bytes of it: each gets 408 after the
    server's one-second body deadline, and a normal request is answered while they hang on."""
    host, port = "127.0.0.1", server.port
    slow = []
    for _ in range(20):
        conn = socket.create_connection((host, port), timeout=10)
        conn.sendall(
            b"POST /context/invoke HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer member-key\r\n"
            b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"input":'
        )
        slow.append(conn)
    started = time.monotonic()
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
    for conn in slow:
        with conn:
            reply = conn.recv(4096)
            assert reply.startswith(b"HTTP/1.1 408"), reply[:80]
            assert b"request body not received within 1 s" in reply
    assert time.monotonic() - started < 5


# -- cancelled requests stop their work ------------------------------------------------------------


@pytest.fixture
def slow_queries(monkeypatch):
    """Every structured query of the graph becomes a real slow stage over 20,000 rows (about 30 s
    of work unless stopped); `outcome` records how each ended and when."""
    collection, outcome, started = _rows(20000), [], threading.Event()

    def slow(*_args, **_kwargs):
        started.set()
        try:
            rows = run_embedded(collection, [SLOW_STAGE], Bounds(max_time_ms=600_000))
        except BaseException as exc:
            outcome.append((type(exc).__name__, str(exc), time.monotonic()))
            raise
        outcome.append(("finished", "", time.monotonic()))
        return rows[:0]

    monkeypatch.setattr(execute, "run_embedded", slow)
    return SimpleNamespace(outcome=outcome, started=started)


def _settles(outcome: list, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not outcome and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_request_that_times_out_stops_its_query(server, slow_queries):
    response = _invoke(server, "how many open PRs are there?")
    timed_out = time.monotonic()
    assert response.status_code == 504
    _settles(slow_queries.outcome, 5)
    name, reason, ended = slow_queries.outcome[0]
    assert name == "Cancelled" and "timed out" in reason and ended - timed_out < 1


def test_a_client_that_disconnects_stops_its_query(server, slow_queries):
    hung_up = []

    def ask_and_hang_up():
        try:
            _invoke(server, "how many open PRs are there?", timeout=1.5)
        except httpx.ReadTimeout:
            hung_up.append(True)  # the client closes its connection here

    asker = threading.Thread(target=ask_and_hang_up)
    asker.start()
    assert slow_queries.started.wait(10)
    asker.join(10)
    assert hung_up
    gone = time.monotonic()
    _settles(slow_queries.outcome, 5)
    name, reason, ended = slow_queries.outcome[0]
    assert name == "Cancelled" and "disconnected" in reason and ended - gone < 1


# -- SIGTERM with a query running ------------------------------------------------------------------

# The program as installed, with every structured query replaced by the slow stage above (minutes
# of work unless stopped); it touches MARKER when the query starts and writes how it ended to
# MARKER.end.
DRIVER = f"""
import os, sys
import mongomock
from pathlib import Path
from context_engine.query import execute
from context_engine.store.bounded import Bounds, run_embedded
from context_engine.cli import main

rows = mongomock.MongoClient().db.rows
rows.insert_many([{{"_id": i, "n": i, "m": 3}} for i in range(20000)])
STAGE = {json.dumps(SLOW_STAGE)}

def slow(*_args, **_kwargs):
    Path(os.environ["MARKER"]).touch()
    try:
        for _ in range(20):
            run_embedded(rows, [STAGE], Bounds(max_time_ms=600_000))
    except BaseException as exc:
        Path(os.environ["MARKER"] + ".end").write_text(f"{{type(exc).__name__}}: {{exc}}")
        raise
    return []

execute.run_embedded = slow
sys.exit(main(sys.argv[1:]))
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(tmp_path, *args: str, stdin=None) -> tuple[subprocess.Popen, Path]:
    marker = tmp_path / "query-started"
    env = {**os.environ, "MARKER": str(marker), "OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""}
    env.pop("MONGODB_URI", None)
    process = subprocess.Popen(
        [sys.executable, "-c", DRIVER, *args],
        cwd=REPO,
        env=env,
        stdin=stdin,
        stdout=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return process, marker


def _wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _terminate_within(process: subprocess.Popen, marker: Path, seconds: float) -> None:
    _wait_for(marker.exists, 60, "the query never started")
    time.sleep(0.5)  # well inside the query
    assert process.poll() is None
    process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    try:
        process.wait(timeout=30)
    finally:
        process.kill()
    assert time.monotonic() - sent < seconds, "the process outlived SIGTERM"


def _keys_file(tmp_path) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"member-key": {"tenant": "acme", "user": "sokafor"}}))
    return path


def _listening(port: int):
    def check() -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    return check


def test_sigterm_stops_serve_while_a_query_runs(sample_dir, tmp_path):
    port = _free_port()
    process, marker = _start(
        tmp_path, "serve", "--data-dir", str(sample_dir), "--keys", str(_keys_file(tmp_path)), "--port", str(port)
    )
    _wait_for(_listening(port), 60, "serve did not start")
    asker = threading.Thread(
        target=lambda: httpx.post(
            f"http://127.0.0.1:{port}/context/invoke",
            headers={"Authorization": "Bearer member-key"},
            json={"input": {"question": "how many open PRs are there?", "now": NOW}},
            timeout=60,
        ),
        daemon=True,
    )
    asker.start()
    _terminate_within(process, marker, 5)


MCP_HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_READY = {"jsonrpc": "2.0", "method": "notifications/initialized"}
MCP_QUERY = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {
        "name": "query",
        "arguments": {"collection": "pull_requests", "pipeline": [{"$match": {"state": "open"}}]},
    },
}


def test_sigterm_stops_mcp_stdio_while_a_query_runs(sample_dir, tmp_path):
    process, marker = _start(
        tmp_path, "mcp", "--data-dir", str(sample_dir), "--tenant", "acme", "--as", "sokafor", stdin=subprocess.PIPE
    )
    process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in (MCP_HELLO, MCP_READY, MCP_QUERY)))
    process.stdin.flush()
    _terminate_within(process, marker, 5)


def test_sigterm_stops_mcp_http_while_a_query_runs(sample_dir, tmp_path):
    port = _free_port()
    process, marker = _start(
        tmp_path,
        "mcp",
        "--http",
        "--data-dir",
        str(sample_dir),
        "--keys",
        str(_keys_file(tmp_path)),
        "--port",
        str(port),
    )
    _wait_for(_listening(port), 60, "mcp --http did not start")
    headers = {"Authorization": "Bearer member-key", "Accept": "application/json, text/event-stream"}
    url = f"http://127.0.0.1:{port}/mcp"
    hello = httpx.post(url, json=MCP_HELLO, headers=headers, timeout=30)
    headers["mcp-session-id"] = hello.headers["mcp-session-id"]
    httpx.post(url, json=MCP_READY, headers=headers, timeout=30)
    asker = threading.Thread(target=lambda: httpx.post(url, json=MCP_QUERY, headers=headers, timeout=60), daemon=True)
    asker.start()
    _terminate_within(process, marker, 5)


def test_a_cancelled_mcp_call_stops_its_query(sample_dir, tmp_path):
    """The client sends notifications/cancelled for a running `query`: the query ends at once
    instead of running on in the server's worker thread."""
    process, marker = _start(
        tmp_path, "mcp", "--data-dir", str(sample_dir), "--tenant", "acme", "--as", "sokafor", stdin=subprocess.PIPE
    )
    try:
        process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in (MCP_HELLO, MCP_READY, MCP_QUERY)))
        process.stdin.flush()
        _wait_for(marker.exists, 60, "the query never started")
        time.sleep(0.3)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "t"}}
        process.stdin.write(json.dumps(cancel).encode() + b"\n")
        process.stdin.flush()
        ended = marker.with_name(marker.name + ".end")
        _wait_for(ended.exists, 3, "the query ran on after its call was cancelled")
        assert ended.read_text() == "Cancelled: the MCP call was cancelled; its work was stopped"
    finally:
        process.kill()
        process.wait(10)

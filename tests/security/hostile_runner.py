"""Run the hostile corpus in a process of its own and print one JSON object per case, then a summary.

Usage: python tests/security/hostile_runner.py DATA_DIR (a data dir holding the sample corpus).
Each case goes through what `context-engine query` runs: the validator, then bounded, scoped
execution, as an acme member who is not in #security-private. Peak RSS is measured over the whole
run (ru_maxrss), so "extra" is the peak minus the memory before the first case.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

from hostile_cases import all_cases
from leaks import forbidden_markers, hidden_keys

from context_engine.config import Settings
from context_engine.query.execute import ExecutionError, run_pipeline
from context_engine.query.validate import ValidationPolicy, validate_pipeline
from context_engine.resources import catalog_for, principals_for, store_for
from context_engine.text import tokenize

ASKER = "zwei-dev"


def main(data_dir: str) -> None:
    settings = Settings(data_dir=Path(data_dir), mongodb_uri=None, tenant="acme", asker=ASKER, use_llm=False)
    principals = principals_for(settings)
    catalog = catalog_for(settings)
    store = store_for(settings)
    markers = forbidden_markers(settings, principals)
    tokenize("启动 warm-up")  # jieba's one-time dictionary load (~1 s) is process start-up, not a query's work
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    worst = 0.0
    for case_id, collection, pipeline, allow_regex, expect in all_cases():
        policy = ValidationPolicy(allow_regex=allow_regex, max_limit=settings.max_rows)
        started = time.perf_counter()
        outcome, leak, detail = "", "", ""
        try:
            errors = validate_pipeline(pipeline, catalog.schemas.get(collection), policy, schemas=catalog.schemas)
            if errors:
                outcome, detail = "rejected", errors[0]
            else:
                rows = run_pipeline(
                    store,
                    collection,
                    pipeline,
                    tenant=settings.tenant,
                    principals=principals,
                    schema=catalog.schemas.get(collection),
                    max_rows=settings.max_rows,
                    max_time_ms=settings.max_time_ms,
                )
                outcome, detail = "rows", str(len(rows))
                grouped = any(isinstance(s, dict) and "$group" in s for s in pipeline)
                text = json.dumps(rows, default=str, ensure_ascii=False)
                hidden = sorted({k for row in rows for k in hidden_keys(row, grouped)})
                seen = next((m for m in markers if m in text), None)
                leak = f"hidden fields {hidden}" if hidden else f"out-of-scope {seen[:40]!r}" if seen else ""
        except ExecutionError as exc:
            outcome, detail = "bounded", str(exc)
        except Exception as exc:  # noqa: BLE001 - anything else is a crash: reported, and the test fails
            outcome, detail = "crash", f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - started
        worst = max(worst, seconds)
        print(
            json.dumps(
                {
                    "id": case_id,
                    "expect": expect,
                    "outcome": outcome,
                    "seconds": round(seconds, 3),
                    "leak": leak,
                    "detail": detail[:200],
                }
            ),
            flush=True,
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(
        json.dumps(
            {
                "summary": True,
                "cases": len(all_cases()),
                "worst_seconds": round(worst, 3),
                "extra_rss_mb": peak - baseline,
                "forbidden_markers": len(markers),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])

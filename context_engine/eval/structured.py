"""Execution accuracy of structured answers: the engine's result set against a gold pipeline's.

A question file is JSON lines: `question`, `now`, `as`, `tenant`, `collection`, `gold` (a pipeline,
Extended-JSON dates) and `compare`: `refs` (the set of returned record keys), `count` (one
number) or `groups` (the set of (group key, count) pairs).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from context_engine.config import Settings
from context_engine.assistant.structured_query import jsonable, run_structured
from context_engine.query.engine import Success, principals_of
from context_engine.query.execute import run_pipeline
from context_engine.query.plan import from_extended_json
from context_engine.runtime import catalog_for, llm_planner_for, store_for
from context_engine.text import parse_now


@dataclass
class QuestionResult:
    id: str
    question: str
    correct: bool
    planner: str
    seconds: float
    detail: str = ""


@dataclass
class StructuredReport:
    results: list[QuestionResult] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return sum(r.correct for r in self.results) / len(self.results) if self.results else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"accuracy": round(self.accuracy, 4), "correct": sum(r.correct for r in self.results),
                "total": len(self.results), "failures": [r.__dict__ for r in self.results if not r.correct]}


def load_questions(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def answer_key(rows: list[dict[str, Any]], compare: str) -> Any:
    if compare == "count":
        values = [v for r in rows for k, v in r.items() if isinstance(v, int) and k != "_id"]
        return values[0] if len(rows) == 1 and values else None
    if compare == "groups":
        out = set()
        for row in rows:
            metric = next((v for k, v in row.items() if k not in ("_id", "name") and isinstance(v, (int, float))), None)
            out.add((_key(row.get("_id")), metric))
        return out
    return {r.get("ref") for r in rows}


PLANNERS = ("offline", "auto", "llm")


def evaluate(path: Path, settings: Settings, planner: str = "offline", limit: int | None = None,
             progress: Callable[[QuestionResult], None] | None = None) -> StructuredReport:
    """`planner`: offline only; auto (the LLM where the offline planner is unsure); llm (every question)."""
    report = StructuredReport()
    use_llm = planner != "offline"
    for item in load_questions(path)[:limit]:
        s = settings.with_overrides(tenant=item.get("tenant") or settings.tenant, use_llm=use_llm)
        catalog = catalog_for(s)
        asker = catalog.directory.asker(item["as"]) if item.get("as") else None
        store = store_for(s)
        gold_rows = jsonable(run_pipeline(store, item["collection"], from_extended_json(item["gold"]), tenant=catalog.tenant,
                                 principals=principals_of(asker), schema=catalog.schemas.get(item["collection"])))
        started = time.perf_counter()
        result = run_structured(item["question"], s.with_overrides(asker=item.get("as")), now=parse_now(item.get("now")),
                                planner=llm_planner_for(s) if use_llm else None, always_llm=planner == "llm")
        seconds = time.perf_counter() - started
        compare = item.get("compare", "refs")
        got = answer_key(result.rows, compare) if isinstance(result, Success) else None
        want = answer_key(gold_rows, compare)
        planner_used = result.attempts[-1].plan.planner if getattr(result, "attempts", None) else "-"
        detail = "" if got == want else (
            f"{result.kind}: " + (_key(result.attempts[-1].plan.pipeline) if getattr(result, "attempts", None)
                                  else getattr(result, "message", "")))
        report.results.append(QuestionResult(item.get("id", ""), item["question"], got == want, planner_used,
                                             round(seconds, 4), detail))
        if progress:
            progress(report.results[-1])
    return report

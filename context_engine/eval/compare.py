"""`eval compare`: one structured question set under two configurations, side by side.

A configuration is a name and optional settings: `offline` (the offline planner with the tenant's
context set: a question that matches a template is answered by it, facets are filters),
`no-context-set` (the offline planner alone, `Settings.use_context_set` off), `model` (the chat
model plans every question), each
optionally followed by retrieval settings the engine already knows: `offline,fusion=rrf,reranker=none`.
Each question is judged as `eval structured` judges it (the result set against the gold pipeline's);
the table has a row per question, the totals and the median seconds of each configuration.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_engine.assistant.structured_query import jsonable, run_structured
from context_engine.config import Settings
from context_engine.eval.structured import answer_key, load_questions
from context_engine.query.engine import principals_of
from context_engine.query.execute import run_pipeline
from context_engine.query.plan import from_extended_json
from context_engine.resources import catalog_for, llm_planner_for, store_for
from context_engine.text import parse_now

CONFIGS = ("offline", "model", "no-context-set")
# Settings a configuration may set, with how a value is read: retrieval variants, nothing that names
# a data dir, a tenant, an asker or an endpoint.
SETTINGS = {
    "fusion": ("rrf", "convex"),
    "reranker": ("offline", "none", "llm"),
    "retrieve_k": int,
    "rerank_k": int,
    "context_k": int,
    "rrf_k": int,
    "bm25_weight": float,
    "dense_weight": float,
    "structured_weight": float,
}


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Config:
    text: str
    name: str
    settings: tuple[tuple[str, Any], ...] = ()

    @property
    def planner(self) -> str:
        return "llm" if self.name == "model" else "offline"

    @property
    def context_set(self) -> bool:
        return self.name != "no-context-set"


def parse_config(text: str) -> Config:
    """`NAME[,key=value...]`; ConfigError (one line) for anything not on the allow-lists."""
    name, *pairs = [part.strip() for part in text.split(",")]
    if name not in CONFIGS:
        raise ConfigError(f"unknown configuration {name!r}; known: {', '.join(CONFIGS)}")
    chosen = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        rule = SETTINGS.get(key)
        if not sep or rule is None:
            raise ConfigError(f"{pair!r}: a configuration setting is key=value with key one of {', '.join(SETTINGS)}")
        if isinstance(rule, tuple):
            if value not in rule:
                raise ConfigError(f"{key} must be one of {', '.join(rule)}")
            chosen.append((key, value))
        else:
            try:
                number = rule(value)
            except ValueError:
                raise ConfigError(f"{key} must be a {rule.__name__}") from None
            if not 0 <= number <= 10_000:
                raise ConfigError(f"{key} must be from 0 to 10000")
            chosen.append((key, number))
    return Config(text, name, tuple(chosen))


@dataclass
class Row:
    id: str
    question: str
    correct: list[bool]
    seconds: list[float]
    how: list[str]


@dataclass
class Comparison:
    configs: list[Config]
    rows: list[Row] = field(default_factory=list)

    def totals(self) -> list[int]:
        return [sum(r.correct[i] for r in self.rows) for i in range(len(self.configs))]

    def medians(self) -> list[float]:
        return [
            statistics.median(r.seconds[i] for r in self.rows) if self.rows else 0.0 for i in range(len(self.configs))
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "configs": [c.text for c in self.configs],
            "total": len(self.rows),
            "correct": self.totals(),
            "median_seconds": [round(m, 4) for m in self.medians()],
            "questions": [
                {
                    "id": r.id,
                    "question": r.question,
                    "correct": r.correct,
                    "seconds": [round(s, 4) for s in r.seconds],
                    "how": r.how,
                }
                for r in self.rows
            ],
        }

    def table(self) -> str:
        a, b = (c.text for c in self.configs)
        width = max([len("question")] + [min(len(r.question), 70) for r in self.rows])
        lines = [f"{'id':>6}  {'question':<{width}}  {'a':^5} {'b':^5}", f"{'':>6}  {'':<{width}}  a = {a}; b = {b}"]
        mark = {True: "ok", False: "FAIL"}
        for r in self.rows:
            lines.append(f"{r.id:>6}  {r.question[:70]:<{width}}  {mark[r.correct[0]]:^5} {mark[r.correct[1]]:^5}")
        (ta, tb), (ma, mb) = self.totals(), self.medians()
        n = len(self.rows)
        lines.append(f"{'total':>6}  {'':<{width}}  {ta}/{n}  {tb}/{n}")
        lines.append(f"{'median':>6}  {'seconds per question':<{width}}  {ma:.3f} {mb:.3f}")
        both = sum(r.correct[0] != r.correct[1] for r in self.rows)
        lines.append(f"{both} question(s) answered differently")
        return "\n".join(lines)


def _run(item: dict[str, Any], settings: Settings, config: Config) -> tuple[list[dict[str, Any]] | None, str]:
    """The rows one configuration answers with (None: no answer) and how it planned (a template's name
    when the context set's template answered)."""
    result = run_structured(
        item["question"],
        settings,
        now=parse_now(item.get("now")),
        planner=llm_planner_for(settings) if config.planner == "llm" else None,
        always_llm=config.planner == "llm",
    )
    plan = result.attempts[-1].plan if getattr(result, "attempts", None) else None
    template = (
        next((note.split(" (")[0] for note in plan.notes if note.startswith("template ")), None) if plan else None
    )
    return (result.rows if result.kind == "success" else None), template or (plan.planner if plan else result.kind)


def compare(path: Path, settings: Settings, configs: list[Config], limit: int | None = None) -> Comparison:
    report = Comparison(configs)
    for n, item in enumerate(load_questions(path)[:limit], 1):
        base = settings.with_overrides(tenant=item.get("tenant") or settings.tenant)
        catalog = catalog_for(base)
        gold_asker = catalog.directory.asker(item["as"]) if item.get("as") else None
        gold = jsonable(
            run_pipeline(
                store_for(base),
                item["collection"],
                from_extended_json(item["gold"]),
                tenant=catalog.tenant,
                principals=principals_of(gold_asker),
                schema=catalog.schemas.get(item["collection"]),
            )
        )
        compare_by = item.get("compare", "refs")
        want = answer_key(gold, compare_by)
        row = Row(str(item.get("id") or n), item["question"], [], [], [])
        for config in configs:
            run_settings = base.with_overrides(
                asker=item.get("as"),
                use_llm=config.planner == "llm",
                use_context_set=config.context_set,
                **dict(config.settings),
            )
            started = time.perf_counter()
            rows, how = _run(item, run_settings, config)
            row.seconds.append(time.perf_counter() - started)
            row.correct.append(rows is not None and answer_key(rows, compare_by) == want)
            row.how.append(how)
        report.rows.append(row)
    return report

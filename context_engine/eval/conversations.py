"""Multi-turn accuracy: conversations run through the graph on one thread each, scored turn by turn.

A conversation file is JSON lines, one conversation each: `id`, `tenant`, `now`, `as` (the asker's
account, null for nobody) and `turns`, each a structured question as `eval structured` reads it
(`question`, `collection`, `compare`, the gold or `unresolved`) plus `kind`, the kind of follow-up it
is (`KINDS`). A turn's gold is the whole meaning of the turn in its conversation: "and in 2022?" after
"lhoestq's merged PRs in 2021" has the gold of "lhoestq's PRs merged in 2022".

Each conversation runs on its own thread of `build_graph(checkpointer=InMemorySaver())`, offline, with
its tenant, asker and `now` in the run context; each turn is scored with the structured scorer on
what the graph returned: its records (the structured rows the answer shows), or its decline. A wrong
turn is **flagged** when the user was told something was off (the run declined, or the output lists
words it did not understand) and **silent** otherwise; a turn the graph could not run at all (an
exception) is an **error**, counted apart.
"""

from __future__ import annotations

import json
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from context_engine.assistant.context import LibraryContext
from context_engine.assistant.graph import build_graph
from context_engine.config import Settings
from context_engine.eval.structured import (
    QuestionFileError,
    answer_key,
    check_question,
    declined,
    declined_the_name,
    gold_answer,
    json_lines,
    same_answer,
)
from context_engine.query.engine import MaxAttempts, ResolutionFailed

KINDS = (
    "first",
    "narrow",
    "shift_time",
    "switch_person",
    "switch_shape",
    "refer",
    "pick_candidate",
    "topic",
    "unrelated",
)


@dataclass
class TurnResult:
    conversation: str
    turn: int  # 1-based position in the conversation
    kind: str
    question: str
    correct: bool
    flagged: bool  # wrong, and the user was told: a decline, or words not understood
    seconds: float
    error: str = ""  # the graph raised: the first line of what it said
    detail: str = ""  # what the turn returned, when wrong


@dataclass
class ConversationReport:
    results: list[TurnResult] = field(default_factory=list)

    def conversations(self) -> dict[str, list[TurnResult]]:
        out: dict[str, list[TurnResult]] = {}
        for r in self.results:
            out.setdefault(r.conversation, []).append(r)
        return out

    @property
    def turn_accuracy(self) -> float:
        return sum(r.correct for r in self.results) / len(self.results) if self.results else 0.0

    @property
    def conversation_accuracy(self) -> float:
        threads = self.conversations()
        return sum(all(r.correct for r in turns) for turns in threads.values()) / len(threads) if threads else 0.0

    def by_kind(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for r in self.results:
            row = out.setdefault(r.kind, {"total": 0, "correct": 0, "flagged": 0, "silent": 0, "errors": 0})
            row["total"] += 1
            row["correct"] += r.correct
            if not r.correct:
                row[_wrong_as(r)] += 1
        for row in out.values():
            row["accuracy"] = round(row["correct"] / row["total"], 4)
        return {kind: out[kind] for kind in KINDS if kind in out}

    def to_json(self) -> dict[str, Any]:
        wrong = [r for r in self.results if not r.correct]
        threads = self.conversations()
        return {
            "turn_accuracy": round(self.turn_accuracy, 4),
            "turns_correct": len(self.results) - len(wrong),
            "turns": len(self.results),
            "conversation_accuracy": round(self.conversation_accuracy, 4),
            "conversations_correct": sum(all(r.correct for r in t) for t in threads.values()),
            "conversations": len(threads),
            "wrong_flagged": sum(_wrong_as(r) == "flagged" for r in wrong),
            "wrong_silent": sum(_wrong_as(r) == "silent" for r in wrong),
            "errors": sum(_wrong_as(r) == "errors" for r in wrong),
            "median_seconds": round(statistics.median(r.seconds for r in self.results), 4) if self.results else 0.0,
            "by_kind": self.by_kind(),
            "failures": [r.__dict__ for r in wrong],
        }


def _wrong_as(result: TurnResult) -> str:
    return "errors" if result.error else "flagged" if result.flagged else "silent"


def _check_conversation(item: Any) -> str | None:
    if not isinstance(item, dict):
        return "not a JSON object"
    missing = [k for k in ("id", "tenant") if not isinstance(item.get(k), str) or not item.get(k)]
    if missing:
        return f"no {' or '.join(missing)} (a string)"
    turns = item.get("turns")
    if not isinstance(turns, list) or not turns:
        return "no turns (a non-empty list)"
    for number, turn in enumerate(turns, 1):
        problem = check_question(turn)
        if problem is None and turn.get("kind") not in KINDS:
            problem = f"kind must be one of {', '.join(KINDS)}, not {turn.get('kind')!r}"
        if problem:
            return f"turn {number}: {problem}"
    return None


def load_conversations(path: Path) -> list[dict[str, Any]]:
    """The conversations of a file, each checked; `QuestionFileError` names the line and what is wrong."""
    items, ids = [], set()
    for number, item in json_lines(path):
        problem = _check_conversation(item)
        if problem is None and item["id"] in ids:
            problem = f"conversation id {item['id']!r} repeats an earlier line's"
        if problem:
            raise QuestionFileError(f"{path}:{number}: {problem}")
        ids.add(item["id"])
        items.append(item)
    if not items:
        raise QuestionFileError(f"{path}: no conversations")
    return items


def run_of(output: dict[str, Any], unresolved: str) -> ResolutionFailed | MaxAttempts | None:
    """A turn's decline as the structured scorer reads it (`structured.declined`): the graph's
    `outcome` says the structured half could not resolve a name or ran out of attempts; `unresolved`
    is the words the thread recorded it could not resolve. None: the turn answered."""
    outcome = output.get("outcome")
    if outcome == "resolution_failed":
        return ResolutionFailed(output.get("answer", ""), unresolved=unresolved)
    if outcome == "max_attempts":
        return MaxAttempts([])
    return None


def score_turn(turn: dict[str, Any], output: dict[str, Any], unresolved: str, want: Any) -> tuple[bool, bool]:
    """(right, flagged) for one turn's graph output against its gold answer `want`."""
    compare = turn.get("compare", "refs")
    run = run_of(output, unresolved)
    records = output.get("records") or []
    if compare == "declines":
        correct = declined(run) and not records and declined_the_name(run, turn["unresolved"])
    else:
        got = answer_key(records, compare) if output.get("outcome") == "success" and records else None
        correct = same_answer(got, want, compare)
    told = declined(run) or bool(output.get("declined")) or bool(output.get("not_understood"))
    return correct, not correct and told


def _detail(output: dict[str, Any]) -> str:
    queries = [q for q in output.get("queries") or [] if "pipeline" in q]
    said = (
        json.dumps(queries[-1]["pipeline"], default=str, ensure_ascii=False)
        if queries
        else output.get("answer", "")[:200]
    )
    return f"{output.get('route', '-')}/{output.get('outcome', '-')}: {said}"


def evaluate_conversations(
    path: Path,
    settings: Settings,
    limit: int | None = None,
    progress: Callable[[TurnResult], None] | None = None,
    graph: Any = None,
) -> ConversationReport:
    """Run the first `limit` conversations of `path`, offline. `graph` stands in for the compiled
    graph (tests); it must keep a thread's turns by `thread_id` as a checkpointer does."""
    conversations = load_conversations(path)[:limit]
    graph = graph or build_graph(checkpointer=InMemorySaver())
    report = ConversationReport()
    for conversation in conversations:
        asker = conversation.get("as")
        tenant_settings = settings.with_overrides(tenant=conversation["tenant"], use_llm=False)
        context = LibraryContext(
            base_settings=tenant_settings, user=asker or "", anonymous=asker is None, use_llm=False
        )
        config = {"configurable": {"thread_id": f"{conversation['id']}-{uuid.uuid4().hex}"}}
        for number, turn in enumerate(conversation["turns"], 1):
            item = {**turn, "as": asker, "tenant": conversation["tenant"]}
            want = gold_answer(item, tenant_settings)
            started = time.perf_counter()
            error, output, unresolved = "", {}, ""
            try:
                output = graph.invoke(
                    {"question": turn["question"], "now": conversation.get("now") or ""}, config, context=context
                )
                turns = graph.get_state(config).values.get("turns") or []
                unresolved = turns[-1].get("unresolved", "") if turns else ""
            except Exception as exc:  # noqa: BLE001 - a turn the graph cannot run is scored, not fatal
                error = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
            seconds = time.perf_counter() - started
            correct, flagged = (False, False) if error else score_turn(turn, output, unresolved, want)
            report.results.append(
                TurnResult(
                    conversation["id"],
                    number,
                    turn["kind"],
                    turn["question"],
                    correct,
                    flagged,
                    round(seconds, 4),
                    error,
                    "" if correct or error else _detail(output),
                )
            )
            if progress:
                progress(report.results[-1])
    return report

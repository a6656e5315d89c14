"""Execution accuracy of structured answers: the engine's result set against a gold pipeline's.

A question file is JSON lines: `question`, `now`, `as`, `tenant`, `collection`, `compare`, the gold, and
optionally `class` (what the question tests: names, negation, topic...; the report gives accuracy per
class). `compare` says what is compared:
- `refs`: the set of returned record keys;
- `count`: one integer (a single row's number);
- `value`: one number (a single row's number, integer or not: a sum, a maximum, an average); a gold that
  is not a whole number (an average, a share) is met within a relative 1e-3, since the same mean summed in
  another order differs in its last digits;
- `groups`: the set of (group key, number) pairs;
- `top`: the first row's group key (the winner of a "most"/"least"/"busiest" question);
- `declines`: the question names someone the data cannot resolve (`unresolved`: unknown, or shared
  by several people); only a declined run (no answer: `ResolutionFailed` or `MaxAttempts`) is right,
  and one that says which words it could not resolve must mean that name.
The gold is a pipeline (`gold`, Extended-JSON dates) run with the asker's access, or, where a
pipeline cannot state it (a topic as a substring of the text: the validator refuses regular
expressions), the answer itself: `gold_refs` (a list of record keys) or `gold_value` (a number).
Group keys are compared after `_normal_key`, so that a month is the same whether a plan groups on
`{"$month": ...}`, `{"month": ...}` or a `"%m"` string.

A wrong answer is **flagged** when the run told the user something was off (it declined, or its plan
lists words of the question it did not understand in `not_understood`) and **silent** otherwise:
a silent wrong answer looks like a right one, which is the failure that matters. A right answer that
carries a flag is listed too (`right_flagged`): a warning the user did not need.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_engine.assistant.structured_query import jsonable, run_structured
from context_engine.chat_models import counting_calls
from context_engine.config import Settings
from context_engine.query.engine import MaxAttempts, ResolutionFailed, Success, principals_of
from context_engine.query.execute import run_pipeline
from context_engine.query.plan import from_extended_json
from context_engine.resources import catalog_for, llm_planner_for, store_for
from context_engine.text import parse_now

COMPARES = ("refs", "count", "value", "groups", "top", "declines")


@dataclass
class QuestionResult:
    id: str
    question: str
    correct: bool
    planner: str
    seconds: float
    detail: str = ""
    question_class: str = ""
    flagged: bool = False  # the run declined or reported words it did not understand (right or wrong)
    # A count the gold asks for, answered by the list of exactly that many records, all of them: the answer
    # says the number ("Found 37 messages: ..."), but the strict score wants the number alone.
    listed_the_count: bool = False
    # What the model cost this question (`chat_models.ModelCall`): calls (a retry or a correction is one
    # more), the characters of their prompts, the tokens they wrote, their seconds. Zero offline.
    model_calls: int = 0
    prompt_chars: int = 0
    completion_tokens: int = 0
    model_seconds: float = 0.0


@dataclass
class StructuredReport:
    results: list[QuestionResult] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return sum(r.correct for r in self.results) / len(self.results) if self.results else 0.0

    def by_class(self) -> dict[str, dict[str, Any]]:
        """Per question class: total, correct, accuracy, and the wrong ones split flagged / silent."""
        out: dict[str, dict[str, Any]] = {}
        for r in self.results:
            row = out.setdefault(r.question_class or "-", {"total": 0, "correct": 0, "flagged": 0, "silent": 0})
            row["total"] += 1
            row["correct"] += r.correct
            if not r.correct:
                row["flagged" if r.flagged else "silent"] += 1
        for row in out.values():
            row["accuracy"] = round(row["correct"] / row["total"], 4)
        return dict(sorted(out.items()))

    def to_json(self) -> dict[str, Any]:
        wrong = [r for r in self.results if not r.correct]
        return {
            "accuracy": round(self.accuracy, 4),
            "correct": len(self.results) - len(wrong),
            "total": len(self.results),
            "wrong_flagged": sum(r.flagged for r in wrong),
            "wrong_silent": sum(not r.flagged for r in wrong),
            "wrong_but_listed_the_count": sum(r.listed_the_count for r in wrong),
            # a flag on a right answer is noise for the user: counted so that flags are not bought with it
            "right_flagged": [r.id or r.question for r in self.results if r.correct and r.flagged],
            "by_class": self.by_class(),
            "median_seconds": self.median_seconds(),
            "median_seconds_model": self.median_seconds("llm"),
            "model_cost": self.model_cost(),
            "failures": [r.__dict__ for r in wrong],
        }

    def model_cost(self) -> dict[str, Any]:
        """Medians over the questions the model was called for (whichever plan answered): what a
        model-planned question costs, in the figures that do not depend on the machine's load first."""
        asked = [r for r in self.results if r.model_calls]
        if not asked:
            return {"questions": 0}
        return {
            "questions": len(asked),
            **{
                f"median_{name}": round(statistics.median(getattr(r, name) for r in asked), 3)
                for name in ("model_calls", "prompt_chars", "completion_tokens", "model_seconds", "seconds")
            },
        }

    def median_seconds(self, planner: str | None = None) -> float | None:
        """Seconds per question, median; with `planner`, over the questions that planner planned."""
        times = [r.seconds for r in self.results if planner is None or r.planner == planner]
        return round(statistics.median(times), 3) if times else None


class QuestionFileError(ValueError):
    """A question file that cannot be evaluated; the message names the line and what is wrong."""


def check_question(item: Any) -> str | None:
    """What is wrong with one question of a file (None: nothing)."""
    if not isinstance(item, dict):
        return "not a JSON object"
    missing = [k for k in ("question", "collection") if not isinstance(item.get(k), str)]
    if missing:
        return f"no {' or '.join(missing)} (a string)"
    compare = item.get("compare", "refs")
    if compare not in COMPARES:
        return f"compare must be one of {', '.join(COMPARES)}, not {compare!r}"
    if compare == "declines" and not isinstance(item.get("unresolved"), str):
        return "a declines question needs `unresolved`: the name it must be declined for"
    if compare != "declines" and not any(k in item for k in ("gold", "gold_refs", "gold_value")):
        return "no gold, gold_refs or gold_value"
    return None


def json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a JSON-lines file; an unreadable file or a line
    that is not JSON is a `QuestionFileError` naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionFileError(
            f"cannot read {path}: {exc.strerror if isinstance(exc, OSError) else 'not UTF-8'}"
        ) from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QuestionFileError(f"{path}:{number}: not JSON ({exc.msg})") from None
        yield number, value


def load_questions(path: Path) -> list[dict[str, Any]]:
    items = []
    for number, item in json_lines(path):
        problem = check_question(item)
        if problem:
            raise QuestionFileError(f"{path}:{number}: {problem}")
        items.append(item)
    return items


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


# The order a date bucket's parts are read in, whatever order a plan wrote them.
_DATE_PARTS = ("year", "month", "week", "day", "dayOfMonth", "hour")
_DATE_STRING = re.compile(r"\d{4}(-\d{2}){0,2}|\d{2}")


def _normal_key(value: Any) -> Any:
    """A group key in one shape: a date bucket as a tuple of numbers ("2019-03", [2019, 3] and
    {"month": 3, "year": 2019} are all (2019, 3)), a one-part key as the part itself ("2020", [2020]
    and 2020 are all 2020), anything else as it is (hashable: JSON text for other objects)."""
    if isinstance(value, dict):
        order = sorted(value, key=lambda k: (_DATE_PARTS.index(k) if k in _DATE_PARTS else len(_DATE_PARTS), k))
        parts = tuple(_normal_key(value[k]) for k in order)
    elif isinstance(value, list):
        parts = tuple(_normal_key(v) for v in value)
    elif isinstance(value, str) and _DATE_STRING.fullmatch(value):
        parts = tuple(int(p) for p in value.split("-"))
    else:
        return value if value is None or isinstance(value, (str, int, float)) else _key(value)
    return parts[0] if len(parts) == 1 else parts


def _metric(row: dict[str, Any], kinds: tuple[type, ...]) -> Any:
    return next(
        (v for k, v in row.items() if k not in ("_id", "name") and isinstance(v, kinds) and not isinstance(v, bool)),
        None,
    )


def answer_key(rows: list[dict[str, Any]], compare: str) -> Any:
    if compare in ("count", "value"):
        kinds = (int,) if compare == "count" else (int, float)
        return _metric(rows[0], kinds) if len(rows) == 1 else None
    if compare == "groups":
        return {(_normal_key(row.get("_id")), _metric(row, (int, float))) for row in rows}
    if compare == "top":
        return _normal_key(rows[0].get("_id")) if rows else None
    return {r.get("ref") for r in rows}


def listed_the_count(rows: list[dict[str, Any]], want: Any, compare: str, max_rows: int) -> bool:
    """A count question answered by a whole list (under the row cap) of records that many."""
    return compare == "count" and 0 < len(rows) == want < max_rows and all("ref" in row for row in rows)


# How far a non-integer `value` may stray from the gold: an average or a share computed in another order.
VALUE_TOLERANCE = 1e-3


def same_answer(got: Any, want: Any, compare: str) -> bool:
    """A winning month stated alone (a gold `$month`: 3) is the answer's month dated with its year
    ((2021, 3)): the question fixed the year, and either form names the same month; so is a winning day
    (a gold `$dayOfMonth`: 6) the answer's date ((2019, 3, 6)) when the question fixed the month; so are counts
    per month of one year keyed by the month (`_dated_alone`). A gold value that
    is not a whole number (a mean, a share) is met within `VALUE_TOLERANCE`, relative; a whole one exactly."""
    if compare == "top" and isinstance(want, int) and isinstance(got, tuple) and len(got) in (2, 3):
        return got[-1] == want
    if compare == "groups" and isinstance(got, set) and isinstance(want, set):
        got = _dated_alone(got, want)
    if compare == "value" and isinstance(want, float) and isinstance(got, (int, float)):
        return math.isclose(got, want, rel_tol=VALUE_TOLERANCE)
    return got == want


def _dated_alone(got: set[Any], want: set[Any]) -> set[Any]:
    """Counts per month (or day) dated with one and the same year (or month) — "merges per month for the
    first half of 2024": (2024, 1) … (2024, 6) — keyed by the month alone when the gold's keys are the
    months alone (`$month`: 1 … 6), as a winning month is (`same_answer`); buckets of two years stay apart."""
    keys = [key for key, _ in got]
    if not (
        want
        and all(isinstance(key, int) and not isinstance(key, bool) for key, _ in want)
        and keys
        and all(isinstance(key, tuple) and len(key) in (2, 3) for key in keys)
        and len({key[:-1] for key in keys}) == 1
    ):
        return got
    return {(key[-1], n) for key, n in got}


# The gold is the measuring stick, not a question a user waits for: on a loaded machine a hand-written scan
# of every Slack message can take longer than a question's deadline, and must not end the run.
GOLD_DEADLINE_MS = 120_000


def gold_answer(item: dict[str, Any], settings: Settings) -> Any:
    """What a right answer is: the stated answer (`gold_refs`, `gold_value`) or the gold pipeline's."""
    compare = item.get("compare", "refs")
    if compare == "declines":
        return None
    if "gold_refs" in item:
        return set(item["gold_refs"])
    if "gold_value" in item:
        return item["gold_value"]
    catalog = catalog_for(settings)
    asker = catalog.directory.asker(item["as"]) if item.get("as") else None
    rows = jsonable(
        run_pipeline(
            store_for(settings),
            item["collection"],
            from_extended_json(item["gold"]),
            tenant=catalog.tenant,
            principals=principals_of(asker),
            schema=catalog.schemas.get(item["collection"]),
            max_time_ms=GOLD_DEADLINE_MS,
        )
    )
    return answer_key(rows, compare)


def declined(result: Any) -> bool:
    """The run gave no answer: it could not resolve a name, or no plan it tried ran."""
    return isinstance(result, (ResolutionFailed, MaxAttempts))


def declined_the_name(result: Any, name: str) -> bool:
    """A decline that says which words it could not resolve (`ResolutionFailed.unresolved`) must mean
    the name the question is about, not some other words; one that does not say is taken as it is."""
    said = " ".join(str(getattr(result, "unresolved", None) or "").lower().split())
    wanted = " ".join(name.lower().split())
    return not said or said in wanted or wanted in said


def _last_plan(result: Any) -> Any:
    if getattr(result, "plan", None) is not None:
        return result.plan
    attempts = getattr(result, "attempts", None)
    return attempts[-1].plan if attempts else None


def flagged(result: Any) -> bool:
    """The user was told something was off: a decline, or words of the question the plan did not use."""
    return declined(result) or bool(getattr(_last_plan(result), "not_understood", None))


def topic_refs(rows: list[dict[str, Any]], topic: dict[str, Any]) -> list[str]:
    """The keys of the rows that are about a topic, as a question file states it: `topic` is
    `{"fields": [...], "any_of": [...]}`, and a row is about it when one of the words or phrases in
    `any_of` stands as whole words (case-insensitive) in one of the fields. Whole words, so that
    "spec" is not found in "respect" nor "doc" in "docker"; the word forms a topic takes ("stream",
    "streaming") are listed, not guessed by a stemmer that the engine might share."""
    pattern = re.compile(
        r"(?<![0-9a-z_])(?:" + "|".join(re.escape(w.lower()) for w in topic["any_of"]) + r")(?![0-9a-z_])"
    )
    return sorted(
        row["ref"] for row in rows if any(pattern.search(str(row.get(f) or "").lower()) for f in topic["fields"])
    )


PLANNERS = ("offline", "auto", "llm")


def evaluate(
    path: Path,
    settings: Settings,
    planner: str = "offline",
    limit: int | None = None,
    progress: Callable[[QuestionResult], None] | None = None,
) -> StructuredReport:
    """`planner`: offline only; auto (the LLM where the offline planner is unsure); llm (every question)."""
    report = StructuredReport()
    use_llm = planner != "offline"
    for item in load_questions(path)[:limit]:
        s = settings.with_overrides(tenant=item.get("tenant") or settings.tenant, use_llm=use_llm)
        compare = item.get("compare", "refs")
        want = gold_answer(item, s)
        started = time.perf_counter()
        with counting_calls() as calls:
            result = run_structured(
                item["question"],
                s.with_overrides(asker=item.get("as")),
                now=parse_now(item.get("now")),
                planner=llm_planner_for(s) if use_llm else None,
                always_llm=planner == "llm",
            )
        seconds = time.perf_counter() - started
        if compare == "declines":
            correct = declined(result) and not result.rows and declined_the_name(result, item["unresolved"])
        else:
            correct = same_answer(
                answer_key(result.rows, compare) if isinstance(result, Success) else None, want, compare
            )
        planner_used = result.attempts[-1].plan.planner if getattr(result, "attempts", None) else "-"
        detail = (
            ""
            if correct
            else (
                f"{result.kind}: "
                + (
                    _key(result.attempts[-1].plan.pipeline)
                    if getattr(result, "attempts", None)
                    else getattr(result, "message", "")
                )
            )
        )
        report.results.append(
            QuestionResult(
                item.get("id", ""),
                item["question"],
                correct,
                planner_used,
                round(seconds, 4),
                detail,
                item.get("class", ""),
                flagged(result) and not (correct and declined(result)),  # a right decline is the answer, no flag
                not correct
                and isinstance(result, Success)
                and listed_the_count(result.rows, want, compare, s.max_rows),
                len(calls),
                sum(c.prompt_chars for c in calls),
                sum(c.completion_tokens for c in calls),
                round(sum(c.seconds for c in calls), 3),
            )
        )
        if progress:
            progress(report.results[-1])
    return report

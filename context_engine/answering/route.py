"""Routing: does a question go to the structured half, the semantic half, or both?

Offline, the router asks the structured half what it makes of the question: the people and time
ranges that resolution finds, and the offline planner's draft (its filters, aggregation and full-text
words). It weighs those against content cues ("why", "how", "explain", "what was
decided", 为什么, 如何 ...):

- conditions on people, time or state, or a count/top-N/group-by, and no content cue -> structured;
- a content cue, or a bare topic, with no such condition -> semantic;
- both (a content question within conditions, or a filtered list about a topic) -> hybrid, with the
  topic words left for full-text and semantic search.

Stored values that are also topic words ("redis" is a document tag, "payments" a repository) narrow
a search but do not make a question structural. With a chat model, the model decides from the
question and these signals (with the planner's confidence); when the model fails, the offline
decision stands.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from context_engine.chat_models import structured_output
from context_engine.config import Settings
from context_engine.kinds import CollectionSpec
from context_engine.prompts import ROUTE_SYSTEM
from context_engine.query.catalog import Catalog
from context_engine.query.fields import people_paths
from context_engine.query.identity import COMMON_WORDS
from context_engine.query.ir import WORD_OPERATORS
from context_engine.query.offline import OfflinePlanner, detect_collection
from context_engine.query.plan import Plan, PlanningContext
from context_engine.text import ENGLISH_STOPWORDS

Route = Literal["structured", "semantic", "hybrid"]


class RouteDecision(BaseModel):
    """Where a question goes. Also the JSON schema the chat model answers in."""

    route: Route = Field(description="structured, semantic or hybrid")
    reasons: list[str] = Field(default_factory=list, description="why this route, in short sentences")
    topic: str | None = Field(default=None, description="hybrid only: the topic words to search for")
    # The offline plan the signals were read from (not in the model's schema): the structured half
    # starts from it instead of planning the question again.
    _draft: Plan | None = PrivateAttr(default=None)

    @property
    def draft(self) -> Plan | None:
        return self._draft


# "how many/much/often/long" ask for numbers, not explanations; "decision records" are a kind of document;
# "background jobs" is a topic, "the background of" a content question.
CONTENT_CUES = re.compile(
    r"\bwhy\b|\bhow\b(?!\s+(?:many|much|often|long|old|big|large|fast|soon|frequently)\b)|\bexplain\w*|"
    r"\breason\w*|\brationale\b|\bbackground (?:of|on|to|for|behind)\b|\bmotivation\b|\bcontext (?:on|for|behind)\b|"
    r"\bdecid\w*|\bdecisions?\b(?!\s+records?)|\btrade-?offs?\b|\bpros and cons\b|\broot cause\b|"
    r"\bwhat happened\b|\blessons? learned\b|\bsummar(?:y|ies|ise|ize)\b|\boverview\b|"
    r"\bwhat(?:'s| is| are| was| were)\b(?=.*\babout\s*[?？]?$)|"
    r"为什么|为何|怎么|如何|怎样|原因|理由|背景|动机|决定|(?<!架构)决策(?!记录)|结论|权衡|解释|来龙去脉|总结|概述",
    re.I,
)

# Fields whose stored values are also topic words: a label, a repository, a channel.
_SCOPE_ROLES = ("label", "repo", "channel", "space", "component", "project")
_TOPIC_STOPWORDS = (
    ENGLISH_STOPWORDS
    | COMMON_WORDS
    | frozenset(
        """
were been made make there any say says mention mentions mentioning related regarding concerning involving
titled containing""".split()
    )
)
_CJK_FILLER = re.compile(r"关于|有关|哪些|什么|的|了|吗|呢|吧|是|在|和|与|把|要|被|给|对|有")


@dataclass
class RouteSignals:
    """What the structured half makes of a question, beside its content cues."""

    question: str
    named_collection: str | None  # the collection a word of the question names (None: guessed)
    cues: list[str]  # content cues: "why", "how", 为什么 ...
    people: list[str] = field(default_factory=list)  # resolved names ("the asker" for I/me/我)
    times: list[str] = field(default_factory=list)  # time expressions found
    filters: dict[str, list[str]] = field(default_factory=dict)  # people|time|condition|scope -> filters
    aggregation: str | None = None  # count, group by <path>, counts per time bucket
    text: str | None = None  # the offline planner's full-text words
    plan: Plan | None = None
    unresolved: str | None = None  # why the people in the question could not be resolved
    spans: list[tuple[int, int]] = field(default_factory=list)  # words the signals explain
    # the field of a stored kind of value the plan groups by ("which label is the most common", 哪个频道
    # 最活跃): naming a field of the records is asking about records, whichever kind holds it
    grouped_by: str | None = None

    @property
    def constrained(self) -> bool:
        """Conditions only a query applies: who, when, in which state."""
        return bool(
            self.people
            or self.times
            or self.unresolved
            or any(self.filters.get(kind) for kind in ("people", "time", "condition"))
        )

    def describe(self) -> list[str]:
        lines = [f"collection named: {self.named_collection or 'none'}"]
        if self.people:
            lines.append("people: " + ", ".join(self.people))
        if self.unresolved:
            lines.append(f"people not resolved: {self.unresolved}")
        if self.times:
            lines.append("time ranges: " + ", ".join(self.times))
        for kind in ("people", "time", "condition", "scope"):
            if self.filters.get(kind):
                lines.append(f"{kind} filters: " + "; ".join(self.filters[kind]))
        if self.aggregation:
            lines.append(f"aggregation: {self.aggregation}")
        if self.text:
            lines.append(f"full-text words: {self.text!r}")
        if self.plan is not None:
            lines.append(f"offline planner confidence: {self.plan.confidence}")
        lines.append("content cues: " + (", ".join(self.cues) if self.cues else "none"))
        return lines


def route_question(
    question: str,
    *,
    settings: Settings,
    catalog: Catalog,
    resolved: PlanningContext | None,
    unresolved: str | None = None,
    llm: Any = None,
) -> RouteDecision:
    """Route a question whose people and times were resolved (`resolved`), or could not be (`unresolved`:
    why); with `llm` (a LangChain chat model) the model decides, given the offline signals."""
    signals = gather_signals(question, catalog, resolved, unresolved)
    decision = offline = decide_offline(signals)
    if llm is not None:
        try:
            decision = _ask_model(llm, signals, offline, settings)
        except Exception as exc:  # noqa: BLE001 - any model failure: the offline decision stands
            offline.reasons.append(f"chat model failed ({exc.__class__.__name__}); kept the rule-based route")
    decision._draft = signals.plan
    return decision


def gather_signals(
    question: str, catalog: Catalog, ctx: PlanningContext | None, unresolved: str | None = None
) -> RouteSignals:
    named, collection_spans = detect_collection(question, catalog.schemas)
    # Only the words naming the chosen collection are explained: "page" in "bugs about the login page" is topic.
    naming = [(a, b) for a, b in collection_spans if detect_collection(question[a:b], catalog.schemas)[0] == named]
    cue_matches = list(CONTENT_CUES.finditer(question))
    signals = RouteSignals(
        question, named, [m.group(0) for m in cue_matches], spans=naming + [m.span() for m in cue_matches]
    )
    if ctx is None:
        signals.unresolved = unresolved or "could not resolve the question"
        return signals
    for mention in ctx.mentions:
        signals.people.append("the asker" if mention.is_asker else mention.person.name)
        signals.spans.append((mention.start, mention.end))
    for rng in ctx.times:
        signals.times.append(rng.text)
        at = question.lower().find(rng.text.lower())
        if at >= 0:
            signals.spans.append((at, at + len(rng.text)))
    plan = OfflinePlanner().plan(ctx)
    signals.plan = plan
    match = next((stage["$match"] for stage in plan.pipeline if "$match" in stage), {})
    # the topic as asked: a full-text search, or the words a condition looks for in the records' subject
    # ("PRs merged last week about auth": `words` on the title), each a filtered list about a topic
    said = [
        question[f.span[0] : f.span[1]]
        for f in (plan.ir.filters if plan.ir else [])
        if f.op in WORD_OPERATORS and f.span
    ]
    signals.text = (match.get("$text") or {}).get("$search") or " ".join(said) or None
    schema = ctx.schemas.get(plan.collection)
    signals.filters = _classify_filters(match, schema.kind if schema is not None else None)
    signals.aggregation = _aggregation(plan.pipeline)
    shape = plan.ir.shape if plan.ir else None
    values = {path for paths in schema.kind.values.values() for path in paths} if schema is not None else set()
    if shape is not None and shape.kind in ("group", "argmax", "argmin", "distinct_count") and shape.field in values:
        signals.grouped_by = shape.field
    return signals


def decide_offline(signals: RouteSignals) -> RouteDecision:
    reasons = signals.describe()

    def decided(route: Route, why: str) -> RouteDecision:
        return RouteDecision(
            route=route, reasons=[*reasons, why], topic=topic_words(signals) if route == "hybrid" else None
        )

    # "how many players on a team" names no kind of record and no condition: a count of the world, not
    # of records, which a query over the whole collection would only pretend to answer.
    aggregation = (
        signals.aggregation if (signals.named_collection or signals.constrained or signals.grouped_by) else None
    )
    if signals.cues:
        if signals.constrained or aggregation:
            return decided("hybrid", "a content question within conditions the structured half applies")
        return decided("semantic", "a content question with no condition on people, time or state")
    if signals.unresolved:
        return decided("structured", "a question about people: the structured half asks which one")
    if aggregation:
        return decided("structured", "a count or aggregation: only a query computes it")
    if signals.aggregation:
        return decided("semantic", "a count or ranking of no kind of record under no condition: about content")
    if signals.text:
        if signals.constrained or signals.named_collection:
            return decided("hybrid", "a filtered list about a topic: filters, full text and semantic search")
        return decided("semantic", "a topic with no structural constraint")
    if signals.plan is None or not signals.plan.pipeline:
        return decided("semantic", "nothing in the question maps to a query")
    if signals.named_collection is None:
        if not signals.constrained:
            return decided("semantic", "only topic words (some of them stored values) and no kind of record named")
        return decided("hybrid", "conditions, but no kind of record named: the planner guessed where to look")
    return decided("structured", "conditions a query answers exactly, and no topic")


def topic_words(signals: RouteSignals) -> str | None:
    """The words left for full-text and semantic search: the question without the people, times,
    content cues and the words naming the collection, without stopwords. Stored values that the
    structured half filters on ("redis", "payments") stay: to a semantic search they are the topic."""
    chars = list(signals.question)
    for start, end in signals.spans:
        chars[start:end] = " " * (end - start)
    rest = _CJK_FILLER.sub(" ", "".join(chars))
    words = [
        w
        for w in re.findall(r"[A-Za-z0-9](?:[\w\-./]*\w)?|[\u4e00-\u9fff]+", rest)
        if len(w) >= 2 and not (w[0].isascii() and w.lower() in _TOPIC_STOPWORDS)
    ]
    return " ".join(dict.fromkeys(words)) or None


def _classify_filters(match: dict[str, Any], kind: CollectionSpec | None) -> dict[str, list[str]]:
    people, time_paths, scope_paths = set(), set(), set()
    if kind is not None:
        people = people_paths(kind)
        time_paths = {p for paths in kind.times.values() for p in paths}
        scope_paths = {p for role in _SCOPE_ROLES for p in kind.values.get(role, ())}
    out: dict[str, list[str]] = {}
    for path, condition in _flatten(match):
        if path == "$text":
            continue
        group = (
            "people"
            if path in people
            else "time"
            if path in time_paths
            else "scope"
            if path in scope_paths
            else "condition"
        )
        out.setdefault(group, []).append(f"{path} {json.dumps(condition, default=str, ensure_ascii=False)}")
    return out


def _flatten(match: dict[str, Any], prefix: str = ""):
    """(path, condition) pairs of a $match, through $and and $elemMatch."""
    for key, value in match.items():
        if key == "$and":
            for part in value:
                yield from _flatten(part, prefix)
        elif isinstance(value, dict) and "$elemMatch" in value:
            yield from _flatten(value["$elemMatch"], f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _aggregation(pipeline: list[dict[str, Any]]) -> str | None:
    for stage in pipeline:
        if "$count" in stage:
            return "count"
        if "$group" in stage:
            key = stage["$group"]["_id"]
            if isinstance(key, dict) and "$dateToString" in key:
                return f"counts per {key['$dateToString']['format']} bucket"
            return f"group by {str(key).lstrip('$')}"
    return None


def _ask_model(llm: Any, signals: RouteSignals, offline: RouteDecision, settings: Settings) -> RouteDecision:
    # A malformed answer is asked for again at once: backing off helps a rate limit, not a parse error
    # (the chat model client already retries HTTP failures itself).
    runnable = structured_output(llm, RouteDecision).with_retry(
        stop_after_attempt=settings.max_attempts, wait_exponential_jitter=False
    )
    system = ROUTE_SYSTEM.format(
        signals="\n".join(f"- {line}" for line in signals.describe()), offline_route=offline.route
    )
    chosen: RouteDecision = runnable.invoke([("system", system), ("human", signals.question)])
    topic = (chosen.topic or topic_words(signals)) if chosen.route == "hybrid" else None
    return RouteDecision(
        route=chosen.route,
        topic=topic,
        reasons=[f"chat model: {r}" for r in chosen.reasons]
        + [f"the rule-based router chose {offline.route}: {offline.reasons[-1]}"],
    )

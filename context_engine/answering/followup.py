"""Follow-up questions on a thread, resolved against the turn before into a standalone question.

Offline, by the forms follow-ups take (English and Chinese):

- a new time:        "and in October?", "what about last month?", "十月呢？"  -> the same question, that time
- a new person:      "what about Priya?", "李娜呢？"                          -> the same question, that person
- a pronoun:         "他呢？", "what about her?"  -> the person asked about before the last one, else the
                     first person the last answer named who was not asked about
- a subset:          "which of those are still open?", "only the ones in payments", "其中哪些还没关闭"
                     -> the same question with the new condition
- a record:          "who reviewed it?", "那个PR是谁评审的？" -> "it" is the last answer's first record

With a chat model, the model rewrites the question from the conversation, given the offline rewrite;
when it fails, the offline rewrite stands. A question that is none of these is left as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from context_engine.prompts import FOLLOWUP_SYSTEM
from context_engine.query.identity import PeopleDirectory
from context_engine.query.timeexpr import find_time_ranges
from context_engine.models import structured_output

_LEAD = re.compile(r"^\s*(?:(?:(?:and|but|also|so|ok(?:ay)?|then|now)[\s,]+)+(?:(?:what|how)\s+about\s+)?"
                   r"|(?:what|how)\s+about\s+|(?:那么?|还有|那)\s*)", re.I)
_TAIL = re.compile(r"[\s?？.。!！,，]*(?:呢|吗|呀)?[\s?？.。!！]*$")
_PRONOUN = re.compile(r"^(?:him|her|them|he|she|他|她|他们|她们)$", re.I)
_SUBSET = re.compile(
    r"^(?:which|what)\s+(?:ones\s+)?(?:of|among)\s+(?:those|these|them)\s*(?:are|were|is|was|have|has|did)?\s*(?P<a>.*)$"
    r"|^(?:of|among)\s+(?:those|these|them)[\s,]*(?:which|what|only)?\s*(?:ones?)?\s*(?:are|were)?\s*(?P<b>.*)$"
    r"|^(?:only|just)\s+(?:the\s+ones?|those|these)\s*(?:that\s+are|that|which\s+are|which)?\s*(?P<c>.*)$"
    r"|^(?:only|just)\s+(?:the\s+)?(?P<f>.+?)\s+ones?$"
    r"|^(?:其中|这些|那些|里面)(?:里|中)?(?:的)?(?:哪些|哪个)?(?:是)?(?P<d>.*)$|^只(?:看|要)?(?P<e>.*)$", re.I)
_RECORD = re.compile(r"\b(?:it|that one|this one|that pr|this pr|that issue|this issue|that thread|that doc)\b"
                     r"|(?:它|那个PR|这个PR|那个问题|这个问题|那个issue|这个issue)", re.I)
_RECORDS = re.compile(r"\b(?:them|those|these|those prs|these prs|those issues|these issues)\b|(?:它们|这些|那些)", re.I)
_PREPOSITION = re.compile(r"^(?:for|by|from|of|to|with|about)\s+", re.I)
MAX_REFS = 10  # records "them" may stand for
_STILL = re.compile(r"^\s*still\s+", re.I)


@dataclass
class FollowUp:
    standalone: str
    how: str = ""   # "" when the question stands alone


def _core(question: str) -> str:
    return _TAIL.sub("", _LEAD.sub("", question, count=1)).strip()


def _replace_people(previous: dict[str, Any], name: str) -> str:
    text = previous["standalone"]
    spans = previous.get("people_text", [])
    for old in spans:
        if old and old in text:
            return text.replace(old, name, 1)
    return f"{text.rstrip('?？ ')} by {name}"


def _replace_time(previous: dict[str, Any], when: str) -> str:
    text = previous["standalone"]
    for old in previous.get("times", []):
        if old and old.lower() in text.lower():
            at = text.lower().index(old.lower())
            return text[:at] + when + text[at + len(old):]
    return f"{text.rstrip('?？ ')} {when}"


def resolve_offline(question: str, turns: list[dict[str, Any]], directory: PeopleDirectory | None,
                    now: datetime) -> FollowUp:
    """`turns`: the thread's earlier turns ({standalone, people, people_text, times, refs, answer_people}),
    oldest first; empty on a new thread."""
    if not turns:
        return FollowUp(question)
    previous = turns[-1]
    core = _core(question)
    if not core:
        return FollowUp(question)
    if _PRONOUN.match(core):
        asked = set(previous.get("people", []))
        earlier = [p for turn in reversed(turns[:-1]) for p in turn.get("people", [])]
        others = [p for p in [*earlier, *previous.get("answer_people", [])] if p not in asked]
        if not others:
            return FollowUp(question)
        return FollowUp(_replace_people(previous, others[0]), f"{core!r} = {others[0]}")
    if directory is not None:
        named = _PREPOSITION.sub("", core)
        mentions = [m for m in directory.find_mentions(named) if m.person is not None and not m.is_asker]
        if mentions and len(mentions) == 1 and len(named) - (mentions[0].end - mentions[0].start) <= 3:
            name = mentions[0].text
            return FollowUp(_replace_people(previous, name), f"the same question about {name}")
    times = find_time_ranges(core, now)
    if times and len(re.sub(r"\b(?:in|on|during|since|for)\b|在|的", "", core.lower().replace(times[0].text.lower(), "")).strip()) <= 1:
        return FollowUp(_replace_time(previous, core), f"the same question for {core!r}")
    subset = _SUBSET.match(core)
    if subset:
        rest = _STILL.sub("", next(g for g in subset.groups() if g is not None)).strip()
        if rest:
            return FollowUp(f"{previous['standalone'].rstrip('?？ ')} {rest}", f"of the last answer's records: {rest!r}")
    record = _RECORD.search(question)
    if record and previous.get("refs"):
        ref = previous["refs"][0]
        return FollowUp(question[:record.start()] + ref + question[record.end():], f"{record.group(0)!r} = {ref}")
    records = _RECORDS.search(question)
    if records and previous.get("refs"):
        refs = ", ".join(previous["refs"][:MAX_REFS])
        return FollowUp(question[:records.start()] + refs + question[records.end():],
                        f"{records.group(0)!r} = the last answer's records")
    return FollowUp(question)


class Standalone(BaseModel):
    question: str = Field(description="the follow-up rewritten as a question that stands alone")


def resolve_followup(question: str, turns: list[dict[str, Any]], directory: PeopleDirectory | None,
                     now: datetime, llm: Any = None) -> FollowUp:
    """The question as it stands alone, given the thread's earlier turns (oldest first)."""
    offline = resolve_offline(question, turns, directory, now)
    if llm is None or not turns:
        return offline
    conversation = "\n".join(f"Q: {t['standalone']}\nA: {t.get('answer', '')[:400]}" for t in turns[-3:])
    try:
        out: Standalone = structured_output(llm, Standalone).with_retry(
            stop_after_attempt=2).invoke([("system", FOLLOWUP_SYSTEM),
                                          ("human", f"Conversation:\n{conversation}\n\nFollow-up: {question}\n"
                                                    f"Rule-based rewrite: {offline.standalone}")])
    except Exception:  # the model's failure leaves the rule-based rewrite
        return offline
    rewritten = (out.question or "").strip()
    if not rewritten or rewritten == question:
        return offline
    return FollowUp(rewritten, "rewritten from the conversation by the chat model")

"""Follow-up questions on a thread, resolved against the turn before into a standalone question.

Offline, by the forms follow-ups take (English and Chinese):

- a new time:        "and in October?", "what about last month?", "十月呢？"  -> the same question, that time
- a new person:      "what about Priya?", "李娜呢？"                          -> the same question, that person
- a pronoun:         "他呢？", "what about her?"  -> the person asked about before the last one, else the
                     first person the last answer named who was not asked about
- a subset:          "which of those are still open?", "only the ones in payments", "其中哪些还没关闭"
                     -> the same question with the new condition
- a record:          "who reviewed it?", "那个PR是谁评审的？" -> "it" is the last answer's first record
- a shifted time:    "the month before", "a week later", "what about earlier?", "再往前一周"
                     -> the same question, the last time window moved (or everything before/after it)
- "same for ...":    "same for 2020", "换成张伟呢" -> the same question, that time or person
- a candidate:       after a turn that could not tell people apart and offered candidates:
                     "the first one", "第二个", "I meant achen42", "Alex Morgan" -> the same question, that person

With a chat model, the model rewrites the question from the conversation, given the offline rewrite;
when it fails, the offline rewrite stands. A question that is none of these is left as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from context_engine.prompts import FOLLOWUP_SYSTEM
from context_engine.query.identity import PeopleDirectory
from context_engine.query.timeexpr import find_time_ranges
from context_engine.models import structured_output
from context_engine.text import HAN

_LEAD = re.compile(r"^\s*(?:(?:(?:and|but|also|so|ok(?:ay)?|then|now)[\s,]+)+(?:(?:what|how)\s+about\s+)?"
                   r"|(?:what|how)\s+about\s+|(?:那么?|还有|那)\s*)", re.I)
# "same for 2020", "the same but for Mario", "换成张伟", "改成十月": the rest is the new person or time.
_SAME = re.compile(r"^(?:(?:the\s+)?same\s+(?:thing\s+|question\s+|query\s+)?(?:but\s+)?(?:for|in|with|by)?\s*"
                   r"|(?:do\s+)?(?:it|that)\s+(?:again\s+)?for\s+|(?:换成|改成|换为|改为|换)\s*)", re.I)
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
    return _SAME.sub("", _TAIL.sub("", _LEAD.sub("", question, count=1)).strip(), count=1).strip()


# Shifting the last time window: "the month before", "a week earlier", "the previous year", "再往前一周",
# "往后一个月"; "earlier" / "before that" / "更早" is everything before it, "later" / "之后" everything after.
_UNITS = {"day": "day", "week": "week", "month": "month", "quarter": "quarter", "year": "year",
          "天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month", "季度": "quarter", "年": "year"}
_EN_UNIT = r"(day|week|month|quarter|year)s?"   # the one group of each form: the unit
_CJK_UNIT = r"(?:一|1)?个?(天|日|周|星期|礼拜|月|季度|年)"
# "the month before" / "the next week": the window of that unit next to the last one (the one
# before or after it when the last one was such a unit); "a year earlier" / "再往前一周": the last
# window itself, moved by that unit.
_NEXT_BACK = re.compile(rf"^(?:the\s+)?{_EN_UNIT}\s+(?:before|prior)(?:\s+that)?$"
                        rf"|^(?:the\s+)?(?:previous|prior|preceding)\s+{_EN_UNIT}$", re.I)
_NEXT_AHEAD = re.compile(rf"^(?:the\s+)?{_EN_UNIT}\s+after(?:\s+that)?$|^(?:the\s+)?(?:next|following)\s+{_EN_UNIT}$",
                         re.I)
_MOVE_BACK = re.compile(rf"^(?:a|one|1)\s+{_EN_UNIT}\s+(?:earlier|before)$|^(?:再|再往|往)前{_CJK_UNIT}$"
                        rf"|^(?:再)?早{_CJK_UNIT}$", re.I)
_MOVE_AHEAD = re.compile(rf"^(?:a|one|1)\s+{_EN_UNIT}\s+(?:later|after)$|^(?:再|再往|往)后{_CJK_UNIT}$"
                         rf"|^(?:再)?晚{_CJK_UNIT}$", re.I)
_EARLIER = re.compile(r"^(?:any(?:thing)?\s+)?(?:earlier|before\s+(?:that|then)|prior\s+to\s+that|even\s+earlier)(?:\s+ones?)?$"
                      r"|^(?:更早|再早|之前|在那之前|那之前|以前)(?:的)?$", re.I)
_LATER = re.compile(r"^(?:any(?:thing)?\s+)?(?:later|after\s+(?:that|then)|since\s+then)(?:\s+ones?)?$"
                    r"|^(?:更晚|再晚|之后|在那之后|那之后|以后)(?:的)?$", re.I)


def _months(when: datetime, n: int) -> datetime:
    index = when.year * 12 + when.month - 1 + n
    return when.replace(year=index // 12, month=index % 12 + 1)


def _step(when: datetime, unit: str, n: int) -> datetime:
    if unit in ("day", "week"):
        return when + timedelta(days=n * (7 if unit == "week" else 1))
    return _months(when, n * {"month": 1, "quarter": 3, "year": 12}[unit])


def _phrase(start: datetime, end: datetime) -> str:
    """A range as words the time parser reads back exactly: a calendar month or year by name, else days."""
    midnight = start == start.replace(hour=0, minute=0, second=0, microsecond=0)
    if midnight and start.day == 1 and end == _months(start, 1):
        return f"in {start:%B %Y}"
    if midnight and start.day == 1 and start.month == 1 and end == _months(start, 12):
        return f"in {start.year}"
    return f"between {start:%Y-%m-%d} and {end - timedelta(days=1):%Y-%m-%d}"


def _shifted(core: str, previous: dict[str, Any]) -> str | None:
    """The previous time window moved as the follow-up says, as words; None if it says no such thing."""
    ranges = [r for r in previous.get("time_ranges", []) if r.get("start") or r.get("end")]
    if not ranges:
        return None
    start = datetime.fromisoformat(ranges[0]["start"]) if ranges[0].get("start") else None
    end = datetime.fromisoformat(ranges[0]["end"]) if ranges[0].get("end") else None
    if _EARLIER.match(core) and start is not None:
        return f"before {start:%Y-%m-%d}"
    if _LATER.match(core) and end is not None:
        return f"since {end:%Y-%m-%d}"
    if start is None or end is None:
        return None
    for pattern, n, moved in ((_NEXT_BACK, -1, False), (_NEXT_AHEAD, 1, False), (_MOVE_BACK, -1, True),
                              (_MOVE_AHEAD, 1, True)):
        m = pattern.match(core)
        if not m:
            continue
        unit = _UNITS[next(g for g in m.groups() if g).lower()]
        if moved or _step(start, unit, 1) == end:
            return _phrase(_step(start, unit, n), _step(end, unit, n))
        # a window of another length: the unit right before it (right after it)
        return _phrase(_step(start, unit, -1), start) if n < 0 else _phrase(end, _step(end, unit, 1))
    return None


# Picking one of the candidates the last turn offered for a name it could not tell apart:
# "the first one", "第二个", "2", "I meant achen42", "Alex Morgan", "我说的是陈静".
_ORDINALS = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3, "fifth": 4,
             "5th": 4, "last": -1, "一": 0, "二": 1, "两": 1, "三": 2, "四": 3, "五": 4, "最后一": -1}
_ORDINAL = re.compile(r"^(?:the\s+)?(?P<en>first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last)(?:\s+(?:one|person|candidate))?$"
                      r"|^(?:number\s+|no\.?\s*|#)?(?P<digit>[1-9])$|^第?(?P<cjk>一|二|两|三|四|五|最后一)个(?:人)?$"
                      r"|^第(?P<cjkdigit>[1-9])个?(?:人)?$", re.I)
_MEANT = re.compile(r"^(?:no[\s,]+)?(?:i\s+meant?|meant|i\s+was\s+asking\s+about|the\s+one\s+(?:called|named))\s+"
                    r"|^(?:我)?(?:说的是|指的是|是说|要的是)|^是", re.I)


def _pick(core: str, candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    m = _ORDINAL.match(core)
    if m:
        if m.group("digit") or m.group("cjkdigit"):
            index = int(m.group("digit") or m.group("cjkdigit")) - 1
        else:
            index = _ORDINALS[(m.group("en") or m.group("cjk")).lower()]
        return candidates[index] if -len(candidates) <= index < len(candidates) else None
    who = _MEANT.sub("", core, count=1).strip().lower()
    if not who:
        return None
    exact = [c for c in candidates if who in {str(v).lower() for v in c.values() if isinstance(v, str)}]
    if len(exact) == 1:
        return exact[0]
    words = set(who.split())
    partial = [c for c in candidates if words <= set(str(c.get("name", "")).lower().split())]
    return partial[0] if len(partial) == 1 else None


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
            before, after = text[:at], text[at + len(old):]
            if when.isascii():  # "between 2026-11-16 and 2026-11-22" set apart from the Chinese around it
                before = before + " " if before and HAN.match(before[-1]) else before
                after = " " + after if after and HAN.match(after[0]) else after
            return before + when + after
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
    candidates = previous.get("candidates") or []
    if candidates and previous.get("unresolved"):
        chosen = _pick(core, candidates)
        if chosen is not None:
            name = chosen.get("name") or chosen["key"]
            text = previous["standalone"].replace(previous["unresolved"], name, 1)
            return FollowUp(text, f"{previous['unresolved']!r} = {name} ({chosen['key']}), of the candidates offered")
    shifted = _shifted(core, previous)
    if shifted is not None:
        return FollowUp(_replace_time(previous, shifted), f"the same question for {shifted!r}")
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

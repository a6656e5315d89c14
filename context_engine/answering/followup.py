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
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field

from context_engine.chat_models import structured_output
from context_engine.kinds import BUILTIN, CollectionSpec, Registry, builtin_registry
from context_engine.prompts import FOLLOWUP_SYSTEM
from context_engine.query.identity import AmbiguousPerson, PeopleDirectory, UnknownPerson
from context_engine.query.planner.draft import CJK_NUMBERS, NUMBER_WORDS, PERIOD_UNITS
from context_engine.query.timeexpr import MONTHS, find_time_ranges
from context_engine.text import HAN, tokenize

_LEAD = re.compile(
    r"^\s*(?:(?:(?:and|but|also|so|ok(?:ay)?|then|now)[\s,]+)+(?:(?:what|how)\s+about\s+)?"
    r"|(?:what|how)\s+about\s+|(?:那么|还有|那(?![个位些年天次条时月周里边几]))\s*)",  # not 那个人, 那年
    re.I,
)
# "same for 2020", "the same but for Mario", "换成张伟", "改成十月": the rest is the new person or time.
_SAME = re.compile(
    r"^(?:(?:the\s+)?same\s+(?:thing\s+|question\s+|query\s+)?(?:but\s+)?(?:for|in|with|by)?\s*"
    r"|(?:do\s+)?(?:it|that)\s+(?:again\s+)?for\s+|(?:换成|改成|换为|改为|換成|換為|改為|换|換)\s*)",
    re.I,
)
# "换成 2022 年看看", "十月呢？": the words that only end a follow-up
_TAIL = re.compile(r"[\s?？.。!！,，]*(?:看看|看一下|试试|呢|吗|呀)?[\s?？.。!！]*$")
# "shift that to the month before", "move it to 2021", "now do 2022": the rest says the change.
_REDO = re.compile(
    r"^(?:(?:shift|move|change|switch|set)\s+(?:that|it|this|the\s+window|the\s+period)\s+(?:to|back\s+to|forward\s+to)"
    r"|(?:now\s+)?do|go\s+back\s+to)\s+",
    re.I,
)
_PRONOUN = re.compile(r"^(?:him|her|them|he|she|他|她|他们|她们)$", re.I)
_SUBSET = re.compile(
    r"^(?:which|what)\s+(?:ones\s+)?(?:of|among)\s+(?:those|these|them)\s*(?:(?:are|were|is|was|have|has|did)(?![n'’]))?\s*(?P<a>.*)$"
    r"|^(?:of|among)\s+(?:those|these|them)[\s,]*(?:which|what|only)?\s*(?:ones?)?\s*(?:are|were)?\s*(?P<b>.*)$"
    r"|^(?:only|just|keep)\s+(?:the\s+ones?|those|these)\s*(?:that\s+are|that|which\s+are|which)?\s*(?P<c>.*)$"
    # "which of the open ones has the most comments": those, narrowed by the word before "ones"
    r"|^(?:which|what)\s+(?:one\s+)?(?:of|among)\s+the\s+(?P<k>[\w\-]+(?:\s+[\w\-]+)?)\s+ones\s+(?P<krest>\S.*)$"
    r"|^(?:only|just)\s+(?P<counting>counting|count|listing|list)\s+(?:the\s+)?(?P<h>.*?(?:\bones?\b|\bthose\b|\bthese\b).*)$"
    r"|^(?:only|just|keep)\s+(?:the\s+)?(?P<f>.+?\s+ones?)$"
    r"|^(?:which|what)\s+ones\s+(?:(?:are|were|is|was)\s+)?(?P<g>(?!of\b|among\b)\S.*)$"
    r"|^(?:其中|这些|那些|这几(?:个|条|篇)|那几(?:个|条|篇)|里面)(?:里面|里|中|当中)?(?:的)?(?:哪些|哪一?(?:个|条|篇|项)(?!月|星期|周|年|天))?(?:是)?(?P<d>.*)$|^只(?:看|要)?(?P<e>.*)$",
    re.I,
)
# "any of those about streaming?", "are there any with no label", "其中有讲 parquet 的吗", "里面有没有 X": whether
# some of the records are so asks for those records, not their number
_ANY_OF_THEM = re.compile(
    r"^(?:(?:are|were|is|was)\s+there\s+)?any(?:\s+ones?)?(?:\s+(?:of|among)\s+(?:those|these|them))?\b(?!\s+more\b)"
    r"|^(?:其中|这些|那些|這些|那些|里面|裡面)(?:里面|里|裡|中|当中)?(?:有没有|有沒有|有(?!多少|几|幾))",
    re.I,
)
_WHICH_ONES_CJK = re.compile(r"哪(?:些|几个|幾個|几条|幾條|几篇|幾篇)(?!月|天|周|年|人|位)")
_RECORD = re.compile(
    r"\b(?:it|that one|this one|that pr|this pr|that issue|this issue|that thread|that doc)\b"
    r"|(?:它|那个PR|这个PR|那个问题|这个问题|那个issue|这个issue)",
    re.I,
)
_RECORDS = re.compile(
    r"\b(?:them|those|these|those prs|these prs|those issues|these issues)\b|(?:它们|这些|那些)", re.I
)
_PREPOSITION = re.compile(r"^(?:for|by|from|of|to|with|about)\s+", re.I)
# A capitalised name said alone ("Zebulon", "Ada Lovelace"), as a follow-up names a person
_NAME_ALONE = re.compile(r"^[A-Z][a-z\u00C0-\u024F'\-]+(?:\s+[A-Z][a-z\u00C0-\u024F'\-]+){0,2}$")
MAX_REFS = 10  # records "them" may stand for
_STILL = re.compile(r"^\s*still\s+", re.I)
# "the second one", "the last PR", "第三条": one record of the last answer, by its place in it
_NTH_RECORD = re.compile(
    r"(?:^|\bthe\s+)(?P<en>first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last)\s+"  # not "good first issue"
    r"(?:one|prs?|pull\s+request|issue|message|thread|post|record|result|item|entry)\b"
    r"|第(?P<cjk>一|二|两|三|四|五|[1-9])(?:个|条|篇|项)|(?P<last>最后一(?:个|条|篇|项))",
    re.I,
)
# "the oldest of those", "which is the most recent", "最早的那个": the one record at that end, said as
# the planner reads an extreme of the records ("the oldest one")
_EXTREME_ALONE = re.compile(
    r"^(?:which(?:\s+one)?\s+(?:is|was)\s+)?(?:the\s+)?(?P<en>oldest|earliest|newest|latest|most\s+recent)(?:\s+one)?$"
    r"|^(?:哪个|哪条)?(?:是)?(?P<cjk>最早|最新|最近|最晚)(?:的)?(?:那|这)?(?:一)?(?:个|条|篇)?(?:是哪(?:个|条|篇))?$",
    re.I,
)
_OLDEST = {"oldest", "earliest", "最早"}


def _one_extreme(rest: str) -> str:
    said = _EXTREME_ALONE.match(rest)
    if not said:
        return rest
    return "the oldest one" if (said.group("en") or said.group("cjk")).lower() in _OLDEST else "the newest one"


# "which of those did Priya open", "which ones does she review": the records someone acted on, said in the
# past tense so a verb that is also a state ("open") is read as what they did
_DID_SUBSET = re.compile(
    r"^(?:which|what)\s+(?:(?:ones\s+)?(?:of|among)\s+(?:those|these|them)|ones)\s+(?:did|does|do)\s+(\S.*)$", re.I
)
_RECORD_VERB = re.compile(
    r"\b(?:open|close|merge|review|file|write|post|comment|approve|create|report|label|assign|fix|start|reply|"
    r"submit|raise|author|land)\b",
    re.I,
)
_PAST = {"write": "wrote", "reply": "replied", "label": "labelled", "submit": "submitted"}


def _past(verb: str) -> str:
    return _PAST.get(verb) or (verb + "d" if verb.endswith("e") else verb + "ed")


# "哪个", "哪一条": one record, not a ranking of several ("哪些")
_WHICH_ONE_CJK = re.compile(
    r"^(?:其中|这些|那些|这几(?:个|条|篇)|那几(?:个|条|篇)|里面)?(?:里面|里|中|当中)?(?:的)?哪一?(?:个|条|篇|项)(?!月|星期|周|年|天)"
)
# "有没有关于 segmentation 的", "有没有跟 X 有关的": the last records, on a topic (English "anything on X" is
# an elliptical narrowing as it is said)
_ANY_ABOUT = re.compile(
    r"^(?:有没有|有无|是否有|有)(?:关于|涉及|提到|讲|和|跟|与)\s*([^\s的].*?)\s*(?:有关|相关)?的?(?:吗)?$"
)
# "跟 features 有关的", "讲 ClojureScript 的有哪些", "关于 BLEU 的": a topic said in Chinese, as the planner reads it
_CJK_TOPIC = re.compile(
    r"^(?:哪些|哪个|哪幾個|哪几个)?(?:是)?(?:跟|和|与|與|同|关于|關於|涉及|提到|提及|谈到|談到|讲到|講到|说到|說到|讲|講|谈|談|说|說)"
    r"\s*([^\s的].*?)\s*(?:有关|有關|相关|相關|有关系|有關係)?(?:的)?"
    r"(?:有哪些|是哪些|是哪几个|是哪幾個|都有哪些|有几个|有幾個|有多少|呢|吗|嗎)?$"
)


def _cjk_topic(rest: str) -> str:
    said = _CJK_TOPIC.match(rest)
    talked = r"有关|有關|相关|相關|^(?:哪些|哪个)?(?:是)?(?:关于|關於|涉及|提到|提及|讲|講|谈|談|说|說)"
    if not said or not re.search(talked, rest):
        return rest  # "和 lhoestq 的" is not a topic: a topic needs 有关/相关 or a word of talking about
    counted = re.search(r"有几个|有幾個|有多少", rest)
    return f"{'how many ' if counted else ''}about {said.group(1).strip()}"


# "add video support", "that introduce streaming", "adding parquet export features": what the records add is their
# topic; the verb and "support" say it is a change, as every PR's title does
_ADDS = re.compile(
    r"^(?:that\s+|which\s+)?(?:add|adds|added|adding|introduce[sd]?|introducing|implement(?:s|ed|ing)?)\s+"
    r"(?:(?:a|an|the|some|new)\s+)?(?P<thing>.+?)(?:\s+(?:support|features?|capabilit(?:y|ies)|handling))?$",
    re.I,
)


def _added_thing(rest: str) -> str:
    said = _ADDS.match(rest)
    return f"about {said.group('thing')}" if said and said.group("thing").strip() else rest


# "didn't get merged", "haven't been closed yet", "weren't ever reviewed": a negated condition, said as
# the planner reads a negation ("not merged", "not closed yet")
_NEGATED = re.compile(
    r"\b(?:did|do|does|have|has|had|are|were|is|was)(?:n['’]t|\s+not)\s+(?:ever\s+|yet\s+)?(?:(?:get|got|gotten|been|be)\s+)?",
    re.I,
)


@dataclass
class FollowUp:
    standalone: str
    how: str = ""  # "" when the question stands alone
    added: str = ""  # the words a narrowing added to the last question ("how many were bugs")
    # The change to the last question's plan, where the follow-up is one (`answering.plan_ops` applies it
    # to the plan itself): the new time window as words the time parser reads ("in March 2021"), and the
    # new shape ("count", "list", or a period the records are counted per: "week", "month").
    new_time: str = ""
    reshape: str = ""
    within: tuple[str, str] | None = None  # (field, value): the one group of the last answer the records are of
    unread: str = ""  # words pointing at the conversation that no rule resolved ("it"): the answer says so
    # the follow-up said whole, its person and time named ("how many threads did Ida start in May 2019"):
    # about the last answer's kind of record, it is planned over the last plan's conditions
    restated: str = ""
    # another kind of record, the rest of the last question kept ("I meant PRs, not issues", "換成 issue 看看")
    collection: str = ""
    # "back to pietrolesci — which of his are closed now?": the thread resumed after its first `resumed[0]`
    # turns (the last that asked about that), and the words said of it
    resumed: tuple[int, str] | None = None
    # the person the follow-up asks the last question about instead ("what about Priya?", "换成张伟", "her")
    person: str = ""
    # the record of the last answer it names by its place ("the second one": 1, "the last one": -1)
    nth: int | None = None
    # the words naming a condition of the last plan taken away ("drop that — ...", "forget the year: ...",
    # 不管评论数，...): `answering.plan_ops.without` removes it from the plan the rest of the follow-up makes
    dropped: str = ""
    # the one record it names by words of its subject or by its number ("the ArrayXD one", "#5948"), its key,
    # and what it asks of that record, "it" standing for it ("how many comments has it got")
    record: str = ""
    of_record: str = ""
    # words that open a question as if they named one listed record ("the parquet one — ...") and name none, or
    # several: (the words, the decline that says so)
    unnamed: tuple[str, str] | None = None
    # the values the words `added` (or `restated`) name replace the last plan's on the same fields, even of a field
    # a record holds several of ("and with the dataset-viewer label instead?", "换成 bug 标签", "and for dataset
    # contribution?" after the documentation label); else a label is one more
    replacing: bool = False


# "if we only count merged ones", "what if you only include the open ones", "如果只算合并的": the records
# narrowed, not counted
_IF_ONLY = re.compile(
    r"^(?:what\s+)?if\s+(?:we|you|i|one)\s+(?:only\s+|just\s+)?(?:count(?:ed)?|consider(?:ed)?|include[d]?|"
    r"look(?:ed)?\s+at|keep|kept|take|took)\s+(?:only\s+|just\s+)?(?:the\s+)?(?=\S)"
    r"|^(?:如果|要是|假如)?只(?:算|统计|統計|计|計)(?=\S)",
    re.I,
)


# "is that more than lhoestq managed?", "more or fewer than in November?": the same question about the other
# person or time (the answer is that number, set beside the last one by the asker)
_COMPARED = re.compile(
    r"^(?:(?:is|was|are|were)\s+(?:that|this|it)\s+)?(?:more|fewer|less|higher|lower|bigger|smaller|greater)"
    r"(?:\s+or\s+(?:more|fewer|less|lower|higher|smaller|bigger))?\s+than\s+(?P<what>.+?)"
    r"(?:\s+(?:managed|did|had|got|has|have|opened|posted|wrote|made|merged|filed|started))?$",
    re.I,
)


# "比 lhoestq 同年多吗", "跟 11 月比是多还是少": the same question about the other person or time, as in English
_COMPARED_CJK = re.compile(
    r"^(?:这|那)?(?:个)?(?:比|跟|和|与)\s*(?P<what>.+?)\s*(?:同年|同月|同期|当年|那年|那个月)?(?:的)?\s*"
    r"(?:比)?(?:是)?(?:更)?(?:多|少|高|低)(?:还是(?:更)?(?:少|多|低|高))?(?:吗|么|吧)?$"
)


def _core(question: str) -> str:
    core = _SAME.sub("", _TAIL.sub("", _LEAD.sub("", question, count=1)).strip(), count=1).strip()
    compared = _COMPARED.match(core) or _COMPARED_CJK.match(core)
    core = compared.group("what") if compared else core
    core = _IF_ONLY.sub(lambda m: "只看" if HAN.match(m.group(0)[-1]) else "only the ", core, count=1)
    core = re.sub(r"[\s,]+(?:then|instead|please|pls|thanks)$", "", core, flags=re.I)  # "patrickvonplaten then"
    core = _SAME_AFTER.sub("", core, count=1)  # "Clarine, same question?": what the same question is for
    return _REDO.sub("", core, count=1).strip()


# "Clarine, same question?", "and for 2022 — same thing", "李娜，同样的问题": the same question, said after what it is for
_SAME_AFTER = re.compile(
    r"(?<=\S)[\s,，:：;；—–-]+(?:(?:the\s+)?same\s+(?:question|thing|query|again)(?:\s+(?:please|then|again))?"
    r"|同样的问题|一样的问题|同一个问题|问题一样)$",
    re.I,
)


# Shifting the last time window: "the month before", "a week earlier", "the previous year", "再往前一周",
# "往后一个月"; "earlier" / "before that" / "更早" is everything before it, "later" / "之后" everything after.
_EN_UNIT = r"(day|week|month|quarter|year)s?"  # the one group of each form: the unit
_CJK_UNIT = r"(?:一|1)?个?(天|日|周|星期|礼拜|月|季度|年)"
# "the month before" / "the next week": the window of that unit next to the last one (the one
# before or after it when the last one was such a unit); "a year earlier" / "再往前一周": the last
# window itself, moved by that unit.
_NEXT_BACK = re.compile(
    rf"^(?:the\s+)?{_EN_UNIT}\s+(?:before|prior(?:\s+to)?)(?:\s+(?:that|this|it)(?:\s+one)?)?$|^前{_CJK_UNIT}$"
    rf"|^(?:the\s+)?(?:previous|prior|preceding)\s+{_EN_UNIT}$",
    re.I,
)
_NEXT_AHEAD = re.compile(
    rf"^(?:the\s+)?{_EN_UNIT}\s+after(?:\s+(?:that|this|it)(?:\s+one)?)?$|^(?:the\s+)?(?:next|following)\s+{_EN_UNIT}$|^后{_CJK_UNIT}$",
    re.I,
)
# "the same stretch", "that period", "those months": the last window itself, which a shift moves whole
_SAME_WINDOW = (
    r"(?:(?:(?:the|that|those|this|these)\s+)?(?:same\s+)?(?:quarter|months?|weeks?|period|time(?:\s+frame)?|timeframe"
    r"|window|days?|dates|stretch|span|range)[\s,]+)"
)
# "一年后", "一个月之前": that window, one unit on (back); "往后推一个月", "往前挪一周"
_CJK_ONE_UNIT = r"(?:一|1)个?(天|日|周|星期|礼拜|月|季度|年)"
_MOVE_BACK = re.compile(
    rf"^{_SAME_WINDOW}?(?:a|one|1)\s+{_EN_UNIT}\s+(?:earlier|before|ago|back|prior)$"
    rf"|^(?:再)?(?:往|向)?前(?:推|挪|移|倒)?{_CJK_UNIT}$"
    rf"|^(?:go\s+|step\s+|move\s+)?back\s+(?:a|one|1)\s+{_EN_UNIT}$"
    rf"|^(?:再)?早{_CJK_UNIT}$|^{_CJK_ONE_UNIT}(?:之|以)?前(?:的)?$"
    # "same stretch last year", "the same period the year before", "those months of the previous year"
    r"|^" + _SAME_WINDOW + r"(?:(?:of\s+|in\s+)?(?:last|the\s+previous|the\s+prior|the\s+preceding)\s+|the\s+)"
    r"(day|week|month|quarter|year)(?:\s+before|\s+earlier)?$"
    r"|^(?:去|上一?|前一)(年)(?:的)?同期(?:的)?$",  # 去年同期: the same window a year back
    re.I,
)
_MOVE_AHEAD = re.compile(
    rf"^{_SAME_WINDOW}?(?:a|one|1)\s+{_EN_UNIT}\s+(?:later|after|on)$"
    rf"|^(?:再)?(?:往|向)?后(?:推|挪|移|延)?{_CJK_UNIT}$"
    rf"|^(?:再)?晚{_CJK_UNIT}$|^(?:推迟|延后|顺延){_CJK_UNIT}$|^{_CJK_ONE_UNIT}(?:之|以)?后(?:的)?$"
    r"|^" + _SAME_WINDOW + r"(?:(?:of\s+|in\s+)?(?:next|the\s+next|the\s+following)\s+|the\s+)"
    r"(day|week|month|quarter|year)(?:\s+after|\s+later)?$"
    r"|^(?:明|下一?|后一)(年)(?:的)?同期(?:的)?$",
    re.I,
)
# the same moves by more than one unit ("two months earlier", "往前推两个月", "三年后")
_MOVE_BY = re.compile(
    rf"^{_SAME_WINDOW}?(?P<n>\d+|two|three|four|five|six|seven|eight|nine|ten|twelve)\s+(?P<unit>day|week|month|quarter|year)s?"
    r"\s+(?P<way>earlier|before|ago|back|prior|later|after|on)$"
    r"|^(?:再)?(?:往|向)?(?P<cway>前|后)(?:推|挪|移)?(?P<cn>\d+|[两二三四五六七八九十])个?(?P<cunit>天|日|周|星期|礼拜|月|季度|年)$"
    r"|^(?P<an>\d+|[两二三四五六七八九十])个?(?P<aunit>天|日|周|星期|礼拜|月|季度|年)(?:之|以)?(?P<away>前|后)(?:的)?$",
    re.I,
)
# "the same months in 2021", "same stretch of 2020", "2021 年同期": the last window in another year
_SAME_IN_YEAR = re.compile(
    rf"^{_SAME_WINDOW}(?:in|of|during)\s+(?P<y>(?:19|20)\d\d)$|^(?P<cy>(?:19|20)\d\d)\s*年的?同期(?:的)?$", re.I
)
_EARLIER = re.compile(
    r"^(?:any(?:thing)?\s+)?(?:earlier|before\s+(?:that|then)|prior\s+to\s+that|even\s+earlier)(?:\s+ones?)?$"
    r"|^(?:更早|再早|之前|在那之前|那之前|以前)(?:的)?$",
    re.I,
)
_LATER = re.compile(
    r"^(?:any(?:thing)?\s+)?(?:later|after\s+(?:that|then)|since\s+then)(?:\s+ones?)?$"
    r"|^(?:更晚|再晚|之后|在那之后|那之后|以后)(?:的)?$",
    re.I,
)


_COUNTS = {word: n for word, n in NUMBER_WORDS.items() if n >= 2}  # "the next three months"


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


# A window said against the last one: "the whole year then", "just the first quarter", "just the first half of the
# month", "April and May together then", "widen it to 2021 and 2022 together", "and 2019 so far?"
_WINDOW_WORDS = re.compile(
    r"\b(?:just|only|then|together|combined|instead|too|please|so\s+far|to\s+date|both|in|during|for|over|"
    r"widen|narrow|extend|expand|change|cut|limit|restrict|make|it|that|this|the\s+window|to|down|and|plus|"
    r"same\s+thing|same\s+question)\b|[\s,&+?？.。!！—–-]",
    re.I,
)
_PART_OF = re.compile(
    r"^(?:(?:just|only|in|during|for)\s+)*(?:the\s+)?(?:(?P<whole>whole|full|entire)\s+(?P<unit>year|month|quarter)"
    r"|(?P<nth>first|second|third|fourth|last)\s+(?P<part>half|quarter|week)(?:\s+of\s+(?:the|that)\s+(?P<of>year|month))?)"
    r"(?:[\s,]+(?:then|only|instead|please))*$",
    re.I,
)
_PLACES = {"first": 0, "second": 1, "third": 2, "fourth": 3, "last": -1}


def _window_said(core: str, previous: dict[str, Any], now: datetime) -> str | None:
    """The new window, as words the time parser reads, of a follow-up that says only a window relative to the
    last one (its part, its whole, or two periods together); None: it says something else too."""
    ranges = [r for r in previous.get("time_ranges", []) if r.get("start")]
    if not ranges:
        return None
    start = datetime.fromisoformat(ranges[0]["start"])
    part = _PART_OF.match(core.strip(" ?？.。!！"))
    if part is not None:
        year = datetime(start.year, 1, 1)
        month = datetime(start.year, start.month, 1)
        if part.group("whole"):
            unit = part.group("unit").lower()
            if unit == "year":
                return _phrase(year, _months(year, 12))
            if unit == "month":
                return _phrase(month, _months(month, 1))
            quarter = _months(year, (start.month - 1) // 3 * 3)
            return _phrase(quarter, _months(quarter, 3))
        nth, piece = _PLACES[part.group("nth").lower()], part.group("part").lower()
        within_month = part.group("of") == "month" or (part.group("of") is None and piece == "week")
        if within_month:
            after = _months(month, 1)
            if piece == "week":
                first = month + timedelta(days=7 * nth) if nth >= 0 else after - timedelta(days=7)
                return _phrase(first, min(first + timedelta(days=7), after)) if first < after else None
            if piece == "half" and nth in (0, 1, -1):
                middle = month + timedelta(days=15)
                return _phrase(month, middle) if nth == 0 else _phrase(middle, after)
            return None
        size = {"half": 6, "quarter": 3}.get(piece)
        if size is None or nth >= 12 // size:
            return None
        return f"the {part.group('nth').lower()} {piece} of {start.year}"
    said = _with_year(_two_months_in_a_year(core, start), previous, now)
    found = find_time_ranges(said, now)
    if not found or len(found) > 2:
        return None
    rest = said
    for time in found:
        rest = rest.replace(time.text, " ")
    if _WINDOW_WORDS.sub("", rest) or (len(found) == 2 and not re.search(r"\b(?:and|plus|to)\b|&|\+", rest, re.I)):
        return None
    if any(t.start is None or t.end is None for t in found):
        return None
    if len(found) == 1 and not re.sub(r"\b(?:in|during|for|over|the)\b|[\s,?？.。!！]", "", rest, flags=re.I):
        return None  # a window said alone: the follow-up's usual reading
    first = min(t.start for t in found if t.start)
    last = max(t.end for t in found if t.end)
    return _phrase(first, last)


def _two_months_in_a_year(core: str, start: datetime) -> str:
    """ "April and May" with no year said: each month of the year asked about."""
    if re.search(r"\b(?:19|20)\d\d\b", core):
        return core
    return _MONTH_NAME.sub(lambda m: f"{m.group(0)} {start.year}", core)


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
    core = re.sub(
        r"^(?:in|for|during|over|from)\s+", "", core, flags=re.I
    )  # "and in the month after that?", "from the month before"
    core = re.sub(r"^(?:跟|和|与|同)\s*|\s*(?:比|相比|比较|对比)(?:一下)?$", "", core)  # "跟前一年比": the year before
    if len(previous.get("people", [])) == 1:
        core = re.sub(r"^(?:他|她|他们|她们)(?:的)?\s*", "", core)  # "他前一年呢": the same person, the year before
    several = re.match(
        rf"^(?:the\s+)?(next|following|previous|prior|preceding)\s+({'|'.join(_COUNTS)}|\d+)\s+{_EN_UNIT}$", core, re.I
    )
    if several:  # "the next three months": that many units right after (before) the last window
        n, unit = _COUNTS.get(several.group(2).lower()) or int(several.group(2)), PERIOD_UNITS[several.group(3).lower()]
        if several.group(1).lower() in ("next", "following"):
            return _phrase(end, _step(end, unit, n))
        return _phrase(_step(start, unit, -n), start)
    moved_by = _MOVE_BY.match(core)
    if moved_by:  # "two months earlier", "往前推两个月", "三年后": the window moved by that many units
        said = {k: v for k, v in moved_by.groupdict().items() if v}
        count = said.get("n") or said.get("cn") or said.get("an") or ""
        n = int(count) if count.isdigit() else _COUNTS.get(count.lower()) or CJK_NUMBERS[count]
        unit = PERIOD_UNITS[(said.get("unit") or said.get("cunit") or said.get("aunit") or "").lower()]
        way = (said.get("way") or said.get("cway") or said.get("away") or "").lower()
        n = -n if way in ("earlier", "before", "ago", "back", "prior", "前") else n
        return _phrase(_step(start, unit, n), _step(end, unit, n))
    same_in = _SAME_IN_YEAR.match(core)
    if same_in:  # "the same months in 2021", "2021 年同期": the window in that year
        n = 12 * (int(same_in.group("y") or same_in.group("cy")) - start.year)
        return _phrase(_months(start, n), _months(end, n))
    for pattern, n, moved in (
        (_NEXT_BACK, -1, False),
        (_NEXT_AHEAD, 1, False),
        (_MOVE_BACK, -1, True),
        (_MOVE_AHEAD, 1, True),
    ):
        m = pattern.match(core)
        if not m:
            continue
        unit = PERIOD_UNITS[next(g for g in m.groups() if g).lower()]
        if moved or _step(start, unit, 1) == end:
            return _phrase(_step(start, unit, n), _step(end, unit, n))
        # a window of another length: the unit right before it (right after it)
        return _phrase(_step(start, unit, -1), start) if n < 0 else _phrase(end, _step(end, unit, 1))
    return None


def _shift_at_end(words: str, previous: dict[str, Any]) -> tuple[str, str] | None:
    """A question that ends by moving the last window ("how many did X open the year before"): the words
    before it, and the moved window as words."""
    spaces = [m.start() for m in re.finditer(r"\s", words)]
    for at in spaces[-5:]:
        tail = words[at + 1 :].strip(" ?？")
        moved = _shifted(tail, previous) if len(tail.split()) >= 2 else None
        if moved is not None:
            return words[:at].strip(), moved
    return None


# Picking one of the candidates the last turn offered for a name it could not tell apart:
# "the first one", "第二个", "2", "I meant achen42", "Alex Morgan", "我说的是陈静".
_ORDINALS = {
    "first": 0,
    "1st": 0,
    "second": 1,
    "2nd": 1,
    "third": 2,
    "3rd": 2,
    "fourth": 3,
    "4th": 3,
    "fifth": 4,
    "5th": 4,
    "last": -1,
    "一": 0,
    "二": 1,
    "两": 1,
    "三": 2,
    "四": 3,
    "五": 4,
    "最后一": -1,
}
_ORDINAL = re.compile(
    r"^(?:the\s+)?(?P<en>first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last)(?:\s+(?:one|person|candidate))?$"
    r"|^(?:number\s+|no\.?\s*|#)?(?P<digit>[1-9])$|^第?(?P<cjk>一|二|两|三|四|五|最后一)个(?:人)?$"
    r"|^第(?P<cjkdigit>[1-9])个?(?:人)?$",
    re.I,
)
# "no,", "sorry:", "oh right," before a correction
_INTERJECTIONS = r"(?:(?:no|sorry|oops|oh|ah|nope|right|ok(?:ay)?|yes|yeah)[\s,:;.!]+)"
_MEANT = re.compile(
    rf"^{_INTERJECTIONS}*(?:i\s+meant?|meant|i\s+was\s+asking\s+about"
    r"|i(?:'m|\s+am|\s+was)\s+thinking\s+of|the\s+one\s+(?:called|named)|make\s+(?:it|that)"
    r"|(?:he|she|they)\s+(?:goes|go)\s+by"  # "oh, he goes by sgugger"
    r"|(?:his|her|their|the)\s+(?:github\s+|slack\s+)?(?:login|user\s?name|handle|account|id)\s+"
    r"(?:here\s+|there\s+|on\s+(?:github|slack)\s+)?(?:is|was|'s))"
    r"\s+(?:the\s+)?(?:(?:login|user(?:name)?|handle|account|person)\s+)?@?"
    r"|^(?:我)?(?:说的是|指的是|是说|要的是)|^是",
    re.I,
)

# "no wait, I meant ...", "actually, make that ...", "不对，我说的是 ...": a correction of the last question
# (after a turn that declined a name, the same words pick a candidate instead)
_CORRECTION = re.compile(
    rf"^{_INTERJECTIONS}*(?:(?:wait|hold\s+on|actually|scratch\s+that|my\s+bad)[\s,:;.!]+)*"
    r"(?:i\s+meant?|what\s+i\s+meant\s+(?:was|is)|i\s+was\s+asking\s+about|make\s+(?:it|that))[\s,:]+"
    r"|^(?:不是|不对|不)[，,\s]*(?:我)?(?:说的是|指的是|是说|要的是|要|是)\s*",
    re.I,
)

# "the racket one", "elmlang 那个", "I meant the one on clojurians": a candidate by where they were seen.
_PLACE = re.compile(
    r"^(?:i\s+meant\s+)?(?:(?:the\s+)?(?:one|[\w\-]+)\s+(?:on|in|from|at|of)\s+(?:the\s+)?(?P<a>[\w\-]+)"
    r"(?:\s+(?:one|slack|workspace|community))?"
    r"|(?:the\s+)?(?P<b>[\w\-]+)\s+one|(?P<c>[\w\-]+)\s*(?:上|里|中)?的?(?:那个|那位|这位|这个)(?:人)?"
    r"|(?P<d>[\w\-]+)\s*(?:上|里|中)?的\s*[\w\-]+)$",
    re.I,
)


def _pick(core: str, candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    place = _PLACE.match(core)
    if place:  # "the racket one"; "the elm one" for elmlang: a place it names or begins
        where = next(g for g in place.groups() if g).lower()
        there = [c for c in candidates if where in {str(p).lower() for p in c.get("places", [])}] or [
            c for c in candidates if any(str(p).lower().startswith(where) for p in c.get("places", []))
        ]
        if len(there) == 1:
            return there[0]
    m = _ORDINAL.match(core)
    if m:
        if m.group("digit") or m.group("cjkdigit"):
            index = int(m.group("digit") or m.group("cjkdigit")) - 1
        else:
            index = _ORDINALS[(m.group("en") or m.group("cjk")).lower()]
        return candidates[index] if -len(candidates) <= index < len(candidates) else None
    # "julien-c, the one from HF", "VictorSanh on GitHub", "mariosasko is who I had in mind": the name
    said = re.sub(rf"^{_INTERJECTIONS}+", "", core, flags=re.I)
    who = (
        re.sub(
            r"\s*[,，(].*$|\s+on\s+(?:github|slack|the\s+\w+\s+slack)$|\s+is\s+(?:who|the\s+one)\s+I\s+(?:had\s+in\s+mind|meant|mean)$",
            "",
            _MEANT.sub("", said, count=1),
            flags=re.I,
        )
        .strip()
        .lower()
    )
    if not who:
        return None
    exact = [c for c in candidates if who in {str(v).lower() for v in c.values() if isinstance(v, str)}]
    if len(exact) == 1:
        return exact[0]
    words = set(who.split())
    partial = [c for c in candidates if words <= set(str(c.get("name", "")).lower().split())]
    return partial[0] if len(partial) == 1 else _by_what_was_shown(core, candidates)


# The words a pick may say besides what the candidate list showed ("I mean Evonne from clojurians",
# "oh, he goes by sgugger", "是 racket 那边的 Derick"): an allow-list, so a pick with any other word
# ("Danna's threads in 2018") is a question of its own, not a pick.
_PICK_WORDS = frozenset(
    "i i'm im mean meant meaning the one that this who is was it's its he she they he's she's goes go by called "
    "named person guy user account login handle username id on in from at of over there here workspace slack "
    "community oh ah no nope sorry yes yeah ok okay right actually well um uh just thinking asking about "
    "his her their".split()
)
_PICK_CJK = re.compile(
    r"(?:我|说|的|是|指|要|找|问|那个|那位|这个|这位|那边|这边|那里|这里|上|里|中|在|人|嗯|哦|不|对|啊"
    r"|工作区|工作空间|空间|社区|频道|群)*"
)
_PICK_TOKEN = re.compile(r"[A-Za-z0-9][\w\-.']*[\w]|[A-Za-z0-9]")


def _by_what_was_shown(core: str, candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The one candidate every shown attribute the pick says belongs to (its name, key, handles,
    workspaces, or the start of a workspace): "the clojurians Danna", "elmlang 那个 Velia", "Epifania
    over on clojurians", "he goes by sgugger". None unless the pick says only such attributes and the
    allowed words, and they leave exactly one candidate."""
    if _PICK_CJK.fullmatch(re.sub(r"[\s,，.。!！?？:：;；'’\"()（）@]+", "", _PICK_TOKEN.sub("", core))) is None:
        return None
    left = list(candidates)
    said = False
    for token in (t.lower() for t in _PICK_TOKEN.findall(core)):
        fitting = [c for c in left if _shows(c, token)]
        if fitting:
            left, said = fitting, True
        elif token not in _PICK_WORDS:
            return None
    return left[0] if said and len(left) == 1 else None


def _shows(candidate: dict[str, Any], token: str) -> bool:
    shown = {str(v).lower() for v in candidate.values() if isinstance(v, str)}
    shown |= {w for v in list(shown) for w in v.split()}
    places = [str(p).lower() for p in candidate.get("places", [])]
    return token in shown or any(p == token or (len(token) >= 3 and p.startswith(token)) for p in places)


def _without_people(words: str, previous: dict[str, Any]) -> str:
    """The words without the names of the people the last question was about: "Nelson 2018 年呢" after
    a question about Nelson moves only its time."""
    names = [*previous.get("people_text", []), *previous.get("people", [])]
    for name in sorted(names, key=len, reverse=True):  # "Rashid Khan" before the "Rashid" inside it
        if name:
            words = re.sub(rf"(?<!\w){re.escape(name.lower())}(?:['’]s)?(?!\w)", " ", words)
    return words


def _replace_people(previous: dict[str, Any], name: str) -> str:
    """The last question about someone else: the words that named its person (or the name it could not
    tell apart: "same question for Ruthe" after "Bertha's" was ambiguous) replaced, a possessive kept."""
    text = previous["standalone"]
    for old in [*previous.get("people_text", []), previous.get("unresolved") or ""]:
        if old and old in text:
            possessive = re.search(r"['’]s$", old) and not re.search(r"['’]s$", name)
            return text.replace(old, name + ("'s" if possessive else ""), 1)
    return f"{text.rstrip('?？ ')} by {name}"


def _replace_time(previous: dict[str, Any], when: str) -> str:
    text = previous["standalone"]
    for old in previous.get("times", []):
        if old and old.lower() in text.lower():
            at = text.lower().index(old.lower())
            before, after = text[:at], text[at + len(old) :]
            if when.isascii():  # "between 2026-11-16 and 2026-11-22" set apart from the Chinese around it
                before = before + " " if before and HAN.match(before[-1]) else before
                after = " " + after if after and HAN.match(after[0]) else after
            if _ENDS_WITH_PREPOSITION.search(before):  # "PRs from 2022" -> "PRs from 2021", not "from in 2021"
                when = _PREPOSITION_OF_TIME.sub("", when)
            return before + when + after
    return f"{text.rstrip('?？ ')} {when}"


_MONTH_NAME = re.compile(r"\b(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b\.?(?!\s*\d)", re.I)
_CJK_MONTH = re.compile(r"(?<![年\d])((?:\d{1,2}|[一二三四五六七八九十]+)\s*月)")


_MONTH_OF_THAT_YEAR = re.compile(
    r"\b(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b\.?\s+(?:of\s+|in\s+)?(?:that|the\s+same)\s+year\b",
    re.I,
)
_CJK_THAT_YEARS_MONTH = re.compile(
    r"(?:那年|那一年|同年|同一年|当年)的?\s*(?=(?:\d{1,2}|[一二三四五六七八九十]+)\s*月)"
)


def _with_year(when: str, previous: dict[str, Any], now: datetime) -> str:
    """A month said alone after a question dated in one year is that year's month ("and in July?"
    after "August 2017" is July 2017, not the last July before now), unless that month has not come
    yet ("what about December?" after last month, January 2025: December 2024)."""
    ranges = [r for r in previous.get("time_ranges", []) if r.get("start")]
    if not ranges or re.search(r"\b(?:19|20)\d\d\b|年", when.replace("月", "").replace("半年", "")):
        return when
    year = datetime.fromisoformat(ranges[0]["start"]).year
    if re.fullmatch(r"(?:上|下)半年", when.strip()):  # "下半年呢？" after "2024 年上半年": of 2024
        return f"{year} 年{when.strip()}"
    if re.search(r"\bof (?:the|that) year\b", when, re.I):  # "the second half of the year": of the year asked about
        return re.sub(r"\bof (?:the|that) year\b", f"of {year}", when, flags=re.I)
    if re.search(r"\b(?:first|second) half$", when, re.I):  # "and in the first half?"
        return f"{when} of {year}"
    month = _MONTH_NAME.search(when)
    if month:
        if datetime(year, MONTHS[month.group(1).lower()], 1) > now:
            year -= 1
        return _MONTH_NAME.sub(lambda m: f"{m.group(0)} {year}", when, count=1)
    return _CJK_MONTH.sub(lambda m: f"{year} 年 {m.group(1)}", when, count=1)


# "that February", "the month after that February", "the week before that March": a month the conversation named,
# or a window next to it
_THAT_MONTH = re.compile(
    r"(?:\b(?:the|a)\s+(?P<unit>day|week|month|quarter|year)\s+(?P<way>after|before|following|preceding|prior\s+to)\s+)?"
    r"\bthat\s+(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b\.?",
    re.I,
)


def _that_month(core: str, turns: list[dict[str, Any]]) -> FollowUp | None:
    """ "how many issues got completed the month after that February?": the question with that month said as the
    February the conversation was about last (or the window it names next to it), read as a question of its own.
    None when no turn was about a month of that name."""
    said = _THAT_MONTH.search(core)
    if said is None:
        return None
    month = MONTHS[said.group("month").lower()]
    spans = [
        (datetime.fromisoformat(r["start"]), datetime.fromisoformat(r["end"]))
        for turn in reversed(turns)
        for r in turn.get("time_ranges") or []
        if r.get("start") and r.get("end")
    ]
    start, end = next(
        ((a, b) for a, b in spans if a.month == month and a.day == 1 and b == _months(a, 1)), (None, None)
    )
    if start is None or end is None:
        return None
    if said.group("unit"):
        unit = said.group("unit").lower()
        after = said.group("way").lower() in ("after", "following")
        start, end = (end, _step(end, unit, 1)) if after else (_step(start, unit, -1), start)
    when = _phrase(start, end)
    if _ENDS_WITH_PREPOSITION.search(core[: said.start()]):  # "in that February": "in February 2024"
        when = _PREPOSITION_OF_TIME.sub("", when)
    text = re.sub(r"\s{2,}", " ", f"{core[: said.start()]} {when} {core[said.end() :]}").strip()
    return FollowUp(text, f"{said.group(0).strip()!r} = {_PREPOSITION_OF_TIME.sub('', when)}")


# "the other Deb", "另一个 Deb 呢": the candidate of an earlier decline that was not picked
_THE_OTHER = re.compile(
    r"^(?:the\s+other(?:\s+one)?|另一个|另一位|另外一个|另外一位|另外那个|另外那位)\s*(?P<name>[^\W\d_][\w'\-]*)?(?:\s*呢)?",
    re.I,
)
# What may be said besides the time of the other candidate's same question: their place, a pronoun, and the words
# of a count ("elmlang 上的，她三月发了几条", "the other Deb, on elmlang — how many did she post in March?")
_OTHER_SAID = re.compile(
    r"\b(?:on|in|from|over\s+on|the\s+one\s+(?:on|in|from)|how\s+many|did|does|has|she|he|they|her|his|their|post(?:ed)?"
    r"|wr[io]te|send|sent|messages?|posts?|then|one)\b|上的|上|那边的|那个|那位|的|她|他|发了|发过|发|几条|多少条?|几个|一共|总共|有"
    r"|[\s,，.。:：;；!！?？—–-]",
    re.I,
)


def _the_other_candidate(core: str, turns: list[dict[str, Any]], now: datetime) -> FollowUp | None:
    """ "另一个 Deb 呢，elmlang 上的，她三月发了几条？" after a decline offered two Debs and the clojurians one was picked:
    the last question about the other one (their place for the picked one's), at the time said. Words besides their
    place, a pronoun, a time and a count's are said as not read."""
    said = _THE_OTHER.match(core)
    if said is None:
        return None
    name = (said.group("name") or "").lower()
    for i in range(len(turns) - 1, -1, -1):
        declined = turns[i]
        candidates = declined.get("candidates") or []
        if candidates and declined.get("unresolved") and (not name or name == declined["unresolved"].lower()):
            break
    else:
        return None
    later = " ".join(t.get("standalone", "") for t in turns[i + 1 :])
    picked = [c for c in candidates if re.search(rf"(?<!\w){re.escape(c['key'])}(?!\w)", later)]
    rest = core[said.end() :]
    others = [c for c in candidates if c not in picked]
    shown = [c for c in others if any(_shows(c, t.lower()) for t in _PICK_TOKEN.findall(rest))]
    others = shown if len(others) > 1 else others
    text = turns[-1]["standalone"]
    if len(picked) != 1 or len(others) != 1 or picked[0]["key"] not in text:
        return None
    other = others[0]
    text = text.replace(picked[0]["key"], other["key"])
    places = [str(p) for p in other.get("places") or []]
    for place in picked[0].get("places") or []:  # "in clojurians" for the other one's "in elmlang"
        if len(places) == 1 and str(place) not in places:
            text = re.sub(rf"(?<!\w){re.escape(str(place))}(?!\w)", places[0], text)
    for place in places:
        rest = re.sub(rf"(?<!\w){re.escape(place)}(?!\w)", " ", rest, flags=re.I)
    times = find_time_ranges(rest, now)
    how = f"{said.group(0).strip()!r} = {other['key']}, the other one offered for {declined['unresolved']!r}"
    if times:
        when = _with_year(times[0].text, turns[-1], now)
        text = _replace_time({**turns[-1], "standalone": text}, when)
        rest = rest.replace(times[0].text, " ")
    unread = _OTHER_SAID.sub(" ", rest).strip()
    return FollowUp(text, how, unread=re.sub(r"\s{2,}", " ", unread))


# The words that set a person's place beside their name: "elmlang 的 Huong", "Huong from elmlang", "Huong on elmlang"
_PLACE_WORDS = re.compile(r"\b(?:from|on|in|at|over\s+on|of)\b|上的|那边的|那儿的|里的|的|那个|那位|[\s,，]", re.I)


def _person_at_place(core: str, previous: dict[str, Any], directory: PeopleDirectory | None) -> FollowUp | None:
    """ "換成 elmlang 的 Huong 呢", "what about Huong from elmlang?": the last question about that person in that place
    (a Slack workspace they were seen in): the person switched, the place as the one condition added. Only a name and
    one of its places, with the words that join them."""
    if directory is None or not previous.get("collection"):
        return None
    named = _PREPOSITION.sub("", core)
    mentions = [m for m in directory.find_mentions(named) if not m.is_asker and (m.person or m.candidates)]
    if len(mentions) != 1:
        return None
    mention = mentions[0]
    place = _PLACE_WORDS.sub(" ", f"{named[: mention.start]} {named[mention.end :]}").strip()
    people = [p for p in ([mention.person] if mention.person else mention.candidates) if place in p.places]
    if not place or " " in place or len(people) != 1:
        return None
    person = people[0]
    name = mention.text if mention.person is not None else person.key  # a name others share: by their key
    text = _replace_people(previous, name)
    places = {p for someone in directory.people for p in someone.places}
    for other in set(re.findall(r"[\w-]+", text)) & places - {place}:  # "in clojurians" said as "in elmlang"
        text = re.sub(rf"(?<![\w-]){re.escape(other)}(?![\w-])", place, text)
    return FollowUp(text, f"the same question about {name}, in {place}", added=f"in {place}", person=name)


# "list April's macro threads too", "and May's ones?": the last records, of that month
_MONTHS_RECORDS = re.compile(
    r"^(?:(?P<verb>list|show(?:\s+me)?|give\s+me)\s+)?(?:the\s+)?(?P<month>"
    + "|".join(sorted(MONTHS, key=len, reverse=True))
    + r")['’]s\s+(?P<words>.+?)(?:\s+(?:too|as\s+well|also|then))?$",
    re.I,
)


def _months_records(core: str, previous: dict[str, Any], now: datetime) -> FollowUp | None:
    """ "list April's macro threads too" after March's macro threads (or one of them): the same records in April of
    the year asked about. Only when every word said of them is a word of the last question ("macro" of "macros")."""
    said = _MONTHS_RECORDS.match(core)
    if said is None or not previous.get("times"):
        return None
    asked = previous["standalone"].lower()
    words = [w for w in re.findall(r"[a-z]+", said.group("words").lower()) if w not in ("ones", "one", "the")]
    if not all(re.search(rf"\b{re.escape(w.rstrip('s'))}", asked) for w in words):
        return None
    when = _with_year(f"in {said.group('month')}", previous, now)
    return FollowUp(
        _replace_time(previous, when),
        f"the same records for {when!r}",
        new_time=when,
        reshape="list" if said.group("verb") else "",
    )


_SWITCHED_TO = re.compile(r"换成|換成|改成|换为|換為|\binstead\b|\bswitch\s+to\b", re.I)


def _place_switched(
    question: str, core: str, turns: list[dict[str, Any]], directory: PeopleDirectory | None
) -> FollowUp | None:
    """ "換成 elmlang 呢" after a question that named no workspace (about the person the one before ranked first): the
    latest question that named one, with this one instead — a place switched to replaces a place said, not nothing."""
    if directory is None or not _SWITCHED_TO.search(question):
        return None
    places = {p for someone in directory.people for p in someone.places}
    if core not in places:
        return None

    def place_of(turn: dict[str, Any]) -> str:
        filters = ((turn.get("plan") or {}).get("ir") or {}).get("filters") or []
        return next((str(f.get("value")) for f in filters if str(f.get("value")) in places), "")

    if place_of(turns[-1]):
        return None  # the last question's own place is the one replaced
    for kept in range(len(turns) - 1, 0, -1):
        was = place_of(turns[kept - 1])
        if was and was != core:
            text = re.sub(rf"(?<![\w-]){re.escape(was)}(?![\w-])", core, turns[kept - 1]["standalone"])
            how = f"back to the question about {was}, {core} instead"
            return FollowUp(text, how, added=core, resumed=(kept, core))
    return None


# What a follow-up may say around a new person to ask the same question about them, time included
# ("what about zaidalyafeai in that same year", "does richarddwang have any like that?", "Onita 也有类似的吗"):
# an allow-list, so any other word ("how many PRs did Lars open") makes a question of its own.
_SAME_QUESTION_WORDS = frozenset(
    "does do did has have had got any anything ones one like that those them this same similar too also as well "
    "for by from with about of in during over the 's year month week quarter period time frame".split()
)
_SAME_QUESTION_CJK = re.compile(
    r"(?:也|有|没有|类似|一样|同样|这样|那样|的|吗|呢|在|那年|同一年|同年|当年|那个月|当月|同一个月)*"
)


def _only_the_same_question(rest: str, before: str = "") -> bool:
    """`rest` says nothing but the allowed words and words of the last question `before` ("and the ones
    lhoestq closed" after "issues closed by albertvillanova in 2023")."""
    said = re.findall(r"[a-z][a-z']*", rest.lower())
    others = re.sub(r"[A-Za-z']+|[\s?？,，.。!！]+", "", rest)
    known = _SAME_QUESTION_WORDS | set(re.findall(r"[a-z][a-z']*", before.lower()))
    return all(w in known for w in said) and _SAME_QUESTION_CJK.fullmatch(others) is not None


# "separate question: ...", "totally different question: ...", "side question: ...", "on another note, ...", "换个问题": a question of
# its own.
_NEW_QUESTION = re.compile(
    r"^\s*(?:(?:a\s+)?(?:(?:totally|completely|entirely|quite|very|something)\s+)?(?:separate|different|new|another|unrelated|other|side|quick|random)\s+(?:question|topic|thing|one|q)\b"
    r"|on\s+(?:another|a\s+different|an\s+unrelated)\s+note|unrelated|changing\s+(?:the\s+)?(?:topic|subject)"
    r"|换个(?:问题|话题)|另一个问题|题外话|插一句|(?:另外|顺便|顺带)(?:问(?:一)?下)?|by\s+the\s+way|btw)\s*[:：,，.;—-]*\s*",
    re.I,
)


# "with the dataset-viewer label instead", "换成 bug 标签": read on the question as said (`_core` drops "instead")
_INSTEAD = re.compile(r"\binstead\b|\brather\b|换成|改成|换为", re.I)
# "and for dataset contribution?": the same question for another value
_FOR_VALUE = re.compile(r"^\s*(?:(?:and|what\s+about|how\s+about)\s+)?for\s+(?!more\b|less\b|at\s+least\b)", re.I)


def resolve_offline(
    question: str,
    turns: list[dict[str, Any]],
    directory: PeopleDirectory | None,
    now: datetime,
    kinds: Registry | None = None,
) -> FollowUp:
    """`turns`: the thread's earlier turns ({standalone, people, people_text, times, refs, answer_people}),
    oldest first; empty on a new thread. `kinds`: the tenant's kinds (default: the built-in ones)."""
    out = _read(question, turns, directory, now, kinds or builtin_registry())
    words = out.added or out.restated
    return replace(out, replacing=bool(words and (_INSTEAD.search(question) or _FOR_VALUE.match(words))))


def _read(
    question: str, turns: list[dict[str, Any]], directory: PeopleDirectory | None, now: datetime, kinds: Registry
) -> FollowUp:
    """The follow-up as the rules read it; `resolve_offline` adds what is read on the question as said."""
    if not turns:
        return FollowUp(question)
    new = _NEW_QUESTION.match(question)
    if new and question[new.end() :].strip():
        return FollowUp(question[new.end() :].strip(), "a new question")
    if _ANYONE.match(question.strip(" ?？.。!！")):  # the last question about anyone: its people's names left out
        text = turns[-1]["standalone"]
        for name in sorted({*turns[-1].get("people_text", []), *turns[-1].get("people", [])}, key=len, reverse=True):
            text = re.sub(rf"(?<!\w)(?:by\s+|from\s+)?{re.escape(name)}(?:['’]s)?(?!\w)", " ", text, flags=re.I)
        text = re.sub(r"\s{2,}", " ", text).strip()
        return FollowUp(text, "the last question, from anyone", dropped="anyone", resumed=(len(turns), ""))
    # "and for April that year?", 那年 4 月呢: a month of the year asked about, which a month said alone is
    question = _MONTH_OF_THAT_YEAR.sub(r"\1", _CJK_THAT_YEARS_MONTH.sub("", question))
    drop = _drop_clause(question.strip(" ?？.。!！"))
    if drop is not None:
        what, rest = drop
        out = resolve_offline(rest, turns, directory, now, kinds) if rest else FollowUp(turns[-1]["standalone"])
        how = f"without {what!r}; {out.how}".rstrip("; ")
        return replace(out, how=how, dropped=what, resumed=out.resumed or (len(turns), rest))
    back = _BACK_TO.match(question.strip())
    if back:
        what, rest = back.group("what") or back.group("what_zh"), back.group("rest") or back.group("rest_zh")
        return _resumed(what.strip(), rest.strip(), turns, directory, now, kinds)
    previous = turns[-1]
    if previous.get("listed"):
        # after an answer about one record of a list, words said of the records are said of that list ("and his
        # 2022 ones?", "which of those add video support?"); what the answer itself was stays `asked`
        said_of = {k: v for k, v in previous["listed"].items() if k not in ("refs", "titles")}
        previous = {**previous, **said_of, "asked": previous["standalone"]}
        turns = [*turns[:-1], previous]
    core = _core(question)
    if not core:
        return FollowUp(question)
    candidates = previous.get("candidates") or []
    if candidates and previous.get("unresolved"):
        chosen = _pick(core, candidates)
        if chosen is not None:
            # a candidate named by a name others share is written by its unique key
            name = chosen.get("name") or chosen["key"]
            if sum((c.get("name") or c["key"]) == name for c in candidates) > 1:
                name = chosen["key"]
            text = previous["standalone"].replace(previous["unresolved"], name, 1)
            return FollowUp(text, f"{previous['unresolved']!r} = {name} ({chosen['key']}), of the candidates offered")
    if previous.get("unresolved") and _MEANT.match(core) and directory is not None:
        # "I meant lhoestq" after a name the data does not hold: someone else than the candidates
        meant = _MEANT.sub("", core, count=1).strip()
        found = [m for m in directory.find_mentions(meant) if m.person is not None and not m.is_asker]
        if len(found) == 1 and found[0].text == meant:
            text = previous["standalone"].replace(previous["unresolved"], meant, 1)
            return FollowUp(text, f"{previous['unresolved']!r} = {meant}")
    that_month = _that_month(core, turns)
    if that_month is not None:
        return that_month
    other_one = _the_other_candidate(core, turns, now)
    if other_one is not None:
        return other_one
    at_place = _person_at_place(core, previous, directory)
    if at_place is not None:
        return at_place
    months = _months_records(core, previous, now)
    if months is not None:
        return months
    place_switched = _place_switched(question, core, turns, directory)
    if place_switched is not None:
        return place_switched
    by_name = _named_record(core, previous, kinds, directory, now)
    if by_name is not None:
        return by_name
    correction = _CORRECTION.match(core)
    if correction and core[correction.end() :].strip():
        core = core[correction.end() :].strip()  # "no wait, I meant the closed ones": the last question, corrected
    other = _other_kind(question, core, previous, kinds, bool(correction or _SWITCH_SAID.search(question)))
    if other is not None:
        return FollowUp(
            _with_kind(previous, other, kinds), f"the same question about {other.plural}", collection=other.name
        )
    combined = _combined(core, turns, directory, now, kinds)
    if combined is not None:
        return combined
    shifted = _shifted(core, previous)
    if shifted is not None:
        return FollowUp(_replace_time(previous, shifted), f"the same question for {shifted!r}", new_time=shifted)
    window = _window_said(core, previous, now)
    if window is not None:
        return FollowUp(_replace_time(previous, window), f"the same question for {window!r}", new_time=window)
    place = _PLACE_IN_RANKING.search(core)
    # the people of the thread's latest ranking (an answer grouped per person), in its order
    ranked = next(
        (t.get("answer_people") or [] for t in reversed(turns) if (t.get("answer_groups") or {}).get("keys")), []
    )
    if place is None and ranked and previous.get("answer_people") == ranked and not previous.get("refs"):
        place = _NTH_ONE.search(core)  # "the third one" right after a ranking of people: its third person
    if place and ranked:
        # "the number two on that list", "第一名", "the one in third place": that person of the last ranking,
        # named, and the question read as if the name had been said
        said = next(g for g in place.groups() if g).lower()
        index = _ORDINALS.get(said, int(said) - 1 if said.isdigit() else _NUMBER_PLACES.get(said, len(ranked)))
        if -len(ranked) <= index < len(ranked):
            named = f"{core[: place.start()]}{ranked[index]}{core[place.end() :]}"
            out = resolve_offline(named, turns, directory, now, kinds)
            shift = None if out.how else _shift_at_end(named, previous)
            if shift is not None:  # "how many did the one in first place open the year before?": asked whole
                out = FollowUp(f"{shift[0]} {shift[1]}", f"the time moved: {shift[1]!r}")
            out = replace(out, how=f"{place.group(0).strip()!r} = {ranked[index]}; {out.how}".rstrip("; "))
            if shift is not None:
                return out
            groups = previous.get("answer_groups") or {}
            rest = _THEIRS.sub(" ", f"{core[: place.start()]} {core[place.end() :]}")
            rest = re.sub(r"\s{2,}", " ", _STILL.sub("", rest.strip(" ,，:：;"))).strip(" ,，:：;的")
            keys = groups.get("keys") or [] if previous.get("answer_people") == ranked else []
            if rest and -len(keys) <= index < len(keys):
                # "the one in third place, how many of theirs are open": the last ranking's records of that
                # person, with the rest said of them
                return replace(out, within=(groups["field"], groups["keys"][index]), added=rest, reshape="")
            return out
    leader = _LEADER.match(core)
    kept = next((i for i in range(len(turns), 0, -1) if (turns[i - 1].get("answer_groups") or {}).get("keys")), 0)
    if leader and kept:
        # "and who was number one the month before?" after the ranking (and a count of it): that ranking, its
        # window moved
        ranking = turns[kept - 1]
        rest = core[leader.end() :].strip(" ,，?？")
        shifted = _shifted(rest, ranking) if rest else None
        if shifted is not None:
            return FollowUp(
                _replace_time(ranking, shifted),
                f"the last ranking for {shifted!r}",
                new_time=shifted,
                resumed=(kept, rest),
            )
    top = _TOP_N.match(core)
    if top:  # "show me the top five instead": the last ranking, that many places
        n = top.group(1) or str(CJK_NUMBERS.get(top.group(2), top.group(2)))
        return FollowUp(f"top {n}: {previous['standalone'].rstrip('?？。. ')}", f"the last ranking, top {n}")
    moved_then_reshaped = _moved_then_reshaped(core, previous)
    if moved_then_reshaped is not None:
        return moved_then_reshaped
    if _PRONOUN.match(core):
        asked = set(previous.get("people", []))
        earlier = [p for turn in reversed(turns[:-1]) for p in turn.get("people", [])]
        others = [p for p in [*earlier, *previous.get("answer_people", [])] if p not in asked]
        if not others:
            return FollowUp(question)
        return FollowUp(_replace_people(previous, others[0]), f"{core!r} = {others[0]}", person=others[0])
    times = find_time_ranges(core, now)
    if times and times[0].text.strip().lower() == _PREPOSITION.sub("", core).strip().lower() and previous.get("times"):
        when = _with_year(
            times[0].text, previous, now
        )  # "what about April?": the month, though someone is called April
        return FollowUp(_replace_time(previous, when), f"the same question for {when!r}", new_time=when)
    if directory is not None:
        named = _PREPOSITION.sub("", core)
        mentions = [m for m in directory.find_mentions(named) if m.person is not None and not m.is_asker]
        # "and the April ones?": the month, though someone is called April
        mentions = [m for m in mentions if not any(m.text.lower() in t.text.lower() for t in times)]
        if len(mentions) == 1 and (
            len(named) - (mentions[0].end - mentions[0].start) <= 3
            or _only_the_same_question(
                named[: mentions[0].start] + " " + named[mentions[0].end :], previous["standalone"]
            )
        ):
            name = mentions[0].text
            return FollowUp(_replace_people(previous, name), f"the same question about {name}", person=name)
        if not mentions and previous.get("people") and _NAME_ALONE.match(named) and not times:
            # "and for Zebulon?" after a question about someone: the same question about a name nobody has,
            # declined with candidates as a first question naming them is
            return FollowUp(_replace_people(previous, named), f"the same question about {named}", person=named)
    if (
        times
        and len(
            re.sub(
                r"\b(?:in|on|during|since|for|from|of|the|ones?|those|that|them|threads?|messages?|posts?|prs?|"
                r"back|again|instead|too|also|then|his|her|hers|their|theirs|"
                r"figures?|numbers?|counts?|totals?|"
                r"pull\s+requests?|issues?|look\s+like|what\s+did|how\s+about|was\s+it)\b|在|的|那",
                "",
                _without_people(core.lower().replace(times[0].text.lower(), ""), previous),
            ).strip(" ?？")
        )
        <= 1
    ):
        when = _with_year(times[0].text, previous, now)
        return FollowUp(_replace_time(previous, when), f"the same question for {when!r}", new_time=when)
    about = _ANY_ABOUT.match(core)
    if about:
        topic = f"about {about.group(1).strip()}"  # "有没有关于 X 的": those records, listed
        was_counted = bool(_COUNTED.search(previous["standalone"]))
        return FollowUp(
            _narrowed(previous, topic, was_counted), f"of the last answer's records: {topic!r}", topic, reshape="list"
        )
    ranked_ones = _of_the_ranked(core, previous)
    if ranked_ones is not None:
        return ranked_ones
    hers = _OF_HERS.match(core)
    if hers and any(t.get("people") for t in turns):  # "how many of hers are still open": of the last records, hers
        core = f"{hers.group(1)} of those {hers.group(2)}".strip()
    did = _DID_SUBSET.match(core)
    if did:  # "which of those did Priya open": those that Priya opened (not the open ones)
        rest = "that " + _RECORD_VERB.sub(lambda m: _past(m.group(0).lower()), did.group(1))
        return FollowUp(_narrowed(previous, rest, True), f"of the last answer's records: {rest!r}", rest)
    subset = _SUBSET.match(core)
    if subset:
        said = {k: v for k, v in subset.groupdict().items() if v is not None}
        counting = said.pop("counting", "").lower()
        if "h" in said:  # "only counting the merged ones", "just listing those with 3+ replies"
            said = {
                "h": re.sub(
                    r"\s{2,}",
                    " ",
                    re.sub(r"\b(?:ones?|those|these)\b(?:\s+(?:that|which)(?:\s+are)?)?", " ", said["h"]),
                )
            }
        if "krest" in said:  # "which of the open ones has the most comments": "are open and has the most comments"
            said = {"k": f"are {said['k']} and {said['krest']}"}
        rest = _NEGATED.sub("not ", _STILL.sub("", next(iter(said.values()), "")).strip())
        rest = _added_thing(_cjk_topic(_one_extreme(rest)))
        if _MONTH_NAME.search(rest) or _CJK_MONTH.search(rest):  # "those March ones": March of the year asked about
            rest = _with_year(rest, previous, now)
        if _COUNT_IT.match(rest):  # "这些有几个": those, counted
            return _counted(previous)
        if rest and re.match(r"^which\s+(?:one\s+)?(?:of|among)\b", core, re.I) and _HAS_SHAPE.search(rest):
            rest = f"which one of them {rest}"  # "which of those has the most comments": one record
        elif rest and _WHICH_ONE_CJK.search(core) and _HAS_SHAPE.search(rest):
            rest = f"which one {rest}"  # "其中哪个评论最多": one record
        if rest and counting.startswith("count"):  # "only counting the ones with 3+ replies": those, counted
            counted = _counted({**previous, "standalone": _narrowed(previous, rest)})
            return replace(counted, how=f"of the last answer's records: {rest!r}, counted", added=rest)
        if rest:
            # "which of those ...", "其中哪些 ...", "其中标了 bug 的是哪些": the records themselves
            listed = bool(
                re.match(r"^(?:(?:of|among)\s+(?:those|these|them)[\s,]*)?(?:which|what)\b|^哪些", core, re.I)
                or _WHICH_ONES_CJK.search(core)
            )
            listed = listed or bool(_ANY_OF_THEM.match(core) and not _COUNTED.search(core))
            listed = listed or counting.startswith("list")
            return FollowUp(
                _narrowed(previous, rest, listed),
                f"of the last answer's records: {rest!r}",
                rest,
                reshape="list" if listed else "",
            )
    if _AUTHOR_OF_IT.match(core) and previous.get("refs"):
        noun = _noun(kinds, previous.get("collection"))
        verb = "posted" if previous.get("collection") == "messages" else "opened"
        return FollowUp(
            " ".join(w for w in ("who", verb, noun, previous["refs"][0]) if w), f"the author of {previous['refs'][0]}"
        )
    nth = _NTH_RECORD.search(core)
    if nth and previous.get("refs") and not previous.get("unresolved"):
        # "who opened the second one?", "第三条是谁发的": that record of the last answer, by its key
        said = (nth.group("en") or nth.group("cjk") or "最后一").lower()
        index = _ORDINALS.get(said, int(said) - 1 if said.isdigit() else 0)
        if -len(previous["refs"]) <= index < len(previous["refs"]):
            ref = previous["refs"][index]
            noun = _noun(kinds, previous.get("collection"))
            named = f"{noun} {ref}" if noun else ref
            rest = re.sub(r"^whoever\b", "who", f"{core[: nth.start()]} {core[nth.end() :]}".strip(" ,，"), flags=re.I)
            if _AUTHOR_OF_IT.match(re.sub(r"^是", "", rest)):  # "第二个是谁开的": its author
                verb = "posted" if previous.get("collection") == "messages" else "opened"
                return FollowUp(" ".join(w for w in ("who", verb, named) if w), f"the author of {ref}", nth=index)
            text = re.sub(
                r"\s+([,，])", r"\1", f"{core[: nth.start()].strip()} {named} {core[nth.end() :].strip()}".strip()
            )
            return FollowUp(re.sub(r"^whoever\b", "who", text, flags=re.I), f"{nth.group(0)!r} = {named}", nth=index)
    elliptical = _elliptical(core, turns, directory, now, kinds, continues=bool(_LEAD.match(question)))
    if elliptical is not None:
        return elliptical
    record = _RECORD.search(question)
    talked_about = _record_talked_about(turns)
    if record and talked_about is not None:
        ref, collection = talked_about
        noun = _noun(kinds, collection)
        said = f"{noun} {ref}" if noun else ref
        return FollowUp(question[: record.start()] + said + question[record.end() :], f"{record.group(0)!r} = {said}")
    records = _RECORDS.search(question)
    if records and previous.get("refs"):
        refs = ", ".join(previous["refs"][:MAX_REFS])
        return FollowUp(
            question[: records.start()] + refs + question[records.end() :],
            f"{records.group(0)!r} = the last answer's records",
        )
    pointing = _POINTING.search(question)
    if _LEAD.match(question) and (_MONTH_NAME.search(question) or _CJK_MONTH.search(question)):
        # "and issues closed in December?" after December 2023: a month said alone is of the year asked about
        dated = _with_year(question, previous, now)
        if dated != question:
            if _COUNTED.search(previous["standalone"]) and not says_a_shape(dated):
                dated = f"how many {_LEAD.sub('', dated, count=1).strip()}"  # counted, as the question before
            return FollowUp(dated, "a month of the year asked about", unread=pointing.group(0) if pointing else "")
    # words that point into the conversation no rule resolved: said, not planned as if never written
    return FollowUp(question, unread=pointing.group(0) if pointing else "")


# One record named by words of its subject: "the ArrayXD one — how many comments has it got?", "the one about
# license names: ...", "who closed the FileLock one", "FileLock 那个现在是开着还是关了", "加载大数据集报
# ArrowNotImplementedError 的那个，有几条评论"; by its number: "#5948 有几条评论", "how many comments does #4530 have"
_ONE_NOUN = r"(?:one|issue|pr|pull\s+request|thread|message|post|ticket)"
_THE_ONE_ABOUT = re.compile(
    rf"\bthe\s+{_ONE_NOUN}\s+(?:about|on|titled|called|named|mentioning|with)\s+(?P<words>[^—–:;,?？，：]+?)"
    r"\s*(?=[—–:;,?？，：]|\s-\s|$)",
    re.I,
)
_THE_X_ONE = re.compile(rf"\b(?:the|that|this)\s+(?P<words>[^—–:;,?？，：]+?)\s+{_ONE_NOUN}\b", re.I)
_X_THAT_ONE = re.compile(
    r"^(?P<words>[^，,：:]+?)\s*的?(?:那个|那条|那篇|那一个|那一条|这个|这条)(?:pr|issue|帖子|消息|讨论串)?", re.I
)
# (one digit alone is a place: "who was #1")
_NUMBER_SAID = re.compile(r"(?<![\w#])(?:(?P<repo>[\w.-]+/[\w.-]+)#(?P<of>\d{1,7})|#(?P<n>\d{2,7}))\b")
# Words that pick a record by its place, its measure or the conversation, not by its subject ("the first one",
# "the most commented one", "the same one", 最早的那个)
_NOT_A_SUBJECT = re.compile(
    r"\b(?:first|second|third|fourth|fifth|last|1st|2nd|3rd|4th|5th|next|previous|other|same|top|bottom|most|least|"
    r"oldest|newest|latest|earliest|recent|biggest|largest|smallest|busiest|quietest|longest|shortest|only|right|"
    r"wrong|former|latter|this|that|each|every|which|what|any|no)\b|最|第|哪|这|那|其",
    re.I,
)


def _named_record(
    core: str, previous: dict[str, Any], kinds: Registry, directory: PeopleDirectory | None, now: datetime
) -> FollowUp | None:
    """The one record a follow-up names by words of its subject (the only one of the last answer's listed records
    whose subject has the most of those words) or by its number (that record of the last answer's kind, listed or
    not), with what the follow-up asks of it. Words opening a question that name no listed record, or several, are
    said so (`FollowUp.unnamed`), when they name no person or time instead."""
    # after an answer about one record of a list, the list's records (`Turn.listed`)
    records = previous.get("listed") if (previous.get("listed") or {}).get("refs") else previous
    refs, titles = records.get("refs") or [], records.get("titles") or []
    noun = _noun(kinds, previous.get("collection"))
    number = list(_NUMBER_SAID.finditer(core))
    if len(number) == 1 and previous.get("collection"):
        numbered = number[0]
        ref = _numbered(numbered.group("repo") or "", numbered.group("of") or numbered.group("n"), refs)
        if ref is None:
            return None
        return _of_record(core, numbered.start(), numbered.end(), ref, noun, f"{numbered.group(0)!r} = {ref}")
    if len(refs) < 2 or len(titles) != len(refs):
        return None
    whole = _title_said(core, titles)
    if whole is not None:  # "how many comments did Add Dataset.from_spark get?"
        at, title = whole
        ref = refs[titles.index(title)]
        return _of_record(core, at, at + len(title), ref, noun, f"{title!r} = {ref}")
    for form in (_THE_ONE_ABOUT, _THE_X_ONE, _X_THAT_ONE):
        said = form.search(core)
        if said is None or _NOT_A_SUBJECT.search(said.group("words")):
            continue
        words = said.group("words").strip()
        best = _by_subject(words, refs, titles)
        if len(best) == 1:
            return _of_record(core, said.start(), said.end(), best[0], noun, f"{said.group(0).strip()!r} = {best[0]}")
        opens = not core[: said.start()].strip() and core[said.end() :].strip(" —–:;,，：")
        other = find_time_ranges(words, now) or (
            directory is not None and any(m.person is not None for m in directory.find_mentions(words))
        )
        # a list cut at the turn's 20 kept records may hold the record further down: nothing to say of it
        if opens and not other and (best or len(refs) < MAX_LISTED):
            kind = kinds.get(previous.get("collection") or "")
            plural = kind.plural if kind is not None else "records"
            shown = "; ".join(f"{r} {titles[refs.index(r)][:60]}" for r in best)
            why = (
                f"{len(best)} of the {plural} I listed say {words!r} ({shown}): which one do you mean?"
                if best
                else f"None of the {len(refs)} {plural} I listed says {words!r}: which one do you mean?"
            )
            return FollowUp(core, f"{words!r} names no one listed record", unnamed=(words, why))
    return None


# The records a turn keeps (`Turn.refs`, `Turn.titles`): a list that long may go on
MAX_LISTED = 20


# A title said whole names its record when it is this long at least, of two words (not "deleted", "Fix typo")
_TITLE_SAID = 12


def _title_said(core: str, titles: list[str]) -> tuple[int, str] | None:
    """(where, the title) of the longest listed title the follow-up says whole, as a phrase of its own."""
    said = [
        (m.start(), title)
        for title in sorted(set(titles), key=len, reverse=True)
        if len(title) >= _TITLE_SAID and len(title.split()) >= 2
        for m in [re.search(rf"(?<!\w){re.escape(title)}(?!\w)", core, re.I)]
        if m is not None
    ]
    return said[0] if said else None


def _numbered(repo: str, number: str, refs: list[str]) -> str | None:
    """The key of the record numbered so: the last answer's, else that number in the one repository its records
    are of (None: no repository said or shared)."""
    listed = [r for r in refs if r.endswith(f"#{number}") and (not repo or r == f"{repo}#{number}")]
    if listed:
        return listed[0]
    if repo:
        return f"{repo}#{number}"
    repos = {r.rsplit("#", 1)[0] for r in refs if "#" in r}
    return f"{repos.pop()}#{number}" if len(repos) == 1 else None


def _by_subject(words: str, refs: list[str], titles: list[str]) -> list[str]:
    """The listed records whose subjects have the most of `words` (their stems, any of them), none when none has
    any."""
    wanted = _subject_words(words) - {"one"}
    if not wanted:
        return []
    scores = [len(wanted & _subject_words(title)) for title in titles]
    best = max(scores)
    return [ref for ref, score in zip(refs, scores, strict=True) if score == best] if best > 0 else []


def _subject_words(text: str) -> set[str]:
    """The words of a subject as matched: their stems, and those of the parts of a dotted, joined or camel-cased
    name ("pyarrow.lib.ArrowNotImplementedError": "arrownotimplementederror", "arrow" and "error" too)."""
    parts = re.sub(r"[._/\-]+", " ", text)
    said = f"{text} {parts} {re.sub(r'(?<=[a-z])(?=[A-Z])', ' ', parts)}"
    return set(tokenize(said, drop_stopwords=True))


def _of_record(core: str, start: int, end: int, ref: str, noun: str, how: str) -> FollowUp:
    """The follow-up with what it asks of the record (`of_record`): the rest when the words naming the record open
    it ("the graph one — how many comments?"), else the follow-up with "it" in their place; and rewritten with the
    record's key."""
    if core[:start].strip():
        rest = f"{core[:start]} {'它' if HAN.search(core) else 'it'} {core[end:]}"
    else:
        rest = re.sub(r"^\s*(?:[—–:;,，：]|-\s)?\s*", "", core[end:])
    rest = re.sub(r"(?<=[\u4e00-\u9fff])\s+|\s+(?=[\u4e00-\u9fff])", "", re.sub(r"\s{2,}", " ", rest)).strip()
    named = f"{noun} {ref}" if noun else ref
    pronoun = re.search(r"\bit\b|它", rest)
    standalone = f"{rest[: pronoun.start()]}{named}{rest[pronoun.end() :]}" if pronoun else f"{named}: {rest}"
    return FollowUp(standalone.strip(" :"), how, record=ref, of_record=rest)


# Words pointing at an earlier answer ("it", "that one", "those", "in there", 其中, 那个)
_POINTING = re.compile(
    r"\b(?:it|that\s+one|this\s+one|those|these|them|in\s+there|the\s+same\s+one)\b(?!['’])"
    r"|其中|那个|这个|那些|这些|它们|它",
    re.I,
)


# Elliptical follow-ups: a question that names no kind of record and no one new, said of the last
# answer ("how many is that", "which month had the most?", "and about parquet?", "哪些是 bug", "list them",
# "only lhoestq's", "how many did they merge?"): the last question with the new words, its own way of
# answering (a count, a list, a ranking) replaced when the follow-up says another.
_OF_THOSE = re.compile(
    r"\s*\b(?:of|among|from|in)\s+(?:all\s+)?(?:those|these|them)\b|^(?:any|some|all)\s+of\s+(?:them|those|these)\s*"
    r"|^(?:anything|any|something)\s+(?:in\s+there|in\s+it|among\s+them)\s*|^(?:keep|narrow\s+(?:it|that|this|them|those)?\s*"
    r"(?:down\s+)?to)\s+"
    r"|\b(?:those|these|them)\b|其中|这些|那些|它们|里面",
    re.I,
)
_COUNT_IT = re.compile(
    r"^(?:how\s+many|how\s+much|what(?:'s|\s+is)\s+the\s+(?:count|number|total))(?:\s+\w+)?"
    r"(?:\s+(?:is|are|was|were)\s+(?:that|those|these|them|there|it))?(?:\s+(?:in\s+total|in\s+all|all\s+told|altogether|all\s+together|overall|combined))?"
    # "..., for the whole workspace", "across the entire period": every record the last question was over
    r"(?:[,\s]+(?:for|across|in|over)\s+(?:the\s+)?(?:whole|entire|full)\s+\w+)?$"
    r"|^(?:give\s+me\s+|tell\s+me\s+)?(?:the\s+|a\s+)?(?:count|number|total)(?:\s+(?:for\s+|of\s+)?(?:them|it|that|those|this))?$"
    r"|^what\s+does\s+(?:that|it|this)\s+(?:come|add)\s+(?:to|up\s+to)(?:[,\s]+in\s+(?:numbers?|total))?$"
    r"|^count\s+(?:them|it|that|those|these)$"
    r"|^(?:这样的|这种的?|这类的?|这些|那些|它们)?(?:加起来)?(?:一共|总共|共)?(?:有|是)?(?:多少|几)(?:个|条|次)?"
    r"(?:消息|帖子|讨论串|记录)?$"  # "总共多少条消息": the records of the kind asked about, counted
    r"|^how\s+many(?:'s|\s+is)\s+(?:that|it|this)(?:\s+then)?$|^(?:那|这)?(?:是|有)?(?:多少|几)(?:个|条|次)$"
    r"|^count\s+(?:them|it|that|those|these)\s+up(?:\s+for\s+me)?$"
    r"|^how\s+many\s+(?:\w+\s+){0,2}ones\s+(?:is|are)\s+(?:that|those|there)(?:,?\s+then)?$"  # the narrowing restated
    r"|^(?:给我)?(?:数一下|数数|数一数)(?:有)?(?:多少|几)?(?:个|条)?$"
    # "只要数字", "给个总数就行": the number alone
    r"|^(?:只|就)?(?:要|给我?|看)?(?:一个|个)?(?:数字|数目|总数|个数|数量)(?:就行|就好|就可以|就够了)?$",
    re.I,
)
_LIST_IT = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|right)[\s,]+)?(?:list|show|give\s+me|which\s+are\s+they|what\s+are\s+they|which\s+ones|which\s+(?:ones\s+)?(?:are|were)\s+(?:they|those|these|it))(?:\s+(?:me\s+)?(?:them|those|these|it|all))*$"
    r"|^(?:let\s+me\s+see|can\s+i\s+see|i'?d\s+like\s+to\s+see)\s+(?:them|those|these|it|the\s+list)$"
    r"|^(?:列出来|列一下|列出|都有哪些|是哪些|有哪些|哪些)$",
    re.I,
)
_HAS_SHAPE = re.compile(
    r"\bhow\s+many\b|\bnumber\s+of\b|\bcount\b|(?<!at )\bmost\b|(?<!at )\bleast\b|\bfewest\b|\bbusiest\b|\btop\b|"
    r"\bshow\b|\bwhat\s+(?:did\s+)?\S+\s+(?:wr[io]te|post(?:ed)?|said|say|opened|merged|filed)\b|"
    r"\bwhich\s+(?:month|week|day|year|one|person)\b|\bwho\b|\blist\b|多少|几个|几条|最多|最少|哪个月|哪天|谁",
    re.I,
)


def says_a_shape(words: str) -> bool:
    """The words ask for an answer of their own shape ("how many", "who ... the most", "show me what ...
    wrote"), which replaces the last question's."""
    return bool(_HAS_SHAPE.search(words))


# The words a question opens with to ask for records ("which PRs ...", "show me ...").
_ASKING = r"which|what|show(?:\s+me)?|list|find|give\s+me"
_PREVIOUS_SHAPE = re.compile(
    rf"^\s*(?:(?:{_ASKING}|who)\s+)+(?:(?:was|were|is|are)\s+)?|\bhow\s+many\b|\bnumber\s+of\b|"
    r"\b(?:the\s+)?(?:most|least)\s+(?:active|frequent)\b|"
    r"\b(?:which|what)\s+(?:day|date|week|month|year)(?:\s+of\b)?|"
    r"\b(?:the\s+)?(?:busiest|quietest|slowest|peak)\s+(?:day|date|week|month|year)\b|"
    # a grouping and its extreme ("each month", "by week", "was the busiest"): the new shape replaces them
    r"\b(?:each|every|per|by)\s+(?:day|date|week|month|quarter|year)\b|"
    r"\b(?:is|was|are|were)\s+(?:the\s+)?(?:busiest|quietest|slowest|biggest|largest|smallest|highest|lowest)\b|"
    r"\bcount(?:\s+of)?\b|\b(?:the\s+)?most\b|\bwho\b|[:,;]\s*$|(?:一共|总共)?(?:有)?多少(?:个|条)?|几(?:个|条)|"
    r"哪些|最多|谁",
    re.I,
)
_RECORD_NOUN = re.compile(
    r"\b(?:prs?|pull\s+requests?|issues?|tickets?|messages?|msgs?|threads?|posts?|commits?|documents?)\b"
    r"|消息|帖子|讨论串|工单",
    re.I,
)
_PRONOUNS_IN = re.compile(
    r"\b(?:that|this|the\s+same)\s+(?:person|user|guy|author|one)\b"
    r"|\bthe\s+(?:winner|top\s+(?!\d|(?:two|three|four|five|six|seven|eight|nine|ten)\b)\w+)\b"  # not "the top five"
    r"|\b(?:they|he|she|him|her)\b|这个人|那个人|这位|那位|此人|(?<![其])(?:他们|她们|他|她)"
    # "their PRs", "his issues": a person's records (not "their titles", said of the records themselves)
    r"|\b(?:his|their)\b(?=\s+(?:own\s+)?(?:prs?|pull\s+requests?|issues?|messages?|threads?|posts?|commits?)\b)",
    re.I,
)
# A person pointed at ("that person", "the winner", 那个人), not a pronoun that may be the one asked about
_THAT_PERSON = re.compile(
    r"\b(?:that|this)\s+(?:person|user|guy|author|poster|one)\b|\bthe\s+(?:winner|top\s+\w+)\b|这个人|那个人|这位|那位|此人"
)
# "who's the author?", "谁提的？", "who wrote it": the author of the record the last answer named first
_AUTHOR_OF_IT = re.compile(
    r"^(?:who(?:'s|\s+is|\s+was)\s+(?:the\s+)?(?:author|owner|creator|reporter|opener|poster)(?:\s+of\s+(?:it|that|this))?"
    r"|whose\s+(?:issue|pr|pull\s+request|message|thread|post|ticket|one)\s+(?:was|is)\s+(?:that|it|this)"
    r"|who\s+(?:wrote|opened|filed|created|authored|reported|started|posted|raised)(?:\s+(?:it|that|this|that\s+one))?"
    r"|(?:是)?谁(?:提|开|写|发|创建|报)的(?:呢)?)$",
    re.I,
)
# "her threads" owns them; "replied to her most" is about her
_OWNED = re.compile(
    r"\s+(?:own\s+)?(?:threads?|messages?|posts?|replies|reply|prs?|pull\s+requests?|issues?|questions?|tickets?"
    r"|comments?|reviews?|work|ones?|channels?)\b",
    re.I,
)
_PREPOSITION_OF_TIME = re.compile(r"^\s*(?:in|during|over|from|for|on)\s+", re.I)
_ENDS_WITH_PREPOSITION = re.compile(r"\b(?:in|during|over|from|for|on)\s*$", re.I)
_OF_THEIRS = re.compile(
    r"^(?:which|what)\s+(?:ones\s+)?of\s+\S+?['’]s?\s+(?:ones\s+)?(?:(?:are|were|is|was|have|has|did)\b(?!['’]))?\s*(?P<rest>.+)$",
    re.I,
)
# A place in the last ranking: "the number two on that list", "the one in third place", "the runner-up", 第一名
_PLACE_IN_RANKING = re.compile(
    r"\b(?:the\s+)?(?:number|no\.?|#)\s*(one|two|three|four|five|[1-5])\s+(?:on|in|of)\s+(?:that|the|this)\s+(?:list|ranking)\b"
    r"|\b(?:the\s+)?(?:one|person|guy|user|author)\s+in\s+(first|second|third|fourth|fifth|1st|2nd|3rd|4th|5th|last)\s+place\b"
    r"|\b(?:the\s+)?(first|second|third|fourth|fifth|1st|2nd|3rd|4th|5th|last)[- ]placed?\s+(?:one|person|guy|user|author)\b"
    r"|\bthe\s+(runner[- ]up)\b|(?:那个?)?第\s*(一|二|两|三|四|五|[1-5])\s*名",
    re.I,
)
# "who was number one", "who came out on top", 谁是第一: the first of a ranking, asked again
_LEADER = re.compile(
    r"^(?:and\s+|so\s+)?who\s+(?:was|is|were|came|finished|ended\s+up)\s+(?:out\s+)?"
    r"(?:number\s+one|#1|no\.?\s*1|first|on\s+top|top|the\s+top\s+one)\b|^(?:那)?谁是第一(?:名)?",
    re.I,
)
# "the third one", said of a ranking of people that listed no records
_NTH_ONE = re.compile(r"(?:^|\bthe\s+)(first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last)\s+one\b", re.I)
# A person's words for the records of the one just named ("how many of theirs", "which did they close")
_THEIRS = re.compile(r"\b(?:of\s+)?(?:theirs|hers|his|their|they|them|he|she|him|her)\b|(?:他们|她们|他|她)的?", re.I)
_NUMBER_PLACES = {"one": 0, "two": 1, "three": 2, "four": 3, "five": 4, "runner-up": 1, "runner up": 1}
_TOP_N = re.compile(
    r"^(?:(?:ok(?:ay)?|and|now|so)[\s,]+)?(?:show\s+me\s+|give\s+me\s+|list\s+|what\s+about\s+|how\s+about\s+)?(?:the\s+)?"
    r"top\s+(\d{1,2}|two|three|four|five|six|seven|eight|nine|ten)(?:\s+(?:instead|then|please))?$|^(?:前|给我前)(\d{1,2}|[二三四五六七八九十])名?(?:呢)?$",
    re.I,
)
# "how many of hers", "which of theirs": the person's records the last question was about
_OF_HERS = re.compile(r"^(how\s+many|which|what)\s+of\s+(?:hers|his|theirs)\b\s*(.*)$", re.I)
# "他的还有几个开着", "她们的有哪些": a person's records, said in Chinese
_OF_HERS_CJK = re.compile(r"^(?:那)?(?:他们|她们|他|她)的\s*(?P<rest>.+)$")
# "list his requests from then", "show me her threads": the person's records (whatever the asker calls them), listed
_LIST_HIS = re.compile(
    r"^(?P<verb>list|show(?:\s+me)?|give\s+me)\s+(?:his|her|their)\s+(?:own\s+)?[^\W\d_][\w-]*s\b(?P<rest>.*)$", re.I
)
# "from then", "back then": the time the conversation was about, which the records are already of
_THEN = re.compile(r"\b(?:from|back|since|during)\s+then\b|\bthen\b|\b(?:from|since|during)\s*$", re.I)  # "then" cut
# a question that asked who
_ASKED_WHO = re.compile(r"\bwho\b|\bwhom\b|\bwhose\b|谁|誰|哪些人|哪位", re.I)


def _of_the_ranked(core: str, previous: dict[str, Any]) -> FollowUp | None:
    """ "how many of his are still open?" after "who came second?" (or after the whole ranking): "his" is the
    person the ranking's answer named first — the place picked, when a place was asked — and his records are
    that ranking's records of that person, the rest said of them. Not after a question that named someone
    ("who replied most to Ida?"): "hers" may be Ida's."""
    hers = _OF_HERS.match(core)
    cjk = _OF_HERS_CJK.match(core) if hers is None else None
    listed = _LIST_HIS.match(core) if hers is None and cjk is None else None
    rest = f"{hers.group(1)} {hers.group(2)}".strip() if hers else cjk.group("rest").strip() if cjk else ""
    if listed is not None:  # "list his requests from then": his records of the ranking, in its time, listed
        rest = re.sub(r"\s{2,}", " ", f"{listed.group('verb')} {_THEN.sub(' ', listed.group('rest'))}").strip()
    groups = previous.get("answer_groups") or {}
    asked = previous.get("asked") or previous["standalone"]
    if not rest or previous.get("people") or not groups.get("keys") or not previous.get("answer_people"):
        return None
    if not _ASKED_WHO.search(asked):
        return None
    person = previous["answer_people"][0]
    return FollowUp(
        _narrowed(previous, f"by {person} {rest}"),
        f"{person}'s, the person the last answer named first; of the ranking's records: {rest!r}",
        rest,
        within=(groups["field"], groups["keys"][0]),
    )


# "so how many does Corey have", "how many has she got": the last question counted, about the person it named
_COUNT_FOR = re.compile(r"^how\s+many\s+(?:does|did|has|have|do)\s+\S+(?:\s+\S+)?\s+(?:have|got|get|own)$", re.I)
# Every year, said to widen a count to all of someone's records ("in total, all years", 不限年份)
_ALL_TIME = re.compile(
    r",?\s*\b(?:(?:across|over|in|for)\s+)?(?:all\s+(?:the\s+)?years|all[- ]time|of\s+all\s+time|any\s+year|ever)\b"
    r"|不限年份|所有年份|历年(?:来)?|有史以来",
    re.I,
)
_THAT_TIME = re.compile(
    r"\b(?:that|the\s+same)\s+(?:year|month|week|day|quarter|period)\b|那年|那个月|那一年|同一年|当年|当月"
    r"|\b(?:in\s+)?(?:those|these|the\s+same)\s+(?:\w+\s+)?(?:years|months|weeks|days|quarters)\b",
    re.I,
)


def _period_phrase(period: str) -> str:
    """ "2019-01" as a time the planner reads: "in January 2019" ("on 2019-01-15", "in 2019")."""
    if len(period) == 7:
        return f"in {datetime(int(period[:4]), int(period[5:]), 1):%B %Y}"
    return f"on {period}" if len(period) == 10 else f"in {period}"


# "tally those up for me", "count 'em", "give me just the number", "what does that come to, number-wise":
# a count asked of the last answer in words of this allow-list only, one of them a counting word
_COUNTING = frozenset("count tally number numbers total number-wise numberwise".split())
_COUNT_FILLER = frozenset(
    "give me us just only the a an so then now ok okay please pls can you could i want need get tell what's what "
    "is are was does do that those these them 'em em it this all of for up to come comes add adds in as wise "
    "how much".split()
)


def _asks_count(words: str) -> bool:
    said = re.findall(r"[a-z][a-z'\-]*|'em", words.lower())
    return (
        0 < len(said) <= 8
        and any(w in _COUNTING for w in said)
        and all(w in _COUNTING or w in _COUNT_FILLER for w in said)
        and not re.search(r"[^\x00-\x7f]", words)
    )


def _reshaped(words: str, previous: dict[str, Any]) -> FollowUp:
    """ "how many is that" / "list them": the last question, counted or listed."""
    if _COUNT_IT.match(words) or _asks_count(words):
        return _counted(previous)
    base = re.sub(r"\s{2,}", " ", _PREVIOUS_SHAPE.sub(" ", previous["standalone"].rstrip("?？。. "))).strip()
    return FollowUp(f"list {base}", "the last question's records, listed", reshape="list")


def _moved_then_reshaped(core: str, previous: dict[str, Any]) -> FollowUp | None:
    """ "再往前一周呢，有几个？", "a month earlier, how many?": the last window moved, then counted or listed."""
    said = re.match(r"^(.+?)\s*[,，;；]\s*(.+)$", core)
    if said is None:
        return None
    moved, asked = _TAIL.sub("", said.group(1)).strip(), _TAIL.sub("", said.group(2)).strip()
    shifted = _shifted(moved, previous)
    if shifted is None or not (_COUNT_IT.match(asked) or _asks_count(asked) or _LIST_IT.match(asked)):
        return None
    reshaped = _reshaped(asked, {**previous, "standalone": _replace_time(previous, shifted)})
    return FollowUp(
        reshaped.standalone,
        f"the same question for {shifted!r}, {reshaped.how}",
        new_time=shifted,
        reshape=reshaped.reshape,
    )


def _counted(previous: dict[str, Any]) -> FollowUp:
    base = re.sub(rf"^\s*(?:(?:{_ASKING})\s+)+", "", previous["standalone"].rstrip("?？。. "), flags=re.I)
    if _HAS_SHAPE.search(base) and not _COUNTED.search(base):
        # "the total for that month" after "who opened the most issues in January 2022": those issues, counted
        base = re.sub(r"\s{2,}", " ", _PREVIOUS_SHAPE.sub(" ", base)).strip()
    return FollowUp(
        f"how many {base}" if not _HAS_SHAPE.search(base) else base, "the last question, counted", reshape="count"
    )


_COUNTED = re.compile(r"\bhow\s+many\b|\bnumber\s+of\b|\bcount\b|多少|几(?:个|条|次)", re.I)


def _narrowed(previous: dict[str, Any], words: str, listed: bool = False) -> str:
    """The last question with more words: the new ones are conditions on the same records, or a new
    shape that replaces the last one's."""
    before = previous["standalone"].rstrip("?？。. ")
    if _HAS_SHAPE.search(words) or listed:  # "which of those are still open" after a count: the records
        before = re.sub(r"\s{2,}", " ", _PREVIOUS_SHAPE.sub(" ", before)).strip()
    return f"{before} {words}".strip()


# "split it by week", "break that down by month", "month by month", "按周分一下", "每月": the last records
# counted per period (the period replaces any grouping and shape the last question had)
# "split that by open vs closed", "break them down by label": the last records, grouped by what is said
_SPLIT_BY = re.compile(
    r"^(?:(?:split|break|group|divide)(?:\s+(?:it|that|this|them|those|these))?(?:\s+(?:down|up|out))?\s+(?:by|into)"
    r"|(?:and\s+)?broken\s+down\s+by)\s+(?P<what>\S.*?)(?:\s+(?:instead|then|please))?$",
    re.I,
)
_REGROUP = re.compile(
    r"^(?:(?:can|could|would|will)\s+you\s+)?(?:please\s+)?"
    r"(?:(?:(?:split|break|bucket|group|divide|chunk)(?:\s+(?:it|that|this|them|those|these))?(?:\s+(?:down|up|out))?"
    r"\s+(?:by|per|into|in)\s+|(?:now\s+|then\s+)?(?:by|per)\s+|(?:for\s+)?each\s+)"
    r"(day|week|month|quarter|year)s?"
    r"|(?:(?:split|break|bucket|group|divide|chunk)(?:\s+(?:it|that|this|them|those|these))?(?:\s+(?:down|up|out))?\s+)?"
    r"(day|week|month|quarter|year)\s+by\s+(?:day|week|month|quarter|year))(?:\s+(?:instead|then|please))?$"
    r"|^按(天|日|周|星期|月|季度|年)份?(?:分|统计|分组|拆分|拆开|看|列|来)?(?:一下)?$|^每(天|周|月|季度|年)(?:的|分别)?(?:多少)?$",
    re.I,
)
# How the records of one group are said, by the field the groups were by (the planner reads these back),
# and the noun that named the grouping in the question ("by label", "which repo")
_GROUP_CONDITIONS = {
    "labels.name": ("labelled {}", r"label"),
    "labels": ("labelled {}", r"label"),
    "repo": ("in {}", r"(?:repo|repository)"),
    "workspace": ("in {}", r"workspace"),
}


def _the_one_group(previous: dict[str, Any]) -> tuple[str, str] | None:
    """(the condition naming its records, the grouping noun) when the last answer was one group of a
    field whose records can be said, or the last question asked for one ("which label is the biggest":
    its first group, enhancement); else None."""
    groups = previous.get("answer_groups") or {}
    said = _GROUP_CONDITIONS.get(groups.get("field", ""))
    if said is None or not groups.get("keys"):
        return None
    asked_one = re.search(rf"\b(?:which|what)\s+{said[1]}\b(?!s)", previous["standalone"], re.I)
    if len(groups["keys"]) != 1 and not asked_one:
        return None
    return said[0].format(groups["keys"][0]), said[1]


def _record_talked_about(turns: list[dict[str, Any]]) -> tuple[str, str] | None:
    """The record "it" is, with its collection: the last answer's first record, or, when the last
    question was about one record and its answer listed none ("who wrote it up?" answered by a person),
    that record still."""
    previous = turns[-1]
    if previous.get("refs"):
        return previous["refs"][0], previous.get("collection", "")
    before = turns[-2] if len(turns) > 1 else {}
    if before.get("refs") and before["refs"][0] in previous.get("standalone", ""):
        return before["refs"][0], before.get("collection", "")
    return None


# What may stand around the record kinds a collection switch names: "PRs not issues", "pull requests
# instead", "the issues then", "issue 而不是 PR"
_SWITCH_WORDS = re.compile(
    r"\b(?:not|no|instead(?:\s+of)?|rather\s+than|the|ones?|for|but|switch(?:ed)?|to|try|please|then)\b"
    r"|而不是|不是|不要|[\s,，.。?？!！:：;；—–-]",
    re.I,
)
# A kind named alone is a switch when said as one ("PRs instead", "not issues", "换成 issue", "I meant PRs");
# said as a new value ("what about PRs?", "same for messages") only by its name: "what about docs?" after
# issues is the docs label, and "only the bugs" after PRs the PRs labelled bug
_SWITCH_SAID = re.compile(
    r"\binstead\b|\bnot\b|\brather\s+than\b|\b(?:switch|change)\b.*\bto\b"
    r"|换成|換成|改成|改為|改为|换为|換為|而不是|不是",
    re.I,
)
# ... and in Chinese: "那 PR 呢？", "issue 呢"
_NEW_VALUE_SAID = re.compile(
    r"\b(?:what|how)\s+about\b|\bsame\b.*\bfor\b|^\s*and\s+(?!the\b)|^\s*那|呢\s*[？?]?\s*$", re.I
)


def _other_kind(
    question: str, core: str, previous: dict[str, Any], kinds: Registry, switch: bool
) -> CollectionSpec | None:
    """The kind of record a follow-up that names nothing but kinds switches to: the one it names that the
    last question was not about (the last one's kind may be named too, as what it is not). `switch`: the
    follow-up said it as a switch (a correction, "instead", "换成"); else only "what about <kind's name>"."""
    was = previous.get("collection")
    if not was or not (switch or _NEW_VALUE_SAID.search(question)):
        return None
    named: list[tuple[int, str]] = []
    rest = core
    for kind in kinds:
        pattern = kind.pattern()
        if not pattern:
            continue
        named += [(m.start(), kind.name) for m in re.finditer(pattern, core, re.I | re.ASCII)]
        rest = re.sub(pattern, " ", rest, flags=re.I | re.ASCII)
    others = {name for _, name in named if name != was}
    if len(others) != 1 or _SWITCH_WORDS.sub("", rest):
        return None
    other = kinds.get(others.pop())
    if other is None or switch:
        return other
    names = {other.noun, other.plural, other.name.replace("_", " ")} | (
        {"pr", "prs"} if other.name == "pull_requests" else set()
    )
    said = [m.group(0).lower() for m in re.finditer(other.pattern(), core, re.I | re.ASCII)]
    return other if any(w in names for w in said) else None


def _with_kind(previous: dict[str, Any], kind: CollectionSpec, kinds: Registry) -> str:
    """The last question said about another kind of record: its kind's words replaced by the new ones."""
    said = "PRs" if kind.name == "pull_requests" else kind.plural
    was = kinds.get(previous.get("collection") or "")
    standalone = previous["standalone"]
    if was is not None and was.pattern():
        replaced, n = re.subn(was.pattern(), said, standalone, flags=re.I | re.ASCII)
        if n:
            return replaced
    return f"{standalone.rstrip('?？。. ')} ({said})"


# "back to pietrolesci — which of his are closed now?", "going back to the parquet issues: who opened
# them?", "回到 lhoestq，他的里面哪些还开着": a follow-up on an earlier turn than the last
_BACK_TO = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|anyway|now|never\s+mind|nevermind|forget\s+(?:it|that))(?:[\s,]+|\s*[—–-]\s*))*"
    r"(?:(?:go(?:ing)?|get(?:ting)?|coming|circling)\s+)?back\s+to\s+"
    r"(?P<what>[^,，:：;；—–]+?)\s*(?:[,，:：;；—–]|\s-\s)\s*(?P<rest>\S.*)$"
    r"|^(?:再)?(?:回到|说回|说回到|回到刚才的?)\s*(?P<what_zh>[^,，:：;；—–]+?)\s*[,，:：;；—–]\s*(?P<rest_zh>\S.*)$",
    re.I,
)


def _resumed(
    what: str,
    rest: str,
    turns: list[dict[str, Any]],
    directory: PeopleDirectory | None,
    now: datetime,
    kinds: Registry,
) -> FollowUp:
    """The words said of the latest turn that asked about `what` (a person it named, or its words), read as
    a follow-up of that turn; nothing found: the question is not understood, not answered afresh."""
    wanted = what.lower()
    which = _WHICH_QUESTION.match(wanted)
    if which is not None:  # "回到第一个问题", "back to my first question": that turn by its place
        place = _ORDINALS.get(which.group("en") or which.group("cjk") or "first", 0)
        if -len(turns) <= place < len(turns):
            kept = place % len(turns) + 1
            out = resolve_offline(rest, turns[:kept], directory, now, kinds)
            return replace(out, how=f"back to question {kept}; {out.how}".rstrip("; "), resumed=(kept, rest))
    # the words said as they were asked first, else each of them said by the turn ("the PRs")
    for kept in [*range(len(turns), 0, -1), *(-k for k in range(len(turns), 0, -1))]:
        turn = turns[abs(kept) - 1]
        named = [str(p).lower() for p in [*turn.get("people", []), *turn.get("people_text", [])]]
        said = wanted in named or wanted in turn.get("standalone", "").lower()
        if said if kept > 0 else _asked_about(wanted, turn, named, kinds):
            kept = abs(kept)
            out = resolve_offline(rest, turns[:kept], directory, now, kinds)
            if not out.how and not _LEAD.match(rest):  # "回到 X：总共多少条消息": said of X, as "and ..." is
                out = resolve_offline(f"and {rest}", turns[:kept], directory, now, kinds)
            how = f"back to the turn about {what!r}; {out.how}".rstrip("; ")
            return replace(out, how=how, resumed=(kept, rest))
    return FollowUp(rest, unread=f"back to {what}")


# "drop that — which of his 2024 issues are still open?", "forget the year: ...", "now drop the label — every issue
# from those two years", "forget open or closed — ...", "drop the bug label", "back to all years — how many are
# open?", 那不管评论数呢，他 2020 年一共开了几个, 不限月份的话，...: a condition taken away, then the rest (if any)
_DROP_CLAUSE = re.compile(
    r"^(?:(?:ok(?:ay)?|and|now|so|but|then|alright)[\s,]+)*"
    r"(?:(?:forget(?:\s+about)?|drop|ignore|remove|lose|disregard|never\s+mind|regardless\s+of|no\s+matter)"
    r"\s+(?P<what>[^—–:;,]+?)"
    r"|back\s+to\s+(?P<all>(?:all|any|every)\s+[^—–:;,]+?))"
    r"\s*(?:$|[—–:;,]|\s-\s)\s*(?P<rest>.*)$"
    r"|^(?:那)?(?:不管|不限|不论|去掉|不要|不看|忽略)(?P<what_zh>[^，,：:；;]+?)(?:的话|呢|了)?\s*(?:$|[，,：:；;]\s*(?P<rest_zh>.*)$)",
    re.I,
)
# "and from anyone, not just him?", "by anybody", "everyone's", "所有人的", "不只是她的": the person condition gone
_ANYONE = re.compile(
    r"^(?:(?:and|but|so|ok(?:ay)?|now|then|what\s+about|how\s+about)[\s,]+)*(?:(?:from|by|of|for)\s+)?"
    r"(?:anyone|anybody|everyone|everybody|any\s+(?:author|person|user|poster)|all\s+(?:authors|people|users|posters))"
    r"(?:'s|’s)?(?:[\s,;—–-]+(?:and\s+)?not\s+(?:just|only)\s+(?:him|her|them|his|hers|theirs|that\s+person|\w+(?:'s)?))?"
    r"(?:\s+(?:instead|then|too|please))?$"
    r"|^(?:那)?(?:所有人|任何人|大家|每个人|不管是谁|不论是谁)(?:的)?(?:呢)?$"
    r"|^(?:那)?(?:不只是?|不仅是?|不限于?)(?:他|她|他们|她们)(?:的)?(?:[，,\s]*(?:所有人|任何人|大家)的?)?(?:呢)?$",
    re.I,
)
# "and all his PRs that year, open or not?": the state taken away at the end of a follow-up
_DROP_TAIL = re.compile(
    r"^(?P<rest>.+?)[\s,]+(?P<what>(?:open|closed|merged)\s+or\s+(?:not|closed|open|unmerged)|(?:in\s+)?any\s+state)$",
    re.I,
)


def _drop_clause(question: str) -> tuple[str, str] | None:
    """(the words naming the condition taken away, the rest of the follow-up) or None."""
    said = _DROP_CLAUSE.match(question)
    if said is not None:
        what = said.group("what") or said.group("all") or said.group("what_zh")
        return what.strip(), (said.group("rest") or said.group("rest_zh") or "").strip()
    tail = _DROP_TAIL.match(question)
    return (tail.group("what"), tail.group("rest").strip()) if tail else None


# "back to the first question", "回到第一个问题", "go back to my original question"
_WHICH_QUESTION = re.compile(
    r"^(?:the\s+|my\s+|our\s+)?(?:(?P<en>first|second|third|last)|original|initial|very\s+first)\s+(?:question|one|query)$"
    r"|^(?:我的)?(?:第(?P<cjk>一|二|三)个|最初的?|一开始的?|最开始的?)(?:问题|提问)$",
    re.I,
)
# words that say nothing of which turn ("back to the PRs", "back to Daysi's messages")
_ABOUT_FILLER = frozenset(
    "the a an my our that this those these them ones one list question questions about of s".split()
)
# words naming a field, not a value ("back to that label", 回到那个标签): what part of a field's path they are
_FIELD_WORDS = {"label": "label", "labels": "label", "标签": "label", "workspace": "workspace", "工作区": "workspace"}
_ABOUT_FILLER_CJK = re.compile(r"的?(?:那些|这些|那几个|这几个|那几条|这几条|那个|这个|那条|这条)")


def _asked_about(wanted: str, turn: dict[str, Any], named: list[str], kinds: Registry) -> bool:
    """Whether each word of `wanted` ("the not-planned ones", "the PRs", "Daysi's messages") is said by the
    turn: a kind of record its kind, any other word its question's words or its people's names."""
    standalone = re.sub(r"[\s\-_]+", " ", turn.get("standalone", "").lower())
    if re.search(r"\blist\b|列表|[那这]几[个条]", wanted) and not turn.get("refs"):
        return False  # "back to the October 2022 list", 2024 年那几个: a turn that listed them, not a count after it
    wanted = _ABOUT_FILLER_CJK.sub(" ", wanted)  # "还开着的那些": the words said of them
    words = [w for w in re.findall(r"[a-z0-9]+|[^\x00-\x7f\s\W]+", wanted.replace("'s", " ")) if w not in _ABOUT_FILLER]
    ir = (turn.get("plan") or {}).get("ir") or {}
    fields = [str(f.get("field", "")) for f in ir.get("filters") or []] + [str((ir.get("shape") or {}).get("field"))]
    for word in words:
        kind = next((k for k in kinds if k.pattern() and re.fullmatch(k.pattern(), word, re.I | re.ASCII)), None)
        if word in _FIELD_WORDS:  # "that label", 那个标签: a turn whose plan has a condition on (or groups by) labels
            if not any(_FIELD_WORDS[word] in f for f in fields):
                return False
        elif kind is not None:
            if kind.name != turn.get("collection"):
                return False
        elif not (
            re.search(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])", standalone) or any(word in n for n in named)
        ):
            return False
    return bool(words)


# "same for mariosasko, but the year before", "the month after, and for Lars", "张伟，前一年": two changes
_TWO_CHANGES = re.compile(
    r"^(?P<a>.+?)\s*(?:[,，;；]\s*(?:but|and|only|just|但是?|不过)?|\s(?:but|and)\s)\s*(?P<b>\S.*)$", re.I
)


def _combined(
    core: str, turns: list[dict[str, Any]], directory: PeopleDirectory | None, now: datetime, kinds: Registry
) -> FollowUp | None:
    """A new person and a new time said in one follow-up: the last question with both changed (planned
    whole from the rewritten words; no other change is read this way)."""
    said = _TWO_CHANGES.match(core)
    if said is None:
        return None
    previous = turns[-1]
    first = resolve_offline(said.group("a"), turns, directory, now, kinds)
    if not _one_plain_change(first, previous):
        return None
    changed = {**previous, "standalone": first.standalone}
    if first.new_time:
        changed["times"] = [first.new_time]
    then = resolve_offline(said.group("b"), [*turns[:-1], changed], directory, now, kinds)
    if not _one_plain_change(then, changed) or bool(then.new_time) == bool(first.new_time):
        return None  # a person and a time, one each
    return FollowUp(
        then.standalone,
        f"{first.how}; {then.how}",
        new_time=first.new_time or then.new_time,
        person=first.person or then.person,
    )


def _one_plain_change(out: FollowUp, previous: dict[str, Any]) -> bool:
    """The follow-up is the last question with its person or its time replaced, and nothing else."""
    others = (out.added, out.reshape, out.collection, out.unread, out.within, out.restated, out.resumed)
    return bool(out.how) and out.standalone != previous["standalone"] and not any(others)


def _person_turn(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """The latest turn that named someone (the last one, when none did)."""
    return next((t for t in reversed(turns) if t.get("people")), turns[-1])


def _unique_name(previous: dict[str, Any], directory: PeopleDirectory | None) -> str:
    """The one person the last question named, by a name that names only them: their name, or the words
    that picked them when others share it (a candidate picked by their key after "Natosha" was declined)."""
    name = previous["people"][0]
    said = (previous.get("people_text") or [name])[0]
    if directory is None or said == name:
        return name
    try:
        directory.lookup(name)
    except AmbiguousPerson:
        return said
    except UnknownPerson:
        pass
    return name


def _noun(kinds: Registry, collection: str | None) -> str:
    """How a rewritten question names one record of a kind ("PR acme/web#12", "incident INC-7"): the
    way people say it, so the planner reads it back."""
    kind = kinds.get(collection or "")
    if kind is None or not kind.searchable:
        return ""
    return "PR" if kind.name == "pull_requests" else kind.noun


def _elliptical(
    core: str,
    turns: list[dict[str, Any]],
    directory: PeopleDirectory | None,
    now: datetime,
    kinds: Registry,
    continues: bool,
) -> FollowUp | None:
    """`continues`: the follow-up opened with "and", "what about", "那" ... A longer question that neither
    continues nor refers to the last answer is a question of its own."""
    previous = turns[-1]
    if not previous.get("collection"):
        return None  # the last answer was no query's: nothing to narrow
    from context_engine.query.planner.collection import detect_collection

    words = core
    if _THAT_TIME.search(words):
        # "just the total for that month": a count of the last records, in the month the answer named if
        # it named periods ("which month was the busiest"), else in the conversation's time
        bare = _ENDS_WITH_PREPOSITION.sub("", re.sub(r"\s{2,}", " ", _THAT_TIME.sub(" ", words)).strip(" ,，"))
        bare = bare.strip(" ,，")
        if bare and (_COUNT_IT.match(bare) or _asks_count(bare)):
            if previous.get("answer_periods"):
                month = _period_phrase(previous["answer_periods"][0])
                counted = _counted({**previous, "standalone": _replace_time(previous, month)})
                return FollowUp(counted.standalone, counted.how, reshape="count", new_time=month)
            return _counted(previous)
    regroup = _REGROUP.match(words)
    if regroup:  # "split it by week", "按月统计": the last question's records, counted per period
        unit = PERIOD_UNITS[next(g for g in regroup.groups() if g).lower()]
        base = re.sub(r"\s{2,}", " ", _PREVIOUS_SHAPE.sub(" ", previous["standalone"].rstrip("?？。. "))).strip()
        return FollowUp(f"{base} per {unit}", f"the last question's records, per {unit}", reshape=unit)
    split = _SPLIT_BY.match(words)
    if split:  # "split that by open vs closed", "break it down by label": the last records, per value
        base = re.sub(r"\s{2,}", " ", _PREVIOUS_SHAPE.sub(" ", previous["standalone"].rstrip("?？。. "))).strip()
        return FollowUp(
            f"{base} split by {split.group('what')}", f"the last question's records, by {split.group('what')}"
        )
    group = _the_one_group(previous)
    reshaped = "list" if _LIST_IT.match(words) else "how many" if _COUNT_IT.match(words) or _asks_count(words) else ""
    groups = previous.get("answer_groups") or {}
    first_group = _FIRST_GROUP.search(words)
    grouped_as = _GROUP_CONDITIONS.get(groups.get("field", ""))
    if first_group and grouped_as and groups.get("keys"):
        # "in the busiest one, who posted the most?" after messages per workspace: the first group's records
        condition = grouped_as[0].format(groups["keys"][0])
        rest = re.sub(r"\s{2,}", " ", f"{words[: first_group.start()]} {words[first_group.end() :]}").strip(" ,，")
        base = _PREVIOUS_SHAPE.sub(
            " ", re.sub(_grouping(grouped_as[1]), " ", previous["standalone"].rstrip("?？。. "), flags=re.I)
        )
        return FollowUp(
            re.sub(r"\s{2,}", " ", f"{base} {condition} {rest}").strip(),
            f"of the records {condition}: {rest!r}",
            rest,
            within=(groups["field"], groups["keys"][0]),
        )
    if group is not None and (_OF_THOSE.search(words) or reshaped):
        # "who filed the most of those" after "which label is the biggest": the records of that label
        condition, noun = group
        rest = "" if reshaped else re.sub(r"\s{2,}", " ", _OF_THOSE.sub(" ", words)).strip(" ,，")
        base = _PREVIOUS_SHAPE.sub(
            " ", re.sub(_grouping(noun), " ", previous["standalone"].rstrip("?？。. "), flags=re.I)
        )
        text = re.sub(r"\s{2,}", " ", f"{base} {condition} {rest}" if rest else f"{reshaped} {base} {condition}")
        return FollowUp(
            text.strip(),
            f"of the records {condition}: {rest or reshaped!r}",
            rest,
            reshape={"how many": "count", "list": "list"}.get(reshaped, ""),
            within=(groups["field"], groups["keys"][0]),
        )
    person_turn = _person_turn(turns)
    if (
        _ALL_TIME.search(words)
        and _PRONOUNS_IN.search(words)
        and len(person_turn.get("people", [])) == 1
        and (re.match(r"^how\s+many\b", words, re.I) or _CJK_ASKS.search(words))
    ):
        # "and how many has he opened in total, all years?" after his 2021 issues about WMT: all of his, a
        # question of its own about the person the conversation named (the kind of record stays the last one's)
        person = _unique_name(person_turn, directory)
        restated = _PRONOUNS_IN.sub(lambda m: f" {person} ", _ALL_TIME.sub(" ", words), count=1)
        kind = kinds.get(previous.get("collection") or "")
        if kind is not None and not re.search(kind.pattern(), restated, re.I | re.ASCII):
            restated = re.sub(r"^how\s+many\b", f"how many {kind.plural}", restated, flags=re.I)
        restated = re.sub(r"\s{2,}", " ", restated).strip(" ,，")
        return FollowUp(restated, "the person the conversation named, over all time", restated=restated)
    if _COUNT_IT.match(words) or _asks_count(words) or _LIST_IT.match(words):
        return _reshaped(words, previous)
    if _RECORD.search(re.sub(r"^narrow\s+(?:it|that|this)\b", "", words, flags=re.I)):
        return None  # "who opened it?": one record of the answer, not all of them
    asked = previous.get("asked") or previous["standalone"]
    asked_who = re.search(r"\bwho\b|\bwhom\b|\bwhose\b|谁|哪些人|哪位", asked, re.I)
    if (
        _PRONOUNS_IN.search(words)
        and asked_who
        and previous.get("answer_people")
        and (not previous.get("people") or _THAT_PERSON.search(words))
    ):
        # "how many did they merge?" after "who merged the most": the person the answer named first;
        # "that person" after "who replied most to Ida" is the answer's person, not Ida
        person = previous["answer_people"][0]
        words = re.sub(
            r"\s+(['’]s)\b|(?<=\s)\s+",
            r"\1",
            _PRONOUNS_IN.sub(
                lambda m: f" {person}'s " if m.group(0).lower() in ("his", "their") else f" {person} ", words, count=1
            ),
        ).strip()
    elif _PRONOUNS_IN.search(words) and len(_person_turn(turns).get("people", [])) == 1:
        # "how many replies did her threads get" after a question about Ida's threads: Ida (also after a
        # turn about one record of hers, which named nobody: "the ArrayXD one — how many comments?")
        person = _unique_name(_person_turn(turns), directory)
        words = re.sub(
            r"\s{2,}",
            " ",
            _PRONOUNS_IN.sub(
                lambda m: (
                    f" {person}'s "
                    if m.group(0).lower() in ("his", "their")
                    or (m.group(0).lower() == "her" and _OWNED.match(words, m.end()))
                    else f" {person} "
                ),
                words,
                count=1,
            ),
        ).strip()
    said_time = next((t for turn in reversed(turns) for t in turn.get("times", [])), None)
    if _THAT_TIME.search(words) and previous.get("answer_periods"):
        # "who posted the most that month?" after "the busiest month": the month the answer named first
        said_time = _period_phrase(previous["answer_periods"][0])
    person_said = words != core
    if _THAT_TIME.search(words) and said_time:
        # "from that month" with "during May 2019": one preposition ("from May 2019")
        def said(m: re.Match) -> str:
            return f" {_PREPOSITION_OF_TIME.sub('', said_time) if _ENDS_WITH_PREPOSITION.search(words[: m.start()]) else said_time} "

        time_said = _THAT_TIME.sub(said, words, count=1)
        if (
            person_said
            and (re.match(r"^(?:who|whom|how\s+many|which|what)\b", words, re.I) or _CJK_ASKS.search(words))
            and not _OF_THOSE.search(words)
        ):
            # "who replied to her most that month?", "这个人那个月一共发了几则": a question of its own once its person
            # and time are said
            restated = re.sub(r"\s{2,}", " ", time_said).strip()
            return FollowUp(
                restated, "the person and the time the conversation named", restated=_within_the_thread(restated, core)
            )
        words = re.sub(r"\s{2,}", " ", time_said).strip()
    theirs = _OF_THEIRS.match(words)
    if theirs and directory is not None:
        # "which of dorost1234's are not closed yet" after dorost1234's issues: those, narrowed
        named_people = [
            m.person.name for m in directory.find_mentions(words) if m.person is not None and not m.is_asker
        ]
        if named_people and all(name in previous.get("people", []) for name in named_people):
            rest = theirs.group("rest").strip(" ?？")
            if _HAS_SHAPE.search(rest):  # "which of Onita's pulled in the most replies": one record of them
                rest = f"which one {rest}"
                return FollowUp(_narrowed(previous, rest), f"of the last answer's records: {rest!r}", rest)
            # "which of lhoestq's didn't get merged?" after his count: those records, listed
            return FollowUp(
                _narrowed(previous, rest, listed=True), f"of the last answer's records: {rest!r}", rest, reshape="list"
            )
    named, _ = detect_collection(words, {kind.name: None for kind in kinds if kind.searchable}, kinds)
    if named in BUILTIN and not _RECORD_NOUN.search(words):
        named = None  # "有几个打了 bug 标签": bug is a label here, not a kind of record
    if named is not None and named != previous["collection"] and _BARE_MOST.search(words) and _ranked_records(previous):
        # "and which PR that year had the most?" after the issue with the most reactions: the same ranking
        # over the kind it names (the measure is the last ranking's, said nowhere else)
        return FollowUp(words, f"the last ranking over {named}", collection=named)
    if named is not None and words != core and not _OF_THOSE.search(words):
        # "how many PRs did they open that year?": once the person and the year are said, it stands alone
        return FollowUp(
            words, "the person and the time the conversation named", restated=_within_the_thread(words, core)
        )
    words = re.sub(r"\s+(?:for\s+me|please|pls)$", "", words, flags=re.I)
    referring = bool(_OF_THOSE.search(words)) or words != core
    short_subset = re.match(r"^(?:哪些|哪个|其中|which|only|just)", words, re.I) and len(words) <= 24
    short = len(words.split()) <= 5 if not HAN.search(words) else len(words) <= 16
    if not (referring or continues or short or short_subset):
        return None
    if named is not None and not referring and not short_subset:
        return None  # names its own records: a question of its own
    people = [m for m in directory.find_mentions(words) if m.person is not None and not m.is_asker] if directory else []
    if (
        _COUNT_FOR.match(words)
        and people
        and all(
            m.person.name in previous.get("people", []) or m.text in previous.get("people_text", []) for m in people
        )
    ):
        return _counted(previous)  # "so how many does Corey have" after Corey's threads: those, counted
    only = re.match(r"^(?:only|just)\s+(?P<who>.+?)(?:['’]s)?$", words, re.I)
    if people and only:
        return FollowUp(
            _narrowed(previous, f"by {only.group('who')}"), f"of the last answer's records: by {only.group('who')}"
        )
    if people and words == core and not referring:
        return None  # a new person with more words: not ours to guess
    # "which of those has the most comments", "哪个评论最多": one of them
    words = re.sub(r"^which\s+(?:one\s+)?(?:of|among)\s+(?:those|these|them)\b", "which one", words, flags=re.I)
    # "whose drafts are those, mostly?": the person with the most of them
    verb = "posted" if previous.get("collection") == "messages" else "opened"
    words = re.sub(
        r"^whose\s+(?:\w+\s+)?(?:are|were|is|was)\s+(?:those|these|they|them)(?:[\s,]+(?:mostly|mainly|for\s+the\s+most\s+part))?$",
        f"who {verb} the most",
        words,
        flags=re.I,
    )
    # "who opened them?": the people, ranked by how many of them each did
    words = re.sub(
        r"^who\s+(\w+)\s+(?:all\s+of\s+)?(?:them|those|these)(?:\s+all)?$", r"who \1 the most", words, flags=re.I
    )
    if _HAS_SHAPE.search(words):
        words = _WHICH_ONE_CJK.sub("which one ", words, count=1)
    rest = _NEGATED.sub("not ", re.sub(r"\s{2,}", " ", _OF_THOSE.sub(" ", words)).strip(" ,，"))
    if not rest or len(rest.split()) > 12:
        return None
    rest = _cjk_topic(_one_extreme(rest))
    switched = _switched_state(previous["standalone"], rest)
    if switched:
        return FollowUp(*switched)
    times = find_time_ranges(rest, now) if previous.get("times") else []
    moved_to = _with_year(times[0].text, previous, now) if times else ""
    if times:  # "and who asked for the most of them in 2023": the new time replaces the last one
        rest = rest.replace(times[0].text, "").strip()
        previous = {**previous, "standalone": _replace_time(previous, moved_to)}
    narrowed = previous.get("narrowed", "")
    if (
        continues
        and not times
        and not people
        and narrowed
        and previous["standalone"].endswith(narrowed)
        and len(rest.split()) <= 2
        and not (_HAS_SHAPE.search(rest) or _STATE_WORD.search(rest))
        # a narrowing that said only a shape ("busiest day") has no value another replaces: "那 clojurians 呢" is added
        and _PREVIOUS_SHAPE.sub(" ", narrowed).strip()
    ):
        # "how many of those were bugs?" then "and enhancements?": the other value, not both at once
        instead = " ".join(narrowed.split()[: -len(rest.split())] + [rest])
        return FollowUp(
            previous["standalone"][: -len(narrowed)] + instead, f"the last question with {rest!r} instead", instead
        )
    # "any of those about X?", "其中跟 X 有关的是哪几个": those records themselves
    listed = bool(_ANY_OF_THEM.match(core) or _WHICH_ONES_CJK.search(core)) and not _COUNTED.search(core)
    listed = listed and not _HAS_SHAPE.search(rest)
    return FollowUp(
        _narrowed(previous, rest, listed and bool(_COUNTED.search(previous["standalone"]))),
        f"of the last answer's records: {rest!r}",
        rest,
        new_time=moved_to,
        reshape="list" if listed else "",
    )


# A question asked in Chinese, wherever its question word stands ("X 那个月一共发了几则")
_CJK_ASKS = re.compile(r"多少|几|幾|谁|誰|哪")


# "the most" with nothing after it: the measure is left to the conversation ("which PR had the most?")
_BARE_MOST = re.compile(
    r"\b(?:had|has|have|got|gets|received|drew)\s+the\s+most\s*$|最多的?(?:是哪(?:个|一个))?$", re.I
)


def _ranked_records(turn: dict[str, Any]) -> bool:
    """The plan a follow-up on `turn` builds on ranks records by a measure (the one record with the most
    reactions), not people or groups."""
    shape = (turn.get("base") or (turn.get("plan") or {}).get("ir") or {}).get("shape") or {}
    return shape.get("kind") == "top" and bool(shape.get("field"))


def _grouping(noun: str) -> str:
    """The words of a question that grouped its records by `noun` ("by label", "per workspace")."""
    return (
        r"\bbreak\s+down\b|\bsplit(?:\s+up)?\b|\bgroup(?:ed)?\b"
        rf"|\b(?:by|per|for\s+each|each|across|which|what)\s+{noun}s?(?:\s+(?:had|has|have|got|saw|gets?))?\b"
    )


# "in the busiest one", "for the top one", "最多的那个里": the first group of the last answer (its biggest)
_FIRST_GROUP = re.compile(
    r"\b(?:in|of|for|from|within|among)\s+the\s+(?:busiest|biggest|largest|top|most\s+active|first)\s+one\b"
    r"|(?:在)?(?:最多|最大|最活跃)的那个(?:里|中|里面)?",
    re.I,
)


# "overall", "all told", "ever": a count over everything, not over the conversation's records
_OVERALL = re.compile(r"\b(?:overall|altogether|all\s+told|in\s+all|ever|of\s+all\s+time|all[\s-]time)\b", re.I)


def _within_the_thread(words: str, said: str) -> str:
    """The restated words, unless they ask about everything ("how many has that person opened overall",
    "posted in total" without "that month": `said` is the follow-up as said)."""
    everything = _OVERALL.search(words) or (re.search(r"\bin\s+total\b", said, re.I) and not _THAT_TIME.search(said))
    return "" if everything else words


def _switched_state(before: str, words: str) -> tuple[str, str] | None:
    """ "now the closed ones", "and the merged ones?" after a question about open records: the same
    question with the other state (a narrowing would ask for records both open and closed)."""
    said = _STATE_ONLY.fullmatch(words)
    if not said:
        return None
    state = said.group(1).lower()
    old = [m for m in _STATE_WORD.finditer(before) if m.group(1).lower() != state]
    if len(old) != 1 or re.search(rf"\b{state}\b", before, re.I):
        return None
    m = old[0]
    return before[: m.start(1)] + state + before[
        m.end(1) :
    ], f"the same question, {state} instead of {m.group(1).lower()}"


# A state word alone ("the closed ones", "merged ones"), and a state word said of the records before.
_STATE_ONLY = re.compile(r"(?:the\s+)?(open|closed|merged|unmerged)(?:\s+ones?)?", re.I)
_STATE_WORD = re.compile(r"\b(open|closed|merged|unmerged)\b(?!\s+by\b)", re.I)


class Standalone(BaseModel):
    question: str = Field(description="the follow-up rewritten as a question that stands alone")


# Other words for the last answer's records ("how many of that bunch are closed by now?", "this lot", "those
# ones"): said as "those", which every rule of a follow-up reads. Not "that set of labels": a set of something else.
_THOSE_SAID_OTHERWISE = re.compile(
    r"\b(?:that|this)\s+(?:bunch|lot|batch|list|set|pile|group)\b(?!\s+of\b)|\bthe\s+(?:bunch|lot)\b(?!\s+of\b)"
    r"|\bthose\s+ones\b",
    re.I,
)


# 这样的帖子, 这种 PR, 这类消息 ("such posts"): 这些
_THOSE_SAID_OTHERWISE_CJK = re.compile(r"^(?:那么|那)?(?:这样的|那样的|这种|那种|这类|那类|此类)")


def those_said_plainly(question: str) -> str:
    """A follow-up with its other words for the last answer's records said as "those" (这些)."""
    return _THOSE_SAID_OTHERWISE_CJK.sub("这些", _THOSE_SAID_OTHERWISE.sub("those", question.strip()))


# "thanks. back to X — ...", "great, and 2023?", "谢谢！那 clojurians 呢": an acknowledgement before the follow-up says
# nothing of it. Words that could open a question ("good", "fine") only when punctuation closes them; "ok", "so"
# stay (`_LEAD`: they say the follow-up continues).
_THANKS = re.compile(
    r"^(?:(?:(?:thanks|thank\s+you|thx|cheers)(?:\s+(?:a\s+lot|so\s+much|again))?[\s,.!;:—–-]+"
    r"|(?:great|cool|nice|perfect|awesome|got\s+it|good|fine|interesting)[\s]*[,.!;:—–-]+\s*"
    r"|(?:谢谢|多谢|感谢|好的|明白了?|了解|收到)[\s,.!，。！、]+))+(?=\S)",
    re.I,
)


def thanks_left_out(question: str) -> str:
    """A follow-up without the acknowledgement it opens with ("thanks. back to polinaeterna — ...")."""
    return _THANKS.sub("", question.strip(), count=1)


def resolve_followup(
    question: str,
    turns: list[dict[str, Any]],
    directory: PeopleDirectory | None,
    now: datetime,
    llm: Any = None,
    kinds: Registry | None = None,
) -> FollowUp:
    """The question as it stands alone, given the thread's earlier turns (oldest first). `kinds`: the
    tenant's kinds (default: the built-in ones)."""
    offline = resolve_offline(question, turns, directory, now, kinds)
    if llm is None or not turns:
        return offline
    conversation = "\n".join(f"Q: {t['standalone']}\nA: {t.get('answer', '')[:400]}" for t in turns[-3:])
    try:
        out: Standalone = (
            structured_output(llm, Standalone)
            .with_retry(stop_after_attempt=2)
            .invoke(
                [
                    ("system", FOLLOWUP_SYSTEM),
                    (
                        "human",
                        (
                            f"Conversation:\n{conversation}\n\nFollow-up: {question}\n"
                            f"Rule-based rewrite: {offline.standalone}"
                        ),
                    ),
                ]
            )
        )
    except Exception:  # noqa: BLE001 - the model's failure leaves the rule-based rewrite
        return offline
    rewritten = (out.question or "").strip()
    if not rewritten or rewritten == question:
        return offline
    return FollowUp(rewritten, "rewritten from the conversation by the chat model")

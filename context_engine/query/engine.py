"""The structured half's steps as plain Python: resolve, plan, validate, execute.

Each step is a function one node of the structured subgraph calls; the loop over them (retries
with the failed attempts) is that subgraph alone (`assistant.structured_query`), which
`assistant.structured_query.run_structured` runs for library callers and tests. Its result is the
tagged union defined here, carrying every attempt: `Success`, `NoResults`, `MaxAttempts`,
`ResolutionFailed`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from context_engine.config import Settings
from context_engine.query.catalog import Catalog
from context_engine.query.compile import CompileError, bind, compile_plan
from context_engine.query.consistency import contradictions
from context_engine.query.execute import ExecutionError, run_pipeline
from context_engine.query.fields import field_for, handle_kind
from context_engine.query.identity import (
    CALENDAR_NAMES,
    COMMON_WORDS,
    NOT_NAMES,
    ORDINARY_WORDS,
    Mention,
    PeopleDirectory,
    Person,
    is_english,
    person_slots,
)
from context_engine.query.ir import WORD_OPERATORS, PlanIR, Shape
from context_engine.query.offline import CONFIDENT, OfflinePlanner
from context_engine.query.plan import Attempt, Plan, PlanningContext
from context_engine.query.spelling import correct
from context_engine.query.timeexpr import AmbiguousTime, find_time_ranges
from context_engine.query.validate import ValidationPolicy, validate_pipeline
from context_engine.query.value_cues import value_cues
from context_engine.query.values import WHOLE_VALUE_END, ValueIndex, begins_name, written
from context_engine.query.written_dates import dates_in_digits, months_spelt_right
from context_engine.text import simplified


@dataclass
class Success:
    plan: Plan
    rows: list[dict[str, Any]]
    attempts: list[Attempt]
    kind: Literal["success"] = "success"
    total: int | None = None  # how many records matched, when the listed rows stop at the row cap (`total_of`)


@dataclass
class NoResults:
    plan: Plan
    attempts: list[Attempt]
    tried: str
    kind: Literal["no_results"] = "no_results"
    rows: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class MaxAttempts:
    attempts: list[Attempt]
    kind: Literal["max_attempts"] = "max_attempts"
    rows: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ResolutionFailed:
    message: str
    candidates: list[Person] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    kind: Literal["resolution_failed"] = "resolution_failed"
    rows: list[dict[str, Any]] = field(default_factory=list)
    unresolved: str = ""  # the words of the question that named no one (or several people)


RunResult = Success | NoResults | MaxAttempts | ResolutionFailed

NOTHING_TO_QUERY = (
    "I could not find anything to query in the question: name what to look for "
    "(PRs, issues, messages, documents), who, when or a topic."
)


_FIRST_PERSON_FILTER = re.compile(
    r"\bmy\s+(?:\w+\s+){0,2}(?:prs?|pull requests?|issues?|tickets?|bugs?|reviews?|messages?|threads?|commits?|docs?|"
    r"documents?|work|queue|tasks?)\b|\b(?:to|by|for|from|assigned|requested|mention(?:ing|s)?)\s+me\b|"
    r"\bI\s+(?:have\s+|had\s+|did\s+)?(?:merged?|opened|open|reviewed?|wrote|write|created?|filed?|reported?|approved?|"
    r"closed?|resolved?|posted?|shipped?|committed|authored|own|am assigned)\b|\bdid I\b|\bhave I\b|"
    r"我的|我(?:上周|本周|这周|今年|去年|最近)?(?:合并|提交|创建|负责|写|发|评审|审查|关闭|解决|完成)|给我|分配给我|需要我|我手上|我名下",
    re.I,
)


# Advice and how-to questions: "what should I do when ...", "how do I ...", "where can I find ...",
# "我该怎么...", "我应该...". Without a first-person filter ("my PRs", "did I merge") their "I" is anyone.
_ADVICE = re.compile(
    r"\b(?:what|how|where|when|who|which)\s+(?:should|do|can|could|would|must|shall|ought)\s+I\b|"
    r"^\s*(?:should|can|could|must|do)\s+I\b|\bI\s+(?:should|need\s+to|have\s+to|ought\s+to)\b|"
    r"我(?:该|应该|应当|需要|要|可以)(?:怎么|如何|怎样|做什么|找谁|去哪)|我(?:该|应该)",
    re.I,
)


# A topic cue right before a word: a lower-case word there that is only near someone's name is the
# topic the question is about (an exact login or alias stays a person: "mentioning lhoestq").
_TOPIC_CUE_BEFORE = re.compile(
    r"(?:\b(?:mention(?:s|ed|ing)?|about|regarding|concerning|discuss(?:es|ed|ing)?|(?:bring|brings|bringing|brought) up)|提到|关于|有关|涉及|讨论|谈到|说到)\s*$",
    re.I,
)


def principals_of(person: Person | None) -> list[str]:
    """Access-list entries that grant this asker: the principals of the one account group the asker
    was matched to (`PeopleDirectory.asker`), never the union of a display person's accounts (which
    names join) and never a display name or handle. A person found in a question holds none."""
    if person is None:
        return []
    return list(person.principals)


MAX_CANDIDATES = 5


def _named(people: list[Person]) -> str:
    return ", ".join(
        f"{p.name} ({p.key}{', in ' + ', '.join(p.places) if p.places else ''})" for p in people[:MAX_CANDIDATES]
    )


def resolve(
    question: str, now: datetime, catalog: Catalog, asker: Person | None, values: ValueIndex | None = None
) -> tuple[PlanningContext | None, ResolutionFailed | None]:
    """People, time and the planning context; an unbroken tie, or a name in a person's place that
    names no one, is a resolution failure (never a query that silently drops the name).

    `values` (the asker's value index) tells a stored value from an unknown person and offers the
    closest people the asker may see; without it the directory's own names do."""
    directory = catalog.directory
    # Stored values ("bug", "payments") are not people; people's own names stored as values are.
    stored = frozenset(
        v.lower()
        for s in catalog.schemas.values()
        for f in s.fields.values()
        for v in (f.enum or [])
        if isinstance(v, str)
    )
    # A tenant's own kind's field names ("by duration_minutes") are not people either.
    stored |= frozenset(path.lower() for s in catalog.schemas.values() if s.own_kind is not None for path in s.fields)
    reserved = stored - set(directory.index)
    asked = question
    question, both = months_spelt_right(dates_in_digits(simplified(question)), set(directory.index))
    if both is not None:  # "Junee 2020" where someone is called Junee: a month or the person, asked
        word, month = both
        people = [directory.people[i] for i in sorted(directory.index[word.lower()])]
        return None, ResolutionFailed(
            f"{word!r} may be the month {month.capitalize()} misspelt or {_named(people)}; which did you mean?",
            candidates=people[:MAX_CANDIDATES],
            unresolved=word,
        )
    question = correct(question, stored | set(directory.index))
    mentions = [
        m
        for m in directory.find_mentions(question, asker, reserved=reserved)
        if not (m.score < 100 and m.text.islower() and _TOPIC_CUE_BEFORE.search(question[: m.start]))
    ]  # "messages mentioning macro", "提到 macro": a subject, not a typo for Mauro
    try:
        times = find_time_ranges(question, now)
    except AmbiguousTime as exc:  # "03/04/2021": both readings offered, never one guessed
        return None, ResolutionFailed(str(exc), unresolved=exc.text)
    # A word of a date ("Valentine's Day 2019", "Christmas Eve") is the date's, not someone's name.
    dated = [(m.start(), m.end()) for t in times for m in re.finditer(re.escape(t.text), question)]
    mentions = [m for m in mentions if m.is_asker or not any(a <= m.start and m.end <= b for a, b in dated)]
    mentions = sorted(mentions + _short_forms(question, mentions, reserved), key=lambda m: m.start)
    # "what should I do when a callback is retried?" asks for advice, "where do I find the ADRs"
    # for a place: "I" there is anyone, not a filter on the asker's records (with or without one).
    if (
        any(m.is_asker for m in mentions)
        and not _FIRST_PERSON_FILTER.search(question)
        and (asker is None or _ADVICE.search(question))
    ):
        mentions = [m for m in mentions if not m.is_asker]
    if asker is None and any(m.is_asker for m in mentions):
        # "my open PRs" needs an asker.
        text = next(m.text for m in mentions if m.is_asker)
        return None, ResolutionFailed(
            f"{text!r} refers to the asker, but no asker is set: name who asks (the run context's `user`)",
            unresolved=text,
        )
    for mention in mentions:
        if mention.ambiguous:
            # A name several people have is the asker's to settle, never a model's guess: declined with them.
            return None, ResolutionFailed(
                f"{mention.text!r} is ambiguous: {_named(mention.candidates)}; which one did you mean?",
                candidates=mention.candidates[:MAX_CANDIDATES],
                unresolved=mention.text,
            )
    guessed = next((m for m in mentions if m.person is None and len(m.candidates) == 1), None)
    if guessed is not None:  # two edits from one login: offered, never assumed
        return None, _no_one_named(guessed.text, directory, values, guessed.candidates)
    joined = next(
        (
            m
            for m in mentions
            if m.person is not None
            and m.score < 100
            and len(m.text.split()) > 1
            and not any(len(alias.split()) > 1 for alias in directory.aliases(m.person))
            and not any(o.person is not None and o.person.key == m.person.key and o.score >= 100 for o in mentions)
        ),
        None,
    )  # "albert villanova (albertvillanova)" names the login outright
    if joined is not None:
        # "Albert Villanova" is one edit from the login albertvillanova, but no record names anyone so:
        # a full name the data does not hold is a guess, declined with the login as the candidate.
        return None, _no_one_named(joined.text, directory, values, [joined.person])
    unknown = _unknown_person(question, mentions, [t.text for t in times], reserved, values)
    if unknown is not None:
        near = [m.person for m in mentions if m.person is not None and m.score < 100 and m.text in unknown]
        return None, _no_one_named(unknown, directory, values, near)
    ctx = PlanningContext(
        question=question,
        now=now,
        schemas=catalog.schemas,
        directory=directory,
        asker=asker,
        mentions=[m for m in mentions if m.person is not None],
        times=times,
        read_as=question if question != asked else "",
    )
    return ctx, None


def _unknown_person(
    question: str, mentions: list[Mention], time_texts: list[str], reserved: frozenset[str], values: ValueIndex | None
) -> str | None:
    """The first span in a person's place that no one in the directory has, and that is not a date,
    a stored value (a label, a repo, a channel ...), an acronym or plain English."""
    times = [(i, i + len(t)) for t in time_texts if t for i in _occurrences(question, t)]
    for text, start, end in _with_lower_case_slots(person_slots(question), question):
        if any(start < e and end > s for s, e in times):
            continue
        inside = [m for m in mentions if start < m.end and end > m.start]
        if inside and not _part_unread(question, start, end, inside):
            continue
        if inside:
            # "Sylvain Gugger" where only "Gugger" came near the login sgugger, "Quentin Lhoest" near
            # lhoestq: the full name is not one the data holds, so it is declined with the candidates.
            return text
        words = re.split(r"[\s-]+", text.lower())  # "first-time contributors": plain words
        if words[0] == "non" and len(words) > 1:
            words = words[1:]  # "by non-members": a plain noun negated, nobody's name
        if (
            all(
                w in COMMON_WORDS | ORDINARY_WORDS | CALENDAR_NAMES | NOT_NAMES
                or (text.islower() and _plain_english(w))
                for w in words
            )
            or text.lower() in reserved
            or _begins_value(question, start, end, reserved)
        ):
            continue
        if len(text) >= 2 and text.isupper():
            continue  # an acronym ("ADR", "OPS"): a topic or a key, not a person
        if values is not None and any(
            _vouches(m) and m.start <= start and m.end >= end for m in values.search(text, limit=MAX_CANDIDATES)
        ):
            continue  # a value the asker's records hold ("by payments", "from Redis" tagged redis)
        return text
    return None


# A lower-case word in a person's place: a possessive ("which of quentin's prs") or who did something to
# the records named just before ("issues polina filed"). Plain English ("today's", "issues people
# filed") is told apart by `_unknown_person`, like any other slot.
_LOWER_CASE_SLOTS = re.compile(
    r"(?<![\w'’@-])([a-z][a-z\u00C0-\u024F]{2,})['’]s\b"
    r"|\b(?:prs?|pull requests?|issues?|tickets?|bugs?|messages?|posts?|threads?|commits?)\s+([a-z][a-z\u00C0-\u024F]{2,})\s+"
    r"(?:has\s+|have\s+|had\s+)?(?:merged|opened|reviewed|wrote|closed|created|filed|posted|committed|approved|"
    r"authored|started|reported|submitted|raised|sent)\b",
    re.I,
)


def _with_lower_case_slots(slots: list[tuple[str, int, int]], question: str) -> list[tuple[str, int, int]]:
    """The person slots, and the lower-case words in a person's place that no slot covers."""
    extra = []
    for m in _LOWER_CASE_SLOTS.finditer(question):
        group = 1 if m.group(1) is not None else 2
        start, end = m.span(group)
        if question[start:end].islower() and all(end <= s or start >= e for _, s, e in slots):
            extra.append((question[start:end], start, end))
    return sorted([*slots, *extra], key=lambda slot: slot[1])


def _begins_value(question: str, start: int, end: int, reserved: frozenset[str]) -> bool:
    """Whether the slot is the start of a longer stored value ("Won't" of the status "Won't Do")."""
    low = question.lower()
    return any(
        len(v) > end - start and low.startswith(v, start) and not low[start + len(v) : start + len(v) + 1].isalnum()
        for v in reserved
    )


def _part_unread(question: str, start: int, end: int, inside: list[Mention]) -> bool:
    """Whether a person slot holds a capitalised name word no mention covers while a mention in it
    was only a fuzzy match: a typo'd name is read whole, or not at all."""
    if all(m.score >= 100 for m in inside):
        return False
    for word in re.finditer(r"[A-Z][\w\u00C0-\u024F'\-]*", question[start:end]):
        a, b = start + word.start(), start + word.end()
        if not any(a < m.end and b > m.start for m in inside) and word.group(0).lower() not in ORDINARY_WORDS:
            return True
    return False


def _vouches(match) -> bool:
    """Whether a value match says the words are a stored value, not an unknown person: any value
    matched exactly, or by prefix or token; a person only exactly ("Polina" merely begins the login
    polinaeterna, and "Mario" both mariosasko and marioga: first names the data never links)."""
    return match.rule == "exact" if match.kind == "person" else match.rule != "fuzzy"


def _occurrences(text: str, part: str) -> list[int]:
    return [m.start() for m in re.finditer(re.escape(part), text)]


# A word that may be a person's short form: four letters or more, not a word of the rules ("merge") or of English.
_SHORT_FORM = re.compile(r"(?<![\w@#/'’.-])([A-Za-z][a-z]{3,})(?![\w'’-])")


def _short_forms(question: str, mentions: list[Mention], reserved: frozenset[str]) -> list[Mention]:
    """ "albertvillanova vs lhoestq …: by how many did albert lead?": a word that begins the login or a name of
    one person the question already names, and no one else's there, is that person said again, not a name
    nobody has."""
    named = list(dict.fromkeys(m.person for m in mentions if m.person is not None and not m.is_asker))
    found = []
    for m in _SHORT_FORM.finditer(question):
        word = m.group(1).lower()
        if (
            any(n.start < m.end() and m.start() < n.end for n in mentions)
            or word in reserved
            or word in COMMON_WORDS | ORDINARY_WORDS | CALENDAR_NAMES | NOT_NAMES
            or _plain_english(word)
        ):
            continue
        owners = [
            p
            for p in named
            if any(
                w.startswith(word) and w != word
                for w in (p.key.lower(), *(part.lower() for part in re.split(r"[\s_.-]+", p.name) if part))
            )
        ]
        if len(owners) == 1:
            found.append(Mention(m.group(1), m.start(), m.end(), person=owners[0], score=90.0))
    return found


def _no_one_named(
    text: str, directory: PeopleDirectory, values: ValueIndex | None, near: list[Person] = ()
) -> ResolutionFailed:
    """Decline a name that names no one, offering the closest people the asker may see (first those a
    part of the name came near: "Quentin Lhoest" offers lhoestq)."""
    if values is not None:
        keys = [m.value for m in values.nearest(text, kinds=("person",), limit=MAX_CANDIDATES)]
        candidates = [directory.by_key[k] for k in keys if k in directory.by_key]
    else:
        candidates = directory.closest(text, limit=MAX_CANDIDATES)
    candidates = list(dict.fromkeys([*near, *candidates]))[:MAX_CANDIDATES]
    if candidates:
        return ResolutionFailed(
            f"I could not find anyone named {text!r}; the closest people are: "
            f"{_named(candidates)}. Which one did you mean?",
            candidates=candidates,
            unresolved=text,
        )
    return ResolutionFailed(
        f"I could not find anyone named {text!r}: there is no one by that name or close to it.", unresolved=text
    )


def unread_name(plan_: Plan, ctx: PlanningContext, values: ValueIndex | None) -> ResolutionFailed | None:
    """A capitalised name the offline plan could not read ("open PRs Zoltan reviewed" with no Zoltan in
    the data): the question is about someone the data does not hold, so it is declined with the
    closest people, not answered about everyone. Not the question's first word (capitalised anyway),
    not an acronym, a date word or plain English, not a stored value."""
    if plan_.planner != "offline":
        return None
    known = COMMON_WORDS | ORDINARY_WORDS | CALENDAR_NAMES | NOT_NAMES
    for span in plan_.not_understood:
        if span.get("how") != "unknown":
            continue  # words read, perhaps the wrong way round: not a name nobody has
        # a first word is capitalised anyway, and so is an English word beginning a later sentence
        # ("… the skill ID. Provide its description too.", "List open PRs. Include Zed's.")
        names = [
            m
            for m in (_after_sentence_word(ctx.question, span, m) for m in _CAPITALISED_RUN.finditer(span["text"]))
            if m and not (span["start"] + m.start() == 0 and " " not in m.group(0))
        ]
        # a full name written in lower case where a person is named ("assigned to ottoline fairweather")
        names += [
            m
            for m in (_LOWER_CASE_RUN.match(span["text"], w.start()) for w in re.finditer(r"\b[a-z]", span["text"]))
            if m and _PERSON_BEFORE.search(ctx.question[: span["start"] + m.start()])
        ]
        # one lower-case word right after "by"/"from" that is no English word ("PRs from mario")
        names += [
            m
            for m in _LOWER_CASE_WORD.finditer(span["text"])
            if _BY_FROM.search(ctx.question[: span["start"] + m.start()]) and not _plain_english(m.group(0).lower())
        ]
        # a Chinese full name where a person is named ("欧阳振华提交的", "by 司马若兰", "司马若兰在 …")
        # ... its surname perhaps read as a word of its own ("上" of 上官婉清 is also "last"): looked for from
        # two characters before the unread words
        wide = {"start": max(0, span["start"] - 2), "text": ctx.question[max(0, span["start"] - 2) : span["end"]]}
        names += [
            m
            for m in _HAN_NAME.finditer(wide["text"])
            if wide["start"] + m.end() > span["start"] and _han_name_in_persons_place(ctx.question, wide, m)
        ]
        for m in names:
            name = m.group(0)
            words = [w.lower() for w in re.split(r"[\s-]+", name) if w.lower() not in _NAME_PARTICLES]
            if (
                any(w in known for w in words)
                or (
                    name.islower() and len(words) < 2 and not _BY_FROM.search(ctx.question[: span["start"] + m.start()])
                )
                or (name.islower() and all(map(_plain_english, words)))
            ):
                continue  # plain words in lower case ("no one has picked up yet") name no one
            if values is not None and any(
                _vouches(v) for v in values.search(name, limit=MAX_CANDIDATES) if v.kind != "person"
            ):
                continue
            return _no_one_named(name, ctx.directory, values)
    return None


# a capitalised word, hyphenated parts capitalised or not ("Okonkwo-Bell", "Jean-paul"), and the ones after it
_CAPITALISED_WORD = r"[A-Z][a-z\u00C0-\u024F'’]+(?:-[A-Za-z][a-z\u00C0-\u024F'’]*)*"
_CAPITALISED_RUN = re.compile(rf"(?<![\w'’-]){_CAPITALISED_WORD}(?:\s+{_CAPITALISED_WORD})*(?![\w-])")
_LOWER_CASE_RUN = re.compile(r"[a-z][a-z\u00C0-\u024F'’\-]+(?:\s+[a-z][a-z\u00C0-\u024F'’\-]+){1,3}(?![\w-])")
# Where a person is named: after "assigned to", "by", "has" ("has daniel van strien had merged") ...
_PERSON_BEFORE = re.compile(r"(?:\b(?:assigned to|by|from|has|have|had|did|does|for)|分配给|指派给)\s+$", re.I)


# What a person does or owns, said right after a Chinese name ("欧阳振华提交的", "司马若兰在 racket 里").
_HAN_PERSON_DOES = (
    "提交|创建|打开|开了|开过|合并|关闭|关掉|关了|修复|修了|提了|提过|提的|解决|评论|回复|发过|发了|发的|发布|写|的|在"
)
# Common Chinese surnames, compound ones first; left out are those that begin everyday words of these
# questions (周一, 严重, 何时, 许多, 范围, 季度, 项目, 程序, 任何, 文档, 马上 ...), so "严重的 bug" is no name.
_HAN_SURNAMES = (
    "欧阳|司马|诸葛|上官|东方|皇甫|令狐|慕容|司徒|夏侯|端木|公孙|尉迟|长孙|宇文|西门|独孤|南宫|"
    "[王李张刘陈杨黄赵吴徐孙朱胡郭林罗郑梁谢宋唐韩冯邓曹彭肖董袁潘蒋蔡杜叶苏魏吕丁沈姚卢姜崔钟谭汪廖贾韦邹孟熊秦"
    "邱江尹薛闫雷侯陶黎贺郝龚邵钱覃武戴莫孔汤施牛樊葛倪庄聂鲁岳翟殷詹欧耿俞柳祝阮霍涂翁骆辛鲍喻祁滕饶穆褚窦戚岑"
    "晏瞿佟闵邬卞栾隋巫寇甄敖巩佘邝田]"
)
# A surname and one to three more Han characters, the length of a Chinese full name, read lazily so a
# verb written against it ("欧阳振华提交") is not taken into the name.
_HAN_NAME = re.compile(
    rf"(?<![\u4e00-\u9fff])(?:{_HAN_SURNAMES})[\u4e00-\u9fff]{{1,3}}?(?=[^\u4e00-\u9fff]|$|{_HAN_PERSON_DOES})"
)
# ... with when it was done said in between ("诸葛明轩 去年关掉的", "X 2023 年 5 月提交的")
_HAN_WHEN = r"(?:去年|今年|前年|最近|上个?月|本月|这个?月|上周|本周|这周|\d{4}\s*年(?:\s*\d{1,2}\s*月)?)"
_HAN_PERSON_AFTER = re.compile(rf"\s*(?:{_HAN_WHEN}\s*)?(?:{_HAN_PERSON_DOES})")


def _han_name_in_persons_place(question: str, span: dict, m: re.Match) -> bool:
    start, end = span["start"] + m.start(), span["start"] + m.end()
    return bool(_PERSON_BEFORE.search(question[:start]) or _HAN_PERSON_AFTER.match(question, end))


def _plain_english(word: str) -> bool:
    """An English word, or the plural of one ("bots")."""
    return is_english(word) or (word.endswith("s") and is_english(word[:-1]))


_SENTENCE_END = re.compile(r"[.?!;:]\s+$")


def _after_sentence_word(question: str, span: dict, m: re.Match) -> re.Match | None:
    """A capitalised run without the English word that begins a sentence after the first: that word is
    capitalised for the sentence, not for a name ("Include Zed's" names Zed). None when nothing is left."""
    if not _SENTENCE_END.search(question[: span["start"] + m.start()]):
        return m
    first = re.match(r"\S+", m.group(0))
    if first is None or not _plain_english(first.group(0).lower()):
        return m
    rest = re.compile(r"\s+").match(m.group(0), first.end())
    return _CAPITALISED_RUN.match(span["text"], m.start() + rest.end()) if rest else None


_LOWER_CASE_WORD = re.compile(r"(?<![\w'’-])[a-z][a-z\u00C0-\u024F]+(?![\w'’-])")
_BY_FROM = re.compile(r"\b(?:by|from)\s+$", re.I)
_NAME_PARTICLES = frozenset("van von de der den da del della di du la le bin al el ter ten".split())


def refused_names(plan_: Plan, ctx: PlanningContext, values: ValueIndex | None) -> ResolutionFailed | None:
    """What the offline plan names that nobody or nothing is: a person, or a value of a named kind; or a
    person named in a role these records do not store."""
    return unplaced_person(plan_, ctx) or unread_name(plan_, ctx, values) or unknown_value(plan_, ctx, values)


def unplaced_person(plan_: Plan, ctx: PlanningContext) -> ResolutionFailed | None:
    """A person the question names in a role no field of these records holds ("who mentions Rashid the
    most" over pull requests, "issues reviewed by X"): declined saying so, not answered about everyone
    (the name dropped) nor about the person's own records (the role read as authorship)."""
    schema = ctx.schemas.get(plan_.collection)
    for span in plan_.not_understood:
        if span.get("how") == "no_field" and schema is not None:
            role = _ROLE_WORDS.get(span.get("role", ""), f"a {span.get('role')}")
            return ResolutionFailed(
                f"The {schema.kind.plural} I can see do not record {role}, so I could not use "
                f"{span['text']!r} the way the question does.",
                unresolved=span["text"],
            )
    return None


# A role as a sentence says what a record does not record.
_ROLE_WORDS = {
    "mentioned": "who is mentioned in them",
    "reviewer": "who reviewed them",
    "assignee": "who they are assigned to",
    "merger": "who merged them",
    "closer": "who closed them",
    "replied_to": "whom they reply to",
    "requested_reviewer": "whose review was requested",
    "commenter": "who commented on them",
    "reply_user": "who replied in them",
}


def unknown_value(plan_: Plan, ctx: PlanningContext, values: ValueIndex | None) -> ResolutionFailed | None:
    """A value named by its kind that no record the asker may read holds ("issues labelled security",
    "the haskell workspace", "#random"): declined with the closest stored values of that kind, not
    answered without it (every open issue) or searched for as text. A value the plan read is known."""
    schema = ctx.schemas.get(plan_.collection)
    if plan_.planner != "offline" or schema is None or plan_.ir is None:
        return None
    for cue in value_cues(ctx.question):
        path = field_for(schema, cue.role)
        if path is None and cue.role in _ASKED_OF_ANY_KIND:  # "priority P1" of records that have none
            return ResolutionFailed(
                f"The {schema.kind.plural} I can see record no {cue.role}, so none is {cue.text!r}.",
                unresolved=cue.text,
            )
        if path is None:
            continue  # "tagged somebody" in a collection without labels: not this kind's value
        # read by a condition, whole: "wontfix" read out of "wontfix-later" is not the value asked for;
        # nor is a topic's words condition ("the erlang workspace" as words of the messages) the value;
        # nor one read as written, of a field whose values the schema does not list (the value index knows)
        if any(
            f.span
            and f.span[0] <= cue.start
            and cue.end <= f.span[1]
            and f.op not in WORD_OPERATORS
            and (f.field not in schema.fields or schema.fields[f.field].enum)
            for f in plan_.ir.filters
        ):
            continue
        stored = [str(v) for v in (schema.fields[path].enum or [])]
        if _holds(ctx.question, cue.start, cue.end, stored, prefix=cue.role in ("workspace", "channel")):
            continue
        # A value of another kind ("marked as Won't Do" is a resolution) is not unknown: only misplaced.
        others = [str(v) for f in schema.fields.values() for v in (f.enum or []) if isinstance(v, str)]
        if _holds(ctx.question, cue.start, cue.end, others, prefix=False):
            continue
        if values is not None and any(m.rule != "fuzzy" for m in values.search(cue.text, limit=MAX_CANDIDATES)):
            continue
        shown, closest = "the closest are", []
        if values is not None:
            closest = [m.label or m.value for m in values.nearest(cue.text, kinds=(cue.role,), limit=MAX_CANDIDATES)]
            if not closest:  # nothing spelt alike: some the asker may read, those holding the word first
                shown = f"the {cue.role}s include"
                closest = values.of_kind(cue.role, containing=cue.text, limit=MAX_CANDIDATES)
        else:
            closest = difflib.get_close_matches(cue.text.lower(), [v.lower() for v in stored], MAX_CANDIDATES, 0.5)
        offered = f"; {shown}: {', '.join(map(repr, closest))}. Which one did you mean?" if closest else "."
        return ResolutionFailed(f"No {cue.role} I can see is named {cue.text!r}{offered}", unresolved=cue.text)
    return None


# Kinds of value a question asks of whatever records it is about: a priority of records without one is
# no priority to drop (while "tagged somebody" in a collection without labels tags a person).
_ASKED_OF_ANY_KIND = frozenset({"priority"})


def _holds(question: str, start: int, end: int, stored: list[str], *, prefix: bool) -> bool:
    """A stored value is written over the words start..end ("good first issue label" holds the label
    "good first issue"; "bugs" the label "bug"), or, for a workspace or channel, they begin one
    ("the elm slack" is elmlang)."""
    for value in stored:
        for m in re.finditer(rf"(?<![A-Za-z0-9_]){written(value)}{WHOLE_VALUE_END}", question, re.I):
            if m.start() < end and start < m.end():
                return True
    return prefix and any(begins_name(question[start:end], v) for v in stored)


def contradiction(plan_: Plan, ctx: PlanningContext) -> ResolutionFailed | None:
    """A plan whose conditions no record can meet together ("not drafts" read as a draft too) is a
    misreading of the question: run, it would answer "0" as if that were the answer. Declined instead,
    with the words that were read both ways."""
    schema = ctx.schemas.get(plan_.collection)
    pairs = contradictions(plan_.ir, schema) if plan_.ir is not None and schema is not None else []
    if not pairs:
        return None
    said = [" and ".join(dict.fromkeys(repr(ctx.question[s[0] : s[1]]) for s in pair if s)) for pair in pairs]
    read = "; ".join(s for s in said if s)
    return ResolutionFailed(
        "I read conditions into the question that no record can meet together"
        + (f" ({read})" if read else "")
        + ", so I have misread it. Could you say it another way?"
    )


def plan(
    ctx: PlanningContext,
    llm_planner=None,
    always_llm: bool = False,
    offline: Plan | None = None,
    declines: Callable[[Plan], bool] | None = None,
) -> Plan:
    """Offline first; the LLM when the offline plan is not confident or an attempt failed.

    `always_llm` sends every question to the model (to measure the LLM planner on its own). `offline`
    is the question's offline plan when the router already built it: it is built once per question.
    `declines(offline)` says the offline plan is refused whoever plans (a name nobody has): then no
    model is asked to plan around it, and the offline plan goes on to be declined."""
    if offline is not None:
        ctx.draft = offline
    if llm_planner is not None and (ctx.previous or always_llm):
        return _read_as(llm_planner.plan(ctx), ctx)
    offline = ctx.draft = offline or OfflinePlanner().plan(ctx)
    if offline.confidence < CONFIDENT and llm_planner is not None and not (declines and declines(offline)):
        try:
            planned = llm_planner.plan(ctx)
            if not planned.not_understood:
                # The words the rules could not read are the model's reading now: said, so it can be checked.
                planned.not_understood = [{**s, "how": "model"} for s in offline.not_understood]
            return _read_as(planned, ctx)
        except Exception as exc:  # noqa: BLE001 - a model failure must not lose the offline answer
            offline.notes.append(f"LLM planner failed ({exc.__class__.__name__}); kept the offline plan")
    return _read_as(offline, ctx)


def _read_as(plan_: Plan, ctx: PlanningContext) -> Plan:
    plan_.read_as = ctx.read_as
    return plan_


def validate(plan_: Plan, ctx: PlanningContext, settings: Settings) -> str | None:
    schema = ctx.schemas.get(plan_.collection)
    if schema is None:
        return (
            f"Collection {plan_.collection!r} does not exist or is empty; use one of: {', '.join(sorted(ctx.schemas))}."
        )
    errors = validate_pipeline(
        plan_.pipeline,
        schema,
        ValidationPolicy(allow_regex=settings.allow_regex, max_limit=settings.max_rows),
        schemas=ctx.schemas,
    )
    return "; ".join(errors) if errors else None


def execute(plan_: Plan, ctx: PlanningContext, store: Any, settings: Settings, tenant: str) -> list[dict[str, Any]]:
    rows = run_pipeline(
        store,
        plan_.collection,
        plan_.pipeline,
        tenant=tenant,
        principals=principals_of(ctx.asker),
        schema=ctx.schemas.get(plan_.collection),
        max_rows=settings.max_rows,
        max_time_ms=settings.max_time_ms,
    )
    return with_display_names(rows, plan_, ctx.directory)


# The stages that only order, cut or trim a list of records: its total is the count of what comes before them.
_LIST_TAIL = ("$sort", "$limit", "$skip", "$project")


def total_of(
    plan_: Plan, rows: list[dict[str, Any]], ctx: PlanningContext, store: Any, settings: Settings, tenant: str
) -> int | None:
    """How many records a list answer matched when its rows stop at the row cap ("Found 200 issues" of
    1,234): the same pipeline up to its ordering and limit, counted, so the answer states the exact
    total rather than the cap. None when the list is whole or is not a list of records."""
    if len(rows) < settings.max_rows or not all("ref" in row for row in rows):
        return None
    stages = list(plan_.pipeline)
    while stages and next(iter(stages[-1])) in _LIST_TAIL:
        stages.pop()
    counted = run_pipeline(
        store,
        plan_.collection,
        [*stages, {"$count": "count"}],
        tenant=tenant,
        principals=principals_of(ctx.asker),
        schema=ctx.schemas.get(plan_.collection),
        max_rows=1,
        max_time_ms=settings.max_time_ms,
    )
    return int(counted[0]["count"]) if counted else None


def inner_pipeline(plan_: Plan, ctx: PlanningContext, settings: Settings) -> list[dict[str, Any]]:
    """A nested plan's first query: its inner plan compiled and validated like any plan (`ExecutionError`
    with the reason when it cannot be)."""
    assert plan_.ir is not None and plan_.ir.nested is not None
    inner = plan_.ir.nested.inner
    schema = ctx.schemas.get(inner.collection)
    if schema is None:
        raise ExecutionError(f"the first step's collection {inner.collection!r} does not exist or is empty")
    try:
        pipeline = compile_plan(inner, schema, ctx.schemas)
    except CompileError as exc:
        raise ExecutionError(f"the first step: {exc}") from None
    policy = ValidationPolicy(allow_regex=settings.allow_regex, max_limit=settings.max_rows)
    errors = validate_pipeline(pipeline, schema, policy, schemas=ctx.schemas)
    if errors:
        raise ExecutionError("the first step's query: " + "; ".join(errors))
    return pipeline


def run_inner(plan_: Plan, ctx: PlanningContext, store: Any, settings: Settings, tenant: str) -> Plan:
    """A nested plan's first step (`PlanIR.nested`): its inner plan compiled, validated and run, scoped exactly
    as any plan is, and its top result bound into the outer plan (`compile.bind`), which is then compiled
    anew: the plan the caller validates and runs next. The bound person's display name is kept for the
    answer ("U34F160B5" is Clarine). A failed step raises `ExecutionError` with what went wrong."""
    assert plan_.ir is not None and plan_.ir.nested is not None
    inner = plan_.ir.nested.inner
    schema = ctx.schemas[inner.collection]
    pipeline = inner_pipeline(plan_, ctx, settings)
    rows = run_pipeline(
        store,
        inner.collection,
        pipeline,
        tenant=tenant,
        principals=principals_of(ctx.asker),
        schema=schema,
        max_rows=settings.max_rows,
        max_time_ms=settings.max_time_ms,
    )
    nested = plan_.ir.nested
    top = rows[0].get("_id") if rows else None
    person, handle = None, None
    if nested.slot == "person" and top is not None:
        # The person ranked, by the handle the inner records keep; asked about by the outer field's own kind.
        ranked_by = handle_kind(schema, inner.shape.field or "")
        person = next((p for p in ctx.directory.people if ranked_by and p.handle(ranked_by) == top), None)
        asked_by = handle_kind(ctx.schemas.get(plan_.collection), nested.field)
        if asked_by and ranked_by and asked_by != ranked_by:
            handle = person.handle(asked_by) if person is not None else None
            if handle is None:
                raise ExecutionError(f"the first step found {top}, who has no {asked_by} handle to ask the rest about")
    try:
        ir = bind(plan_.ir, pipeline, rows, handle)
        outer = compile_plan(ir, ctx.schemas[plan_.collection], ctx.schemas)
    except (CompileError, KeyError) as exc:
        raise ExecutionError(f"the second step: {exc}") from None
    assert ir.nested is not None
    ir.nested.name = person.name if person is not None else None
    return replace(plan_, ir=ir, pipeline=outer)


def unmatched_topic(
    plan_: Plan, ctx: PlanningContext, store: Any, settings: Settings, tenant: str
) -> dict[str, Any] | None:
    """The topic of a plan that found nothing, when no record the asker may read mentions it at all
    ("desmond okonkwo-raines bug issues": no one by that name, read as a topic): said as not
    understood, so "0 issues" does not pass for an answer. None when the topic is in some record.
    The topic is the full-text words, or the word conditions on the subject that topic words became
    ("about quokkas": the word in either number)."""
    ir = plan_.ir
    if ir is None:
        return None
    topic = [(s["start"], s["end"]) for s in plan_.understood if s["how"] == "topic"]
    word_filters = [
        f
        for f in ir.filters
        if f.op in WORD_OPERATORS
        and not f.negate
        and f.span
        and any(a <= f.span[0] and f.span[1] <= b for a, b in topic)
    ]
    schema = ctx.schemas.get(plan_.collection)
    if ir.text and ir.text_span is not None:
        probe = [{"$match": {"$text": {"$search": " ".join(ir.text)}}}, {"$limit": 1}]
    elif word_filters and schema is not None:
        probe = compile_plan(PlanIR(plan_.collection, filters=word_filters, shape=Shape("list", limit=1)), schema)
    else:
        return None

    def mentioned(pipeline: list[dict[str, Any]]) -> bool:
        return bool(
            run_pipeline(
                store,
                plan_.collection,
                pipeline,
                tenant=tenant,
                principals=principals_of(ctx.asker),
                schema=schema,
                max_rows=1,
                max_time_ms=settings.max_time_ms,
            )
        )

    if mentioned(probe):
        return None
    words = {w.strip('"').lower() for term in ir.text for w in term.split()}
    said = (
        [(s["start"], s["end"]) for s in plan_.understood if s["how"] == "topic" and s["text"].lower() in words]
        if ir.text
        else [f.span for f in word_filters if f.span]
    )
    start, end = (min(a for a, _ in said), max(b for _, b in said)) if said else (ir.text_span or (0, 0))
    unread = {"text": ctx.question[start:end], "start": start, "end": end, "how": "unknown"}  # the words, not the cue
    # each of a few full-text words in no record either ("desmond", "okonkwo-raines"), not only together
    # ("flaky tokenizer": each word is somewhere): what a name nobody has looks like (`unmatched_name`)
    if ir.text and 2 <= len(words) <= 4:
        unread["each_unmentioned"] = not any(
            mentioned([{"$match": {"$text": {"$search": f'"{w}"'}}}, {"$limit": 1}]) for w in sorted(words)
        )
    elif not ir.text and schema is not None and 2 <= len(word_filters) <= 4:
        unread["each_unmentioned"] = not any(
            mentioned(compile_plan(PlanIR(plan_.collection, filters=[f], shape=Shape("list", limit=1)), schema))
            for f in word_filters
        )
    return unread


def unmatched_name(unread: dict[str, Any], ctx: PlanningContext, values: ValueIndex | None) -> ResolutionFailed | None:
    """A topic no record mentions (`unmatched_topic`) written as a full name ("Casimir Okonkwo-Bell
    thread count", "司马若兰开过哪些"): someone the data does not hold, declined with the closest people like any name
    nobody has, not answered "0"."""
    name = unread["text"].strip()
    # ... or a Chinese full name where a person is named ("欧阳静怡开过的", searched for as words)
    span = {"start": unread["start"], "text": ctx.question[unread["start"] : unread["end"]]}
    for m in _HAN_NAME.finditer(span["text"]):
        if _han_name_in_persons_place(ctx.question, span, m):
            return _no_one_named(m.group(0), ctx.directory, values)
    words = [w.lower() for w in re.split(r"[\s-]+", name) if w.lower() not in _NAME_PARTICLES]
    known = COMMON_WORDS | ORDINARY_WORDS | CALENDAR_NAMES | NOT_NAMES
    # ... or written in lower case where the question opens, before what is asked of them ("desmond
    # okonkwo-raines bug issues count"), each of its words in no record, as a capitalised full name is anywhere
    opening = (
        unread.get("each_unmentioned")
        and not ctx.question[: unread["start"]].strip()
        and _LOWER_CASE_RUN.fullmatch(name)
    )
    if (
        not (_CAPITALISED_RUN.fullmatch(name) or opening)
        or " " not in name
        or any(w in known for w in words)
        or all(map(_plain_english, words))
    ):
        return None
    return _no_one_named(name, ctx.directory, values)


def with_display_names(rows: list[dict[str, Any]], plan_: Plan, directory: PeopleDirectory) -> list[dict[str, Any]]:
    """An aggregate over people carries the person's display name beside the login/id."""
    if not plan_.person_field:
        return rows
    _, kind = plan_.person_field
    by_handle = {p.handle(kind): p for p in directory.people if p.handle(kind)}
    for row in rows:
        person = by_handle.get(row.get("_id"))
        if person is not None:
            row["name"] = person.name
    return rows


def describe_attempts(attempts: list[Attempt]) -> str:
    return " | ".join(f"{a.plan.collection} {a.plan.pipeline}" for a in attempts)

"""Follow-ups that operate on the last answer's result, as changes to the plan (IR) that produced it.

`answering.plan_ops` changes the last plan's window, shape or conditions; these operations take what the last
answer *was* and do something with it:

- a correction:       "sorry, scratch that — the closed ones", "不对，我是说关闭的" -> the last plan with the
                      corrected condition replacing the one on the same field, the rest (its window) kept
- the complement:     "and the rest?", "and the ones that didn't?", "剩下的呢" -> the condition the last turn
                      added, negated, on the same base (on a first turn: its one condition that is not a
                      person, a place or a time)
- re-sorted and cut:  "sort those by comments and keep only the top 3", "按回复数排一下，只要前五个"
- the most of those:  "which of them had the most discussion?", "其中评论最多的是哪个" (after a list of records also
                      "which one drew the most discussion?", 哪一个留言最多) -> the one record of the last ones with the
                      most of a measure
- a group counted:    "how many replies was that?" after a ranking -> the top group's records, counted
- a total:            "how many comments do his three add up to?", "这几个一共收到多少回复" -> the sum of a
                      measure over exactly the records listed (after their order and cut)
- a share:            "what share of all PRs merged that year is that?", "占比是多少" -> the last count over the
                      same records without the person (or the condition the last turn added)
- a value as filter:  "which label was on the most issues?" then "how many 2021 issues had it?" -> the top
                      group's value an equality on the grouped field, the follow-up's own words added
- listed:             "把它们列出来", "…，列出来看看" -> the same records (after the words before it), listed; a
                      ranking narrowed to one of its values ("只看 mariosasko 的，列出来") is that value's records

Each returns None when the follow-up is not that operation or the last plan cannot take it; `operate` in
`answering.plan_ops` and the rewritten question then stand.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import Any

from context_engine.answering.followup import says_a_shape
from context_engine.answering.plan_ops import (
    Operation,
    as_operation,
    base_of,
    names_its_own_share,
    narrowed_by,
    reshaped_as,
)
from context_engine.query.catalog import Catalog
from context_engine.query.compile import compile_plan
from context_engine.query.fields import field_for
from context_engine.query.identity import Person
from context_engine.query.ir import RECORD_SHAPES, WORD_OPERATORS, Filter, PlanIR, Shape, SortKey
from context_engine.query.planner.shape import DEFAULT_LIMIT
from context_engine.query.values import ValueIndex

_PUNCT = " ?？.。!！"
# what opens a follow-up without meaning anything of its own ("and", "ok", "那")
_OPENING = r"^(?:(?:and|so|ok(?:ay)?|then|what\s+about|how\s+about|now)[\s,]+)*(?:那么?|那)?\s*"

# "sorry, scratch that — X", "no, make that X", "correction: X", "不对，我是说 X": X replaces what it contradicts
_CORRECTION = re.compile(
    r"^(?:(?:sorry|oops|no|nope|wait|actually|hmm|ah|er|um)[\s,!.;:—–-]*)*"
    r"(?:scratch\s+that|strike\s+that|my\s+(?:bad|mistake)|correction|make\s+(?:that|it)|change\s+(?:that|it)\s+to)[\s,!.;:—–-]+(?P<en>.+)$"
    r"|^(?:不对|说错了|搞错了|错了|更正一下|更正|我是说|我的意思是)[\s，,：:。;；—–-]*(?:我是说|应该是|是)?[\s，,]*(?P<cjk>.+)$",
    re.I,
)
# "and the rest?", "the others", "the remaining ones", "剩下的呢", "其余的"
_REST = re.compile(
    _OPENING + r"(?:(?:the\s+)?(?:rest|others|other\s+ones|remaining\s+ones|remainder)(?:\s+of\s+(?:them|those))?"
    r"|(?:the\s+ones|those|ones|the\s+others)\s+(?:that|which|who)\s+(?:did|do|does|were|was|are|is|have|has|had)"
    r"(?:n['’]t|\s+not)(?:\s+(?:get\s+any|at\s+all))?"
    r"|(?:剩下|剩余|其余|其他|其它|另外)的(?:那些|几个)?|没有的(?:那些)?)(?:\s+then)?(?:呢)?$",
    re.I,
)
# a measure said by its word, and the fields that hold it (the first one the collection has)
_MEASURE_WORD = r"comments?|replies|reply|reactions?|additions|deletions|discussion|评论|回复|回覆|反应|讨论|留言"
_MEASURE_PATHS = (
    ("comment", ("comments", "fields.comment.total")),
    ("评论", ("comments", "fields.comment.total")),
    ("repl", ("reply_count", "comments")),
    ("回复", ("reply_count", "comments")),
    ("回覆", ("reply_count", "comments")),
    ("留言", ("comments", "reply_count", "fields.comment.total")),  # Taiwan's word for a comment, or a reply
    ("reaction", ("reactions.total_count",)),
    ("反应", ("reactions.total_count",)),
    ("discussion", ("comments", "reply_count", "fields.comment.total")),
    ("讨论", ("comments", "reply_count", "fields.comment.total")),
    ("addition", ("additions",)),
    ("deletion", ("deletions",)),
)
_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_CJK_NUMBERS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_COUNT = r"\d+|one|two|three|four|five|six|seven|eight|nine|ten|[一两二三四五六七八九十]"
# "sort those by comments and keep only the top 3", "order them by replies, top five", "按评论数排序，只留前三个"
_RESORT = re.compile(
    _OPENING + r"(?:(?:now|please|can\s+you|could\s+you)\s+)*(?:sort|order|rank|re-?sort)\s+(?:those|them|these|it|that"
    r"|the\s+list|the\s+results)?\s*by\s+(?:the\s+)?(?:(?:number|count)\s+of\s+)?(?P<en>" + _MEASURE_WORD + r")"
    r"(?:\s+(?P<asc>ascending|asc|fewest\s+first|least\s+first))?"
    r"(?:(?:[\s,;]+(?:and\s+)?(?:then\s+)?(?:keep|show|give\s+me|take|leave|list)?\s*(?:only|just)?\s*(?:the\s+)?"
    r"(?:top|first)\s+(?P<n>" + _COUNT + r"))(?:\s+(?:ones?|of\s+them))?)?$"
    r"|^(?:那)?(?:把(?:它们|这些|那些)?)?按(?:照)?(?P<cjk>评论|回复|回覆|反应)(?:数|数量|的数量)?(?:从多到少|从高到低)?"
    r"(?:排序|排一下|排个序|排)(?:[，,\s]*(?:只|就)?(?:留|保留|要|取|看|给我)?(?:前|头)(?P<cn>"
    + _COUNT
    + r")(?:个|条|名)?)?$",
    re.I,
)
# "how many comments do his three add up to?", "the total replies of those", "这几个一共收到多少回复"
_TOTAL = re.compile(
    r"\b(?:how\s+many|what(?:'s|\s+is|\s+are)?\s+the\s+(?:total|sum|combined)(?:\s+number)?(?:\s+of)?|total(?:\s+number\s+of)?)"
    r"\s+(?P<en>" + _MEASURE_WORD + r")\b(?P<rest>.*)$"
    r"|(?:一共|总共|加起来|合计|总计)(?:收到|有|得到|拿到|获得)?(?:了)?(?:多少|几)(?:条|个)?(?P<cjk>评论|回复|回覆|反应)"
    r"|(?P<cjk2>评论|回复|回覆|反应)(?:数)?(?:一共|总共|加起来|合计|总计)(?:有|是)?多少",
    re.I,
)
# the words that make a measure's count a total over the last records, not a question of its own
_TOTAL_OF_THOSE = re.compile(
    r"\b(?:add\s+up(?:\s+to)?|in\s+total|altogether|combined|all\s+together|between\s+them|summed|in\s+all)\b",
    re.I,
)
# "which of them had the most discussion?", "其中评论最多的是哪个": the one record of the last ones with the most
_MOST_OF_THOSE = re.compile(
    _OPENING
    + r"(?:which|what)\s+(?:one\s+)?(?:of\s+(?:them|those|these)|among\s+(?:them|those))\s+(?:had|has|got|drew|"
    r"received|gets|saw|attracted|generated)\s+the\s+(?P<dir>most|fewest|least)\s+(?P<en>" + _MEASURE_WORD + r")$"
    r"|^(?:那)?(?:其中|这些里|这里面|它们里|这些当中|里面)(?P<cjk>"
    + _MEASURE_WORD
    + r")(?:数)?(?P<cdir>最多|最少)的(?:是)?"
    r"(?:哪个|哪条|哪一个|哪一条)$",
    re.I,
)
# "which one drew the most discussion?", "哪一个留言最多", "回复最多的是哪条": one record of those just listed, said
# without "of them" (read so only after an answer that listed records: after a ranking of people it is a person)
_WHICH_ONE_MOST = re.compile(
    _OPENING + r"(?:which|what)\s+(?:one|issue|pr|pull\s+request|thread|message|post|ticket)\s+(?:had|has|got|drew|"
    r"received|gets|saw|attracted|generated|pulled\s+in)\s+the\s+(?P<dir>most|fewest|least)\s+(?P<en>"
    + _MEASURE_WORD
    + r")$"
    r"|^(?:那)?(?:哪一?(?:个|条|篇)(?:的)?(?P<cjk>"
    + _MEASURE_WORD
    + r")(?:数)?(?P<cdir>最多|最少)(?:的)?|(?P<cjk2>"
    + _MEASURE_WORD
    + r")(?:数)?(?P<cdir2>最多|最少)的(?:是)?(?:哪个|哪条|哪一个|哪一条|哪篇))$",
    re.I,
)
# "how many replies was that?", "那是多少条": the top group's own records, counted (one group: "that", not "those")
_HOW_MANY_WAS_THAT = re.compile(
    _OPENING + r"how\s+many(?:\s+\w+)?\s+(?:was|is)\s+(?:that|it)(?:\s+exactly)?$"
    r"|^(?:那)?(?:那|这)是多少(?:条|个|次)?$",
    re.I,
)
# "his three", "those 5", "这三个": how many records the total is said to be over
_HOW_MANY_OF_THOSE = re.compile(
    r"\b(?:his|her|their|those|these|the|them|all)\s+(?P<n>"
    + _COUNT
    + r")\b|[这那](?P<cn>[两二三四五六七八九十])(?:个|条)",
    re.I,
)
_SHARE = re.compile(
    r"\b(?:what|which)\s+(?:share|fraction|proportion|percentage|percent|part)\s+of\b"
    r"|\bhow\s+(?:big|large)\s+a\s+(?:share|part|fraction)\s+of\b|\bwhat\s+%\s+of\b"
    r"|占比|所占(?:的)?比例|占(?:了)?(?:全部|所有|总数|总体)?(?:的)?(?:多少|几成|百分之几|比例)|比例是多少",
    re.I,
)
# the value the last answer was: "it", "that label", "这个标签"
_THAT_VALUE = re.compile(
    r"\b(?:it|that\s+(?:one|label|tag|value|repo|repository|workspace|channel|state|type|milestone)"
    r"|this\s+(?:one|label|tag))\b|(?:这个|那个|该)(?:标签|仓库|工作区|频道)|它",
    re.I,
)
# "list them", "把它们列出来", "…，列出来看看": the records, listed (after the words before it)
_LIST = re.compile(
    r"(?:^|[，,;；.。\s]+)(?:(?:ok|and|now|then|please)[\s,]+)*(?:(?:just\s+)?(?:list|show(?:\s+me)?)\s+(?:them|those|these)"
    r"(?:\s+(?:out|all|please))?|(?:那|那就|那么|好|就)?(?:把)?(?:它们|他们|这些|那些)?(?:都|全)?列(?:出来|一下|出)(?:吧|看看|一下)?)$",
    re.I,
)


def operate_on_result(
    question: str,
    turns: list[dict[str, Any]],
    catalog: Catalog,
    asker: Person | None,
    now: datetime,
    values: ValueIndex | None = None,
) -> Operation | None:
    """The follow-up as an operation on the last answer's result, or None when it is not one."""
    if not turns:
        return None
    base = base_of(turns[-1])
    if base is None or base.collection not in catalog.schemas:
        return None
    said = question.strip(_PUNCT)
    listed = _LIST.search(said)
    if listed is not None:
        return _listed(said[: listed.start()].strip(_PUNCT + "，,"), turns, base, catalog, asker, now, values)
    return _operated(said, turns, base, catalog, asker, now, values)


def _operated(
    said: str,
    turns: list[dict[str, Any]],
    base: PlanIR,
    catalog: Catalog,
    asker: Person | None,
    now: datetime,
    values: ValueIndex | None,
) -> Operation | None:
    corrected = _CORRECTION.match(said)
    if corrected is not None:
        return _corrected(corrected.group("en") or corrected.group("cjk"), base, catalog, asker, now, values)
    if _REST.match(said):
        return _complement(turns, base, catalog)
    most = _MOST_OF_THOSE.match(said)
    if most is None and base.shape.kind in RECORD_SHAPES:
        most = _WHICH_ONE_MOST.match(said)
    if most is not None:
        return _most_of_those(most, base, catalog)
    if _HOW_MANY_WAS_THAT.match(said):
        return _top_group_counted(turns[-1], base, catalog)
    resorted = _RESORT.match(said)
    if resorted is not None:
        return _resorted(resorted, base, catalog)
    total = _TOTAL.search(said)
    if total is not None:
        return _summed(total, base, catalog)
    if _SHARE.search(said):
        return _share(said, turns, base, catalog, asker, now, values)
    if _THAT_VALUE.search(said):
        return _value_as_filter(said, turns[-1], base, catalog, asker, now, values)
    return None


def _corrected(
    words: str, base: PlanIR, catalog: Catalog, asker: Person | None, now: datetime, values: ValueIndex | None
) -> Operation | None:
    """The corrected words planned over the last plan's kind of record: a condition on the same field replaces
    the old one (one-valued fields), everything else of the last plan (its window, its person) is kept."""
    if says_a_shape(words):
        return None  # "scratch that — how many ...": a question of its own
    narrowed = narrowed_by(base, words.strip(_PUNCT), catalog, asker, now, values)
    if narrowed is None:
        return None
    changed, unread = narrowed
    return as_operation(
        changed, base=changed, catalog=catalog, how=f"the last plan corrected to {words!r}", unread=unread
    )


def _key(f: Filter) -> tuple[str, str, str, bool, str | None]:
    return (f.field, f.op, repr(f.value), f.negate, f.via)


def _complement(turns: list[dict[str, Any]], base: PlanIR, catalog: Catalog) -> Operation | None:
    """The condition the last turn added to the one before, negated; on a first turn, its one condition that
    is not about a person, a place (workspace, repo) or words. More than one such condition: no complement."""
    schema = catalog.schemas[base.collection]
    before = base_of(turns[-2]) if len(turns) > 1 else None
    if before is not None and before.collection == base.collection:
        kept = {_key(f) for f in before.filters}
        added = [f for f in base.filters if _key(f) not in kept]
        if len(added) != len(base.filters) - len(before.filters):
            added = []  # the turn before was not this plan with a condition more
    else:
        scope = {p for fields in schema.kind.people_roles().values() for p, _ in fields} | set(
            schema.kind.people_roles()
        )
        scope |= {p for role in ("workspace", "repo", "channel") for p in (role, field_for(schema, role)) if p}
        added = [f for f in base.filters if f.field not in scope and f.op not in WORD_OPERATORS and not f.via]
    if len(added) != 1 or base.shape.kind not in (*RECORD_SHAPES, "count"):
        return None
    (condition,) = added
    negated = replace(condition, negate=not condition.negate, span=None)
    filters = [negated if f is condition else f for f in base.filters]
    shape = base.shape if base.shape.kind == "count" else _listing(base, schema)
    changed = replace(base, filters=filters, shape=shape)
    return as_operation(changed, base=changed, catalog=catalog, how=f"the rest: {condition.field} negated")


def _listing(ir: PlanIR, schema: Any) -> Shape:
    """The plan's records as a list: its own list as it is, any other shape's records newest first."""
    if ir.shape.kind in RECORD_SHAPES:
        return ir.shape
    return reshaped_as("list", replace(ir, shape=Shape("count")), schema) or Shape("list")


def _measure_path(word: str, schema: Any) -> str | None:
    word = word.lower()
    for stem, paths in _MEASURE_PATHS:
        if word.startswith(stem):
            return next((p for p in paths if schema.has_path(p)), None)
    return None


def _number(text: str | None) -> int | None:
    if not text:
        return None
    text = text.lower()
    return int(text) if text.isdigit() else _NUMBERS.get(text) or _CJK_NUMBERS.get(text)


def _resorted(said: re.Match[str], base: PlanIR, catalog: Catalog) -> Operation | None:
    """The last answer's records in another order, cut to the first n when said."""
    schema = catalog.schemas[base.collection]
    path = _measure_path(said.group("en") or said.group("cjk"), schema)
    if path is None or base.shape.kind not in (*RECORD_SHAPES, "count"):
        return None
    limit = _number(said.group("n") or said.group("cn"))
    direction = 1 if said.group("asc") else -1
    shape = Shape("list", sort=[SortKey(path, direction)], limit=limit or base.shape.limit, fields=base.shape.fields)
    changed = replace(base, shape=shape)
    cut = f", the first {limit}" if limit else ""
    return as_operation(changed, base=changed, catalog=catalog, how=f"the last records sorted by {path}{cut}")


def _most_of_those(said: re.Match[str], base: PlanIR, catalog: Catalog) -> Operation | None:
    """The one record of the last answer's records with the most (fewest) of a measure."""
    schema = catalog.schemas[base.collection]
    said_as = {k: v for k, v in said.groupdict().items() if v}
    path = _measure_path(said_as.get("en") or said_as.get("cjk") or said_as.get("cjk2", ""), schema)
    if path is None or base.shape.kind not in (*RECORD_SHAPES, "count"):
        return None
    fewest = said_as.get("dir", "").lower() in ("fewest", "least") or "最少" in (
        said_as.get("cdir"),
        said_as.get("cdir2"),
    )
    shape = Shape("list", sort=[SortKey(path, 1 if fewest else -1)], limit=1, fields=base.shape.fields)
    picked = replace(base, shape=shape)
    return as_operation(picked, base=base, catalog=catalog, how=f"the one of the last records with the most {path}")


def _top_group_counted(previous: dict[str, Any], base: PlanIR, catalog: Catalog) -> Operation | None:
    """After a ranking of groups, "how many was that" is the first group's records, counted."""
    groups = previous.get("answer_groups") or {}
    field, keys = groups.get("field"), groups.get("keys") or []
    if base.shape.kind != "group" or base.shape.bucket or not field or not keys:
        return None
    kept = [f for f in base.filters if f.field != field]
    counted = replace(base, filters=[*kept, Filter(field, "eq", keys[0])], shape=Shape("count"))
    return as_operation(counted, base=counted, catalog=catalog, how=f"the records of {field} {keys[0]}, counted")


def _summed(said: re.Match[str], base: PlanIR, catalog: Catalog) -> Operation | None:
    """The total of a measure over exactly the records the last answer listed (after its order and cut) or
    counted. In English only with words that make it a total of those ("add up to", "in total"): "how many
    comments" alone is a question of its own."""
    schema = catalog.schemas[base.collection]
    word = said.group("en") or said.group("cjk") or said.group("cjk2")
    if said.group("en") and not _TOTAL_OF_THOSE.search(said.group("rest") or ""):
        return None
    path = _measure_path(word, schema)
    if path is None or base.shape.kind not in (*RECORD_SHAPES, "count"):
        return None
    number = _HOW_MANY_OF_THOSE.search(said.string)
    cut = base.shape.limit if base.shape.kind != "count" and base.shape.limit != DEFAULT_LIMIT else None
    if number is not None and _number(number.group("n") or number.group("cn")) != cut:
        return None  # "his three" when the last answer was not three records: not those
    if cut:  # the total of the records shown: ordered and cut first
        listed = compile_plan(replace(base, shape=replace(base.shape, fields=[])), schema, catalog.schemas)
        pipeline = [*listed, {"$group": {"_id": None, "total": {"$sum": f"${path}"}}}, {"$project": {"_id": 0}}]
        return as_operation(
            replace(base, pipeline=pipeline), base=base, catalog=catalog, how=f"the total {path} of the records listed"
        )
    summed = replace(base, shape=Shape("sum", field=path))
    return as_operation(summed, base=base, catalog=catalog, how=f"the total {path} of the last records")


def _share(
    said: str,
    turns: list[dict[str, Any]],
    base: PlanIR,
    catalog: Catalog,
    asker: Person | None,
    now: datetime,
    values: ValueIndex | None,
) -> Operation | None:
    """The last answer's records as a share of a wider base: the same plan without its person (or, with no
    person, without the condition the last turn added), the person's (that condition's) records the part.
    After a share, the share of whoever (whatever) the follow-up names instead ("和 X 比呢？他的占比")."""
    schema = catalog.schemas[base.collection]
    if base.shape.kind != "share" and names_its_own_share(said, base.collection, catalog, asker, now, values):
        return None  # "so what fraction of his PRs got merged?": a share question of its own, about the thread's person
    if base.shape.kind == "share":
        counted = replace(base, filters=[*base.filters, *base.shape.part], shape=Shape("count"))
        narrowed = narrowed_by(counted, _SHARE.sub(" ", said), catalog, asker, now, values)
        if narrowed is None or narrowed[0].shape.kind != "count" or narrowed[0].filters == counted.filters:
            return None
        base = narrowed[0]
    if base.shape.kind not in (*RECORD_SHAPES, "count"):
        return None
    people = {p for fields in schema.kind.people_roles().values() for p, _ in fields} | set(schema.kind.people_roles())
    part = [f for f in base.filters if f.field in people and f.op == "eq" and not f.via]
    if not part and len(turns) > 1:
        before = base_of(turns[-2])
        if before is not None and before.collection == base.collection:
            kept = {_key(f) for f in before.filters}
            part = [f for f in base.filters if _key(f) not in kept and f.op not in WORD_OPERATORS and not f.via]
    if not part or (len(part) == len(base.filters) and not base.times):
        return None
    whole = [f for f in base.filters if f not in part]
    shared = replace(base, filters=whole, shape=Shape("share", part=[replace(f, span=None) for f in part]))
    said = ", ".join(f"{f.field} {f.value}" for f in part)
    return as_operation(shared, base=shared, catalog=catalog, how=f"the share of the records with {said}")


def _value_as_filter(
    said: str,
    previous: dict[str, Any],
    base: PlanIR,
    catalog: Catalog,
    asker: Person | None,
    now: datetime,
    values: ValueIndex | None,
) -> Operation | None:
    """After a ranking of a field's values ("which label was on the most issues"), "it" is its top value: an
    equality on that field, the follow-up's own words (a count, a window) planned over the same records."""
    groups = previous.get("answer_groups") or {}
    field, keys = groups.get("field"), groups.get("keys") or []
    if base.shape.kind != "group" or base.shape.bucket or not field or not keys:
        return None
    schema = catalog.schemas[base.collection]
    people = {p for fields in schema.kind.people_roles().values() for p, _ in fields}
    if field in people:
        return None  # "it" after a ranking of people is the person: `answering.followup`'s
    valued = [f for f in base.filters if f.field != field]
    filtered = replace(base, filters=[*valued, Filter(field, "eq", keys[0])], shape=_listing(base, schema))
    words = _THAT_VALUE.sub(" ", said).strip()
    narrowed = narrowed_by(filtered, words, catalog, asker, now, values)
    if narrowed is None:
        return None
    changed, unread = narrowed
    return as_operation(
        changed, base=changed, catalog=catalog, how=f"the records with {field} {keys[0]}", unread=unread
    )


def _listed(
    before: str,
    turns: list[dict[str, Any]],
    base: PlanIR,
    catalog: Catalog,
    asker: Person | None,
    now: datetime,
    values: ValueIndex | None,
) -> Operation | None:
    """ "list them" after any answer: the records it was about, listed; words before it ("那没关的呢，列出来看看")
    change the records first (one of the operations above, else a narrowing)."""
    schema = catalog.schemas[base.collection]
    changed, unread = base, []
    if before and not re.fullmatch(r"(?:ok(?:ay)?|and|now|then|那|那么|好)", before, re.I):
        operated = _operated(before, turns, base, catalog, asker, now, values)
        if operated is not None:
            plan = operated.plan
            if plan is None or plan.ir is None or plan.ir.pipeline is not None:
                return None
            changed, unread = plan.ir, list(plan.not_understood)
        else:
            narrowed = narrowed_by(base, before, catalog, asker, now, values)
            if narrowed is None:
                return None
            changed, unread = narrowed
    if changed.shape.kind not in (*RECORD_SHAPES, "count") and not _one_group_left(changed):
        return None
    listed = replace(changed, shape=_listing(changed, schema))
    return as_operation(listed, base=listed, catalog=catalog, how="the last records, listed", unread=unread)


def _one_group_left(ir: PlanIR) -> bool:
    """A ranking narrowed to one of its values ("只看 mariosasko 的" after who merged the most): its records are
    that value's, which a list can show (a list of a whole ranking's records would not be what it ranked)."""
    shape = ir.shape
    return (
        shape.kind == "group"
        and shape.bucket is None
        and any(f.field == shape.field and f.op == "eq" and not f.negate for f in ir.filters)
    )

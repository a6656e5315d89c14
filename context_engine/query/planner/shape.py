"""Step 4: the shape of the answer: a list (how many), a count, top-N, groups per field, time buckets,
records ranked by a measure."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import pairwise

from context_engine.query.compile import BUCKET_FORMATS, CompileError, compile_plan
from context_engine.query.fields import field_for, person_field_for, person_field_words
from context_engine.query.ir import Filter, Measure, PlanIR, Shape, SortKey, TimeRange
from context_engine.query.planner.draft import CJK_NUMBERS, EITHER_STATE, NUMBER_WORDS, PERIOD_UNITS, STATE_FIELDS
from context_engine.query.planner.own_aggregates import OwnAggregateStep
from context_engine.query.validate import validate_pipeline

DEFAULT_LIMIT = 200
TEXT_LIMIT = 20

# A yes/no question about whether anyone did something ("Has anyone closed an issue as not planned?", "any
# messages from her since May at all"): answered by how many times it happened. ("did Lucas merge anything
# last week?" asks for what he merged: the records.)
_WHETHER = (
    r"^\W*(?:did|has|have)\s+(?:anyone|anybody|someone|somebody|any ?one)\b(?!.*\b(?:which|what|who|list|show|them)\b)"
    r"|\bany\b(?=[^?]*\bat all\W*$)"
)
COUNT = re.compile(
    r"\bhow many\b|[,:(—–-]\s*(?:(?:just|only)\s+)?(?:the\s+)?(?:number|count|total)(?:,?\s+please)?\s*\??\)?\s*[?.]?$|\b(?:msg|message|post)s?\s+volume\b|(?<!about )(?<!mention )(?<!mentioning )(?<!mentions )\bvolume\b|\bhow often\b(?![^?]*\b(?:most|least|more)\b)|(?<!\w)#\s*of\b|\bhow much (?:did|do|does|has|have|had)\b|\bnumber of\b|(?<!n't )(?<!n’t )(?<!not )\bcount\b|\btotal\b|(?<=[A-Za-z])\s*数(?:量|目)?(?=[？?。]?$)|(?:多少|(?<!哪)几)\s*(?:个|条|次|则|篇|封|位|名|项|件)?(?<!几)|数量|总数|"
    + _WHETHER,
    re.I,
)

TOP = re.compile(
    # "the biggest load of open issues", "the heaviest pile of reviews": the most of them
    r"\btop(?![- ]level)\s*(\d+)?\b|\b(?:largest|greatest|highest|biggest|heaviest) (?:number|count|amount|share|(?:work)?load|pile|heap|stack|backlog) of\b|\bbusiest\b|\bmost active\b|\bmost (?:prolific|productive)\b"
    # "2024's biggest PR author": the person with the most records
    r"|\b(?:biggest|largest)(?=\s+(?:\w+\s+)?(?:author|contributor|poster|committer|reviewer|merger|closer|reporter|replier|responder|commenter)s?\b)"
    r"|\brunners?[- ]up\b|第\s*[二三四五2-5]\s*多|\bnumber\s+(?:two|three|four|five|[2-5])\b(?=\W*$)|\bcame\s+(?:in\s+)?(?:second|third|fourth|fifth)\b|\b(?:second|third|fourth|fifth)\s+place\b|(?<!\bat )\bmost\b(?!\s+recent)|\brank(?:ed|ing)?\b|\bleaderboard\b|\bwho(?:['’]s)? (?:\w+ ){0,4}(?:more|most)(?: (?:active|prolific|productive)\b)?\b|最多|最活跃|最常|最经常|前(\d+)名?"
    r"|\bwho(?:m)?\s+(?:is|was|are)\s+it\s+(?:usually|mostly|most often|typically)\b",  # the one most often
    re.I,
)

# A size written in digits or as a word ("last 3", "Dann's last three messages", "the five most recently
# opened", 最近开的 5 个): not a length of time ("the last three days").
_SIZE = r"(\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty)"
_LIMIT = re.compile(
    rf"\b(?:last|latest|first|recent|newest|oldest)\s+{_SIZE}\b(?!\s*(?:hours?|days?|weeks?|months?|years?|quarters?|of\b))"
    rf"|\b{_SIZE} (?:most recent(?:ly)?|latest|newest|oldest)\b"
    r"|最近(?:[\u4e00-\u9fff]{1,3}的)?的?\s*(\d+|[两二三四五六七八九十])\s*(?:个|条|篇|则)(?!月|星期|礼拜|小时|钟头|季度|工作日)",
    re.I,
)

# A list's order said outright, oldest or newest first.
_OLDEST_FIRST = (
    r"\b(?:(?:sorted|ordered|listed)\s+)?(?:oldest|earliest)(?:\s+ones?)?\s+(?:first|on top|at the top)\b"
    r"|\b(?:(?:sorted|ordered|listed)\s+)?(?:from\s+)?(?:oldest|earliest)\s+to\s+(?:newest|latest|most recent)\b"
    r"|\b(?:in\s+)?chronological(?:ly)?(?:\s+order)?\b"
    r"|\b(?:sorted|ordered)\s+(?:by\s+(?:date|time)\s+)?ascending\b"
    r"|按时间(?:先后)?(?:顺序|正序|升序)|按时间先后|从早到晚|从旧到新|由早到晚|由旧到新|最早的(?:排)?在(?:前|上)"
)
_NEWEST_FIRST = (
    r"\b(?:(?:sorted|ordered|listed)\s+)?(?:newest|latest|most recent|recent)(?:\s+ones?)?\s+(?:first|on top|at the top)\b"
    r"|\b(?:(?:sorted|ordered|listed)\s+)?(?:from\s+)?(?:newest|latest|most recent)\s+to\s+(?:oldest|earliest)\b"
    r"|\b(?:in\s+)?reverse[- ]chronological(?:ly)?(?:\s+order)?\b|\b(?:sorted|ordered)\s+(?:by\s+(?:date|time)\s+)?descending\b"
    r"|按时间倒序|从新到旧|由新到旧|最新的(?:排)?在(?:前|上)"
)

_BUCKETS = [
    # the cyclic buckets first: "by day of week" is no "by day"
    (
        "weekday",
        r"\bby (?:the )?(?:day of (?:the )?week|weekday)\b|\bper (?:day of (?:the )?week|weekday)\b|按星期几|按周几",
    ),
    ("hour", r"\bby (?:the )?hour(?: of (?:the )?day)?\b|\bper hour of (?:the )?day\b|\bhourly\b|按小时"),
    ("day", r"\bdaily\b|\bper[- ]day\b|\bday[- ]by[- ]day\b|\bby (?:the )?day\b|\beach day\b|每天|每日|按天"),
    (
        "week",
        r"\bweekly\b|\bper[- ]week\b|\bweek[- ]by[- ]week\b|\bby (?:the )?week\b|\beach week\b|\bweek (?:by|over|on) week\b|每周(?![一二三四五六日天末])|按周",
    ),
    (
        "month",
        r"\bmonthly\b|\bper[- ]month\b|\bmonth[- ]by[- ]month\b|\bby (?:the )?month\b|\beach month\b|\bmonth (?:by|over|on) month\b|每月|每个月|按月",
    ),
    ("year", r"\byearly\b|\bper[- ]year\b|\byear[- ]by[- ]year\b|\bby (?:the )?year\b|\beach year\b|每年|按年"),
]

_GROUP = re.compile(
    # "broken down by the person who closed them": the person named by what they did
    r"\b(?:per|by|grouped by|group(?:ed)? by|for each|each|broken down by|breakdown by|across)\s+"
    # "across the three workspaces": the values counted, each ("across all repos" is their total)
    r"(?:(?:the\s+)?(?:two|three|four|five|six|seven|eight|nine|ten|\d+)\s+)?"
    r"(?:(?:slack|jira|github|git|code|the (?:person|people|users?|ones?)(?= who\b))\s+)?"
    r"(labels?|repos?|repositor(?:y|ies)|authors?|persons?|people|users?|states?|status(?:es)?|priorit(?:y|ies)|"
    r"milestones?|channels?|assignees?|reviewers?|types?|projects?|teams?|spaces?|components?|sprints?|tags?|workspaces?"
    r"|(?:close|closing|state|resolution) reasons?|why (?:they|it) (?:was|were) closed|who closed (?:them|it|those))\b"
    # "by people other than A and B": who did it, said by whom it was not — a condition, no grouping
    r"(?!\s+(?:other than|except|besides|apart from|but not|excluding|not\b|who (?:are|were|is|was)n['’]?t\b))"
    r"|按(标签|仓库|作者|状态|优先级|频道|负责人|类型|项目|工作区)|(?:每个|各个?)(仓库|人|作者|标签|频道|项目|优先级|状态|工作区)"
    r"|(?:每个|各个?)\s*(workspace|channel|label|repo|project|milestone|component)\b"  # 每个 workspace 各...
    r"|哪些(标签|仓库|频道|项目|优先级|状态)[^。？?]{0,8}(?:各|分别)"
    # "who closed issues in May, and how many each": one count per closer
    r"|^\s*(who closed)\b(?=[^?？]*\b(?:and how many|how many each|how many apiece)\b)"
    # "who closed how many issues", "who merged how many": one count per person of the verb's role
    r"|^\s*(who) (?:has |have |had )?(?=\w+ how many\b)",
    re.I,
)

_GROUP_ROLES = {
    "label": "label",
    "tag": "label",
    "repo": "repo",
    "repositor": "repo",
    "author": "author",
    "person": "author",
    "people": "author",
    "user": "author",
    "state": "state",
    "status": "status",
    "priorit": "priority",
    "milestone": "milestone",
    "channel": "channel",
    "assignee": "assignee",
    "reviewer": "reviewer",
    "type": "type",
    "project": "project",
    "space": "space",
    "component": "component",
    "sprint": "sprint",
    "team": "team",
    "团队": "team",
    "组": "team",
    "标签": "label",
    "仓库": "repo",
    "作者": "author",
    "人": "author",
    "状态": "status",
    "优先级": "priority",
    "频道": "channel",
    "负责人": "assignee",
    "类型": "type",
    "项目": "project",
    "workspace": "workspace",
    "工作区": "workspace",
    "close": "state_reason",
    "closing": "state_reason",
    "state reason": "state_reason",
    "resolution": "state_reason",
    "why": "state_reason",
    "who closed": "closer",
    "who": "author",  # the verb after it says the role (`_role_done_by`)
}

_ASKS_FOR_PEOPLE = re.compile(
    r"\bwho\b|\bwhom\b|\bpeople\b|\bpersons?\b|\busers?\b|\bengineers?\b|\bdevelopers?\b|"
    r"\breviewers?\b|\bauthors?\b|\bposters?\b|\bcontributors?\b|\bcommitters?\b|\bapprovers?\b|"
    r"谁|哪些人|哪位",
    re.I,
)

# A ranking of the people messages mention, not of their authors: "who does Odis mention the most",
# "when Odis @-mentions someone, who is it usually", "the most mentioned people", "who gets tagged the
# most", 被 @ 最多的人, Odis 最常 @ 谁. ("who mentions Odis the most" ranks the authors.)
_MENTION = r"(?:@-?|at-)?(?:mention|tag|ping)"
_MENTIONED_ASKED = re.compile(
    rf"\bwho(?:m)?\s+(?:do|does|did|has|have|had|would|will)\s+(?:\S+\s+){{1,3}}?{_MENTION}\w*"
    rf"|\bwho(?:m)?\s+(?:gets?|got|is|was|are|were|has been|have been|had been)\s+(?:\S+\s+)?{_MENTION}(?:ed|ged)\b"
    rf"|\b(?:most|top|frequently|often)[- ](?:@-?|at-)?(?:mentioned|tagged|pinged)\b"
    rf"|{_MENTION}s?\s+(?:someone|somebody|anyone|people|others)\b[^?]{{0,20}}\bwho(?:m)?\s+(?:is|was)\s+(?:it|that)\b"
    r"|被\s*(?:@|提到|提及)\s*(?:得|的)?\s*(?:次数)?最多|(?:@|提到|提及)(?:了|过)?\s*(?:最多的)?\s*(?:是)?谁",
    re.I,
)

# "who reviewed acme/infra#812?": the people of one role on the named records.
WHO_ROLE = [
    (r"\breview\w*|\bapprov\w*|评审|审查|审核", "reviewer"),
    (r"\bmerg\w*|合并", "merger"),
    (r"\bassign\w*|负责|分配", "assignee"),
    (r"\bwr[io]te\b|\bopen\w*|\bauthor\w*|\bcreat\w*|\bfiled\b|提交|创建", "author"),
]

_WORD_NUMBERS = NUMBER_WORDS | {"fifteen": 15, "twenty": 20} | CJK_NUMBERS

_UNIT = r"(day|date|week|month|year)"
# The word a ranking of records begins with, a size said right before it ("the 3 most commented", "his two
# longest threads")
_RANKING_WORD = r"(?:most|least|fewest|highest|lowest|biggest|largest|longest|busiest|hottest)\b"
_FEWEST = (
    r"\bfewest\b|(?<!\bat )\bleast\b|\bworst\b|\bquietest\b|\bslowest\b|\blowest\b|\bcalmest\b|最少|最低|最冷清|最安静"
)
# The period a question ranks ("which month had the most PRs", "the busiest day", "哪个月...最多"):
# a unit asked for ("which/what month", "the month with", a superlative before it), not one that
# dates the question ("last month", "per day"), which the time and bucket steps read.
_ASKED_UNIT = re.compile(
    rf"\b(?:which|what)\s+(?:\w+\s+){{0,2}}?{_UNIT}\b(?!\s+ago\b)"  # "which April 2019 day"
    rf"|\b(?:busiest|quietest|slowest|calmest|peak|record|most active|least active|most busy|least busy|biggest|best|worst"
    rf"|most (?:prolific|productive)|least (?:prolific|productive))\s+(?:\w+\s+){{0,2}}?{_UNIT}\b"
    rf"|\b{_UNIT}\s+in\s+which\b"
    rf"|\bthe\s+{_UNIT}\s+(?:of\s+\d{{4}}\s+)?(?:with|that|when|in which|where)\b"  # "the month of 2021 with the most"
    rf"|\b{_UNIT}\s+with\s+the\s+(?=(?:most|fewest|least|highest|lowest|biggest)\b)"  # "2021: month with the fewest"
    rf"|哪(?:一|个)?\s*(天|日|周|个?星期|个?月|年)",
    re.I,
)
# The hour of the day or the day of the week asked for as the busiest or quietest (`ShapeStep._cyclic_extreme`).
_CYCLIC_ASKED = (
    (
        "hour",
        re.compile(
            r"\b(?:which|what|at which|at what)\s+(?:\(?utc\)?\s+)?hours?\b(?:\s+of\s+(?:the\s+)?day)?"
            r"|\b(?:busiest|quietest|peak|most active|least active|slowest)\s+(?:\(?utc\)?\s+)?hours?\b(?:\s+of\s+(?:the\s+)?day)?"
            r"|\bhour of (?:the )?day\b|哪(?:一|个)?\s*(?:个)?(?:小时|钟点)|几点(?:钟)?",
            re.I,
        ),
    ),
    (
        "weekday",
        re.compile(
            r"\b(?:which|what)\s+(?:day of (?:the )?week|weekday)\b"
            r"|\b(?:busiest|quietest|peak|most active|least active|slowest|calmest)\s+(?:day of (?:the )?week|weekday)\b"
            r"|\bday of (?:the )?week\b|(?:星期|礼拜|周)几",
            re.I,
        ),
    ),
)
# Words that only say the cycle or its clock: "(UTC)", "of the day", 一天里, （UTC）
_CYCLE_WORDS = r"[(（]\s*UTC\s*[)）]|\bUTC\b|\bof the day\b|一天(?:里|中|当中|之中)?|一周(?:里|中|当中|之中)?"
_EXTREME_WORD = re.compile(
    rf"\bmost\b|\bhighest\b|\bbusiest\b|\bpeak\b|\brecord\b|\bbiggest\b|\bbest\b|{_FEWEST}|最多|最高|最忙|最活跃|最热闹",
    re.I,
)

# The group a question asks the quietest of ("the quietest workspace", "which of the three Slacks had the least
# traffic", "哪个频道消息最少"): the value with the fewest records, not a topic "fewest".
_GROUP_NOUN = (
    r"(workspaces?|slacks?|communit(?:y|ies)|channels?|labels?|tags?|repos?|repositor(?:y|ies)|components?|projects?"
    r"|teams?|milestones?|priorit(?:y|ies))"
)
_ASKED_GROUP = re.compile(
    rf"\b(?:which|what)\s+(?:(?:one\s+)?of\s+(?:the|our|these|those|all)\s+(?:\w+\s+)?)?{_GROUP_NOUN}\b"
    rf"|\b(?:quietest|calmest|deadest|slowest|least (?:active|busy|used|popular))\s+(?:\w+\s+)?{_GROUP_NOUN}\b"
    r"|哪(?:一|个)?\s*(工作区|频道|标签|仓库|项目)"
    # "who posted the fewest messages", "the least active member", "谁发的消息最少": people
    rf"|^\W*(who)\b|\b(?:which|what)\s+(person|user|member|author|poster)\b"
    rf"|\b(?:quietest|least active|least busy)\s+(person|user|member|author|poster|contributor)\b|(谁)",
    re.I,
)
# The values of a field asked for by their noun ("which labels", "what channels are there", "list the
# channels", 哪些 label) and, after it, a count of each ("and on how many issues each", "with their message
# counts", "w/ counts", 每个各有几个): `ShapeStep._values_with_counts`.
_VALUE_NOUN = (
    r"(labels?|tags?|channels?|workspaces?|repos?|repositor(?:y|ies)|milestones?|projects?|components?|teams?"
    r"|标签|频道|工作区|仓库|团队|项目)"
)
_VALUES_ASKED = re.compile(
    rf"\b(?:which|what|list(?: all)?(?: of)?(?: the)?|show(?: me)?(?: the)?|all(?: the)?)\s+(?:different\s+)?(?:[a-z]+\s+)?{_VALUE_NOUN}"
    rf"|^\s*{_VALUE_NOUN}\b|(?:都|一共|总共)?(?:用过|用了|出现过|有过?)?\s*(?:哪些|什么|哪几个)\s*(label|tag|channel|{_VALUE_NOUN[1:-1]})",
    re.I,
)
_EACH_COUNTED = re.compile(
    r"\bhow many\b[^.?!;]{0,40}?\beach\b|\beach\b[^.?!;]{0,30}?\bhow many\b"
    r"|\b(?:with|w/|and|plus|along with)\s+(?:their|the|its|a|an)?\s*(?:\w+\s+){0,2}?(?:counts?|tall(?:y|ies)|totals?)\b"
    r"|(?:各|每个|每一个)[^？?。，,]{0,6}?(?:几|多少)",
    re.I,
)
_GROUP_NOUN_ROLES = {
    "slack": "workspace",
    "communit": "workspace",
    "工作区": "workspace",
    "频道": "channel",
    "标签": "label",
}
# What was counted, said as an amount of activity ("the least traffic", "the lowest activity"): the records.
_ACTIVITY = r"\b(?:traffic|activity|chatter|volume|messages|posts)\b|消息|发言"
# "who has closed more issues, A or B", "A 和 B 谁关掉的更多": the named people set side by side, the winner asked.
_WHO_OF_THEM = re.compile(r"\bwho(?:['’]s)?\b|\bwhich\b|谁|哪", re.I)

# The newest / first record: a superlative of time before a record noun, singular ("lhoestq's newest PR",
# "the earliest message Andreas posted", "最新的 PR", "第一条消息"); "the last 5 PRs" is a list limit instead.
_RECORD = r"(?:pull request|pr|issue|ticket|message|post|commit|thread|comment|reply|release|discussion|thing|one|request|bug|report)(?!s)\b"
# Between the superlative and the noun: up to two words ("earliest-created", "newest merged open"), or
# in Chinese a qualifying clause ending in 的 ("最早创建且仍开放的 issue").
# "was merged " before "most recently": one record (fixed-width lookbehinds: "PRs merged most recently" are many)
_DONE_TO_ONE = "|".join(
    rf"(?<=\b{aux} {verb} )"
    for aux in ("was", "got")
    for verb in ("merged", "closed", "opened", "created", "updated", "posted", "filed", "resolved", "fixed", "reviewed")
)
_POSTED_ZH = r"(?:[发提开写](?:了|过)?\s*)?"
_NEWEST = re.compile(
    rf"\b(?:newest|latest|most recent|last|final|youngest|most recently \w+)[\s-]+(?:\w+[\s-]+){{0,2}}?{_RECORD}"
    # "which was merged most recently?", "the last to get closed": what was done to one record, latest
    rf"|(?:{_DONE_TO_ONE})most recently\b|\blast (?:one )?to (?:be |get )?\w+ed\b"
    # not 最近 of a period ("最近三个月新开的 issue": the last three months)
    rf"|(?:最新|最近(?!\s*[0-9一二两三四五六七八九十几]+\s*个?\s*(?:天|日|周|星期|月|年))|最后)"
    # "最后一次发消息": the time said, then the posting verb before the noun
    rf"(?:[\u4e00-\u9fff]{{0,8}}?的)?\s*(?:一\s*[条个篇次])?\s*{_POSTED_ZH}(?:PR|pull request|issue|消息|帖子|提交|工单|讨论)"
    rf"|(?:PR|pull request|issue|消息|帖子|提交|工单|讨论)\s*(?:里|中|当中|之中)\s*(?P<superlative>最新)",
    re.I,
)
_OLDEST = re.compile(
    rf"\b(?:first|earliest|oldest|very first|first ever)[\s-]+(?:\w+[\s-]+){{0,2}}?{_RECORD}"
    r"|\bfirst (?:one )?to (?:be |get )?\w+ed\b"  # "which was the first to get merged"
    rf"|\b(?:been )?(?:open|waiting|pending|sitting|idle|unresolved)(?: for)?(?: the)? longest\b"
    rf"|\blongest[\s-](?:waiting|open|standing|running|pending|lived)[\s-]+(?:\w+(?:-\w+)*[\s-]+){{0,2}}?{_RECORD}"
    rf"|(?:最早|最老|最旧|第一)(?:[\u4e00-\u9fff]{{0,8}}?的)?\s*(?:一?\s*[条个篇次])?\s*{_POSTED_ZH}(?:PR|pull request|issue|消息|帖子|提交|工单|讨论)"
    # the records named first ("还开着的 PR 里最老的是哪个")
    rf"|(?:PR|pull request|issue|消息|帖子|提交|工单|讨论)\s*(?:里|中|当中|之中)\s*(?P<superlative>最早|最老|最旧)",
    re.I,
)

# "how many days in 2018 had no messages at all", "weeks without a single merged PR", 有几天一条消息都没有: the
# periods of the time asked in which no record falls (the noun of the records is what has none).
_EMPTY_PERIODS = re.compile(
    r"\bhow many (days|weeks|months)\b[^?]{0,60}?\b(?:had|have|has|saw|with|there (?:were|was))\s+(?:no|zero|not a single)\b"
    r"|\bhow many (days|weeks|months)\b[^?]{0,60}?\bwithout\b"
    r"|(?:几|多少)\s*(天|周|个?星期|个?月)[^？?，,]{0,20}?(?:一[条則则个篇]\S{0,4}?)?(?:都|也)(?:没有|沒有|没|沒)",
    re.I,
)

_THREAD_OPENER = re.compile(
    r"\b(?:in|of|from)\s+(?:the|their|its|each|a)\s+(?:very\s+)?(?:first|opening|starting|initial|original|parent)"
    r"\s+(?:message|post)s?\b|(?:第一条|首条|开头的?)(?:消息|帖子)",
    re.I,
)

# "how many different people", "number of distinct PR authors", "count the unique labels", "多少个不同的人":
# things counted once each, not records.
_DISTINCT = re.compile(
    # (not "the largest number of distinct repliers": records ranked by a count they hold)
    r"(?:\b(?:how many|(?<!largest )(?<!highest )(?<!greatest )(?<!biggest )number of|count(?: of)?(?: the)?|total)\s+|^\W*(?:the\s+)?)"
    # (a possessive counts what it owns: "how many people's PRs" are PRs)
    r"(?:different|distinct|unique|separate|individual)\s+((?:\w+\s+){0,2}\w+)\b(?!['’])"
    r"|\bhow many\s+((?:people|persons|users|authors|contributors|posters|repliers|reviewers|committers|members|folks|devs|developers|engineers|assignees"
    r"|labels|repos|repositories|channels|projects|components|milestones))\b(?!['’])"
    r"|(?:多少|几)[个种类位名条]?(?:不同的?|独立的?)\s*(人|用户|作者|标签|频道|仓库|项目|评审人|负责人|[A-Za-z]+)"
    r"|(?:多少|几)\s*(?:个)?(?:人|位|名)(?![员字])"
    # "发过言的不同用户有多少个": the distinct ones named first, their number asked after
    r"|不同的?\s*(人|用户|作者|标签|频道|仓库|项目|评审人|负责人)(?:一共|总共|共)?有?(?=\s*(?:多少|几))",
    re.I,
)
# "the total number of replies across Odis's threads", "how many replies did his threads get": a measure
# summed over the records, not the records counted.
_MEASURE = r"(repl(?:y|ies)|comments?|additions|deletions|(?:changed )?files)"
_SUM = re.compile(
    rf"\b(?:sum|total(?: number)?|combined number) of (?:all )?(?:the )?{_MEASURE}\b|\btotal {_MEASURE} (?:across|over|on|in|under)\b"
    r"|\b(repl(?:y|ies)|comments?)[\s-](?:total|sum|count total)\s+(?:across|over|on|in|under|for)\b"  # "the reply total across those threads"
    rf"|\bhow many {_MEASURE} (?:did|do|have|had)\b[^?？]*?\b(?:threads?|posts?|messages?|prs?|pull requests?|issues?|tickets?|those|them|these)\s+"
    rf"(?:\w+\s+)?(?:get|got|gotten|receive|received|draw|drew|attract|attracted)\b"
    rf"|\bhow many {_MEASURE}\b[^?？]*\b(?:altogether|all together|in total|combined)\b"
    # "total replies odis's threads got": the total said before the records that received them
    rf"|\btotal (?:thread )?{_MEASURE}\s+(?:[\w'’]+\s+){{0,3}}(?:threads?|posts?|messages?|prs?|pull requests?|issues?|tickets?)\s+"
    r"(?:have\s+|had\s+|has\s+)?(?:get|got|gotten|receive|received|draw|drew|attract|attracted)\b"
    r"|(?:总共|一共|总计)(?:收到|得到|获得)了?多少(?:条|个)?(回复|评论)|(回复|评论)(?:总数|之和|总和)",
    re.I,
)

# "whose threads drew the most replies altogether", "which thread starter collected the most replies in total
# across their threads", "谁的帖子加起来收到的回复最多": the person whose records' measure, summed, is the highest
# — not the one record with the most (no total said: "whose thread drew the most replies").
_TOTAL_WORD = (
    r"\b(?:altogether|all together|in total|combined|overall|all told|summed|in sum"
    r"|across (?:all )?(?:of )?(?:their|his|her|the) (?:own )?(?:threads?|posts?|messages?|prs?|pull requests?|issues?))\b"
)
_PERSON_SUM = re.compile(
    rf"\b(?:whose|which (?:thread starter|starter|author|person|user|member|poster|contributor|one)|who)\b[^?？]{{0,60}}?"
    rf"\b(?:the )?(?P<most>most|fewest|least) {_MEASURE}\b(?=[^?？]{{0,40}}?(?P<total>{_TOTAL_WORD}))"
    r"|谁的(?:帖子|讨论串|消息|PR|issue)?[^？?]{0,8}?(?:加起来|总共|一共|合计)[^？?]{0,8}?(?P<zh>回复|评论)(?:数)?(?:最多|最少)",
    re.I,
)

# "on average, how many comments does a bug issue get", "mean reply count per thread", "平均有几条评论": the
# mean of a measure over the records. A mean of counts per period ("PRs merged per month on average") names
# no measure, and is not read here.
_AVERAGE = re.compile(
    r"\b(?:on (?:an )?average|averages?d?|avg\.?)(?=\W|$)|平均"
    # "mean" the noun ("the mean", "mean reply count"), not the verb ("what do these labels mean")
    r"|\b(?:the|a|on)\s+mean\b|\bmean(?=\s+(?:\w+\s+)?(?:number|count|amount|value|repl\w*|comments?|reactions?)\b)",
    re.I,
)
_AVERAGED_MEASURE = re.compile(
    r"(?:\bhow many\s+|\bnumber of\s+)?\b(?:((?:(?:different|distinct|unique)\s+)?(?:repliers|responders)"
    r"|(?:different|distinct|unique)\s+(?:people|persons|users|participants)(?:\s+(?:who\s+)?(?:take|took|taking)\s+part)?"
    r"|(?:people|persons|users|participants)\s+(?:replying|responding|who repl(?:y|ied)|taking part|take part))"
    r"|(repl(?:y|ies)|comments?|reactions?|additions|deletions|(?:changed )?files)(?:\s+counts?)?)\b"
    r"|(?:几|多少)\s*(?:条|个)?\s*(回复|评论)|(回复|评论)数",
    re.I,
)

# "ten merges a month on average": a period said after a count, which an average makes a bucket
_A_PERIOD = [(unit, rf"\b(?:a|an|every|per)\s+{unit}\b") for unit in ("day", "week", "month", "year")]

# "the second most prolific author", "the third busiest day", "runner-up", "第二多": a place in a ranking
# after the first, said just before the ranking's word (or alone: the runner-up is second)
_ORDINAL = re.compile(
    r"\b(second|third|fourth|fifth|2nd|3rd|4th|5th)(?=[\s-]+(?:most|highest|largest|biggest|greatest|busiest|"
    r"fewest|least|lowest|smallest|quietest|top|best|worst|longest|oldest|newest|latest|earliest)\b)"
    r"|\b(runners?[- ]up)\b|第\s*([二三四五2-5])\s*(?=[多大高长忙活]|名)"
    # a place said alone: "who was number two?", "which author came second?", "in third place"
    r"|\bnumber\s+(two|three|four|five|[2-5])\b(?=\W*$)|\bcame\s+(?:in\s+)?(second|third|fourth|fifth)\b"
    r"|\b(second|third|fourth|fifth)\s+place\b",
    re.I,
)
_PLACES = {
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "二": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
}

# "what fraction of 2023's PRs were merged", "share of the issues that are still open", "占多大比例": the part
# of the records that meets a further condition. English says the part as the predicate after the records
# ("that got merged", "are still open", "hasn't been closed"); Chinese after 里/中 ("开的 PR 里，被合并的占多大比例").
_SHARE = re.compile(
    # "share" the noun ("share of", "what share"), not the verb ("messages that share a link")
    r"\b(?:fraction|proportion|percentage|percent|ratio)\b|\bshare\s+(?:[(（][^)）]{0,12}[)）]\s*)?of\b|\b(?:what|which|the)\s+share\b|%\s*of\b"
    r"|(?:多大|多少)的?比例|[占佔]比|比例|百分之[几幾]|百分比",
    re.I,
)
# "the merge rate", "closing rate", "合并率": the share of the records a condition said just before it holds for
_RATE = re.compile(r"(?<=\w)\s+(rates?)\b|(?<=[\u4e00-\u9fff])(率)", re.I)
# A share asked as a percentage (0-100), not a fraction: "in percent", "what percentage", "%", 百分之几, 百分比.
_IN_PERCENT = re.compile(r"\bpercent(?:age)?s?\b|%|百分", re.I)
# ... or a negated participle right after the records ("share of 2024 issues not closed yet")
_PART_SAID = re.compile(
    r"\b(?:that|which|were|was|are|is|ended|end|got|get|have|has|had|hasn't|haven't|remain(?:ed|s)?|still)\b"
    r"|\b(?:not|never|no longer)\s+(?:yet\s+)?\w+ed\b",
    re.I,
)
_PART_SAID_CHINESE = re.compile(r"(?:里|裡|中|当中|之中)[，,\s]*")

# "max replies on any thread Jasmine started", "what is the largest reply count among her threads", "how
# many replies did her most replied thread get": one number, the extreme of a measure over the records —
# asked as a value (how many / what is / max), not the record that has it ("which thread had the most replies").
_MEASURE_EXTREME = re.compile(
    rf"\b(max(?:imum)?|most|largest|highest|biggest|greatest|fewest|least|min(?:imum)?|lowest|smallest)"
    rf"(?:\s+number\s+of)?[\s-]+{_MEASURE}\b(?:\s+counts?)?"
    rf"|\b(max(?:imum)?|most|largest|highest|biggest|greatest|fewest|least|min(?:imum)?|lowest|smallest)[\s-]+"
    rf"(repl)(?:ied|ied-to)\b|\b(max(?:imum)?|largest|highest|biggest|greatest|min(?:imum)?|lowest|smallest)\s+"
    rf"(repl(?:y|ies)|comments?)\s+counts?\b"
    r"|(回复|评论)数?(?:最多|最高|最大)|(?:最多|最高|最大)(?:有|是)?多少(?:条|个)?(回复|评论)"
    r"|(回复|评论)数?(?:最少|最低|最小)",
    re.I,
)
_ASKS_A_VALUE = re.compile(
    r"^\W*(?:how many|what(?:'s| is| was| are)|max(?:imum)?\b|min(?:imum)?\b)|多少|(?<!哪)几条|(?<!哪)几个"  # 哪几个: which
    # "highest comment count on any issue": the question is the measure's extreme itself
    r"|^\W*(?:the\s+)?(?:largest|highest|biggest|greatest|lowest|smallest)\s+(?:\w+\s+)?counts?\b"
    # "the largest number of comments any issue got": the extreme over every record, a value
    r"|^\W*(?:the\s+)?(?:largest|highest|biggest|greatest|lowest|smallest|max(?:imum)?|min(?:imum)?)\s+number\s+of\s+"
    r"\w+\s+(?:that\s+)?(?:any|a single|one|a)\b"
    r"|\b(?:just|only) the (?:number|count|figure|value)\b|\bthe (?:number|count) only\b",
    re.I,
)
# "how many comments does the most-discussed issue have": the measure asked, its extreme said of the record
_MEASURE_OF_THE_MOST = re.compile(
    r"^\W*how many ((?:comment|repl)\w*)\b.*?(?:\b(most|least)[- ](?:discussed|commented(?:[- ]on)?|replied(?:[- ]to)?)\b"
    # "how many replies did Dann's biggest thread get": the thread's size is its replies
    r"|\b(biggest|largest|longest|busiest|smallest|shortest)\s+(?:\w+\s+)?(?:threads?|discussions?|conversations?|issues?|prs?|pull requests?)\b)",
    re.I,
)
# "Elin's best-answered thread: how many replies did it get?": the record named by its extreme first, the
# measure asked after
_THE_MOST_THEN_MEASURE = re.compile(
    r"\b(?:(most|least|best|worst)[- ](?:answered|replied(?:[- ]to)?|discussed|commented(?:[- ]on)?)"
    r"|(biggest|largest|longest|busiest|smallest|shortest))\s+(?:\w+\s+)?"
    r"(?:threads?|posts?|discussions?|conversations?|issues?|prs?|pull requests?)\b[^?？]*?\bhow many ((?:comment|repl)\w*)\b",
    re.I,
)
# "the largest number of different people who replied in a single thread", "max distinct repliers on one
# thread": the largest count of a thread's repliers
_MOST_REPLIERS = re.compile(
    r"\b(max(?:imum)?|most|largest|highest|biggest|greatest|min(?:imum)?|fewest|lowest|smallest)(?:\s+number\s+of)?\s+"
    r"(?:different|distinct|unique)\s+(?:people|persons|repliers|responders|users|participants)\b"
    r"(?:\s+(?:who\s+)?(?:replied|replying|responded|answered))?",
    re.I,
)
_SMALLEST = re.compile(r"fewest|least|min|lowest|smallest", re.I)

# An extreme said before the words of a measure: "the most heart reactions", "the fewest replies".
_MEASURE_CUE = re.compile(
    r"\b(most|highest|largest|biggest|greatest|fewest|(?<!\bat )least|lowest|smallest)\s+(?:number\s+of\s+)?"
    r"((?:[\w+-]+\s+){0,2}[\w+-]+)",
    re.I,
)
# "which open bug has gone the longest without any update", "the stalest open issue", 最久没有更新: the record whose
# last update is the oldest
_STALEST = re.compile(
    r"\b(?:gone\s+|been\s+|sat\s+)?(?:the\s+)?longest\s+(?:time\s+)?without\s+(?:any\s+|an\s+)?(?:updates?|activity|being\s+(?:updated|touched))\b"
    r"|\bleast\s+recently\s+(?:updated|touched)\b|\bstalest\b|最久(?:没有?|未)(?:更新|动过)|最长时间(?:没有?|未)更新",
    re.I,
)
# "top five 2024 issues by number of comments": a ranking whose measure is said after "by"
_TOP_BY = re.compile(
    r"\b(top|highest|largest|biggest)\b[^?]*?\bby\s+(?:the\s+)?(?:(?:number|count)\s+of\s+)?((?:[\w+-]+\s+){0,2}[\w+-]+)",
    re.I,
)
# Names a reaction is said by other than its field's ("thumbs up": `reactions.+1`).
_MEASURE_SYNONYMS = [
    (r"\bthumbs?[\s-]?ups?\b|\bupvotes?\b|👍", "+1"),
    (r"\bthumbs?[\s-]?downs?\b|\bdownvotes?\b|👎", "-1"),
]
# Words in a measure's name that say it is a number, not what is counted ("total_count", "number of").
_COUNTING_WORDS = frozenset({"total", "count", "summary", "number", "of", "emoji", "the"})


def _measure_words(text: str) -> frozenset[str]:
    """The words of a measure's name, each singular, without counting words: "heart reactions" and
    `reactions.heart` are both {heart, reaction}; "sub-issues" and `sub_issues_summary.total` {sub, issue}."""
    for pattern, name in _MEASURE_SYNONYMS:
        text = re.sub(pattern, name, text, flags=re.I)
    words = set()
    for word in re.split(r"[\s_-]+", text.lower()):
        word = re.sub(r"ies$", "y", word) if len(word) > 4 else word
        word = re.sub(r"(?<=[a-z]{3})s$", "", word)
        word = "reaction" if word in ("reacted", "react") else word  # "the most heart-reacted issue"
        if word and word not in _COUNTING_WORDS:
            words.add(word)
    return frozenset(words)


_PERSON_NOUN = (
    r"people|person|user|author|contributor|poster|replier|responder|committer|member|folk|dev|engineer|reporter|filer"
    r"|opener|creator|submitter|starter|人|用户|作者|位|名"
)
# A person noun says its role itself ("reviewers") or by the verb after it ("people reviewed", "people merged").
_PERSON_VERBS = [
    (r"review|approv", "reviewer"),
    (r"merged\b", "merger"),
    (r"closed\b|shut\b", "closer"),
    (r"assigned\b", "assignee"),
]
# ... in any tense, when the verb follows the person noun ("did each person close", "each user merges").
_PERSON_VERBS_NOW = [
    (r"review|approv", "reviewer"),
    (r"merg", "merger"),
    (r"clos|shut", "closer"),
    (r"assign", "assignee"),
]
_CHINESE_PERSON_VERBS = [
    (r"评审|审查|审核", "reviewer"),
    (r"合并", "merger"),
    (r"关", "closer"),
    (r"分配|指派", "assignee"),
]
_DISTINCT_ROLES = [
    (r"review|approv|评审", "reviewer"),
    (r"assign|负责", "assignee"),
    (r"merger", "merger"),
    (r"closer", "closer"),
    (_PERSON_NOUN, "author"),
    (r"label|tag|标签", "label"),
    (r"repo|仓库", "repo"),
    (r"channel|频道", "channel"),
    (r"project|项目", "project"),
    (r"component", "component"),
    (r"milestone", "milestone"),
    (r"priorit", "priority"),
]


# Threads counted by someone's replies in them ("in how many other people's threads has Rosaline replied",
# "count of distinct threads she answered in", "threads started by somebody else that Rosaline jumped into").
_THREADS_REPLIED_IN = re.compile(
    r"((?:\bin\s+)?\bhow many\s+(?:of\s+)?|\b(?:number|count) of\s+)((?:different|distinct|separate|unique)\s+)?"
    r"(?:(?:other\s+)?(?:people|someone else|somebody else|others)['’]s?\s+)?threads\b"
    r"(?=.{0,80}?\b(?:replied|answered|responded|jumped|chimed|participated|took part|joined|posted in)\b)",
    re.I,
)
_RELATIVE = re.compile(r"who|that|which|have|has|had|ever|actually|really", re.I)
# The words that say a distinct count's role away from its noun.
_ROLE_WORDS = {
    "assignee": r"被?(?:指派|分配)过?给?|\bassigned\b",
    "mentioned": r"@\s*过|提到过|提及过|@-?mentioned|\bmentioned\b|\btagged\b",
    "thread_starter": r"发起过?|\bstart(?:ed)?\b",
    "replied_to": r"回复过?|\brepl(?:ied|y|ies)\s+to\b",
}


def _first_word(m: re.Match) -> tuple[int, int]:
    """The superlative of a newest/oldest match ("earliest" of "earliest-created issue", 最早 of 最早创建的 issue):
    the words between may be conditions other steps read; said after the records (PR 里最老), that word."""
    if m.groupdict().get("superlative"):
        return m.span("superlative")
    word = re.match(
        r"most recently|most recent|very first|first ever"
        r"|(?:been )?(?:open|waiting|pending|sitting|idle|unresolved)(?: for)?(?: the)? longest|[A-Za-z]+|[\u4e00-\u9fff]{2}",
        m.group(0),
        re.I,
    )
    return (m.start(), m.start() + (word.end() if word else len(m.group(0))))


def _distinct_role(words: str, rest: str, before: str = "") -> str | None:
    """The role whose different values are counted, from the words after "how many different" (a noun
    at the start of a word: "reporters" are people, not repositories), and for people the verb after
    them (they did it: "people mentioned Becki" are authors) or later in the question, said of them by
    someone else ("people has Becki @-mentioned": the mentioned; "people have open issues assigned to
    them": the assignees; Chinese says it before: "Becki @ 过多少个不同的人")."""
    for i, word in enumerate(words.split() or [words]):
        role = next((r for pattern, r in _DISTINCT_ROLES if re.match(pattern, word, re.I)), None)
        if role == "author":
            # the verb said of them, after a relative pronoun too ("people who closed issues")
            verb = next((w for w in words.split()[i + 1 :] + rest.split() if not _RELATIVE.fullmatch(w)), "")
            said = next((r for pattern, r in _PERSON_VERBS if re.match(pattern, verb, re.I)), None)
            after = (words.split()[i + 2 :] or [""])[0]
            if (re.match(r"start", verb, re.I) and re.match(r"thread", after, re.I)) or (
                re.match(r"starter", word, re.I) and i and re.match(r"thread", words.split()[i - 1], re.I)
            ):
                return "thread_starter"  # "people started threads", "thread starters"
            if re.fullmatch(r"whose", verb, re.I) and re.search(
                r"^\s*(?:threads?|posts?|discussions?|questions?)\b.{0,60}?\b(?:repl(?:y|ied|ies)|answer(?:ed|s)?"
                r"|respond(?:ed|s)?|chimed|jumped|weighed|posted)\b",
                " ".join(words.split()[i + 2 :] + rest.split()) if len(words.split()) > i + 2 else rest,
                re.I,
            ):
                return "replied_to"  # "people whose threads Rosaline answered in": the threads' starters
            # they did it: "people have opened issues tagged X" are the issues' authors, not the tagged
            if said is None and re.match(
                r"@|mention|tag|ping|start|post|wr[io]te|repl|open(?:ed|s|ing)|file[ds]|creat|submit|report|raise|author",
                verb,
                re.I,
            ):
                said = "author"
            rest = " ".join(words.split()[i + 1 :] + rest.split())
            if said is None and re.search(r"@\s*过|提到过|提及过", before):
                return "mentioned"
            chinese_verb = next(
                (
                    r
                    for pattern, r in (
                        ("关闭|关掉|关了|关过", "closer"),
                        ("合并", "merger"),
                        ("评审|审查|审核", "reviewer"),
                    )
                    if re.match(rf"\s*(?:各自?|都|分别)?\s*(?:{pattern})", rest)  # "每个人各关了": each closed
                ),
                None,
            )
            if said is None and chinese_verb:
                return chinese_verb  # "几个不同的人关闭过 issue": the people who closed them
            if said is None and (
                re.search(
                    r"\bassigned to (?:them|him|her|someone|people)\b|\b(?:been|was|were|are|is|get|got|gets)"
                    r"\s+assigned\b|分配给|指派给|被(?:指派|分配)",
                    rest,
                    re.I,
                )
                or re.search(r"(?:分配|指派)给(?:了|过)?\s*$", before)  # "分配给了多少个不同的人"
            ):
                return "assignee"
            if said is None and re.search(
                r"\b(?:@-?|at-)?mention(?:ed|s)?\b|\btagged\b|\bpinged\b|@\s*过|提到过|提及过", rest, re.I
            ):
                return "mentioned"
            if said is None and re.search(r"\bstart(?:ed)?\s+(?:a\s+|any\s+)?threads?\b|发起", rest, re.I):
                return "thread_starter"
            if said is None and (
                re.search(r"\b(?:repl(?:y|ies|ied)|respond(?:ed|s)?|answer(?:ed|s)?)\s+to\b", rest, re.I)
                or re.search(r"回复过?\s*$", before)
            ):
                return "replied_to"  # "how many different people has Kristeen replied to"
            return said or "author"
        if role:
            return role
    return None


# Two periods set side by side: what stands between them ("2021 or 2022", "Jan vs Feb", "2022 compared
# with 2023", "2021 年和 2022 年").
# A month said alone ("March", "in March"): which year it is in, the rest of the question may say.
_MONTH_ALONE = re.compile(
    r"(?:in\s+|during\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?", re.I
)
_BETWEEN_COMPARED = re.compile(
    r"(?:['’]s)?\s*(?:,|\bor\b|\band\b|\bvs\.?|\bversus\b|\bcompared (?:with|to)\b|\bagainst\b|和|与|跟|还是|或"
    r"|\b(?:(?:more|busier|bigger|higher|larger|greater|fewer|less|quieter|smaller|lower)\s+)?than\b)\s*(?:in\s+)?$",
    re.I,
)
# Which of them had more (a winner asked: one bucket), or the number for each (one count per bucket).
# A Chinese question may end on a bare 多 / 少 ("A 和 B 谁合并的 PR 多").
_MORE_OF_TWO = re.compile(
    r"\b(?:more|busier|bigger|higher|larger|greater|chattier|wordier|noisier|livelier)\b|(?:比较|比較)?多(?=\s*[？?。!！]?\s*$)(?<![最差]多)|更多|更忙|更高|更活跃|多一些"
    r"|(?P<fewer>\b(?:fewer|less|quieter|smaller|lower)\b|更少|更低|更冷清|(?:比较)?少(?=\s*[？?。!！]?\s*$)(?<![多最至]少))",
    re.I,
)
_EACH_OF_TWO = re.compile(
    r"\b(?:the\s+)?numbers?\s+(?:for|of)(?=\s+each\b)|\beach(?:\s+(?:year|month|one|period))?\b|\brespectively\b|\bcompared (?:with|to)\b|\bvs\.?(?=\s)|\bversus\b|各|分别|相比|对比",
    re.I,
)
# The question words around such a comparison: "which saw more", "哪一年", "哪个月".
_WHICH_OF_TWO = re.compile(
    r"\b(?:which|what)\b(?:\s+(?:year|month|one|period))?(?:\s+(?:saw|had|got|has|did|was|were))?"
    r"|\b(?:was|were)\b|哪(?:一|个)?\s*(?:年|个?月)?",
    re.I,
)


# A difference of two counts: "how many more PRs did A open than B", "how many fewer issues in 2023 than 2022",
# "the difference between 2022 and 2023", "A vs B, difference?", "A minus B", "A 比 B 多开了几个", 相差. `fewer` says the second named is the larger.
_DIFFERENCE = re.compile(
    r"\bhow\s+(?:many|much)\s+(?:(?P<fewer>fewer|less)|more)\b|\bby\s+how\s+(?:many|much)\b"
    r"|\b(?:the\s+)?difference\s+(?:between|in)\b|\bdifference\b(?=\W*$)|\bminus\b|比.{1,40}?(?:多|(?P<fewer_cn>少))[\u4e00-\u9fff]{0,3}?(?:几|多少)|相差|差了?(?:几|多少)",
    re.I,
)
# A percent change of a count from one period to another: "percent change", "change from 2023 to 2024, in percent",
# "grew by what percent", 同比, 环比, "增长了百分之几".
_CHANGE = re.compile(
    r"\b(?:percent(?:age)?|%)\s+(?:change|growth|increase|decrease|drop|decline)\b"
    r"|\b(?:chang|grow|grew|increas|ris|rose|drop|fall|fell|declin)\w*\b[^?]*?(?:\bpercent(?:age)?\b|%)"
    r"|\bwhat\s+(?:percent(?:age)?|%)\s+(?:\w+\s+){0,6}?(?:chang|grow|grew|increas|ris|rose|drop|fall|fell|declin)\w*"
    r"|同比|环比|(?:变化|增长|成长|增加|减少|下降|上升)了?(?:百分之|多少[（(]?百分)",
    re.I,
)


def _next_month(start: datetime) -> datetime:
    return datetime(start.year + start.month // 12, start.month % 12 + 1, 1)


def _is_calendar(unit: str, start: datetime | None, end: datetime | None, now: datetime) -> bool:
    """[start, end) is one calendar year or month (`unit`); the one in progress ends now."""
    if start is None or end is None or start != datetime(start.year, start.month if unit == "month" else 1, 1):
        return False
    following = (
        datetime(start.year + 1, 1, 1)
        if unit == "year"
        else datetime(start.year + start.month // 12, start.month % 12 + 1, 1)
    )
    return end == following or (end == now and start < now < following)


@dataclass
class ShapeIntent:
    """What `ShapeStep._shape_intent` read: `kind` "bucket_extreme" (the busiest/quietest `bucket`:
    `extreme` argmax/argmin), "bucket_avg" (the mean count of the `bucket`s), "group_avg" (the mean count of the values of
    `role`), "group_extreme" (the value of the people or field `role` with the most or
    fewest records: `extreme` argmax/argmin), "record_extreme" (the newest (`direction` -1) or oldest (1) record) or
    "distinct" (how many different values of `role`) or "sum"/"avg" (the total/mean of the measure `role`) or
    "measure_extreme" (the largest or smallest value of the measure `role`: `extreme` max/min) or "group_sum" (the
    author whose records' measure `role` summed is the highest, `extreme` argmax, or lowest) or "own"
    (a tenant's own kind: the `shape` asked of its named fields, `OwnFieldStep.own_shape`)."""

    kind: str
    extreme: str | None = None
    bucket: str | None = None
    direction: int = -1
    role: str | None = None
    shape: Shape | None = None


class ShapeStep(OwnAggregateStep):
    """Grouping, ranking and limits."""

    def _grouping(self) -> tuple[str | None, str | None]:
        listed = next(
            (f for f in self.filters if f.op == "in" and not f.negate and f.field in self._person_paths()), None
        )
        each = re.search(
            r"\beach\b|\brespectively\b|\bvs\.?(?=\s)|\bversus\b|\bindividually\b|\bseparately\b|各自|分别"
            r"|各(?![个种类位])(?=\s*[\u4e00-\u9fff])"  # "A、B 和 C 各发了多少条": one count each
            r"|\band how many\b",
            self.q,
            re.I,
        )
        listed = listed or (self._values_side_by_side() if each else None)
        if listed and each:  # "how many PRs did A, B and C each get merged": one count per person
            self.use(each.span(), "shape")
            self._named_group = listed.field
            return "named", None
        for fmt, pattern in _BUCKETS:
            m = re.search(pattern, self.q, re.I)
            if m:
                self.use(m.span(), "shape")
                return None, fmt
        versus = re.search(
            r"\bopen (?:vs\.?|versus|or|and) closed\b|\bclosed (?:vs\.?|versus|or|and) open\b", self.q, re.I
        )
        if versus and field_for(self.schema, "state") and not re.search(EITHER_STATE, self.q, re.I):
            self.use(versus.span(), "shape")
            self.filters = [f for f in self.filters if f.field != "state"]  # both states are wanted, one group each
            return "state", None
        own = self._own_group()
        if own:
            self._named_group = own
            return "named", None
        named = re.search(
            r"\b(?:per|by|grouped by|broken down by|for each|each)\s+([a-z]+(?:[ _][a-z]+){0,2})", self.q, re.I
        )
        if named:
            words = named.group(1).lower().split()
            for n in range(len(words), 0, -1):
                wanted = "_".join(words[:n])
                path = next(
                    (
                        p
                        for p, f in self.schema.fields.items()
                        if f.enum and p.split(".")[-1].lower() == wanted and "_" in wanted
                    ),
                    None,
                )
                if path:
                    self.use(named.span(), "shape")
                    self._named_group = path
                    return "named", None
        listed_counts = self._values_with_counts()
        if listed_counts:
            return listed_counts, None
        # the grouped word no condition holds ("by people with no association to the repo": a condition)
        m = next((g for g in _GROUP.finditer(self.q) if not self._in_a_condition(g.span(g.lastindex or 0))), None)
        if m:
            self.use(m.span(), "shape")
            word = next(g for g in m.groups() if g)
            for prefix, role in _GROUP_ROLES.items():
                if word.lower().startswith(prefix):
                    return self._role_done_by(m.end(), role), None
        return None, None

    def _values_with_counts(self) -> str | None:
        """ "which labels were used, and on how many issues each", "the channels with their message counts",
        都用过哪些 label？每个各有几个: the values of a field asked for, each with its count — counts per value.
        The role the value noun names; None unless both the values and a count of each are asked."""
        asked = _VALUES_ASKED.search(self.q)
        counted = _EACH_COUNTED.search(self.q, asked.end()) if asked else None
        if counted is None:
            return None
        word = next(g for g in asked.groups() if g).lower()
        role = next((r for k, r in (*_GROUP_NOUN_ROLES.items(), *_GROUP_ROLES.items()) if word.startswith(k)), None)
        if role is None or self._group_path(role)[0] is None:
            return None
        self.use(asked.span(), "shape")
        self.use(counted.span(), "shape")
        return role

    def _in_a_condition(self, span: tuple[int, int]) -> bool:
        return any(
            f.span and f.field not in STATE_FIELDS and f.span[0] <= span[0] and span[1] <= f.span[1]
            for f in self.filters
        )

    def _compared_periods(self) -> tuple[str, str | None] | None:
        """ "were more issues opened in 2021 or in 2022?", "Jan vs Feb 2019: which month was busier",
        "2022 年和 2023 年各合并了多少": whole calendar years (or months) side by side, each a time
        condition no record meets together with the other. Read as one condition over them all, counted
        per year (month): the (bucket, argmax/argmin) of a winner asked for, or (bucket, None) for the
        number of each. Periods apart ("March 2023 or March 2024") are alternatives (`times_any`: the
        time between them is not counted), grouped by the coarsest unit that tells them apart (the year
        of two Marches)."""
        if len(self.times) < 2 or len({t.field for t in self.times}) != 1:
            return None
        self._month_of_each_year()
        ranges = sorted(self.times, key=lambda t: t.start or datetime.min)
        unit = next(
            (u for u in ("year", "month") if all(_is_calendar(u, t.start, t.end, self.ctx.now) for t in ranges)), None
        )
        if unit is None:
            return None
        apart = any(a.end != b.start for a, b in pairwise(ranges))
        if apart and any(a.end is None or b.start is None or a.end > b.start for a, b in pairwise(ranges)):
            return None  # overlapping periods: not two set side by side
        said = sorted((t.span for t in self.times if t.span), key=lambda s: s[0])
        if len(said) != len(self.times) or not all(
            _BETWEEN_COMPARED.fullmatch(self.q[a[1] : b[0]]) for a, b in pairwise(said)
        ):
            return None
        more, each = _MORE_OF_TWO.search(self.q), _EACH_OF_TWO.search(self.q)
        if not (more or each):
            return None  # "issues from 2021 and 2022": both periods, no comparison asked
        for pattern in (_MORE_OF_TWO, _EACH_OF_TWO, _WHICH_OF_TWO):
            for cue in pattern.finditer(self.q):
                if not self._is_used(cue.span()):
                    self.use(cue.span(), "shape")
        self.use((said[0][0], said[-1][1]), "time")  # the periods and the "or"/"vs"/和 between them
        if apart:
            self.times_any = True
            if unit == "month" and len({t.start.year for t in ranges if t.start}) == len(ranges):
                unit = "year"
        else:
            self.times = [TimeRange(ranges[0].field, ranges[0].start, ranges[-1].end, span=(said[0][0], said[-1][1]))]
        if more:
            return unit, "argmin" if more.group("fewer") else "argmax"
        return unit, None

    def _month_of_each_year(self) -> None:
        """ "Which March saw more messages, 2018's or 2019's", "March of 2018 vs 2019": a month named once, without
        a year, beside whole years set side by side is that month of each year (not the month this year and
        both years besides, which no record meets together)."""
        months = [
            t
            for t in self.times
            if t.span
            and _MONTH_ALONE.fullmatch(self.q[t.span[0] : t.span[1]])
            and _is_calendar("month", t.start, t.end, self.ctx.now)
        ]
        years = [t for t in self.times if t not in months and _is_calendar("year", t.start, t.end, self.ctx.now)]
        if len(months) != 1 or len(years) < 2 or len(months) + len(years) != len(self.times):
            return None
        month = months[0].start.month if months[0].start else 1
        self.times = [
            TimeRange(
                t.field,
                datetime(t.start.year, month, 1),
                datetime(t.start.year + month // 12, month % 12 + 1, 1),
                span=t.span,
            )
            for t in years
            if t.start
        ]
        return None

    def two_sides(self) -> Shape | None:
        """ "how many more PRs did A open than B" (A's minus B's), "how many fewer issues in 2023 than 2022"
        (2022's minus 2023's), "the difference between 2022 and 2023" (as said), "percent change from 2023 to
        2024", 同比, 环比 (from the earlier period to the later): two people of one role, two values of another
        field ("clojurians than elmlang": two workspaces), or two whole calendar
        years or months of one date, each a condition no record meets with the other — read as their two
        groups set against each other. None without such a cue, or without exactly two such sides."""
        change, difference = _CHANGE.search(self.q), _DIFFERENCE.search(self.q)
        cue = change or difference
        if cue is None:
            return None
        found = (
            self._two_periods(allow_one=change is not None, before=self._period_before(change))
            or self._two_people()
            or self._two_values()
        )
        if found is None:
            return None
        field, bucket, said = found
        if change:
            sides = sorted(said) if bucket else said  # a change runs forward in time, whichever is said first
        else:
            fewer = difference is not None and (difference.group("fewer") or difference.group("fewer_cn"))
            sides = said[::-1] if fewer else said
            sides = self._leader_first(sides)
        self.use(cue.span(), "shape")
        # the words that set the two sides against each other, and the number compared: each of them said
        while self.mark(
            r"\b(?:than|vs\.?|versus|compared\s+(?:with|to)|between|from|to|and|in\s+percent|percent|number\s+of|activity)\b"
            r"|[%比和与跟]|相比|的?数量?|百分(?:之|比)?",
            "shape",
        ):
            pass
        return Shape("change" if change else "difference", field=field, bucket=bucket, sides=sides)

    def _leader_first(self, sides: list[str]) -> list[str]:
        """ "by how many did albert lead": the person said to lead (or to trail) is the first side (the second)."""
        for m in self.ctx.mentions:
            verb = re.match(r"\s+(?:(lead|led|win|won|beat)|(trail(?:ed)?|lag(?:ged)?))\b", self.q[m.end :], re.I)
            key = m.person.key if m.person is not None else None
            if verb is None or key not in sides:
                continue
            self.use((m.end + verb.start(1 if verb.group(1) else 2), m.end + verb.end()), "shape")
            other = next(v for v in sides if v != key)
            return [key, other] if verb.group(1) else [other, key]
        return sides

    def _period_before(self, change: re.Match | None) -> str | None:
        """The period a change of one month said alone is from: 环比 the month before, 同比 that month a year
        before ("2019 年 3 月的消息数环比增长了百分之多少": February to March)."""
        if change is None or len(self.times) != 1:
            return None
        whole = self.times[0]
        if not _is_calendar("month", whole.start, whole.end, self.ctx.now) or whole.start is None:
            return None
        said = re.search(r"环比|同比", self.q)
        if said is None:
            return None
        self.use(said.span(), "shape")
        start = whole.start
        return (
            datetime(start.year - (start.month == 1), (start.month - 2) % 12 + 1, 1)
            if said.group(0) == "环比"
            else datetime(start.year - 1, start.month, 1)
        ).strftime(BUCKET_FORMATS["month"])

    def _two_periods(self, allow_one: bool, before: str | None = None) -> tuple[str, str, list[str]] | None:
        """Two whole calendar years (or months) of one date field, as said; with `allow_one`, one range of
        exactly two ("from 2023 to 2024"), or one month and `before`, the month its change is from. The times
        become the one range over both (or both, `times_any`)."""
        if not self.times or len({t.field for t in self.times}) != 1 or len(self.times) > 2:
            return None
        ranges = sorted(self.times, key=lambda t: t.span or (0, 0))
        if len(ranges) == 1 and before is not None and ranges[0].start is not None:
            whole = ranges[0]
            start = datetime.strptime(before, BUCKET_FORMATS["month"])
            earlier = TimeRange(whole.field, start, _next_month(start))
            if earlier.end == whole.start:
                self.times = [TimeRange(whole.field, start, whole.end, span=whole.span)]
            else:
                self.times, self.times_any = [earlier, whole], True
            return whole.field, "month", [before, whole.start.strftime(BUCKET_FORMATS["month"])]
        if len(ranges) == 1:
            whole = ranges[0]
            if not (allow_one and whole.start and whole.end):
                return None
            halves = [
                (whole.start, datetime(whole.start.year + 1, 1, 1)),
                (datetime(whole.start.year + 1, 1, 1), whole.end),
            ]
            month = datetime(whole.start.year + whole.start.month // 12, whole.start.month % 12 + 1, 1)
            for unit, parts in (("year", halves), ("month", [(whole.start, month), (month, whole.end)])):
                if all(_is_calendar(unit, a, b, self.ctx.now) for a, b in parts):
                    return whole.field, unit, [a.strftime(BUCKET_FORMATS[unit]) for a, _ in parts]
            return None
        unit = next(
            (u for u in ("year", "month") if all(_is_calendar(u, t.start, t.end, self.ctx.now) for t in ranges)), None
        )
        if unit is None:
            return None
        if unit == "month":
            ranges = self._year_of_the_other(ranges)
        keys = [t.start.strftime(BUCKET_FORMATS[unit]) for t in ranges if t.start]
        if len(set(keys)) != 2:
            return None
        by_start = sorted(ranges, key=lambda t: t.start or datetime.min)
        if by_start[0].end == by_start[1].start:
            spans = [t.span for t in ranges if t.span]
            covering = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else None
            self.times = [TimeRange(ranges[0].field, by_start[0].start, by_start[1].end, span=covering)]
        else:
            self.times_any = True  # two periods apart: the time between them is neither
        return ranges[0].field, unit, keys

    def _year_of_the_other(self, months: list[TimeRange]) -> list[TimeRange]:
        """ "Feb 2024 vs Jan", "2024 年 2 月 … 环比 1 月": a month said without its year, set against one said with
        it, is of that year (not the latest one by now)."""
        said = [bool(t.span and re.search(r"\d{4}|['’]\d{2}", self.q[t.span[0] : t.span[1]])) for t in months]
        if sorted(said) != [False, True]:
            return months
        year = months[said.index(True)].start.year
        moved = [
            t
            if has or t.start is None
            else TimeRange(t.field, t.start.replace(year=year), _next_month(t.start.replace(year=year)), span=t.span)
            for t, has in zip(months, said)
        ]
        self.times = [moved[months.index(t)] if t in months else t for t in self.times]
        return moved

    def _two_people(self) -> tuple[str, None, list[str]] | None:
        """Two people named in one role ("did A open than B"), as said: one condition on either."""
        people = self._person_paths()
        named = [f for f in self.filters if f.field in people and not f.negate and f.op in ("eq", "in")]
        if len({f.field for f in named}) != 1:
            return None
        said = [
            v for f in sorted(named, key=lambda f: f.span or (0, 0)) for v in (f.value if f.op == "in" else [f.value])
        ]
        if len(said) != 2 or said[0] == said[1] or not all(isinstance(v, str) for v in said):
            return None
        spans = [f.span for f in named if f.span]
        self.filters = [f for f in self.filters if f not in named]
        covering = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else None
        self.filters.append(Filter(named[0].field, "in", said, span=covering))
        return named[0].field, None, said

    def _two_values(self) -> tuple[str, None, list[str]] | None:
        """Two values of one other field named ("clojurians than elmlang": two workspaces), in the order said:
        the one field whose conditions name exactly two values, either of them."""
        named: dict[str, list[Filter]] = {}
        for f in self.filters:
            values = f.value if f.op == "in" else [f.value]
            if not f.negate and f.op in ("eq", "in") and all(isinstance(v, str) for v in values):
                named.setdefault(f.field, []).append(f)
        two = [
            (field, values)
            for field, filters in named.items()
            if len(values := list(dict.fromkeys(v for f in filters for v in (f.value if f.op == "in" else [f.value]))))
            == 2
        ]
        if len(two) != 1:
            return None
        field, values = two[0]
        lowered = self.q.lower()
        said = sorted(values, key=lambda v: (lowered.find(v.lower()) % (len(lowered) + 1), values.index(v)))
        spans = [f.span for f in named[field] if f.span]
        self.filters = [f for f in self.filters if f not in named[field]]
        covering = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else None
        self.filters.append(Filter(field, "in", said, span=covering))
        return field, None, said

    def _values_side_by_side(self) -> Filter | None:
        """ "bug vs enhancement, how many of each", "how many were labelled bug, and how many
        enhancement": two values of one list field read as both required are one count each — a
        condition on either, grouped by the field (its elements, where it is a list)."""
        by_field: dict[str, list[Filter]] = {}
        for f in self.filters:
            if f.op == "eq" and not f.negate and isinstance(f.value, str) and self.schema.is_array(f.field):
                by_field.setdefault(f.field, []).append(f)
        field, both = next(((k, v) for k, v in by_field.items() if len(v) >= 2), (None, []))
        if field is None:
            # "closures completed vs not planned": the values of a field of few values, said side by side
            # (not one word standing for several: "resolved" is Done or Won't Do, "resolved each month")
            return next(
                (
                    f
                    for f in self.filters
                    if f.op == "in"
                    and not f.negate
                    and isinstance(f.value, list)
                    and len(f.value) >= 2
                    and f.span is not None
                    and re.search(r"\bvs\b|\bversus\b|\bcompared\b", self.q[f.span[0] : f.span[1]], re.I)
                    and self.schema.fields.get(f.field) is not None
                    and self.schema.fields[f.field].enum
                    and f.field not in self._person_paths()
                ),
                None,
            )
        self.filters = [f for f in self.filters if f not in both]
        either = Filter(field, "in", [f.value for f in both], span=both[0].span)
        self.filters.append(either)
        return either

    def _role_done_by(self, at: int, role: str) -> str:
        """A generic person noun ("each person", "per user") takes the role of the verb said of it
        right after: "how many did each person close" counts closers, not authors."""
        verb = re.match(r"\s*(?:(?:who|that|have|has|had|did|do|does|ever|actually)\s+)*(\w+)", self.q[at:], re.I)
        # "每个人各关了多少个": the verb after 各/都/分别
        verb = (
            re.match(r"\s*(?:各自|各|都|分别|一共)?\s*(关闭|关掉|关了|关|合并|评审|审查|审核|分配|指派)", self.q[at:])
            or verb
        )
        said = verb and next(
            (
                r
                for pattern, r in (*_PERSON_VERBS_NOW, *_CHINESE_PERSON_VERBS)
                if re.match(pattern, verb.group(1), re.I)
            ),
            None,
        )
        if role != "author" or not said or self._group_path(said)[0] is None:
            return role
        self.use((at + verb.start(1), at + verb.end(1)), "shape")
        return said

    def _shown_fields(self) -> list[str]:
        """A tenant's own kind: the fields a list question names ("show the name, opening year and capacity
        of each cinema", "calendar dates and day numbers"), each read, for the answer to show them."""
        if self.schema.kind.builtin:
            return []
        shown = []
        for mention in self.own_field_mentions():
            self.use((mention.start, mention.end), "field")
            if not self.known(mention.path):
                shown.append(mention.path)
        return list(dict.fromkeys(shown))

    def _own_group(self) -> str | None:
        """A tenant's own kind grouped by one of its value fields, named as the question says it:
        "which service had the most incidents", "deploys per environment", "incidents by severity"."""
        if self.schema.kind.builtin:
            return None
        for role, paths in self.schema.kind.values.items():
            path = next((p for p in paths if self.schema.has_path(p)), None)
            if path is None:
                continue
            names = "|".join(
                re.escape(w) for w in dict.fromkeys((role, role.replace("_", " "), path.rsplit(".", 1)[-1]))
            )
            m = re.search(
                rf"\b(?:which|what|per|by|each|every|across|grouped by|broken down by|breakdown by)\s+(?:the\s+)?"
                rf"(?:{names})(?:e?s)?\b",
                self.q,
                re.I,
            )
            if m:
                self.use(m.span(), "shape")
                return path
        # Any field of names, said after a word that groups ("the number of competitions of each type":
        # `Competition_type`), its name's words matched as `OwnFieldStep` matches them.
        for mention in self.own_field_mentions():
            info = self.schema.fields.get(mention.path)
            if info is None or info.types & {"int", "double"} or mention.path == self.schema.kind.key:
                continue
            cue = re.search(
                r"\b(?:per|by|each|every|across|grouped by|broken down by|for each|of each|in each|for every)"
                r"(?:\s+(?:the|their|its|different|distinct))*\s+$",
                self.q[: mention.start],
                re.I,
            )
            if cue:
                self.use((cue.start(), mention.end), "shape")
                return mention.path
        return None

    def _others_threads_only(self, role: str) -> None:
        """ "Whose threads does Meagan reply to most": the threads of others — her replies in her own
        threads would name herself."""
        replying, author = person_field_for(self.schema, "replied_to"), person_field_for(self.schema, "author")
        mine = next(
            (f for f in self.filters if author and f.field == author[0] and f.op == "eq" and not f.negate), None
        )
        if role == "replied_to" and replying and mine and not self.has_filter(replying[0]):
            self.filters.append(Filter(replying[0], "ne", mine.value))

    def _group_path(self, role: str) -> tuple[str | None, tuple[str, str] | None]:
        if role == "named":
            return self._named_group, None
        if self.collection == "commits" and role == "author" and self.schema.has_path("author.name"):
            return "author.name", ("author.name", "name")  # people read names; e-mails are for matching
        found = person_field_for(self.schema, role)
        if found:
            return found[0], found
        return field_for(self.schema, role), None

    def _ranked_by_own_field(self) -> tuple[str, int, int] | None:
        """A tenant's own kind: "top 3 incidents by duration_minutes", "the incidents with the highest
        cost", "longest incidents" (a numeric field named for a duration): records sorted by one of
        its numeric fields, highest first. None when it asks who, or names no such field."""
        if _ASKS_FOR_PEOPLE.search(self.q):
            return None
        numeric = [
            p
            for p, info in self.schema.fields.items()
            if info.types & {"int", "double"} and not info.in_array and info.types <= {"int", "double", "null"}
        ]
        cue = re.search(r"\b(?:top|highest|largest|biggest|greatest|most|longest|by)\b", self.q, re.I)
        named = None
        for path in sorted(numeric, key=len, reverse=True):
            words = dict.fromkeys((path, path.replace("_", " "), path.rsplit(".", 1)[-1]))
            said = "|".join(re.escape(w) for w in words)
            named = re.search(rf"(?<![\w.])(?:{said})(?![\w.])", self.q, re.I)
            if named and cue:
                break
        else:
            named = None
        if named is not None:
            self.use(named.span(), "shape")
        else:
            cue = re.search(r"\b(?:longest|slowest|longest[- ]running|lengthiest)\b", self.q, re.I)
            path = next(
                (p for p in numeric if re.search(r"duration|minutes|hours|seconds|days|length|elapsed", p, re.I)), None
            )
            if cue is None or path is None:
                return None
        self.use(cue.span(), "shape")
        plural = self.schema.kind.pattern()
        number = re.search(rf"\btop\s*(\d+)\b|\b(\d+)\s+(?:\w+\s+)?(?:{plural})", self.q, re.I)
        if number:
            return path, min(int(next(g for g in number.groups() if g)), 200), -1
        words = re.search(r"\b(?:top|the)\s+(two|three|four|five|six|seven|eight|nine|ten)\b", self.q, re.I)
        if words:
            return path, _WORD_NUMBERS[words.group(1).lower()], -1
        many = any(m.group(0).lower() == self.schema.kind.plural.lower() for m in re.finditer(plural, self.q, re.I))
        return path, 5 if many else 1, -1

    def _ranked_by_count(self) -> tuple[str, int, int] | None:
        """ "the thread with the most replies", "回复最多的帖子", "longest threads": records sorted by a
        counted field — not people grouped by how many records they have: (path, limit, direction: -1
        the most first, 1 the fewest). None when it asks who."""
        if not self.schema.kind.builtin:
            return self._ranked_by_own_field()
        m = re.search(
            r"\bmost\s+(repl(?:y|ies)|comments?|reactions?|additions|deletions|(?:changed )?files)\b"
            r"|\bmost[- ](react)ed(?:[- ]to)?\b|(?:表情)?(回应|反应)数?最多|最多的?(?:表情)?(回应|反应)"
            r"|\bmost[- ](repl)ied\b|\bmost[- ](comment)ed\b|\bmost[- ]discussed\b"
            r"|\b(?:highest|largest|biggest|greatest|top)\s+(comment|repl)(?:y|ies|s)?\s+counts?\b"
            r"|\b(?:biggest|largest|greatest|strongest)\s+(respons)es?\b"  # "the thread that got the biggest response"
            r"|\blongest\s+(comment)\s+(?:threads?|sections?|chains?)\b"
            # "the top 5 threads by number of replies": ranked by the count, not by who posted them
            r"|\b(?:by|in order of)\s+(?:the\s+)?(?:(?:number|count|#)\s+of\s+)?(repl(?:y|ies)|comments?|reactions?)\b(?!\s+(?:to|from|by)\b)"
            r"|\b(?:biggest|largest)\s+(?:\w+\s+)?(pr|pull request|change|diff)s?\b|\b(?:longest|biggest|largest|busiest|hottest|most active)\s+(?:[a-z]+\s+)?(?:slack\s+)?"
            r"(?:threads?|discussions?|conversations?)\b|(回复|评论|留言)数?(?:最多|第\s*[二三四五2-5]\s*多)|最多(回复|评论|留言)"
            r"|(?:最长|最热|最火)的?(?:帖子|讨论)",
            self.q,
            re.I,
        )
        # "the thread with the most different people replying": threads ranked by how many people replied
        repliers = re.search(
            r"\b(?:most|(?:largest|highest|greatest|biggest) number of)\s+(?:different|distinct|unique)\s+"
            r"(?:people|persons|participants|repliers|users|responders|posters)\b(?:\s+replying)?"
            r"|(?:参与)?回复(?:的)?人数最多|最多人(?:参与)?回复",
            self.q,
            re.I,
        )
        if (
            repliers
            and self.schema.has_path("reply_users_count")
            and re.search(r"\bthreads?\b|帖子|讨论", self.q, re.I)
        ):
            m, path = repliers, "reply_users_count"
        elif _ASKS_FOR_PEOPLE.search(self.q):
            return None
        elif not m:
            measured = self._measure_named()
            if measured is None:
                return None
            span, path, direction = measured
            self.use(span, "shape")
            return path, self._ranked_limit(span), direction
        else:
            # "the thread words rank by replies; "most discussed" by comments where records have them
            word = next((g for g in m.groups() if g), None) or (
                "comment" if self.schema.has_path("comments") else "repl"
            )
            if re.fullmatch(r"pr|pull request|change|diff", word, re.I):
                word = "addition"  # "the biggest PR": the most lines added
            if re.fullmatch(r"react|回应|反应", word, re.I):
                word = "reaction"  # "the most reacted-to issue", "表情回应最多": every emoji counted
            path = self._count_field(word.lower())
        if path is None:
            return None
        self.use(m.span(), "shape")
        return path, self._ranked_limit(), -1

    def _ranked_limit(self, measure: tuple[int, int] = (0, 0)) -> int:
        """How many ranked records a question asks for: "top 3", "the three", "which threads" (a few),
        "the thread" (one); the words of the `measure` ("the most sub-issues") say none of it."""
        q = self.q[: measure[0]] + " " * (measure[1] - measure[0]) + self.q[measure[1] :]
        number = re.search(
            # "20 threads", not a year before its records ("top five 2024 issues")
            r"\btop\s*(\d+)\b|\b(\d{1,3})\s+(?:\w+\s+)?(?:threads|posts|messages|discussions|prs|pull requests|issues|tickets)\b"
            rf"|前\s*(\d+)|(\d+)\s*(?:个|条)|\b(\d{{1,3}})\s+{_RANKING_WORD}",
            q,
            re.I,
        )
        if number:
            return min(int(next(g for g in number.groups() if g)), 200)
        # "the three", and a size said right before the ranking word wherever it stands: "lhoestq's three most
        # commented PRs"
        words = re.search(
            r"\b(?:top|the|which|what)\s+(two|three|four|five|six|seven|eight|nine|ten)\b|前(两|二|三|四|五|十)"
            rf"|\b(two|three|four|five|six|seven|eight|nine|ten)\s+{_RANKING_WORD}"
            r"|的(两|二|三|四|五|六|七|八|九|十)\s*(?:个|条|篇)",  # 回复最多的五个讨论串
            q,
            re.I,
        )
        if words:
            return _WORD_NUMBERS[next(g for g in words.groups() if g).lower()]
        # "which threads had the most replies": a few; "the thread with the most replies", "which of
        # her threads ...": one.
        if re.search(r"\bwhich (?:one )?of\b|\bwhich one\b|哪一?(?:个|条|篇|项)(?!月|年|天|周|星期)", q, re.I):
            return 1
        plural = re.search(
            r"\b(?:threads|posts|messages|discussions|conversations|prs|pull requests|issues|tickets)\b|哪些",
            q,
            re.I,
        )
        return 5 if plural else 1

    def _measure_named(self) -> tuple[tuple[int, int], str, int] | None:
        """ "the issue with the most heart reactions", "which PR got the most thumbs up", "the thread with
        the fewest replies": an extreme of a numeric field of the records found by its name's words
        ("reactions.heart": heart, reactions), not a fixed list — the field, and -1 for the most first or 1
        for the fewest. Fields of an embedded thing with its own id (a milestone's `open_issues`) measure
        that thing, not the record."""
        measures = self._record_measures()
        for cue in [*_MEASURE_CUE.finditer(self.q), *_TOP_BY.finditer(self.q)]:
            words = cue.group(2).split()
            for n in range(len(words), 0, -1):
                said = _measure_words(" ".join(words[:n]))
                exact = [p for p, w in measures.items() if w == said]
                within = [p for p, w in measures.items() if said and said < w]
                path = exact[0] if len(exact) == 1 else within[0] if not exact and len(within) == 1 else None
                if path:
                    start = cue.start() if cue.re is _MEASURE_CUE else self.q.rfind("by", 0, cue.start(2))
                    span = (start, cue.start(2) + len(" ".join(words[:n])))
                    return span, path, 1 if _SMALLEST.match(cue.group(1)) else -1
        return None

    def _record_measures(self) -> dict[str, frozenset[str]]:
        """The record's own numeric fields, each with the words of its name."""
        entities = {p.rsplit(".", 1)[0] for p in self.schema.fields if p.endswith(".id")}
        return {
            path: _measure_words(path.replace(".", " ").replace("_", " "))
            for path, info in self.schema.fields.items()
            if info.types & {"int", "double"}
            and not info.in_array
            and path.split(".")[-1] not in ("id", "number")
            and not any(path.startswith(e + ".") for e in entities)
        }

    def _top_role(self, person_roles: set[str]) -> str:
        for role, word in person_field_words(self.schema):  # "who commanded the most incidents"
            m = re.search(word, self.q, re.I)
            if m:
                self.use(m.span(1), "shape")
                return role
        if person_field_for(self.schema, "mentioned"):
            asked = _MENTIONED_ASKED.search(self.q)
            if asked:  # "who does Odis mention the most": the people his messages mention, not him
                self.use(asked.span(), "shape")
                return "mentioned"
        asks_for_people = _ASKS_FOR_PEOPLE.search(self.q)
        verb = re.search(
            r"\bwho\s+(?:has\s+|have\s+|had\s+)?(open\w*|creat\w*|fil\w*|report\w*|wr[io]te|author\w*|post\w*|start\w*|"
            r"asked\s+for|request\w*|rais\w*|submit\w*)",
            self.q,
            re.I,
        )
        if verb:
            return "author"  # "who opened the most of those": the verb right after "who" says the role
        if not asks_for_people:
            for role, pattern in (
                ("label", r"\blabels?\b|\btags?\b(?!\s+(?:nobody|no one|anyone|someone|people|them|him|her|me))|标签"),
                ("repo", r"\brepos?\b|\brepositor\w+|仓库"),
                ("component", r"\bcomponents?\b|组件"),
                ("milestone", r"\bmilestones?\b|里程碑"),
                ("team", r"\bteams?\b|团队"),
                ("channel", r"\bchannels?\b|频道"),
                ("priority", r"\bpriorit\w+|优先级"),
                ("workspace", r"\bworkspaces?\b|\bslacks\b|\bcommunit(?:y|ies)\b|工作区"),
            ):
                if re.search(pattern, self.q, re.I):
                    return role
        mentioned = re.search(
            r"\bwho\s+(?:got|gets|was|were|is|has\s+been|have\s+been|had\s+been)\s+(?:@-?)?mentioned\b"
            r"|\bmost[- ](?:often[- ])?(?:@-?)?mentioned\b|谁被(?:@|提到|提及)|被(?:@|提到|提及)(?:得)?最多",
            self.q,
            re.I,
        )
        if mentioned and person_field_for(self.schema, "mentioned"):
            self.use(mentioned.span(), "shape")
            return "mentioned"  # "who got mentioned the most": the people the records @-mention, not their authors
        if re.search(r"\breview\w*|\bapprov\w*|审查|评审", self.q, re.I):
            return "reviewer"
        if person_field_for(self.schema, "replied_to") and re.search(
            r"\b(?:whose|which (?:person|user|member|one)['’]s) (?:threads?|posts?|messages?|questions?)\b|回复[^，。？?]{0,6}谁发起的"
            r"|谁的(?:帖子|讨论串|消息)",
            self.q,
            re.I,
        ):
            self.mark(r"谁发起的(?:讨论串|帖子|讨论)?", "shape")
            return "replied_to"  # "whose threads does Meagan reply to most": the starters of the threads she replied in
        if self.collection == "issues" and re.search(
            r"\bclos\w*|\bshut\b|\bresolv\w*|\bcomplet\w*|\bfix\w*|\bfinish\w*|关闭|关掉|解决|完成", self.q, re.I
        ):
            return "closer" if person_field_for(self.schema, "closer") else "assignee"
        if re.search(r"\bassign\w*|负责", self.q, re.I):
            return "assignee"
        return "author"

    def _top_limit(self, top: re.Match) -> int:
        explicit = re.search(r"\btop\s*(\d+)\b|\b(\d+)\s+(?:most|busiest|biggest)\b", self.q, re.I)
        number = next((g for g in top.groups() if g), None) or (explicit and (explicit.group(1) or explicit.group(2)))
        if number:
            return min(int(number), 200)
        if re.search(
            r"\b(?:the|just the|only the)?\s*(?:busiest|most active|top|biggest|largest|single)\s+(?:\w+\s+)?"
            r"(?:channel|person|reviewer|author|repo|repository|label|team|user|contributor|committer|engineer"
            r"|closer|merger|assignee|replier|poster|commenter|responder)\b(?!s)",
            self.q,
            re.I,
        ):
            return 1  # "the busiest channel": one answer
        if re.search(
            r"\b(?:which|what)\s+(?:single\s+)?(?:channel|person|reviewer|author|repo|repository|label|tag|team|user|"
            r"contributor|committer|engineer|component|milestone|project|workspace|slack|community|maintainer|member"
            r"|developer|dev|poster|replier|closer|merger|assignee|reporter)\b(?!s)",
            self.q,
            re.I,
        ):
            return 1  # "which label do open issues carry most often": the one winner
        counted = re.search(
            r"\b(\d+)\s+(?:most active |busiest |top )?(?:people|persons|users|reviewers|authors|engineers|"
            r"developers|devs|folks|members|contributors|labels|repos|channels|posters)\b",
            self.q,
            re.I,
        )
        if counted:
            return min(int(counted.group(1)), 200)
        words = re.search(
            r"\b(?:top|the|our|which|what)\s+(two|three|four|five|six|seven|eight|nine|ten)\b|前(两|二|三|四|五|十)",
            self.q,
            re.I,
        )
        if words:
            return _WORD_NUMBERS[next(g for g in words.groups() if g).lower()]
        # Chinese counts people with a measure word: "最多的3个人", "最活跃的五位".
        measured = re.search(r"(\d+|[两二三四五六七八九十])\s*(?:个人|个用户|位|名|个成员)", self.q)
        if measured:
            return min(int(measured.group(1)), 200) if measured.group(1).isdigit() else _WORD_NUMBERS[measured.group(1)]
        return 5

    def _oldest_first(self) -> bool:
        """A size said from the start ("the first ten issues", "the 3 oldest") or an order said outright
        ("oldest first", "in chronological order", 按时间先后): the earliest records, not the latest. An order
        said the default way ("newest first") is read too."""
        if self.mark(_NEWEST_FIRST, "shape"):
            return False
        if self.mark(_OLDEST_FIRST, "shape"):
            return True
        m = _LIMIT.search(self.q)
        return bool(m and re.search(r"\b(?:first|oldest)\b", m.group(0), re.I))

    def _list_limit(self, peek: bool = False) -> int:
        m = _LIMIT.search(self.q)
        if m:
            if not peek:
                self.use(m.span(), "shape")
            size = next(g for g in m.groups() if g).lower()
            return min(int(size) if size.isdigit() else _WORD_NUMBERS[size], 200)
        return DEFAULT_LIMIT

    def _shape_intent(self) -> ShapeIntent | None:
        """The extremes and distinct counts the list/count/top/group shapes would mis-answer."""
        if not self.schema.kind.builtin:
            self.own_absences()
            mentions = self.own_field_mentions()
            self.own_comparisons(mentions)
            own = self.own_aggregate(mentions) or self.own_shape(mentions)
            if own is not None:
                return ShapeIntent("own", shape=own)
        empty = _EMPTY_PERIODS.search(self.q) if self.ctx.times else None
        if empty:  # "how many days in 2018 had no messages": the periods of the time asked without a record
            self.use(empty.span(), "shape")
            self.mark(r"\bat all\b|\bwhatsoever\b", "shape")
            word = next(g for g in empty.groups() if g).lower()
            return ShapeIntent("empty_periods", bucket=PERIOD_UNITS[word.removesuffix("s").removeprefix("个")])
        cyclic = self._cyclic_extreme()
        if cyclic:
            return cyclic
        summed = _PERSON_SUM.search(self.q)
        if summed and (path := self._count_field((summed.group(2) or summed.group("zh")).lower())):
            self.use(summed.span(), "shape")
            while self.mark(_TOTAL_WORD, "shape"):  # "in total across their threads": said twice
                pass
            fewest = bool(re.search(r"fewest|least|最少", summed.group(0), re.I))
            return ShapeIntent("group_sum", extreme="argmin" if fewest else "argmax", role=path)
        unit = _ASKED_UNIT.search(self.q)
        if unit and _EXTREME_WORD.search(self.q):
            word = next(g for g in unit.groups() if g)
            bucket = next(v for k, v in PERIOD_UNITS.items() if word.lower().lstrip("个").startswith(k))
            self.use(unit.span(), "shape")
            self.mark(_EXTREME_WORD.pattern, "shape")
            extreme = "argmin" if re.search(_FEWEST, self.q, re.I) else "argmax"
            return ShapeIntent("bucket_extreme", extreme=extreme, bucket=bucket)
        group = self._quietest_group()
        if group:
            return group
        threads = _THREADS_REPLIED_IN.search(self.q) if self.schema.has_path("thread_ts") else None
        if threads and person_field_for(self.schema, "replied_to"):
            # "in how many threads has Rosaline replied": the threads of her replies, each once
            self.use((threads.start(), threads.end(2) if threads.group(2) else threads.end(1)), "shape")
            return ShapeIntent("distinct", role="thread")
        repliers = _MOST_REPLIERS.search(self.q) if _ASKS_A_VALUE.search(self.q) else None
        if (
            repliers
            and self.schema.has_path("reply_users_count")
            and re.search(r"\b(?:a|one|any|single|each)\s+(?:single\s+)?(?:\w+\s+)?thread\b", self.q, re.I)
        ):
            self.use(repliers.span(), "shape")
            word = repliers.group(1)
            return ShapeIntent(
                "measure_extreme", extreme="min" if _SMALLEST.match(word) else "max", role="reply_users_count"
            )
        of_the_most = _MEASURE_OF_THE_MOST.search(self.q)
        if of_the_most and (path := self._count_field(of_the_most.group(1).lower())):
            word = 2 if of_the_most.group(2) else 3
            self.use(of_the_most.span(1), "shape")
            self.use((of_the_most.start(word), of_the_most.end()), "shape")
            smallest = _SMALLEST.match(of_the_most.group(word)) or of_the_most.group(word).lower() == "shortest"
            return ShapeIntent("measure_extreme", extreme="min" if smallest else "max", role=path)
        then = _THE_MOST_THEN_MEASURE.search(self.q)
        if then and (path := self._count_field(then.group(3).lower())):
            self.use(then.span(), "shape")
            word = (then.group(1) or then.group(2)).lower()
            smallest = _SMALLEST.match(word) or word in ("worst", "shortest")
            return ShapeIntent("measure_extreme", extreme="min" if smallest else "max", role=path)
        extreme = _MEASURE_EXTREME.search(self.q) if _ASKS_A_VALUE.search(self.q) else None
        # "what was the most replied-to message": the record, not the value ("the highest reply count")
        if extreme and re.match(
            rf"(?:-to)?[\s-]*(?:{self.schema.kind.pattern()})", self.q[extreme.end() :], re.I | re.ASCII
        ):
            extreme = None
        if extreme:
            said = [g for g in extreme.groups() if g]
            # Chinese says the measure alone, its group telling most (first pair) from least (second)
            word, measure = (
                said[:2]
                if len(said) > 1
                else ("least" if extreme.lastindex == len(extreme.groups()) else "most", said[0])
            )
            path = self._count_field(measure.lower())
            if path:
                self.use(extreme.span(), "shape")
                if total := _SUM.search(self.q):
                    self.use(total.span(), "shape")
                return ShapeIntent("measure_extreme", extreme="min" if _SMALLEST.match(word) else "max", role=path)
        average = self._averaged_measure()
        if average:
            return average
        total = _SUM.search(self.q)
        if total:
            path = self._count_field(next(g for g in total.groups() if g).lower())
            if path:
                self.use(total.span(), "shape")
                return ShapeIntent("sum", role=path)
        distinct = _DISTINCT.search(self.q)
        # "how many people are on each team": counts per group, which the grouping step reads
        per_group = _GROUP.search(self.q) or any(re.search(pattern, self.q, re.I) for _, pattern in _BUCKETS)
        if distinct and not per_group:
            role = _distinct_role(
                next((g for g in distinct.groups() if g), "人"), self.q[distinct.end() :], self.q[: distinct.start()]
            )
            said = _ROLE_WORDS.get(role)
            if said:  # the words that said the role ("被指派过", "@-mentioned"): read, not a topic
                self.mark(said, "shape")
            if role == "thread_starter":  # "how many different people started threads": authors of threads
                replies = field_for(self.schema, "replies")
                if replies and not self.has_filter(replies):
                    self.add_filter(replies, 1, "gte")
                role = "author"
            if role == "merger" and self._group_path(role)[0] is None:
                role = "author"  # "how many people merged PRs" where no merger is stored: whose PRs were merged
            if (
                role and self._group_path(role)[0] is not None
            ):  # else unread: "different people reviewed" with no reviews
                self.use(distinct.span(), "shape")
                return ShapeIntent("distinct", role=role)
        stalest = _STALEST.search(self.q)
        if stalest and field_for(self.schema, "updated"):
            self.use(stalest.span(), "shape")
            return ShapeIntent("record_extreme", direction=1, role="updated")
        if field_for(self.schema, "replies") and re.search(r"\bthreads?\b|讨论串|帖子", self.q, re.I):
            # "threads that mention nobody in the first message": a thread's first message is the record itself
            self.mark(_THREAD_OPENER.pattern, "value")
        # the periods said ("over the last three months - message count": "last" is the period's word)
        periods = [p.span() for t in self.ctx.times if t.text for p in re.finditer(re.escape(t.text), self.q, re.I)]
        for pattern, direction in ((_NEWEST, -1), (_OLDEST, 1)):
            # Not inside a value read already: "good first issue" is a label; nor inside a period.
            m = next(
                (
                    m
                    for m in pattern.finditer(self.q)
                    if not self._is_used(_first_word(m)) and not any(a <= m.start() < b for a, b in periods)
                ),
                None,
            )
            if m and not _LIMIT.search(self.q):
                self.use(_first_word(m), "shape")
                self.mark(r"\b(?:oldest|earliest|newest|latest|most recent) first\b", "shape")
                return ShapeIntent("record_extreme", direction=direction)
        return None

    def _cyclic_extreme(self) -> ShapeIntent | None:
        """ "what hour of the day is busiest", "the least active weekday", 哪个小时消息最多, 星期几最冷清: the hour
        (or day of the week) whose records are most or fewest, over every day of the period (UTC)."""
        for bucket, asked in _CYCLIC_ASKED:
            said = asked.search(self.q)
            extreme = _EXTREME_WORD.search(self.q) if said else None
            if said and extreme:
                self.use(said.span(), "shape")
                self.mark(_EXTREME_WORD.pattern, "shape")
                while self.mark(_CYCLE_WORDS, "shape"):
                    pass
                kind = "argmin" if re.search(_FEWEST, self.q, re.I) else "argmax"
                return ShapeIntent("bucket_extreme", extreme=kind, bucket=bucket)
        return None

    def _averaged_measure(self) -> ShapeIntent | None:
        """ "the average number of comments on a bug issue": "avg" of the measure named, both words read."""
        cue = _AVERAGE.search(self.q)
        measure = _AVERAGED_MEASURE.search(self.q) if cue else None
        if cue is None:
            return None
        if measure is None:
            return self._averaged_bucket(cue)
        repliers, word = measure.group(1), next((g for g in measure.groups()[1:] if g), "")
        path = (
            ("reply_users_count" if self.schema.has_path("reply_users_count") else None)
            if repliers
            else self._count_field(word.lower())
        )
        if path is None:
            return None
        self.use(cue.span(), "shape")
        self.use(measure.span(), "shape")
        self.mark(
            r"\b(?:per|for each|for every)\b(?=\s+\w)", "shape"
        )  # "replies per thread": the records averaged over
        return ShapeIntent("avg", role=path)

    def share_of(self, shape: Shape) -> Shape:
        """ "what share of the PRs opened in 2023 got merged": the conditions said in the predicate after the
        records are the part, the others (and the time) the records it is a share of. Unread (the plan
        counts, and "share" is not understood) when no condition is said there, or one no share can ask."""
        cue = _SHARE.search(self.q) or _RATE.search(self.q)
        # a share of the records of each group ("the merge rate per year"), or the group with the highest or
        # lowest ("which year had the best merge rate")
        per_group = shape.field is not None and (
            shape.kind == "group" or (shape.kind in ("argmax", "argmin") and shape.over == "groups")
        )
        if cue is None or not (shape.kind in ("count", "list") or per_group):
            return shape
        rated = _RATE.search(self.q)
        # "merge rate", "closing rate": the share of the records the condition said just before "rate" holds for
        part = [f for f in self.filters if rated and f.span and f.span[0] < rated.start() <= f.span[1]]
        if part:
            start = None
        elif cue.group(0).isascii():
            said = _PART_SAID.search(self.q, cue.end())
            # "what percentage of racket messages in 2018 mentioned someone": the predicate is the last
            # condition after the records that its verb says
            verbed = [
                f.span[0]
                for f in self.filters
                if f.span and f.span[0] > cue.end() and re.match(r"[a-z]+ed\b", self.q[f.span[0] :], re.I)
            ]
            start = said.start() if said else max(verbed) if verbed else None
        else:
            # "racket 的消息里，有 @ 别人的占…": after the records' 里 (not one inside a condition's words)
            said = next(
                (
                    m
                    for m in reversed(list(_PART_SAID_CHINESE.finditer(self.q, 0, cue.start())))
                    if not any(f.span and f.span[0] <= m.start() < f.span[1] for f in self.filters)
                ),
                None,
            )
            start = said.end() if said else None
        part = part or [f for f in self.filters if start is not None and f.span and f.span[0] >= start]
        if not part:
            return shape
        percent = _IN_PERCENT.search(self.q)
        share = Shape("share", part=part, percent=percent is not None)
        if per_group:
            # a period's share is of the records that began in it: its merges date no PR that was not merged
            created = field_for(self.schema, "created") if shape.bucket else None
            ranked = [SortKey("share", -1 if shape.kind == "argmax" else 1)] if shape.kind != "group" else []
            share = replace(
                share,
                field=created or shape.field,
                bucket=shape.bucket,
                sort=ranked,
                limit=1 if ranked else shape.limit,
            )
        try:  # a part no share can ask (words, a list's elements) or one nested past the validator's bound
            if validate_pipeline(compile_plan(PlanIR(self.collection, shape=share), self.schema), self.schema):
                return shape
        except CompileError:
            return shape
        self.filters = [f for f in self.filters if f not in part]
        if per_group and share.field != shape.field:  # the period's time, on the date the periods are of now
            self.times = [replace(t, field=share.field) if t.field == shape.field else t for t in self.times]
        if per_group:
            if shape.bucket:  # "merge rate per year — which year was highest": the periods said twice
                cn = {"day": "天", "week": "周", "month": "月", "year": "年"}.get(shape.bucket, "")
                self.mark(rf"\b(?:per|each|every|by)\s+{shape.bucket}\b" + (f"|每个?{cn}" if cn else ""), "shape")
            ranking = f", the {'highest' if share.sort[0].direction == -1 else 'lowest'}" if share.sort else ""
            self.notes.append(f"the share per {shape.bucket or 'value'} of {share.field}{ranking}")
        self.use(cue.span(), "shape")
        if rated:
            self.use(rated.span(1 if rated.group(1) else 0), "shape")
        if percent:  # "in percent", "(%)": the unit the share is said in
            # 百分之多少: its 多少 already read as "how many"
            self.mark(r"\b(?:in\s+)?percent(?:age)?s?\b|%|百分之(?=多少)|百分(?:之(?:几|幾)|比)?", "shape")
        self.mark(r"\b(?:what|which)\s+(?=(?:fraction|proportion|percentage|percent|ratio)\b)|[占佔]", "shape")
        return share

    def ranked_place(self, shape: Shape) -> Shape:
        """The runner-up ("the second most active poster", "the third busiest day"): one row of a ranking,
        the ones before it skipped. A place said of a shape that is no ranking stays unread."""
        said = _ORDINAL.search(self.q)
        if said is None:
            return shape
        word = next(g for g in said.groups() if g).lower()
        place = 2 if word.startswith("runner") else _PLACES.get(word) or int(word[0])
        ranked = (
            (shape.kind == "group" and shape.bucket is None and shape.limit)
            or (shape.kind in ("argmin", "argmax") and shape.over == "groups")
            or shape.kind == "top"
            or (shape.kind == "list" and shape.limit == 1 and shape.sort)
        )
        if not ranked:
            return shape
        self.use(said.span(), "shape")
        return replace(shape, offset=place - 1, limit=1 if shape.kind in ("group", "top", "list") else shape.limit)

    def _averaged_bucket(self, cue: re.Match) -> ShapeIntent | None:
        """ "how many PRs were merged per month on average", "平均每天多少条消息": the mean count of the periods."""
        for bucket, pattern in (*_BUCKETS, *_A_PERIOD):
            said = re.search(pattern, self.q, re.I)
            if said:
                self.use(cue.span(), "shape")
                self.use(said.span(), "shape")
                return ShapeIntent("bucket_avg", bucket=bucket)
        group = _GROUP.search(self.q)  # "how many PRs does each author open on average": per value of a field
        word = next((g for g in group.groups() if g), "") if group else ""
        role = next((r for prefix, r in _GROUP_ROLES.items() if word.lower().startswith(prefix)), None)
        if group and role and self._group_path(role)[0] is not None:
            self.use(cue.span(), "shape")
            self.use(group.span(), "shape")
            return ShapeIntent("group_avg", role=role)
        return None

    def _quietest_group(self) -> ShapeIntent | None:
        """ "the quietest workspace in May", "which of the three Slacks had the least traffic": the value
        of a field with the fewest records (the busiest is a top-1 group, which `TOP` reads)."""
        asked = _ASKED_GROUP.search(self.q) if self.schema.kind.builtin else None
        fewest = re.search(_FEWEST, self.q, re.I)
        if asked is None or fewest is None:
            return None
        word = next(g for g in asked.groups() if g).lower()
        if re.fullmatch(r"who|谁|person|user|member|author|poster|contributor", word):
            role = self._top_role(set())  # "who closed the fewest": the verb's role
            self.use(asked.span(), "shape")
            self.use(fewest.span(), "shape")
            self.mark(_ACTIVITY, "shape")
            return ShapeIntent("group_extreme", extreme="argmin", role=role)
        role = next((r for k, r in _GROUP_NOUN_ROLES.items() if word.startswith(k)), None) or next(
            (r for k, r in _GROUP_ROLES.items() if word.startswith(k)), None
        )
        if role is None or self._group_path(role)[0] is None:
            return None
        self.use(asked.span(), "shape")
        self.use(fewest.span(), "shape")
        self.mark(_ACTIVITY, "shape")
        return ShapeIntent("group_extreme", extreme="argmin", role=role)

    def _people_compared(self, role: str | None, person_roles: set[str]) -> ShapeIntent | None:
        """ "who has closed more issues, severo or polinaeterna", "A 和 B 谁关掉的更多": the named people,
        each counted in the role the verb gives them (`role`, else `_top_role`: the closer, though the
        names were read as authors), the one with more (argmax) or fewer (argmin). None unless named
        people are compared."""
        listed = next(
            (
                f
                for f in self.filters
                if f.op == "in" and not f.negate and f.field in self._person_paths() and len(f.value) >= 2
            ),
            None,
        )
        more = _MORE_OF_TWO.search(self.q)
        if listed is None or more is None or not _WHO_OF_THEM.search(self.q):
            return None
        role = role or self._top_role(person_roles)
        path, _ = self._group_path(role)
        if path is None:
            return None
        if listed.field != path:
            kinds = {p: k for paths in self.schema.kind.people_roles().values() for p, k in paths}
            if kinds.get(listed.field) != kinds.get(path):
                return None  # the names are handles of another kind: not comparable there
            listed.field = path
        self.use(more.span(), "shape")
        self.mark(_WHO_OF_THEM.pattern, "shape")
        return ShapeIntent("group_extreme", extreme="argmin" if more.group("fewer") else "argmax", role=role)

    def _intent_shape(self, intent: ShapeIntent, time_field: str | None, state_verb: str | None) -> Shape | None:
        """The shape of an intent, on this collection's fields; None when it has no such field."""
        if intent.kind == "own":
            return intent.shape
        if intent.kind == "bucket_extreme":
            date_field = (
                time_field or field_for(self.schema, state_verb or "created") or field_for(self.schema, "created")
            )
            return Shape(intent.extreme, field=date_field, bucket=intent.bucket, over="groups") if date_field else None
        if intent.kind == "empty_periods":
            date_field = time_field or field_for(self.schema, "created")
            bounded = any(t.field == date_field and t.start and t.end for t in self.times)
            return Shape("empty_count", field=date_field, bucket=intent.bucket) if bounded else None
        if intent.kind == "bucket_avg":
            date_field = (
                time_field or field_for(self.schema, state_verb or "created") or field_for(self.schema, "created")
            )
            return Shape("avg", field=date_field, bucket=intent.bucket, over="groups") if date_field else None
        if intent.kind == "group_avg":
            path, _ = self._group_path(intent.role or "author")
            return Shape("avg", field=path, over="groups") if path else None
        if intent.kind == "group_extreme":
            path, _ = self._group_path(intent.role or "author")
            return Shape(intent.extreme, field=path, over="groups") if path else None
        if intent.kind == "record_extreme":
            # "the last bug we closed", "the most recently merged PR": the date of what was done to it
            done = field_for(self.schema, state_verb) if state_verb in ("closed", "merged", "resolved") else None
            # "gone the longest without an update": the record updated longest ago
            updated = field_for(self.schema, "updated") if intent.role == "updated" else None
            date_field = updated or time_field or done or field_for(self.schema, "created")
            return Shape("list", sort=[SortKey(date_field, intent.direction)], limit=1) if date_field else None
        if intent.kind == "group_sum":  # the measure summed per author, ranked
            path, _ = self._group_path("author")
            total = Measure("sum", intent.role)
            order = 1 if intent.extreme == "argmin" else -1
            return (
                Shape("measures", field=path, measures=[total], sort=[SortKey(total.name, order)], limit=1)
                if path
                else None
            )
        if intent.kind in ("sum", "avg", "measure_extreme"):
            self._replies_summed_over_the_starters_threads(intent.role)
            return Shape(intent.extreme or intent.kind, field=intent.role)
        path, _ = self._group_path(intent.role)
        self._others_threads_only(intent.role)  # "how many different people has Kristeen replied to": not herself
        return Shape("distinct_count", field=path) if path else None

    def _replies_summed_over_the_starters_threads(self, measure: str) -> None:
        """ "the sum of replies to Odis's threads": the reply counts of the threads Odis started, not the
        replies themselves (a reply has no reply count of its own)."""
        replying, author = person_field_for(self.schema, "replied_to"), person_field_for(self.schema, "author")
        if not (replying and author) or measure != field_for(self.schema, "replies"):
            return
        starter = next((f for f in self.filters if f.field == replying[0] and f.op == "eq"), None)
        if starter:
            self.filters = [f for f in self.filters if f.field not in (replying[0], author[0])]
            self.filters.append(Filter(author[0], "eq", starter.value, span=starter.span))

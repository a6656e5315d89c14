"""The offline planner: a deterministic question -> pipeline translator, no model needed.

It reads the question for a collection, an intent (list, count, top-N, group-by, time buckets),
filters (people in their roles, states, stored enum values, time ranges) and leaves the remaining
topic words to full-text search. Each step that had to guess lowers the plan's confidence; the
engine asks the LLM planner (when one is configured) for plans below `CONFIDENT`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from context_engine.query.compile import compile_plan
from context_engine.query.fields import DONE_STATUSES, field_for, person_field_for
from context_engine.query.identity import COMMON_WORDS, Mention
from context_engine.query.ir import Filter, PlanIR, Shape, SortKey, TimeRange
from context_engine.query.plan import Plan, PlanningContext
from context_engine.query.schema import CollectionSchema

CONFIDENT = 0.7
DEFAULT_LIMIT = 200
TEXT_LIMIT = 20

_COLLECTION_WORDS: list[tuple[str, str]] = [
    ("pull_requests", r"\bprs?\b|\bpull[- ]?requests?\b|\bpulls\b|\bmerge requests?\b|合并请求|拉取请求|\bprs?(?![a-z])|代码审查|评审"),
    ("issues", r"\bissues?\b|\btickets?\b|\bbugs?\b|\bjira\b|\bstor(?:y|ies)\b|\btasks?\b|\bepics?\b|\btix\b|工单|问题|缺陷|任务|需求|单子"),
    ("messages", r"\bmessages?\b|\bthreads?\b|\bslack\b|\bchannels?\b|\bposts?\b|\bposted\b|\bsaid\b|\breplies\b|(?<!\w)#[\w\-]+|消息|讨论|频道|帖子"),
    ("documents", r"\bdocs?\b|\bdocuments?\b|\badrs?\b|\bdecision records?\b|\bguides?\b|\brfcs?\b|\bpostmortems?\b|\brunbooks?\b|\bpages?\b|\bwiki\b|文档|设计文档|复盘"),
    ("commits", r"\bcommits?\b|\bcommitted\b|\bcommitters?\b|提交记录|提交"),
    ("people", r"\bpeople (?:are )?(?:on|in|per) (?:\w+ ){0,2}(?:teams?|eng)\b|\bheadcount\b|组都有谁|组的人|团队成员|\bteam members?\b|\bmembers of\b|\bwho(?:'s| is| are) (?:on|in) the\b|\bteam\b(?= members| roster)|成员|团队都有谁"),
]

_COUNT = re.compile(r"\bhow many\b|\bnumber of\b|\bcount\b|\btotal\b|(?<=[A-Za-z])\s*数(?:量|目)?(?=[？?。]?$)|多少|几个|几条|几次|数量|总数", re.I)
_TOP = re.compile(r"\btop\s*(\d+)?\b|\bbusiest\b|\bmost active\b|\bmost\b|\brank(?:ed|ing)?\b|\bleaderboard\b|\bwho (?:\w+ ){0,4}(?:more|most)\b|最多|最活跃|前(\d+)名?", re.I)
_LIMIT = re.compile(r"\b(?:last|latest|first|recent|newest|oldest)\s+(\d+)\b(?!\s*(?:hours?|days?|weeks?|months?|years?|quarters?))|\b(\d+) (?:most recent|latest|newest|oldest)\b|最近的?(\d+)个")
_BUCKETS = [
    ("day", r"\bdaily\b|\bper day\b|\bby day\b|\beach day\b|每天|每日|按天"),
    ("week", r"\bweekly\b|\bper week\b|\bby week\b|\beach week\b|\bweek (?:by|over|on) week\b|每周|按周"),
    ("month", r"\bmonthly\b|\bper month\b|\bby month\b|\beach month\b|\bmonth (?:by|over|on) month\b|每月|每个月|按月"),
    ("year", r"\byearly\b|\bper year\b|\bby year\b|\beach year\b|每年|按年"),
]
_GROUP = re.compile(
    r"\b(?:per|by|grouped by|group(?:ed)? by|for each|each|broken down by|breakdown by|across)\s+(?:(?:slack|jira|github|git|code)\s+)?"
    r"(labels?|repos?|repositor(?:y|ies)|authors?|persons?|people|users?|states?|status(?:es)?|priorit(?:y|ies)|"
    r"milestones?|channels?|assignees?|reviewers?|types?|projects?|teams?|spaces?|components?|sprints?|tags?)\b"
    r"|按(标签|仓库|作者|状态|优先级|频道|负责人|类型|项目)|(?:每个|各个?)(仓库|人|作者|标签|频道|项目|优先级|状态)"
    r"|哪些(标签|仓库|频道|项目|优先级|状态)[^。？?]{0,8}(?:各|分别)", re.I)
_GROUP_ROLES = {
    "label": "label", "tag": "label", "repo": "repo", "repositor": "repo", "author": "author", "person": "author",
    "people": "author", "user": "author", "state": "state", "status": "status", "priorit": "priority",
    "milestone": "milestone", "channel": "channel", "assignee": "assignee", "reviewer": "reviewer",
    "type": "type", "project": "project", "space": "space", "component": "component", "sprint": "sprint",
    "team": "team", "团队": "team", "组": "team",
    "标签": "label", "仓库": "repo", "作者": "author", "人": "author", "状态": "status", "优先级": "priority",
    "频道": "channel", "负责人": "assignee", "类型": "type", "项目": "project",
}

_ASKS_FOR_PEOPLE = re.compile(r"\bwho\b|\bwhom\b|\bpeople\b|\bpersons?\b|\busers?\b|\bengineers?\b|\bdevelopers?\b|"
                              r"\breviewers?\b|\bauthors?\b|\bposters?\b|\bcontributors?\b|\bcommitters?\b|\bapprovers?\b|"
                              r"谁|哪些人|哪位", re.I)

# A record named by its key: "acme/infra#812" (a repository the schema knows), "ENG-231" (a known project).
_REF = re.compile(r"(?<![\w/])([\w.-]+/[\w.-]+)#(\d+)\b|\b([A-Z][A-Z0-9]{1,9})-(\d+)\b")
# "who reviewed acme/infra#812?": the people of one role on the named records.
_WHO_ROLE = [(r"\breview\w*|\bapprov\w*|评审|审查|审核", "reviewer"), (r"\bmerg\w*|合并", "merger"),
             (r"\bassign\w*|负责|分配", "assignee"), (r"\bwr[io]te\b|\bopen\w*|\bauthor\w*|\bcreat\w*|\bfiled\b|提交|创建", "author")]

# Words that carry no topic: never sent to full-text search.
_STOP = COMMON_WORDS | frozenset("""
all any are ask asked been being both but could does doing find from get give got had has having
her him his how its just know let like list lot made make many more much need not now only other
our out over own same she should show some such tell than them then there they thing things those
through too very want was way we were what when where which while who why will would you your yet
did do does please recently recent new newest latest oldest first most top week month year
recent currently still yet also ones one two three four five six seven eight nine ten quarter
days weeks months years q1 q2 q3 q4 everyone everybody anyone someone us
""".split())
_CJK_STOP = re.compile(r"[的了吗呢吧啊哪些哪个什么谁有是在和与及并把被给对从到关于里中上下个条次位请帮我们你他她它列出显示找查看所有一下多少几]+")


_WORD_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
                 "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "十": 10}


def detect_collection(question: str, schemas: dict[str, CollectionSchema]) -> tuple[str | None, list[tuple[int, int]]]:
    """The collection the question is about, and the spans of the words that said so."""
    best: tuple[int, str] | None = None
    spans: list[tuple[int, int]] = []
    for name, pattern in _COLLECTION_WORDS:
        # ASCII word boundaries: "的bug" has one, though CJK characters count as word characters.
        for m in re.finditer(pattern, question, re.I | re.ASCII):
            spans.append(m.span())
            if best is None or m.start() < best[0]:
                # "PRs that fix bugs" is about PRs: the first collection word wins.
                best = (m.start(), name)
    if best is None:
        return None, spans
    name = best[1]
    if name in ("issues", "commits") and re.search(_COLLECTION_WORDS[0][1], question, re.I | re.ASCII) \
            and not re.search(r"\bissues?\b|\btickets?\b|\bcommits?\b", question, re.I | re.ASCII):
        name = "pull_requests"  # "bug PRs", "提交了多少个PR": the other word describes the PRs
    if name not in schemas:
        return None, spans
    return name, spans


class OfflinePlanner:
    name = "offline"

    def plan(self, ctx: PlanningContext) -> Plan:
        return _Builder(ctx).build()


class _Builder:
    def __init__(self, ctx: PlanningContext):
        self.ctx = ctx
        self.q = ctx.question
        self.low = ctx.question.lower()
        self.used: list[tuple[int, int]] = []
        self.how: list[str] = []  # what consumed each used span: value, person, time, shape ...
        self.notes: list[str] = []
        self.confidence = 1.0
        self.filters: list[Filter] = []
        self.times: list[TimeRange] = []

    # -- helpers ---------------------------------------------------------------------------------
    def use(self, span: tuple[int, int], how: str = "value") -> None:
        self.used.append(span)
        self.how.append(how)

    def mark(self, pattern: str) -> re.Match | None:
        """The first match not inside words already explained ("draft" in "non-draft")."""
        for m in re.finditer(pattern, self.q, re.I):
            if not self._is_used(m.span()):
                self.use(m.span())
                return m
        return None

    def add_filter(self, path: str, value: Any, op: str = "eq") -> None:
        self.filters.append(Filter(path, op, value, span=self.used[-1] if self.used else None))

    def has_filter(self, path: str) -> bool:
        return any(f.field == path for f in self.filters) or any(t.field == path for t in self.times)

    # -- the plan ----------------------------------------------------------------------------------
    def build(self) -> Plan:
        ctx = self.ctx
        collection, spans = detect_collection(self.q, ctx.schemas)
        self.collection_spans = spans
        if not ctx.schemas:
            self.notes.append("the tenant has no data")
            return Plan("?", [], confidence=0.0, planner="offline", notes=self.notes)
        refs = self._refs()
        if collection is None and refs:
            collection = "issues" if all("#" not in r for r in refs) and "issues" in ctx.schemas else "pull_requests"
            collection = collection if collection in ctx.schemas else next(iter(ctx.schemas))
        self.collection_named = collection is not None
        if collection is None:
            collection = self._guess_collection()
            self.confidence = min(self.confidence, 0.4)
            self.notes.append(f"no collection named; guessed {collection}")
        schema = ctx.schemas[collection]
        self.schema = schema
        self.collection = collection

        if refs:
            self.add_filter("ref", refs[0]) if len(refs) == 1 else self.add_filter("ref", refs, "in")
            self.notes.append(f"the record{'s' if len(refs) > 1 else ''} named: {', '.join(refs)}")
        state_verb = self._states()
        self._review_states()
        self._values()
        person_roles = self._people()
        group_role, bucket = self._grouping()
        if refs and not (group_role or bucket) and re.search(r"\bwho\b|\bwhom\b|谁", self.q, re.I):
            group_role = next((role for pattern, role in _WHO_ROLE if re.search(pattern, self.q, re.I)), None)
        is_count = bool(_COUNT.search(self.q))
        if is_count:
            self.mark(_COUNT.pattern)
        top = _TOP.search(self.q) if not bucket else None
        ranked = self._ranked_by_count() if not bucket else None
        if top:
            self.use(top.span())
            if ranked is None:
                group_role = group_role or self._top_role(person_roles)
        # Review activity is dated by the review, not by the PR ("who reviewed the most last month").
        review_time = "reviewer" in person_roles or group_role == "reviewer" or self.has_filter("reviews.state")
        time_field = self._times("reviewed" if review_time and state_verb is None else state_verb)
        self._thresholds()
        structured = bool(self.filters or self.times or group_role or bucket or is_count or top or ranked or self.ctx.mentions
                          or self._list_limit(peek=True) != DEFAULT_LIMIT)
        text = self._leftover_text(structured)
        if text:
            self.notes.append(f"full-text search for {text!r}")
            if not structured or len(text.split()) > 3:
                self.confidence = min(self.confidence, 0.4)  # mostly topic: a semantic question
        elif not structured:
            self.notes.append("nothing in the question maps to a query")
            return Plan(self.collection, [], confidence=0.0, planner="offline", notes=self.notes)

        person_field = None
        group_path = None
        if group_role and not bucket:
            group_path, person_field = self._group_path(group_role)
            if group_path is None:
                # Grouping by some other field would answer a different question (every record its own
                # group): plan nothing, so a content question about "the most ..." goes to search.
                self.notes.append(f"{collection} has no field for {group_role}")
                return Plan(self.collection, [], confidence=0.0, planner="offline", notes=self.notes)

        sort_field = time_field or field_for(schema, "created") or "ref"
        if bucket:
            date_field = time_field or field_for(schema, state_verb or "created") or field_for(schema, "created")
            shape = Shape("group", field=date_field, bucket=bucket)
            self.notes.append(f"counted per {bucket} bucket of {date_field}")
        elif group_path:
            shape = Shape("group", field=group_path, limit=self._top_limit(top) if top else None)
            self.notes.append(f"grouped by {group_path}")
        elif ranked:
            path, limit = ranked
            shape = Shape("top", field=path, limit=limit, sort=[SortKey(sort_field, -1)])
            self.notes.append(f"the {limit} with the highest {path}")
        elif is_count:
            shape = Shape("count")
        elif text and not structured:
            # Relevance order for a topic search: BM25 (or MongoDB's textScore) ranks the matches.
            shape = Shape("list", sort=[SortKey("relevance", -1)], limit=min(self._list_limit(), TEXT_LIMIT))
        else:
            shape = Shape("list", sort=[SortKey(sort_field, -1)], limit=self._list_limit())
        if not (self.filters or self.times or text) and not (bucket or group_role or is_count):
            self.confidence = min(self.confidence, 0.5)
        ir = PlanIR(collection, filters=self.filters, times=self.times, text=text.split(), shape=shape)
        return Plan(collection, compile_plan(ir, schema), confidence=round(self.confidence, 2), planner="offline",
                    notes=self.notes, person_field=person_field, collection_named=self.collection_named, ir=ir)

    def _refs(self) -> list[str]:
        """Record keys the question names, when they can be this tenant's: the repository or the
        project key is a stored value (so "UTF-8" or "COVID-19" are not taken for issue keys)."""
        known = {str(v) for schema in self.ctx.schemas.values() for path in ("repo", "fields.project.key")
                 if path in schema.fields for v in (schema.fields[path].enum or [])}
        refs = []
        for m in _REF.finditer(self.q):
            owner_repo, number, key, key_number = m.groups()
            if (owner_repo or key) in known:
                refs.append(f"{owner_repo}#{number}" if owner_repo else f"{key}-{key_number}")
                self.use(m.span())
        return refs

    def _guess_collection(self) -> str:
        """No collection word: the collection whose stored values the question names wins
        ("regressions still open in WEB" names a Jira label and project), then the usual order."""
        words = {w.lower() for w in re.findall(r"[\w\-/]+", self.q)}
        words |= {w[:-1] for w in words if w.endswith("s")} | {w[:-3] + "y" for w in words if w.endswith("ies")}
        verbs = {"issues": r"\bresolv\w*|\bsprints?\b|\bjira\b|\bassigned\b|\bpriority\b|\bp[0-4]\b|\bcritical\b|\bhi-?pri\b|\bblockers?\b|\bbacklog\b", "messages": r"\bsaid\b|\bposted\b|\bslack\b",
                 "pull_requests": r"\bmerg\w*|\breview\w*|\bapprov\w*|\bchanges[- ]requested\b|\brequested changes\b|\bship(?:ped|s)?\b"}
        best, best_score = None, 0
        for name in ("pull_requests", "issues", "messages", "documents", "commits"):
            schema = self.ctx.schemas.get(name)
            if schema is None:
                continue
            values = {str(v).lower() for f in schema.fields.values() for v in (f.enum or [])
                      if isinstance(v, str) and len(v) >= 3 and v.lower() not in _STOP}
            score = len(words & values) + (2 if name in verbs and re.search(verbs[name], self.q, re.I) else 0) \
                + (2 if name == "issues" and re.search(r"\bsprints?\b", self.q, re.I) else 0)
            if score > best_score:
                best, best_score = name, score
        if best:
            return best
        for name in ("pull_requests", "issues", "messages", "documents"):
            if name in self.ctx.schemas:
                return name
        return next(iter(self.ctx.schemas))

    # -- filters -----------------------------------------------------------------------------------
    def _mark_state(self, pattern: str) -> re.Match | None:
        """Like `mark`, but "open" used as a verb ("did X open", "to open") is not a state."""
        for m in re.finditer(pattern, self.q, re.I):
            before = self.q[:m.start()]
            if m.group(0).lower() == "open" and re.search(r"\b(did|do|does|will|would|to|I|we|you|they)\s+(?:\S+\s+){0,3}$",
                                                          before, re.I) \
                    and not re.search(r"\b(still|currently|are|is|remains?|being|be|as|and|stay|stays)\s+$", before, re.I):
                continue
            self.use(m.span())
            return m
        return None

    def _states(self) -> str | None:
        """State words; returns the verb whose date a bare time range should apply to."""
        s, name = self.schema, self.collection
        if name == "pull_requests":
            if self.mark(r"\bnon-?drafts?\b|\bnot (?:a )?drafts?\b|\bready for review\b|非草稿"):
                self.add_filter("draft", False)
            if self.mark(r"(?:还)?(?:没有?|未)\s*(?:merge|合并)|\bnot (?:yet )?merged\b(?! and)|\bunmerged and open\b"):
                self.add_filter("state", "open")  # "还没 merge 的 PR": still waiting, i.e. open
                return "created"
            if self.mark(r"\bunmerged\b|\bnot merged\b|\bnever merged\b|\bclosed without (?:being )?merg\w*|\bw/o merg\w*|\bwithout merg\w*|\brejected\b|\babandoned\b|关闭了?但?(?:是)?没有?合并|没有合并就关闭|未合并就关闭"):
                self.add_filter("state", "closed")
                self.add_filter("merged", False)
                return "closed"
            if self.mark(r"\bmerged\b|\bmerges?\b|\bship(?:ped|s)?\b|\blanded\b|合并了|已合并|合入|合并|上线|发布"):
                self.add_filter("merged", True)
                return "merged"
            if self.mark(r"\bdrafts?\b|草稿"):
                self.add_filter("draft", True)
                if not re.search(r"\bclosed\b", self.q, re.I):
                    self.add_filter("state", "open")
                return "created"
            if self._mark_state(r"\bopen\b|\bopened\b(?= (?:and|but) (?:still|not))|\bpending\b|\bunreviewed\b|\bwaiting\b|\bawaiting\b|\bstill open\b|未关闭|打开的|开放的|待审|还开着|没合并|未合并的|开着"):
                self.add_filter("state", "open")
                return "created"
            if self.mark(r"\bclosed\b|已关闭|关闭"):
                self.add_filter("state", "closed")
                return "closed"
            return None
        if name == "issues":
            status = field_for(s, "status")
            if status:
                return self._jira_status(status)
            if s.has_path("state"):
                if self._mark_state(r"\bopen\b|\b(unresolved|outstanding|active)\b|还没(?:有)?关闭|没有关闭|未解决|未关闭|打开的|还开着"):
                    self.add_filter("state", "open")
                    return "created"
                if self.mark(r"\b(closed|resolved|fixed|done)\b|已关闭|已解决|关闭了?|解决了?"):
                    self.add_filter("state", "closed")
                    return "closed"
            return None
        return None

    def _jira_status(self, status: str) -> str | None:
        values = self.schema.fields[status].enum or []
        if self.mark(r"(?:\bnot|n't|\bnever|\byet to be) (?:yet )?(?:done|finished|completed|resolved)\b|\bon (?:my|his|her|their|our) plate\b|还没(?:有)?(?:关闭?|完成|解决|做完)|没做完|未完成|没关闭?|还开着"):
            self.add_filter(status, [v for v in values if v in DONE_STATUSES] or list(DONE_STATUSES), "nin")
            return "created"
        for word, value in (("completed", "Done"), ("已完成", "Done"), ("完成", "Done"), ("进行中", "In Progress"), ("待办", "To Do"),
                            ("审核中", "In Review"), ("评审中", "In Review"), (r"在\s*review\s*中|review\s*中", "In Review"),
                            ("不做", "Won't Do")):
            if value in values and self.mark(word):
                self.add_filter(status, value)
                return "resolved" if value in DONE_STATUSES else "created"
        for value in sorted(values, key=len, reverse=True):
            m = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", self.q, re.I)
            if m and value.lower() not in ("done",) or (m and re.search(r"\bstatus\b", self.q, re.I)):
                self.use(m.span())
                self.add_filter(status, value)
                return "resolved" if value in DONE_STATUSES else "created"
        if self.mark(r"\b(open|unresolved|outstanding|active|not done|unfinished)\b|未解决|未完成|打开的|进行中的"):
            self.add_filter(status, [v for v in values if v in DONE_STATUSES] or list(DONE_STATUSES), "nin")
            return "created"
        if self.mark(r"\b(closed|resolved|fixed|done|finished|completed)\b|已解决|已完成|已关闭|完成|关闭|解决"):
            self.add_filter(status, [v for v in values if v in DONE_STATUSES] or list(DONE_STATUSES), "in")
            return "resolved"
        return None

    def _review_states(self) -> None:
        """Review outcomes: "approved by", "changes requested", "just comments" (GitHub review states)."""
        if not self.schema.has_path("reviews.state"):
            return
        for pattern, state in ((r"\b(?:just|only) comment(?:s|ed)?\b|\bno approval\b|\bcommented\b|\bwithout approv\w*", "COMMENTED"),
                               (r"\bchanges[- ]requested\b|\brequested changes\b|\brequest(?:ed|s)? changes\b|要求修改", "CHANGES_REQUESTED"),
                               (r"\bapprov(?:e|ed|es|al|als|er|ers|ing)\b|批准|通过了", "APPROVED")):
            m = re.search(pattern, self.q, re.I)
            if m:
                self.use(m.span())
                self.add_filter("reviews.state", state)
                self.review_state = state
                return

    def _values(self) -> None:
        """Stored enum values named in the question: labels, priorities, types, repos, channels."""
        s = self.schema
        assignee = person_field_for(s, "assignee")
        if assignee and self.mark(r"\bunassigned\b|\bnot assigned\b|\bno assignee\b|未分配|没有负责人"):
            self.add_filter(assignee[0].rsplit(".", 1)[0] if assignee[0].endswith(".name") else assignee[0], None, "empty")
        priority = field_for(s, "priority")
        if priority:
            levels = s.fields[priority].enum or []
            for pattern, wanted in ((r"\bhighest[- ]prio(?:rity)?\b|\bcritical\b|\bblockers?\b|\bp[01]\b|最高优先级|紧急", ["Highest"]),
                                    (r"\bhigh[- ]pri(?:o|ority)?\b|\bhi[- ]?pri(?:o|ority)?\b|\bp2\b|高优先级", ["High", "Highest"]),
                                    (r"\blow[- ]pri(?:o|ority)?\b|低优先级", ["Low", "Lowest"])):
                if self.mark(pattern):
                    values = [v for v in wanted if v in levels] or wanted
                    self.add_filter(priority, values[0]) if len(values) == 1 else self.add_filter(priority, values, "in")
                    break
        explicit_label = re.search(r"\b(?:label(?:l?ed)?|tagged|with (?:the )?label)\s+['\"]?([\w.\-: /]+?)['\"]?(?:\s|$|\?|,)", self.q, re.I)
        self._team()  # before labels: "infra team" names people, not the infra label
        order = ["repo", "channel", "workspace", "priority", "type", "project", "label", "milestone", "sprint", "component", "space",
                 "team"]
        for role in order:
            path = field_for(s, role)
            if not path:
                continue
            if role == "repo":
                self._repo(path)
                continue
            if role == "channel":
                self._channel(path)
                continue
            if role == "workspace":
                self._workspace(path)
                continue
            values = s.fields[path].enum or []
            for value in sorted(values, key=len, reverse=True):
                if len(value) < 2:
                    continue
                if value.lower().endswith("ies"):
                    plural = rf"{re.escape(value[:-3])}(?:y|ies)"
                elif value.lower().endswith("y"):
                    plural = rf"{re.escape(value[:-1])}(?:y|ies)"
                else:
                    plural = rf"{re.escape(value)}(?:s|es)?"
                # ASCII boundaries: "的bug" names the value although CJK characters are word characters.
                pattern = rf"(?<![A-Za-z0-9_#]){plural}(?![A-Za-z0-9_])"
                flags = re.I
                if role == "priority":
                    pattern = rf"(?<![A-Za-z0-9_]){re.escape(value)}(?:[- ]priority)?(?![A-Za-z0-9_])"
                if role == "project":
                    # Keys are upper-case: "WEB" is the project, "web" the label when a label has that name.
                    labels = {str(v).lower() for v in (s.fields[field_for(s, "label")].enum or [])} if field_for(s, "label") else set()
                    pattern = rf"(?<![A-Za-z0-9_]){re.escape(value)}(?![A-Za-z0-9_])"
                    flags = 0 if value.lower() in labels else re.I
                for m in re.finditer(pattern, self.q, flags):
                    if self._is_used(m.span()):
                        continue
                    if role == "label" and self._topic_phrase(m.start()) and not (
                            explicit_label and explicit_label.group(1).lower() == value.lower()):
                        continue  # "about auth" is a topic, not necessarily the label
                    self.use(m.span())
                    self.add_filter(path, value)
                    self.notes.append(f"{value!r} is a stored {role} ({path})")
                    break
        if explicit_label:
            self.use(explicit_label.span())
        tags = field_for(s, "label")
        if tags and "adr" in (s.fields[tags].enum or []) and self.mark(r"\barchitecture decision records?\b|\bdecision records?\b|架构决策"):
            self.add_filter(tags, "adr")
        sprint = field_for(s, "sprint")
        if sprint and self.mark(r"\b(?:the )?(?:current|this|active) sprint\b|本迭代|当前迭代|这个迭代"):
            numbered = [v for v in (s.fields[sprint].enum or []) if re.search(r"\d+$", v)]
            if numbered:
                self.add_filter(sprint, max(numbered, key=lambda v: int(re.search(r"(\d+)$", v).group(1))))
        reaction = field_for(s, "reaction")
        m = re.search(r"\b([a-z_+\-]+)\s+(?:reactions?|emoji)\b|:([a-z_+\-]+):|带\s*([a-z_+\-]+)\s*(?:表情|反应)", self.q, re.I)
        if reaction and m:
            name = (m.group(1) or m.group(2) or m.group(3)).lower()
            if name in (s.fields[reaction].enum or [name]):
                self.use(m.span())
                self.add_filter(reaction, name)

    def _team(self) -> None:
        """"the web team": its members, from the people directory, in the author field."""
        teams = {p.team.lower(): p.team for p in self.ctx.directory.people if p.team}
        m = re.search(r"\b(?:the\s+)?([a-z]+)\s+team\b|([a-z]+)\s*团队", self.q, re.I)
        if not m or (m.group(1) or m.group(2)).lower() not in teams or self.collection == "people":
            return
        found = person_field_for(self.schema, "assignee" if self.collection == "issues" else "author")
        if not found:
            return
        team = teams[(m.group(1) or m.group(2)).lower()]
        path, kind = found
        handles = sorted({p.handle(kind) for p in self.ctx.directory.people if p.team == team and p.handle(kind)})
        if handles:
            self.use(m.span())
            self.add_filter(path, handles, "in")
            self.notes.append(f"the {team} team -> {len(handles)} people")

    def _topic_phrase(self, start: int) -> bool:
        return bool(re.search(r"\b(about|regarding|mentioning|on the topic of|related to|concerning)\s+$", self.q[:start], re.I))

    def _repo(self, path: str) -> None:
        values = self.schema.fields[path].enum or []
        for value in sorted(values, key=len, reverse=True):
            short = value.split("/")[-1]
            for pattern in (rf"(?<![\w/]){re.escape(value)}(?![\w/])",
                            rf"\b(?:in|into|to|from|for|on) (?:the )?{re.escape(short)} (?:repo|repository)\b",
                            rf"\b(?:in|into) (?:the )?{re.escape(short)}\b(?! (?:label|tag|channel))",
                            rf"\b{re.escape(short)} (?:repo|repository)\b", rf"{re.escape(short)}\s*仓库",
                            rf"\b{re.escape(short)}\s+(?:prs?|pull requests?|commits?)\b", rf"\b(?:prs?|pull requests?|commits?)\s+{re.escape(short)}\b"):
                m = re.search(pattern, self.q, re.I)
                if m and not self._is_used(m.span()):
                    self.use(m.span())
                    self.add_filter(path, value)
                    self.notes.append(f"repository {value}")
                    return

    def _channel(self, path: str) -> None:
        known = self.schema.fields[path].enum
        m = re.search(r"#([\w\-]+)|\b(?:in|on) (?:the )?([\w\-]+) channel\b|([\w\-]+)\s*频道|\b([\w\-]+) channel\b", self.q, re.I)
        if not m and known:
            m = re.search(rf"\b(?:in|on)\s+({'|'.join(map(re.escape, known))})\b", self.q, re.I)
        if m:
            name = next(g for g in m.groups() if g).lower()
            if known is None or name in known:
                self.use(m.span())
                self.add_filter(path, name)
                return
        # "incident threads": a channel's name (or its singular) beside a message word.
        for value in known or []:
            stem = re.escape(value[:-1]) if value.endswith("s") else re.escape(value)
            m = re.search(rf"\b{stem}s?\s+(?:threads?|messages?|posts?|discussions?|chatter)\b", self.q, re.I)
            if m:
                self.use((m.start(), m.start() + len(m.group(0).split()[0])))
                self.add_filter(path, value)
                return

    def _workspace(self, path: str) -> None:
        """A Slack workspace named like a channel ("#racket", "in elmlang", "the racket workspace"): several
        workspaces may each have a #general, and people call a community's main channel by its name."""
        for value in sorted(self.schema.fields[path].enum or [], key=len, reverse=True):
            for m in re.finditer(rf"(?<![A-Za-z0-9_\-]){'#?' + re.escape(value)}(?:'s)?(?:\s+(?:workspace|slack|community))?(?![A-Za-z0-9_\-])",
                                 self.q, re.I):
                if not self._is_used(m.span()):
                    self.use(m.span())
                    self.add_filter(path, value)
                    self.notes.append(f"workspace {value}")
                    return

    def _is_used(self, span: tuple[int, int]) -> bool:
        return any(not (span[1] <= a or span[0] >= b) for a, b in self.used)

    def _role_of(self, mention: Mention) -> str:
        before = self.q[:mention.start].lower()[-40:]
        after = self.q[mention.end:].lower()[:30]
        if mention.text.lower().endswith(("'s", "’s")):
            after = "'s" + after  # the possessive was read as part of the name
        # Slack roles beyond authorship, only where the collection stores them (`mentions`, `parent_user_id`).
        if person_field_for(self.schema, "mentioned") and (
                re.search(r"(?:\bmention(?:s|ed|ing)?|\bmentions of|@-?mention\w*|\bpinged|\bpinging|提到(?:了)?|提及(?:了)?|@了?)\s*@?$", before)
                or re.search(r"^(?:'s)?\s*(?:was|were|is|are|got|gets|get|has been|have been|had been|been)\s+(?:\w+\s+)?(?:@-?)?mentioned\b"
                             r"|^\s*被(?:人)?(?:提到|提及|@)", after)
                # "how many times was Nana mentioned" (but "Nana mentioned Odis" is Nana writing)
                or re.search(r"\b(?:was|were|is|are|been|get|got|gets)\s+$", before) and re.search(r"^\s*(?:@-?)?mentioned\b", after)):
            return "mentioned"
        if person_field_for(self.schema, "replied_to") and (
                re.search(r"\b(?:repl(?:y|ies|ied)|respond(?:s|ed)?|answer(?:s|ed)?)\s+(?:\w+\s+){0,2}?to\s+$|回复(?:了)?\s*$", before)
                or (re.search(r"\bwho\b|\bwhom\b|谁", self.q, re.I) and re.search(r"\brepl(?:y|ies|ied)\b|回复", self.q, re.I)
                    and re.search(r"^(?:'s|s'|’s)\s+(?:threads?|posts?|messages?|questions?)\b|^\s*的(?:帖子|消息|讨论)", after))):
            return "replied_to"
        if re.search(r"^(?:'s)?\s+review queue\b", after):
            return "requested_reviewer"
        if re.search(r"(review(?:s)? requested (?:from|of)|waiting (?:on|for)|awaiting|pending|requested|needs?)\s+$|需要\s*$|等\s*$", before) \
                or re.search(r"^(?:'s|s'|’s) review\b(?! of)", after) \
                or (mention.text.lower() == "my" and re.search(r"^\s*review\b", after)) or re.search(r"^\s*to review\b", after) or re.search(r"请\s*$", before):
            return "requested_reviewer"
        if re.search(r"(reviewed|approved|reviews?|changes requested|commented on)\s+(by|from)\s+$", before) or re.search(
                r"^\s*(has |have |did )?(reviewed|approved|approve|approves|reviews|review|requested changes|request changes)\b(?! of)", after) \
                or re.search(r"^'s reviews", after) or re.search(r"^\s*(审查|评审|审核|review)", after):
            return "reviewer"
        if self.collection == "issues" and re.search(
                r"^\s*(?:has|have|owns?|is working on|名下|手上|手里)", after):
            return "assignee"
        if self.collection == "issues" and re.search(
                r"^\s*(?:did |has |have )?(?:resolve|resolved|close|closed|complete|completed|finish|finished|fix|fixed)\b", after):
            # GitHub records who closed an issue; Jira does not, and there the assignee did the work.
            return "closer" if person_field_for(self.schema, "closer") else "assignee"
        if re.search(r"^[^，。？,.?]{0,12}?(?<![a-z])(review|reviewed|审查|评审|审核)", after) and not re.search(r"请|等", before[-4:]):
            return "reviewer"
        if re.search(r"(assigned to|assignee is|owned by|owner is)\s+$", before) or re.search(r"^\s*(?:is|are|was|were|been|has been|have been)\s+assigned", after) \
                or re.search(r"分配给\s*$|指派给\s*$", before) or re.search(r"^\s*负责", after):
            return "assignee"
        if re.search(r"merged by\s+$", before):
            return "merger"
        if re.search(r"(reported|filed|opened|created|raised) by\s+$", before) or re.search(
                r"^\s*(?:has |have |did )?(report|reported|file|filed|raise|raised|open|opened|create|created)\b", after):
            return "author"
        if self.collection == "issues":
            # A tracker's "X's tickets", "X is working on", "X完成了": the assignee, unless reported/filed.
            return "assignee" if person_field_for(self.schema, "assignee") else "author"
        return "author"

    def _people(self) -> set[str]:
        roles: set[str] = set()
        for mention in self.ctx.mentions:
            person = mention.person
            if person is None:
                continue
            role = self._role_of(mention)
            found = person_field_for(self.schema, role) or person_field_for(self.schema, "author")
            self.use((mention.start, mention.end))
            if found is None:
                self.confidence = min(self.confidence, 0.3)
                self.notes.append(f"{self.collection} has no field for a {role}")
                continue
            path, kind = found
            handle = person.handle(kind)
            if handle is None:
                self.confidence = min(self.confidence, 0.5)
                self.notes.append(f"{person.name} has no {kind} handle")
                handle = person.key
            self.add_filter(path, handle)
            if role == "replied_to" and (author := person_field_for(self.schema, "author")):
                self.add_filter(author[0], person.handle(author[1]) or person.key, "ne")  # not their own follow-ups
            roles.add(role)
            self.notes.append(f"{mention.text!r} -> {person.name} ({handle}) as {role}")
            # Phrases that only told us the role are consumed too.
            for pattern in (r"\b(reviewed|approved|assigned to|reported|filed|opened|created|authored|written|wrote|merged) by\b",
                            r"\bassigned to\b", r"\b(reviewed|reviews|approved)\b", r"分配给|审查|评审"):
                m = re.search(pattern, self.q, re.I)
                if m and role != "author" or (m and "by" in m.group(0)):
                    self.use(m.span())
        return roles

    def _times(self, state_verb: str | None) -> str | None:
        chosen = None
        for rng in self.ctx.times:
            verb = rng.verb or state_verb
            role = {"merged": "merged", "closed": "closed", "resolved": "resolved", "updated": "updated",
                    "reviewed": "reviewed", "created": "created", "opened": "created", "submitted": "created",
                    "posted": "created"}.get(verb or "", "created")
            if self.collection == "pull_requests" and state_verb == "merged" and rng.verb is None:
                role = "merged"
            path = field_for(self.schema, role) or field_for(self.schema, "created")
            if path is None:
                continue
            idx = self.low.find(rng.text.lower())
            span = (idx, idx + len(rng.text)) if idx >= 0 else None
            if span:
                self.use(span, "time")
            self.times.append(TimeRange(path, rng.start, rng.end, span=span))
            self.notes.append(f"{rng.text!r} -> {path} in [{_fmt(rng.start)}, {_fmt(rng.end)})")
            chosen = chosen or path
        return chosen

    def _thresholds(self) -> None:
        """Numeric conditions ("more than 5 replies", ">500 additions", "touching 6 files"), threads."""
        noun = r"(additions|lines added|added lines|deletions|lines (?:deleted|removed)|(?:changed )?files|comments?|repl(?:y|ies))"
        english = [
            (rf"(>=|<=|>|<)\s*(\d+)\s*{noun}\b", lambda m: (m.group(1), m.group(2), m.group(3))),
            (rf"\b(more than|over|at least|fewer than|less than|under|exactly|above|below)\s+(\d+)\s+{noun}\b",
             lambda m: (m.group(1), m.group(2), m.group(3))),
            (rf"\b(\d+)\s*(\+|or more|or fewer|or less)\s+{noun}\b",
             lambda m: ({"+": ">=", "or more": ">=", "or fewer": "<=", "or less": "<="}[m.group(2)], m.group(1), m.group(3))),
            (rf"\b{noun}\s*(>=|<=|>|<|=)\s*(\d+)", lambda m: (m.group(2), m.group(3), m.group(1))),
            (rf"\b(?:with|touching|having|that have|that got|got)\s+(?:exactly\s+)?(\d+)\s+{noun}\b",
             lambda m: ("exactly", m.group(1), m.group(2))),
        ]
        chinese = [
            (r"(超过|至少|多于|少于|大于|小于)\s*(\d+)\s*(?:条|个|行)?(回复|评论|新增|删除|文件)",
             lambda m: (m.group(1), m.group(2), m.group(3))),
            (r"(回复|评论|新增|删除|文件)数?\s*(超过|大于|多于|至少|少于|小于)\s*(\d+)",
             lambda m: (m.group(2), m.group(3), m.group(1))),
        ]
        ops = {"more than": "$gt", "over": "$gt", "above": "$gt", ">": "$gt", "超过": "$gt", "多于": "$gt", "大于": "$gt",
               "at least": "$gte", ">=": "$gte", "至少": "$gte", "fewer than": "$lt", "less than": "$lt", "under": "$lt",
               "below": "$lt", "<": "$lt", "少于": "$lt", "小于": "$lt", "<=": "$lte", "exactly": "$eq", "=": "$eq"}
        for pattern, read in english + chinese:
            for m in re.finditer(pattern, self.q, re.I):
                if self._is_used(m.span()):
                    continue
                op, number, word = read(m)
                path = self._count_field(word.lower())
                if path is None:
                    continue
                self.use(m.span())
                cond = ops[op.lower()]
                self.add_filter(path, int(number), cond[1:])
        if self.collection == "pull_requests" and self.schema.has_path("requested_reviewers.login"):
            for mention in self.ctx.mentions:
                if mention.person and re.match(r"(?:'s)?\s+review queue\b", self.q[mention.end:], re.I):
                    self.use((mention.end, mention.end + 15))
        if self.schema.has_path("reviews.state") and self.mark(
                r"\bwithout (?:any |a )?reviews?\b|\bno reviews?\b|\bunreviewed\b|\bha(?:ve|s)n't had (?:a single|any) reviews?\b|没有(?:任何)?评审|没人评审"):
            self.add_filter("reviews", None, "empty")
        none = re.search(r"\b(?:no|zero|without(?: any)?) (comments|replies)\b|没有(评论|回复)", self.q, re.I)
        if none:
            path = self._count_field((none.group(1) or none.group(2)).lower())
            if path and not self.has_filter(path):
                self.use(none.span())
                self.add_filter(path, 0)
        replies = field_for(self.schema, "replies")
        # Replies to someone's threads are counted themselves: the word "threads" there selects no parents.
        replying = person_field_for(self.schema, "replied_to")
        if replies and not self.has_filter(replies) and not (replying and self.has_filter(replying[0])) \
                and self.mark(r"\bthreads?\b|\bgot replies\b|\bwith replies\b|帖子|讨论串"):
            self.add_filter(replies, 1, "gte")  # a thread is a message that has replies

    def _count_field(self, word: str) -> str | None:
        """The numeric field a counted noun refers to, if this collection has it."""
        candidates = {"addition": ["additions"], "lines added": ["additions"], "added lines": ["additions"], "新增": ["additions"],
                      "deletion": ["deletions"], "lines deleted": ["deletions"], "lines removed": ["deletions"],
                      "删除": ["deletions"], "file": ["changed_files"], "changed files": ["changed_files"],
                      "文件": ["changed_files"], "comment": ["comments", "fields.comment.total"], "评论": ["comments"],
                      "repl": ["reply_count"], "回复": ["reply_count"]}
        for key, paths in candidates.items():
            if word.startswith(key):
                return next((p for p in paths if self.schema.has_path(p)), None)
        return None

    def _grouping(self) -> tuple[str | None, str | None]:
        for fmt, pattern in _BUCKETS:
            m = re.search(pattern, self.q, re.I)
            if m:
                self.use(m.span())
                return None, fmt
        versus = re.search(r"\bopen (?:vs\.?|versus|or|and) closed\b|\bclosed (?:vs\.?|versus|or|and) open\b", self.q, re.I)
        if versus and field_for(self.schema, "state"):
            self.use(versus.span())
            self.filters = [f for f in self.filters if f.field != "state"]  # both states are wanted, one group each
            return "state", None
        named = re.search(r"\b(?:per|by|grouped by|broken down by|for each|each)\s+([a-z]+(?:[ _][a-z]+){0,2})", self.q, re.I)
        if named:
            words = named.group(1).lower().split()
            for n in range(len(words), 0, -1):
                wanted = "_".join(words[:n])
                path = next((p for p, f in self.schema.fields.items() if f.enum and p.split(".")[-1].lower() == wanted
                             and "_" in wanted), None)
                if path:
                    self.use(named.span())
                    self._named_group = path
                    return "named", None
        m = _GROUP.search(self.q)
        if m:
            self.use(m.span())
            word = next(g for g in m.groups() if g)
            for prefix, role in _GROUP_ROLES.items():
                if word.lower().startswith(prefix):
                    return role, None
        return None, None

    def _group_path(self, role: str) -> tuple[str | None, tuple[str, str] | None]:
        if role == "named":
            return self._named_group, None
        if self.collection == "commits" and role == "author" and self.schema.has_path("author.name"):
            return "author.name", ("author.name", "name")  # people read names; e-mails are for matching
        found = person_field_for(self.schema, role)
        if found:
            return found[0], found
        return field_for(self.schema, role), None

    def _ranked_by_count(self) -> tuple[str, int] | None:
        """"the thread with the most replies", "回复最多的帖子", "longest threads": records sorted by a
        counted field — not people grouped by how many records they have. None when it asks who."""
        m = re.search(r"\bmost\s+(repl(?:y|ies)|comments?|additions|deletions|(?:changed )?files)\b"
                      r"|\bmost[- ](repl)ied\b|\b(?:longest|biggest|largest|busiest|hottest|most active)\s+(?:slack\s+)?"
                      r"(?:threads?|discussions?|conversations?)\b|(回复|评论)数?最多|最多(回复|评论)|(?:最长|最热|最火)的?(?:帖子|讨论)",
                      self.q, re.I)
        if not m or _ASKS_FOR_PEOPLE.search(self.q):
            return None
        word = next((g for g in m.groups() if g), None) or "repl"  # the thread words rank by replies
        path = self._count_field(word.lower())
        if path is None:
            return None
        self.use(m.span())
        number = re.search(r"\btop\s*(\d+)\b|\b(\d+)\s+(?:\w+\s+)?(?:threads|posts|messages|discussions|prs|pull requests|issues|tickets)\b"
                           r"|前\s*(\d+)|(\d+)\s*(?:个|条)", self.q, re.I)
        if number:
            return path, min(int(next(g for g in number.groups() if g)), 200)
        words = re.search(r"\b(?:top|the)\s+(two|three|four|five|six|seven|eight|nine|ten)\b|前(两|二|三|四|五|十)", self.q, re.I)
        if words:
            return path, _WORD_NUMBERS[(words.group(1) or words.group(2)).lower()]
        # "which threads had the most replies": a few; "the thread with the most replies", "which of
        # her threads ...": one.
        if re.search(r"\bwhich (?:one )?of\b", self.q, re.I):
            return path, 1
        plural = re.search(r"\b(?:threads|posts|messages|discussions|conversations|prs|pull requests|issues|tickets)\b|哪些",
                           self.q, re.I)
        return path, 5 if plural else 1

    def _top_role(self, person_roles: set[str]) -> str:
        asks_for_people = _ASKS_FOR_PEOPLE.search(self.q)
        if not asks_for_people:
            for role, pattern in (("label", r"\blabels?\b|标签"), ("repo", r"\brepos?\b|\brepositor\w+|仓库"),
                                  ("component", r"\bcomponents?\b|组件"), ("team", r"\bteams?\b|团队"),
                                  ("channel", r"\bchannels?\b|频道"), ("priority", r"\bpriorit\w+|优先级")):
                if re.search(pattern, self.q, re.I):
                    return role
        if re.search(r"\breview\w*|\bapprov\w*|审查|评审", self.q, re.I):
            return "reviewer"
        if self.collection == "issues" and re.search(r"\bclos\w*|\bresolv\w*|\bcomplet\w*|\bfix\w*|\bfinish\w*|关闭|解决|完成", self.q, re.I):
            return "closer" if person_field_for(self.schema, "closer") else "assignee"
        if re.search(r"\bassign\w*|负责", self.q, re.I):
            return "assignee"
        return "author"

    def _top_limit(self, top: re.Match) -> int:
        explicit = re.search(r"\btop\s*(\d+)\b|\b(\d+)\s+(?:most|busiest|biggest)\b", self.q, re.I)
        number = next((g for g in top.groups() if g), None) or (explicit and (explicit.group(1) or explicit.group(2)))
        if number:
            return min(int(number), 200)
        if re.search(r"\b(?:the|just the|only the)?\s*(?:busiest|most active|top|biggest|largest|single)\s+(?:\w+\s+)?"
                     r"(?:channel|person|reviewer|author|repo|repository|label|team|user|contributor|committer|engineer)\b(?!s)",
                     self.q, re.I):
            return 1  # "the busiest channel": one answer
        counted = re.search(r"\b(\d+)\s+(?:most active |busiest |top )?(?:people|persons|users|reviewers|authors|engineers|"
                            r"developers|devs|folks|members|contributors|labels|repos|channels|posters)\b", self.q, re.I)
        if counted:
            return min(int(counted.group(1)), 200)
        words = re.search(r"\b(?:top|the|our|which|what)\s+(two|three|four|five|six|seven|eight|nine|ten)\b|前(两|二|三|四|五|十)",
                          self.q, re.I)
        if words:
            return _WORD_NUMBERS[(words.group(1) or words.group(2)).lower()]
        # Chinese counts people with a measure word: "最多的3个人", "最活跃的五位".
        measured = re.search(r"(\d+|[两二三四五六七八九十])\s*(?:个人|个用户|位|名|个成员)", self.q)
        if measured:
            return min(int(measured.group(1)), 200) if measured.group(1).isdigit() else _WORD_NUMBERS[measured.group(1)]
        return 5

    def _list_limit(self, peek: bool = False) -> int:
        m = _LIMIT.search(self.q)
        if m:
            if not peek:
                self.use(m.span())
            return min(int(next(g for g in m.groups() if g)), 200)
        return DEFAULT_LIMIT

    def _leftover_text(self, structured: bool) -> str:
        """Topic words for `$text`: what follows a topic cue ("about", "mentioning", 关于); in a
        question with no structure at all, every content word (a keyword search, the best the
        structured half can do for "why did we ...")."""
        cue = re.search(r"\b(?:about|regarding|mentioning|that mention|which mention|related to|concerning|"
                        r"involving|on the topic of|titled|containing)\s+|关于|有关|提到|涉及", self.q, re.I)
        if not cue and structured:
            return ""
        chars = list(self.q)
        if cue:
            self.use(cue.span())
            for i in range(cue.start()):
                chars[i] = " "
        for a, b in self.used + self.collection_spans:
            for i in range(a, min(b, len(chars))):
                chars[i] = " "
        rest = "".join(chars)
        words = []
        for token in re.findall(r"[A-Za-z][A-Za-z0-9_\-]+|[\u4e00-\u9fff]+|\d{3,}", rest):
            if _CJK_STOP.fullmatch(token):
                continue
            if re.match(r"[\u4e00-\u9fff]", token):
                token = _CJK_STOP.sub(" ", token).strip()
                words.extend(t for t in token.split() if len(t) >= 2)
                continue
            if token.lower() in _STOP or len(token) < 3:
                continue
            words.append(token.lower())
        return " ".join(dict.fromkeys(words))


def _fmt(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "…"

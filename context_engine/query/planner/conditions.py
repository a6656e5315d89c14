"""Step 3: conditions: states (open, merged, draft, Jira statuses), review outcomes, time ranges on the
date the sentence means, numeric thresholds ("more than 5 replies"), absence ("no reviews")."""

from __future__ import annotations

import re
from datetime import datetime

from context_engine.query.fields import DONE_STATUSES, field_for, person_field_for
from context_engine.query.ir import TimeRange
from context_engine.query.planner.draft import Draft


class ConditionStep(Draft):
    """States, review outcomes, times and thresholds, as filters."""

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
            if self.mark(r"\bmerged\b|\bmerges?\b|\bmerg(?:d|eed|ged)\b|\bmreged\b|\bship(?:ped|s)?\b|\bland(?:ed|s)?\b|合并了|已合并|合入|合并|上线|发布"):
                self.add_filter("merged", True)
                return "merged"
            if self.mark(r"\bdrafts?\b|草稿"):
                self.add_filter("draft", True)
                if not re.search(r"\bclosed\b", self.q, re.I):
                    self.add_filter("state", "open")
                return "created"
            if self._mark_state(r"\bopen\b|\bopened\b(?= (?:and|but) (?:still|not))|\bpending\b|\bunreviewed\b|\bwaiting\b|\bawaiting\b|\bstill open\b|未关闭|打开的|开放|待审|还开着|没合并|未合并的|开着"):
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
                if self._mark_state(r"\bopen\b|\b(unresolved|outstanding|active)\b|还没(?:有)?关闭|没有关闭|未解决|未关闭|打开的|开放|还开着"):
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


def _fmt(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "…"

"""Step 3: conditions: states (open, merged, draft, Jira statuses), review outcomes, time ranges on the
date the sentence means, numeric thresholds ("more than 5 replies"), absence ("no reviews")."""

from __future__ import annotations

import functools
import re
from datetime import datetime

from context_engine.query.fields import DONE_STATUSES, field_for, person_field_for
from context_engine.query.ir import Filter, TimeRange
from context_engine.query.planner.draft import EITHER_STATE, NUMBER_WORDS, STATE_FIELDS, Draft

# Replies someone wrote, said as what they made: "wrote the most replies", "posted 5 replies".
_REPLIES_WRITTEN = re.compile(
    r"\b(?:wr[io]te|writes?|written|post(?:s|ed)?|sen[dt]s?|ma(?:de|kes?)|left|leaves?|add(?:s|ed)?|drop(?:s|ped)?)\s+"
    r"(?:the\s+)?(?:most|fewest|least|more|fewer|many|a lot of|lots of|\d+|several)\s+((?:thread\s+)?replies)\b",
    re.I,
)
# Who replies most, to no one named: the replies are the records ranked.
_WHO_REPLIED = re.compile(
    r"\b(?:who|which (?:person|user|member|people|users|members))\s+(?:has\s+|have\s+)?"
    r"((?:replied|replies|answered|responded)(?:\s+to\s+(?:others|other people|people|everyone|folks))?)"
    r"\s+(?:the\s+)?(?:most|least|more|fewest)\b"
    r"|谁(?:最常|最爱)?(回复(?:别人|他人|其他人)?)(?:的)?(?:最多|得最多|最频繁|最勤)"
    r"|((?:回复|回)(?:别人|他人|其他人)?)最多的(?:人|用户|是谁)",
    re.I,
)


class ConditionStep(Draft):
    """States, review outcomes, times and thresholds, as filters."""

    def _mark_state(self, pattern: str) -> re.Match | None:
        """Like `mark`, but "open" used as a verb ("did X open", "to open") is not a state."""
        for m in re.finditer(pattern, self.q, re.I):
            before = self.q[: m.start()]
            if self._is_used(m.span()):
                continue  # read already ("by somebody who didn't open them": who closed them)
            if (
                m.group(0).lower() == "open"
                and re.search(r"\b(did|do|does|will|would|to|I|we|you|they)\s+(?:\S+\s+){0,5}$", before, re.I)
                and not re.search(
                    r"\b(still|currently|are|is|remains?|being|be|as|and|stay|stays|the|all|any|our|my|their)\s+$"
                    r"|\b(?:still|currently)\s+(?:have|has|had|got|keeps?)\s+$",
                    before,
                    re.I,
                )
                and not (
                    re.search(
                        r"\b(?:do|does|did)\s+(?:(?:the|all|our|their|any)\s+)?$", before, re.I
                    )  # "which label do open issues carry"
                    and re.match(r"\s+(?:issues|prs|pull requests|tickets|bugs)\b", self.q[m.end() :], re.I)
                )
                # "people assigned to open issues", "comments added to open PRs": "to" ends a participle's phrase
                and not (
                    re.search(
                        r"\b(?:assigned|linked|attached|related|added|pinned|posted|given|subscribed|belonging)\s+to\s+$",
                        before,
                        re.I,
                    )
                    and re.match(r"\s+(?:issues|prs|pull requests|tickets|bugs)\b", self.q[m.end() :], re.I)
                )
            ):
                continue
            self.use(m.span())
            return m
        return None

    def _states(self) -> str | None:
        """State words; returns the verb whose date a bare time range should apply to."""
        self._closer_and_author()
        self._assigned_to_the_author()
        self._absences()
        reason = self._state_reason()
        verb = self._state_words()
        return verb or ("closed" if reason else None)

    def _state_words(self) -> str | None:
        s, name = self.schema, self.collection
        # "have not been merged, open or closed?", "whether open or not": either state, so no condition on it
        if s.has_path("state"):
            self.mark(EITHER_STATE)
        if name in ("pull_requests", "issues") and s.has_path("state") and self.mark(_NO_LONGER_OPEN):
            self.add_filter("state", "closed")
            return "created"
        if name == "pull_requests":
            if self.mark(
                r"\bnon-?drafts?\b|(?:\bnot|n't)(?: marked as| marked| a| in)? drafts?\b|\bready for review\b(?:\s*\(\s*not\s+(?:a\s+)?drafts?\s*\))?|非草稿|不是草稿"
                r"|\b(?:excluding|except(?: for)?|without|not counting|leaving out|other than|minus|apart from|aside from)"
                r" (?:the |any )?drafts?\b|(?:不含|不包括|排除|除了?)草稿"
            ):
                self.add_filter("draft", False)
                self.mark(
                    r"(?:\bnot|n't)(?: marked as| marked| a| in)? drafts?\b|\bnon-?drafts?\b"
                )  # said twice: "ready for review, i.e. not a draft"
            if self.mark(
                r"(?:关闭|关掉|关)了?[，,\s]*(?:但|却|可|而)?(?:是)?(?:没有?|未)(?:被)?(?:merge|合并|合入|合(?!作))"
                r"|(?:没有?|未)(?:merge|合并|合入)就(?:被)?(?:关闭|关掉|关了)"
            ):
                self.add_filter("merged", False)
                self.add_filter("state", "closed")
                return "closed"
            # 还没/尚未 (not yet): still waiting, open; a bare 没被合并 (was not merged) is merged: false, below
            if self.mark(
                r"(?<!从)(?:还(?:没有?|未)|(?:没有?|未)(?!被))\s*(?:merge|合并|合入)|尚未合并|待合并|\bnot yet merged\b|\byet to be merged\b"
                r"|\bstill (?:un|not )merged\b|\bunmerged and open\b|\bawaiting merge\b"
                # "haven't been merged yet", "isn't merged yet": the same "not yet", said with its verb
                r"|(?:\bnot|\b[a-z]+n't) (?:yet )?(?:been |being |gotten |got )?merged yet\b|(?:\bnot|\b[a-z]+n't) yet been merged\b"
            ):
                # "还没 merge 的 PR", "not yet merged": still waiting, i.e. open (Chinese 没 says "not yet").
                self.add_filter("state", "open")
                return "created"
            unmerged = self.mark(
                r"\bnever (?:been |got |gets |get |was |were )?(?:merged|landed|shipped)\b"
                r"|(?:\bnot|\b[a-z]+n't) (?:been |being |getting |got |gotten |get )?(?:merged|landed|shipped)\b"
                # "which didn't make it in", "never went in": the idioms of merging, negated
                # ("which of his didn't make it?": a PR that makes it is merged)
                r"|(?:\bnot|\bnever|n['’]t)\s+(?:(?:make|made|makes|making)\s+it(?:\s+in(?:to\s+(?:main|master|the codebase|the repo))?|(?=\s*(?:[?.!,;)]|$)))"
                r"|(?:go|went|gone|get|got|goes)\s+in)\b(?!\s+(?:\d|the\b|a\b|an\b))"
                r"|\bunmerged\b|\bw/o merg\w*|\bwithout (?:ever )?(?:being |getting |a |any )?merg\w*|\brejected\b|\babandoned\b"
                r"|从未(?:被)?(?:merge|合并|合入)|从来没有?(?:被)?(?:merge|合并|合入)|(?:没有?|未)被(?:merge|合并|合入)"
            )
            if unmerged:
                # Not merged is all it says: an open PR is not merged either, unless closing is said too.
                self.add_filter("merged", False)
                # said twice: "abandoned (closed, never merged)"
                self.mark(r"\bnever (?:been |got |was |were )?merged\b|\bnot (?:been |being |getting |got )?merged\b")
                # closed in any word the issue states take ("got shut without merging")
                if re.search(r"rejected|abandoned", unmerged.group(0), re.I) or self.mark(
                    r"\bclosed\b|\bshut(?: down)?\b|关闭"
                ):
                    self.add_filter("state", "closed")
                    return "closed"
                return "created"
            if self.mark(
                r"\bmerged\b|\bmerges?\b|\bmerg(?:d|eed|ged)\b|\bmreged\b|\bship(?:ped|s)?\b|\bland(?:ed|s)?\b"
                r"|\b(?:went|got|go|goes|gone) in\b(?!\s+(?:\d|the\b|a\b|an\b))|\b(?:made|make|makes|making) it(?: in(?:to (?:main|master|the codebase|the repo))?\b|(?=\s*(?:[?.!,;)]|$)))|合并[了过]|已合并|合入|合并|合进(?:去|来)?了?|上线|发布"
            ):
                self.add_filter("merged", True)
                return "merged"
            if self.mark(r"\bdrafts?\b|草稿"):
                self.add_filter("draft", True)
                if not re.search(r"\bclosed\b|关闭", self.q, re.I):
                    self._mark_state(
                        rf"{_NOT_CLOSED}|\bopen\b|\bstill open\b|开放|打开的|开着"
                    )  # said or not: a draft is open
                    self.add_filter("state", "open")
                return "created"
            if self._mark_state(
                rf"{_NOT_CLOSED}|\bopen\b|\bopened\b(?= (?:and|but) (?:still|not))|\bpending\b|\bunreviewed\b|\bwaiting\b|\bawaiting\b|\bstill open\b|未关闭|打开的|开放|待审|还开着|开着"
            ):
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
                if self._mark_state(
                    rf"{_NOT_CLOSED}|\bopen\b|\b(unresolved|outstanding|(?<!most )(?<!least )(?<!more )(?<!less )active)\b|还没(?:有)?关闭|没有关闭|未解决|未关闭|打开的|开放|还开着|(?<![不没])开着"
                ):
                    self.add_filter("state", "open")
                    return "created"
                if self.mark(
                    r"\b(closed|resolved|fixed|done|closures?|shut(?: down)?)\b|已关闭|已解决|关闭了?|关[掉了过]|解决了?"
                ):
                    self.add_filter("state", "closed")
                    return "closed"
            return None
        return None

    def _state_reason(self) -> bool:
        """Why an issue was closed: GitHub's `state_reason` ("closed as not planned", "closed as
        completed", "not closed as completed"), said of issues and PRs that store it."""
        reasons = set(self.schema.fields["state_reason"].enum or []) if self.schema.has_path("state_reason") else set()
        if "completed" not in reasons:
            return False  # a collection whose records carry no reason (PRs: always null) is not asked one
        reason = r"(completed|done|not[ _-]planned|won'?t[ -](?:do|fix)|reopened)"
        both = re.search(rf"\b{reason}\s+(?:vs\.?|versus|compared (?:with|to)|or|and)\s+{reason}\b", self.q, re.I)
        said = [self._reason_named(both.group(1)), self._reason_named(both.group(2))] if both else []
        if both and not self._is_used(both.span()) and set(said) <= reasons and said[0] != said[1]:
            # "closures completed vs not planned": both reasons, one count each (the grouping step reads "vs")
            self.use(both.span())
            self.add_filter("state_reason", said, "in")
            self.add_filter("state", "closed")
            self.mark(r"\b(?:close[ds]?|closing|state) reason\b|\breason\b")
            return True
        if self.mark(
            r"\bnot (?:closed )?as (?:completed|done)\b|\b(?:isn't|is not|wasn't|was not|not|other than|besides|except)"
            r" (?:completed|done)\b(?!\s+by\b)|\bfor (?:a|any) reason other than (?:completed|done)\b|不是以?完成|非完成"
        ):
            self.add_filter("state_reason", "completed", "ne")
            self.mark(r"\bclosed\b|已关闭|关闭")
            self.add_filter("state", "closed")  # a reason other than completed is given to closed issues only
        elif "not_planned" in reasons and self.mark(
            r"\bnot[ _-]planned\b|\bwon'?t[ -](?:do|fix)\b"
            + ("" if self._a_label("wontfix") else r"|\bwontfix\b")
            + "|不计划|不打算|不做|不修复"
        ):
            self.add_filter("state_reason", "not_planned")
            self.mark(
                r"\bnot[ _-]planned\b|\bwon'?t[ -](?:do|fix)\b|\bwontfix\b"
            )  # said twice: "won't-fix / not planned"
        elif self.mark(r"\b(?:closed )?as (?:completed|done)\b|\bcompleted\b|(?:以)?完成(?:为理由)?"):
            self.add_filter("state_reason", "completed")
        elif "reopened" in reasons and self.mark(r"\bre-?opened\b|重新打开|重开"):
            self.add_filter("state_reason", "reopened")
            # "reopened after being closed": the closing is the story, not the state now
            self.mark(
                r"\b(?:after|since|once)\s+(?:being|having been|it was|they were|it had been|they had been|getting)\s+closed\b"
                r"|(?:关闭|关掉)(?:之)?后"
            )
        else:
            return False
        self.mark(r"\b(?:close[ds]?|closing|state) reason\b|\breason\b|\bwith reason\b|为?理由|原因")
        self.mark(r"\b(?:marked|flagged|tagged)(?: as)?\b")  # "closures marked 'not planned'"
        return True

    @staticmethod
    def _reason_named(word: str) -> str:
        low = word.lower()
        return "completed" if low in ("completed", "done") else "reopened" if low == "reopened" else "not_planned"

    def _a_label(self, word: str) -> bool:
        """Whether the question says "label" and `word` is one of the labels ("the wontfix label" is a
        label, not a close reason)."""
        label = field_for(self.schema, "label")
        return bool(
            label
            and re.search(r"\blabel|\btagged\b|标签", self.q, re.I)
            and word in {str(v).lower() for v in self.schema.fields[label].enum or []}
        )

    def _neither_label_nor_assignee(self) -> None:
        """ "neither a label nor an assignee", "without ever being labelled or assigned": both absent."""
        label, assignee = field_for(self.schema, "label"), person_field_for(self.schema, "assignee")
        if (
            label
            and assignee
            and self.mark(
                r"\bneither (?:a |any )?labels? nor (?:an? |any )?assignees?\b|\bwithout (?:ever )?being (?:labell?ed|tagged) or assigned\b"
                r"|\b(?:no|without) (?:a |any )?labels? (?:and|or|nor) (?:no |without )?(?:an? |any )?assignees?\b"
            )
        ):
            self.add_filter(label, None, "empty")
            self.add_filter(assignee[0], None, "empty")

    def _absences(self) -> None:
        """Something a record lacks: "no labels", "unassigned" (linking), "nobody commented on",
        "mention nobody", "not in any thread". A list that is empty or missing; a count that is 0
        or missing (Slack stores no `reply_count` on a message without replies)."""
        s = self.schema
        self._neither_label_nor_assignee()
        label = field_for(s, "label")
        if label and self.mark(
            rf"\bun(?:labell?|tagg)ed\b|\b(?:no|zero|without(?: any)?|lacking(?: any)?|missing) (?:labels?|tags)\b|{_LACKS}labels?\b"
            rf"|{_EMPTY_LIST.format('label')}"
            r"|\bnot labell?ed(?: at all)?(?=\s*(?:$|[?,.:;)!-]|and\b|or\b|in\b|from\b|since\b|before\b|after\b))"
            r"|没有(?:任何)?标签|无标签|未打?标签|不带(?:任何)?标签|(?:一个|任何)\s*标签\s*(?:都|也)\s*(?:没有?|不带)"
        ):
            self.add_filter(label, None, "empty")
        assignee = person_field_for(s, "assignee")
        if assignee and self.mark(
            r"\b(?:nobody|no one|no-one)(?:'s been|'s| is| was| has been| got)? (?:been )?assigned\b|\bassigned to (?:nobody|no one|no-one)\b"
            r"|(?:\bnot|\bnever|n't|n't been|\bnever been) assigned to (?:anyone|anybody|someone|a person)\b"
            r"|\bnever (?:been |got |gotten |was |were )?(?:assigned|given to (?:anyone|anybody|someone))\b|\bwithout (?:an? |any )?assignees?\b"
            rf"|{_LACKS}assignees?\b|{_EMPTY_LIST.format('assignee')}"
            r"|没有?(?:被)?(?:任何)?(?:人)?(?:负责人|指派|分配)(?:给)?(?:任何人|任何一个人|别人|谁)?|(?:无|没有?)人(?:负责|认领|接手|跟进)|未(?:被)?(?:指派|分配)(?:给)?(?:任何人)?"
        ):
            self.add_filter(assignee[0], None, "empty")  # "unassigned", "no assignee": the linking step's own words
        milestone = field_for(s, "milestone")
        if milestone and self.mark(
            rf"\b(?:no|without(?: an?| any)?|lacking(?: an?| any)?|missing(?: an?)?) milestones?\b|\bunmilestoned\b|{_LACKS}milestones?\b"
            r"|\bnot (?:in|on|part of) (?:any|a) milestone\b|没有(?:任何)?里程碑|无里程碑"
        ):
            self.add_filter(milestone, None, "empty")
        reaction = field_for(s, "reaction")
        if reaction and self.mark(
            r"\b(?:no|zero|without(?: any)?) (?:emoji )?reactions?\b|没有(?:任何)?(?:表情)?(?:反应|回应)"
        ):
            self.add_filter(reaction, None, "empty")
        if s.has_path("requested_reviewers") and self.mark(
            r"\b(?:no|without(?: any)?) (?:requested )?reviewers?\b|\bno one (?:was |has been )?(?:asked|requested) to review\b"
            r"|没有(?:任何)?(?:评审人|审查人|reviewer)"
        ):
            self.add_filter("requested_reviewers", None, "empty")
        mentioned = person_field_for(s, "mentioned")
        if mentioned and self.mark(
            r"\b(?:(?:@-?)?mention(?:s|ed|ing)?|tag(?:s|ged|ging)?|ping(?:s|ed|ing)?) (?:nobody|no one|noone|no-one)\b"
            r"|\b(?:don't|doesn't|do not|does not|didn't|did not|without|never) (?:@-?)?mention(?:ing)? (?:anyone|anybody|someone|people)\b"
            r"|\b(?:no|zero|without(?: any)?) (?:@-?)?mentions?\b|没有(?:任何)?(?:@|提及|提到)(?:任何人|别人|人)?"
            r"|\b(?:without|never|not|no) (?:tagging|pinging|@-?ing|@-?mentioning|mentioning) (?:anyone|anybody|someone|people|others)\b"
            r"|\bnor (?:@-?)?mention(?:s|ed|ing)? (?:anyone|anybody|someone|people|others)\b"
        ):
            self.add_filter(mentioned[0], None, "empty")
        elif (
            mentioned
            and (
                said := self.mark(
                    r"\b(?:(?:@-?)?mention|tag|ping)(?:s|ed|ged|ing|ging)? (?:someone|somebody|anyone|anybody|people|others|other people)\b"
                    r"|\b(?:with|has|have|having|had|containing|contain|contains|carrying|including|include|includes)\s+"
                    r"(?:an? |any |some |at least one |one or more )?(?:@-?mentions?|mentions? of (?:someone|somebody|anyone|people|others))"
                    r"|@-?mentions?(?= of (?:someone|somebody|anyone|people|others))"
                    r"|(?:有)?(?:提到|提及|@)了?(?:别人|其他人|他人|某人)"
                    r"|(?<![\w@])@\s+(?:someone|somebody|anyone|anybody|people|others)\b"  # "replies that @ somebody"
                    r"|(?:有|带有?|帶有?|含有?)\s*@\s*(?:了\s*)?(?:任何人|别人|別人|其他人|他人|某人|人)?"  # 带 @ 的消息, 有 @ 別人的
                )
            )
        ):
            # "don't tag anybody", 没有 @ 任何人: a negation just before the words of having one inverts them
            negation = re.search(_NEGATION_JUST_BEFORE, self.q[: said.start()], re.I)
            if negation:
                self.use((negation.start(), said.start()))
            self.add_filter(mentioned[0], None, "empty" if negation else "not_empty")
        replying = person_field_for(s, "replied_to")
        if replying and self.mark(_NOT_A_REPLY):
            self.add_filter(replying[0], None, "empty")  # a thread's start or a message on its own: no parent
            self.mark(
                rf"(?:{_NOT_A_REPLY})(?:\s+(?:inside|in|within)\s+(?:a|any)\s+threads?)?"
            )  # said twice: "top-level, i.e. not replies"
        if s.has_path("thread_ts") and self.mark(_NOT_IN_A_THREAD):
            self.add_filter("thread_ts", None, "empty")
            self.mark(_NOT_IN_A_THREAD)  # said twice: "standalone messages that aren't in a thread"
        for pattern, noun in (
            (
                (
                    r"\b(?:no|zero|without(?: any)?) comments?\b|\buncommented\b"
                    r"|\b(?:nobody|no one|no-one) (?:has |have |had |having )?(?:yet |ever )?commented\b"
                    r"|\b(?:never|not) (?:once )?(?:received|got|gotten|had|drew|attracted) (?:a |any |a single )?comments?\b"
                    r"|\bwithout (?:a single|one|even one) comment\b|(?:\bdid(?:n't| not)|\bnever|\bdoes(?:n't| not)) (?:get|got|receive|have|had|draw) (?:a single|any|one|even one) comments?\b|\bwithout (?:anyone|anybody|someone|a soul) comment(?:ing|ed)?(?: on (?:it|them))?\b"
                    r"|没有(?:任何)?(?:人)?评论|没人评论|无评论|没(?:有)?(?:收到|得到)(?:任何|过)?评论|一条评论都没有|零评论"
                ),
                "comment",
            ),
            (
                (
                    r"\b(?:no|zero|without(?: any)?) repl(?:y|ies)\b|\bunanswered\b|\bunreplied\b"
                    r"|\b(?:nobody|no one|no-one) (?:has |have |had )?(?:ever )?replied\b|\b(?:not|never) (?:been |got |gotten )?replied to\b"
                    r"|\b(?:never|not) (?:once )?(?:received|got|gotten|had|drew) (?:a |any |a single )?(?:repl(?:y|ies)|answers?|responses?)\b"
                    r"|\b(?:left|been left|was left|were left|sat) hanging\b"
                    r"|没有(?:任何)?(?:人)?回复|无回复|没人回复"
                ),
                "repl",
            ),
        ):
            path = self._count_field(noun)
            if path and not self.has_filter(path) and self.mark(pattern):
                self.add_filter(path, [0, None], "in")
                while self.mark(pattern):  # said twice: "left hanging — nobody replied"
                    pass

    def _negations(self) -> None:
        """A value said with a negation before it ("not labelled bug", "without the docs label", "not
        by lhoestq", "neither X nor Y", "除了 X") is excluded, not required. Only the words listed
        may stand between the negation and the value: "not merged PRs by X" negates no one."""
        negated: Filter | None = None
        for f in sorted(self.filters, key=lambda f: f.span or (len(self.q), 0)):  # in the order they were said
            if f.op not in ("eq", "in") or f.negate or f.span is None or f.field in STATE_FIELDS:
                continue
            m = _negation_before(self._names_of(f.field)).search(self.q[: f.span[0]])
            listed = (
                negated is not None
                and negated.field == f.field
                and negated.span is not None
                and re.fullmatch(r"\s*(?:,|or|and|nor|/|、|或|和)\s*", self.q[negated.span[1] : f.span[0]], re.I)
            )
            if m or listed:  # "not as bug or enhancement": the values listed after a negation are excluded too
                f.negate = True
                self.use((m.start(), f.span[0]) if m else (negated.span[1], f.span[0]))
                closing = _EXCEPTION_CLOSED.match(self.q, f.span[1]) if m and "除" in m.group(0) else None
                if closing:  # "除了 X 以外的人": the words closing the exception
                    self.use(closing.span())
                self.notes.append(f"{self.q[(m.start() if m else f.span[0]) : f.span[1]]!r}: excluded")
                if f.op == "in":  # the second half of "neither X nor Y", "既不在 X 也不在 Y"
                    self.mark(r"\bnor\b|也不(?:在|是|带)")
                negated = f
        label = field_for(self.schema, "label")
        if (
            label
            and any(f.field == label and f.negate for f in self.filters)
            and self.mark(
                r"\b(?:are|is|were|was)\s+labell?ed\b(?=,?\s*(?:just|but|only)?\s*not\b)|\b(?:some|a|any) labels?(?= other than\b)"
            )
        ):
            self.add_filter(label, None, "not_empty")  # "labelled, just not as bug": some label, not that one

    def _names_of(self, path: str) -> tuple[str, ...]:
        """The words that name a field in this kind (its spec's role names, its label, its own name):
        "not on the payments-api service" and "not in service payments-api" name the value's field
        between the negation and the value."""
        kind = self.schema.kind
        names = [role for role, paths in kind.roles().items() if path in paths]
        names += [path.rsplit(".", 1)[-1], kind.labels.get(path, "")]
        # a person role said as its verb: "not commanded by X" for the commander, "not owned by" the owner
        names += [n[:-2] + "ed" for n in names if n.endswith("er")]
        return tuple(sorted({n.replace("_", " ").lower() for n in names if n}))

    def _jira_status(self, status: str) -> str | None:
        values = self.schema.fields[status].enum or []
        if self.mark(
            r"(?:\bnot|n't|\bnever|\byet to be) (?:yet )?(?:done|finished|completed|resolved)\b|\bon (?:my|his|her|their|our) plate\b|还没(?:有)?(?:关闭?|完成|解决|做完)|没做完|未完成|没关闭?|还开着"
        ):
            self.add_filter(status, [v for v in values if v in DONE_STATUSES] or list(DONE_STATUSES), "nin")
            return "created"
        for word, value in (
            ("completed", "Done"),
            ("已完成", "Done"),
            ("完成", "Done"),
            ("进行中", "In Progress"),
            ("待办", "To Do"),
            ("审核中", "In Review"),
            ("评审中", "In Review"),
            (r"在\s*review\s*中|review\s*中", "In Review"),
            ("不做", "Won't Do"),
        ):
            if value in values and self.mark(word):
                self.add_filter(status, value)
                return "resolved" if value in DONE_STATUSES else "created"
        for value in sorted(values, key=len, reverse=True):
            m = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", self.q, re.I)
            if (m and value.lower() not in ("done",)) or (m and re.search(r"\bstatus\b", self.q, re.I)):
                self.use(m.span())
                self.add_filter(status, value)
                return "resolved" if value in DONE_STATUSES else "created"
        if self.mark(
            r"\b(open|unresolved|outstanding|(?<!most )(?<!least )(?<!more )(?<!less )active|not done|unfinished)\b|未解决|未完成|打开的|进行中的"
        ):
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
        for pattern, state in (
            (r"\b(?:just|only) comment(?:s|ed)?\b|\bno approval\b|\bcommented\b|\bwithout approv\w*", "COMMENTED"),
            (
                r"\bchanges[- ]requested\b|\brequested changes\b|\brequest(?:ed|s)? changes\b|要求修改",
                "CHANGES_REQUESTED",
            ),
            (r"\bapprov(?:e|ed|es|al|als|er|ers|ing)\b|批准|通过了", "APPROVED"),
        ):
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
            role = {
                "merged": "merged",
                "closed": "closed",
                "resolved": "resolved",
                "updated": "updated",
                "reviewed": "reviewed",
                "created": "created",
                "opened": "created",
                "submitted": "created",
                "posted": "created",
            }.get(verb or "", "created")
            if self.collection == "pull_requests" and state_verb == "merged" and rng.verb is None:
                role = "merged"
            idx = self.low.find(rng.text.lower())
            span = (idx, idx + len(rng.text)) if idx >= 0 else None
            if span and self._dates_the_noun(span, rng.verb is not None):
                role = "created"
            start, end = rng.start, rng.end
            untouched = _UNTOUCHED.search(self.q[: span[0]]) if span else None
            if untouched and field_for(self.schema, "updated"):
                role = "updated"
                self.use(untouched.span(), "time")
                since = re.match(r"\s*(?:since|after)\b", self.q[span[0] : span[1]], re.I) or re.search(
                    r"\b(?:since|after)\s*$", untouched.group(0), re.I
                )
                if untouched.group("nothing_since") and since and start is not None and end in (None, self.ctx.now):
                    # "not updated since 2023": last updated in 2023 or before, before the period named ends
                    end = _end_of_named(self.q[span[0] : span[1]], start)
                    start = None
            path = field_for(self.schema, role) or field_for(self.schema, "created")
            if path is None:
                if span:  # a kind without that date (people; a spec whose created field its records lack)
                    self.undated.append(span)
                    self.notes.append(f"{rng.text!r}: {self.collection} has no {role} time")
                continue
            if span:
                self.use(span, "time")
            self.times.append(TimeRange(path, start, end, span=span))
            self.notes.append(f"{rng.text!r} -> {path} in [{_fmt(start)}, {_fmt(end)})")
            chosen = chosen or path
        return chosen

    def _dates_the_noun(self, span: tuple[int, int], has_verb: bool) -> bool:
        """A time said of the records themselves ("2023 issues", "2022's PRs", "bugs from 2024", "2022
        年创建的") dates their creation, whatever state the sentence adds ("closed 2023 issues": the
        year before the noun wins over the verb before the year)."""
        after, before = self.q[span[1] :], self.q[: span[0]]
        if self.collection == "pull_requests" and re.search(r"\b(?:merged|landed|shipped)\s+$", before, re.I):
            return False  # "merged 2021 PRs": the year of their merging
        if has_verb and before.endswith("-"):
            return False  # "closed-in-2022 issues": the hyphens make the verb and its year one adjective
        for start, end in self.collection_spans:
            if start >= span[1] and re.match(r"\s*(?:closures|closings|merges)\b", self.q[end:], re.I):
                return False  # "Jan 2024 issue closures": the month of the closing
            between = start >= span[1] and re.fullmatch(
                r"(?:'s|\s*年?的?)?\s*(?:([A-Za-z]+)\s+)?", self.q[span[1] : start]
            )
            # "2024 bug issues" dates the issues; "last month's merged PRs" dates the merging; "in
            # October had PRs merged" dates nothing about the PRs themselves.
            # "merged PRs in 2023 about docs": a noun after a preposition is a topic, not the records dated
            if between and not re.fullmatch(
                _DATED_VERBS + "|had|has|have|saw|were|was|about|on|regarding|concerning|mentioning|re|for|with|to",
                between.group(1) or "",
                re.I,
            ):
                return True
            if not has_verb and end <= span[0] and re.fullmatch(r"\s+(?:from|of)\s+", self.q[end : span[0]], re.I):
                # "merged PRs from 2022": the year of their merging, as in "merged 2022 PRs"
                merged = self.collection == "pull_requests" and re.search(
                    r"\b(?:merged|landed|shipped)\s+$", self.q[:start], re.I
                )
                return not merged
        if has_verb:
            return False
        return bool(re.match(r"\s*(?:年)?\s*(?:创建|新建|提交|开)", after)) or bool(re.search(r"创建于\s*$", before))

    def _list_sizes(self) -> None:
        """ "issues with more than one label", "2+ labels", "at least two assignees", "multiple labels": how many
        elements a list field of the records holds (the noun is the list's name, singular or plural)."""
        lists = {
            path.rstrip("s"): path
            for path, info in self.schema.fields.items()
            if info.in_array and "." not in path and "object" in info.types
        }
        n = _NUMBER
        said = [
            rf"\b(more than|over|at least|fewer than|less than|under|exactly|at most)\s+{n}\s+(\w+)",
            rf"\b{n}\s*(\+|or more|or fewer|or less)\s+(\w+)",
            r"\b(multiple|several)\s+(\w+)",
        ]
        for pattern in said:
            for m in re.finditer(pattern, self.q, re.I):
                noun = m.group(m.lastindex or 0).lower()
                path = lists.get(noun.rstrip("s"))
                if path is None or self._is_used(m.span()):
                    continue
                words = [g.lower() for g in m.groups()[:-1]]
                if words[0] in ("multiple", "several"):
                    op, value = "size_gte", 2
                elif len(words) > 1 and words[1] in ("+", "or more"):
                    op, value = "size_gte", _number_of(words[0])
                elif len(words) > 1 and words[1] in ("or fewer", "or less"):
                    op, value = "size_lte", _number_of(words[0])
                else:
                    number = _number_of(words[1])
                    op, value = {
                        "more than": ("size_gte", number + 1),
                        "over": ("size_gte", number + 1),
                        "at least": ("size_gte", number),
                        "fewer than": ("size_lte", number - 1),
                        "less than": ("size_lte", number - 1),
                        "under": ("size_lte", number - 1),
                        "at most": ("size_lte", number),
                        "exactly": ("size_gte", number),
                    }[words[0]]
                    if words[0] == "exactly":
                        self.add_filter(path, number, "size_lte")
                if value < 0:
                    continue
                self.use(m.span())
                self.add_filter(path, value, op)

    def _thresholds(self) -> None:
        """Numeric conditions ("more than 5 replies", ">500 additions", "touching 6 files"), threads."""
        noun = (
            r"(additions|lines added|added lines|deletions|lines (?:deleted|removed)|(?:changed )?files|comments?|repl(?:y|ies)"
            r"|answers?|responses?)"
        )
        n = _NUMBER
        english = [
            (rf"(>=|<=|>|<)\s*(\d+)\s*{noun}\b", lambda m: (m.group(1), m.group(2), m.group(3))),
            (
                (
                    rf"\b(no more than|not more than|at most|up to|(?:did(?:n't| not)|never|does(?:n't| not)|do(?:n't| not)) (?:get|go|got|went|make it) "
                    rf"(?:past|beyond|over|above)|not (?:past|beyond|over|above))\s+{n}\s+{noun}\b"
                ),
                lambda m: ("<=", m.group(2), m.group(3)),
            ),
            (
                rf"\b(more than|over|at least|fewer than|less than|under|exactly|above|below|past|beyond|exceeding)\s+{n}\s+{noun}\b",
                lambda m: (m.group(1), m.group(2), m.group(3)),
            ),
            # "only one or two replies", "2 to 5 comments", "between 3 and 10 replies": both ends
            (
                rf"\b(?:only\s+|just\s+|between\s+)?{n}\s+(?:or|to|and|-)\s+{n}\s+{noun}\b",
                lambda m: ("range", (m.group(1), m.group(2)), m.group(3)),
            ),
            (
                rf"\b{n}\s*(\+|or more|or fewer|or less)\s+{noun}\b",
                lambda m: (
                    {"+": ">=", "or more": ">=", "or fewer": "<=", "or less": "<="}[m.group(2)],
                    m.group(1),
                    m.group(3),
                ),
            ),
            (rf"\b{noun}\s*(>=|<=|>|<|=)\s*(\d+)", lambda m: (m.group(2), m.group(3), m.group(1))),
            (
                rf"\b(?:with|touching|having|that have|that got|got)\s+(?:exactly\s+|only\s+|just\s+)?{n}\s+{noun}\b",
                lambda m: ("exactly", m.group(1), m.group(2)),
            ),
        ]
        chinese = [
            # "被回复了 10 次以上", "回复数达到 10 条以上": a bound said after the number
            (
                r"(回复|评论|留言)(?:数|数量)?(?:了|过|达到|达|有|在)?\s*(\d+)\s*(?:次|条|个|则)?\s*(以上|以下)",
                lambda m: (m.group(3), m.group(2), m.group(1)),
            ),
            (
                r"(超过|至少|多于|少于|大于|小于)\s*(\d+)\s*(?:条|个|行|则)?(回复|评论|留言|新增|删除|文件)",
                lambda m: (m.group(1), m.group(2), m.group(3)),
            ),
            (
                r"(回复|评论|留言|新增|删除|文件)数?\s*(超过|大于|多于|至少|少于|小于|达到)\s*(\d+)",
                lambda m: (m.group(2), m.group(3), m.group(1)),
            ),
            # "10 条以上的评论"
            (
                r"(\d+)\s*(?:次|条|个|则)?\s*(以上|以下)的?\s*(回复|评论|留言)",
                lambda m: (m.group(2), m.group(1), m.group(3)),
            ),
        ]
        ops = {
            "more than": "$gt",
            "over": "$gt",
            "above": "$gt",
            "past": "$gt",
            "beyond": "$gt",
            "exceeding": "$gt",
            ">": "$gt",
            "超过": "$gt",
            "多于": "$gt",
            "大于": "$gt",
            "at least": "$gte",
            ">=": "$gte",
            "至少": "$gte",
            "达到": "$gte",
            "fewer than": "$lt",
            "less than": "$lt",
            "under": "$lt",
            "below": "$lt",
            "<": "$lt",
            "少于": "$lt",
            "以上": "$gte",
            "以下": "$lte",
            "小于": "$lt",
            "<=": "$lte",
            "exactly": "$eq",
            "=": "$eq",
        }
        for pattern, read in english + chinese:
            for m in re.finditer(pattern, self.q, re.I):
                if self._is_used(m.span()):
                    continue
                op, number, word = read(m)
                path = self._count_field(word.lower())
                if path is None:
                    continue
                self.use(m.span())
                if op == "range":
                    low, high = sorted(_number_of(x) for x in number)
                    self.add_filter(path, low, "gte")
                    self.add_filter(path, high, "lte")
                    continue
                cond = ops[op.lower()]
                self.add_filter(path, _number_of(number), cond[1:])
                # "（含 10 条）", "(inclusive)": the bound's own aside, which the bound read already says
                aside = re.match(
                    r"\s*[（(]\s*(?:(?:含|包含|包括)\s*\d*\s*(?:次|条|个|则)?(?:在内)?|inclusive|incl\.?)\s*[）)]",
                    self.q[m.end() :],
                    re.I,
                )
                if aside:
                    self.use((m.end(), m.end() + aside.end()))
        self._repliers_thresholds()
        if self.collection == "pull_requests" and self.schema.has_path("requested_reviewers.login"):
            for mention in self.ctx.mentions:
                if mention.person and re.match(r"(?:'s)?\s+review queue\b", self.q[mention.end :], re.I):
                    self.use((mention.end, mention.end + 15))
        if self.schema.has_path("reviews.state") and self.mark(
            r"\bwithout (?:any |a )?reviews?\b|\bno reviews?\b|\bunreviewed\b|\bha(?:ve|s)n't had (?:a single|any) reviews?\b|没有(?:任何)?评审|没人评审"
        ):
            self.add_filter("reviews", None, "empty")
        self._replies_included()
        self._replies_in_others_threads()
        self._closed_by_someone_else()
        self._threads_without_someone()
        self._threads_the_starter_left()
        self._threads_only_the_starter_replied()
        self._a_replier_in_the_threads()
        self._replies_as_the_records()
        self._has_or_lacks()
        replies = field_for(self.schema, "replies")
        # Replies to someone's threads are counted themselves: the word "threads" there selects no parents.
        replying = person_field_for(self.schema, "replied_to")
        # "whose threads does Meagan reply to": her replies, grouped by the threads' starters
        whose = re.search(
            r"\b(?:whose|which (?:person|user|member|one)['’]s) (?:threads?|posts?|discussions?)\b"
            r"|回复[^，。？?]{0,6}谁发起的",
            self.q,
            re.I,
        )
        if (
            replies
            and not self.has_filter(replies)
            and not (replying and self.has_filter(replying[0]))
            and not whose
            and self.mark(
                r"\bthreads?\b|\bgot (?:any |some )?replies\b|\b(?:with|has|have|had) (?:any |some )?replies\b|帖子|讨论串|有人回(?:复|应|答|过|了)?|有回复|带(?:有)?回复|得到(?:了)?回复|收到(?:了)?回复"
                r"|\b(?:some(?:one|body)|any(?:one|body)|people|others)\s+(?:has\s+|have\s+)?(?:answered|replied(?:\s+to)?)\b"
            )
        ):
            self.add_filter(replies, 1, "gte")  # a thread is a message that has replies

    def _repliers_thresholds(self) -> None:
        """How many different people replied to a thread ("no more than one person replying", "only a
        single person replied", "at least 3 repliers"): the thread's count of distinct repliers."""
        if not self.schema.has_path("reply_users_count"):
            return
        people = (
            r"(?:different |distinct )?(?:people|persons?|users?|members?|folks|repliers?|participants?|responders?)"
        )
        replying = (
            r"(?:\s+(?:replying|replied|responding|responded|answering|answered|who (?:replied|answered|responded)))?"
        )
        bound = re.search(
            rf"\b(no more than|not more than|at most|up to|more than|over|at least|fewer than|less than|exactly)\s+"
            rf"{_NUMBER}\s+{people}{replying}\b",
            self.q,
            re.I,
        )
        # the bound after the number: "3+ different people replied", "two or more repliers", "三个或更多人回复"
        after = re.search(rf"\b{_NUMBER}\s*(\+|or more|or fewer|or less)\s+{people}{replying}\b", self.q, re.I)
        after_zh = re.search(
            r"(\d+|[一两二三四五六七八九十])\s*(?:个|位)?\s*(或更多|或以上|及以上|或更少|或以下|及以下)的?(?:不同的?)?人(?:回复|回)",
            self.q,
        )
        # "至少有五个不同的人回复", "超过 3 位不同的人回复过": the bound before the number
        before_zh = re.search(
            r"(至少|超过|多于|少于|不到|最多|不超过)\s*有?\s*(\d+|[一两二三四五六七八九十])\s*(?:个|位)?\s*(?:不同的?)?人\s*(?:回复|回)",
            self.q,
        )
        single = re.search(
            rf"\b(?:only|just)\s+(?:a\s+single|one|1)\s+{people}{replying}\b|\b(?:a\s+)?single\s+replier\b",
            self.q,
            re.I,
        )
        ops = {
            "no more than": "lte",
            "not more than": "lte",
            "at most": "lte",
            "up to": "lte",
            "more than": "gt",
            "over": "gt",
            "at least": "gte",
            "fewer than": "lt",
            "less than": "lt",
            "exactly": "eq",
        }
        if bound and not self._is_used(bound.span()):
            self.use(bound.span())
            self.add_filter("reply_users_count", _number_of(bound.group(2)), ops[bound.group(1).lower()])
        elif after and not self._is_used(after.span()):
            self.use(after.span())
            op = {"+": "gte", "or more": "gte", "or fewer": "lte", "or less": "lte"}[after.group(2).lower()]
            self.add_filter("reply_users_count", _number_of(after.group(1)), op)
        elif after_zh and not self._is_used(after_zh.span()):
            self.use(after_zh.span())
            number = after_zh.group(1)
            count = int(number) if number.isdigit() else _CHINESE_DIGITS[number]
            self.add_filter(
                "reply_users_count", count, "gte" if after_zh.group(2) in ("或更多", "或以上", "及以上") else "lte"
            )
        elif before_zh and not self._is_used(before_zh.span()):
            self.use(before_zh.span())
            number = before_zh.group(2)
            count = int(number) if number.isdigit() else _CHINESE_DIGITS[number]
            bound_of = {
                "至少": "gte",
                "超过": "gt",
                "多于": "gt",
                "少于": "lt",
                "不到": "lt",
                "最多": "lte",
                "不超过": "lte",
            }
            self.add_filter("reply_users_count", count, bound_of[before_zh.group(1)])
        elif single and not self._is_used(single.span()):
            self.use(single.span())
            self.add_filter("reply_users_count", 1)

    def _threads_the_starter_left(self) -> None:
        """ "threads Ida started but didn't follow up in", "her threads she never replied in herself",
        "她自己一次都没回复的": threads whose repliers do not include the person who started them."""
        author, joined = person_field_for(self.schema, "author"), person_field_for(self.schema, "reply_user")
        starter = next(
            (f for f in self.filters if author and f.field == author[0] and f.op == "eq" and not f.negate), None
        )
        if starter is None or joined is None or not _THREAD_WORD.search(self.q):
            return
        if self.has_filter(joined[0]):
            return  # someone else is named as the replier ("Ana's threads Ben never replied in")
        if self.mark(
            r"\b(?:did(?:n't| not)|never|does(?:n't| not)|has(?:n't| not)|had(?:n't| not))\s+(?:\w+\s+)?"
            r"(?:follow(?:ed|ing)? up|repl(?:y|ied|ying)|answer(?:ed|ing)?|respond(?:ed|ing)?|write|wrote|writing|"
            r"post(?:ed|ing)?|(?:chim|jump|weigh|pitch)(?:e|ed|es|ing)? in)"
            r"(?:\s+(?:a\s+)?(?:single\s+)?(?:repl(?:y|ies)|answer|response|word))?"
            r"(?:\s+(?:in|to)\s+(?:it|them|there))?(?:\s+(?:herself|himself|themselves))?\b"
            r"|(?:她|他)?自己(?:一次)?(?:都|也)?(?:没有?|从没|从未)(?:回复|回)过?"
            # "got answers only from other people": every replier someone else
            r"|\b(?:repl(?:y|ies)|answers?|responses?)\s+only\s+(?:from|by)\s+(?:other (?:people|users|members|folks)|others"
            r"|someone else|somebody else)\b"
        ):
            self.add_filter(joined[0], starter.value, "ne")
            # said both ways ("answers only from other people, with her never chiming in"): one condition
            self.mark(
                r"\bonly\s+(?:from|by)\s+(?:other (?:people|users|members|folks)|others|someone else|somebody else)\b"
                r"|\b(?:never|not) (?:(?:chim|jump|weigh|pitch)(?:e|ed|es|ing)? in|repl(?:y|ied|ying)|answer(?:ed|ing)?)\b"
            )

    def _closed_by_someone_else(self) -> None:
        """ "albertvillanova's issues closed by somebody other than himself", "where he wasn't the one who
        closed them": a named author's records whose recorded closer is someone else (a closer is
        recorded). Without a named author ("other than the person who opened it") it compares two
        fields, which no rule plans: left unread."""
        author, closer = person_field_for(self.schema, "author"), person_field_for(self.schema, "closer")
        mine = next(
            (
                f
                for f in self.filters
                if author and f.field == author[0] and f.op == "eq" and not f.negate and isinstance(f.value, str)
            ),
            None,
        )
        if not (mine and closer) or self.has_filter(closer[0]):
            return
        said = re.search(
            r"\b(?:(?:closed|shut|resolved)\s+)?by (?:somebody|someone|anybody|anyone|people|a person|others?|another person)"
            r"(?: else)?\s+(?:other than|besides|but|except|apart from)\s+(?:himself|herself|themselves|themself|him|her|them)\b"
            r"|\b(?:(?:closed|shut|resolved)\s+)?by (?:somebody|someone|another person|others) else\b"
            r"|\b(?:he|she|they)\s+(?:wasn't|was not|weren't|were not|isn't|is not)\s+the (?:one|person) (?:who|that) "
            r"(?:closed|shut|resolved) (?:it|them)\b"
            r"|\b(?:he|she|they)\s+(?:didn't|did not|never)\s+(?:close|shut|resolve) (?:it|them)\s+(?:himself|herself|themselves)\b",
            self.q,
            re.I,
        )
        if said is None:
            return
        for word in re.finditer(r"\S+", said.group(0)):  # "closed" may be the state's word already
            span = (said.start() + word.start(), said.start() + word.end())
            if not self._is_used(span):
                self.use(span)
        self.filters.append(Filter(closer[0], "exists", True, span=said.span()))
        self.filters.append(Filter(closer[0], "ne", mine.value, span=said.span()))

    def _closer_and_author(self) -> None:
        """Who closed a record, said of its own author without naming anyone: "closed by someone other than
        its author", "by somebody who didn't open them", 别人关的 (the closer is recorded and is not the
        author); "did their own authors close", "the reporter closed it themselves", 作者自己关的 (the closer
        is the author). Two fields of one record compared; read before the states, so the "open" of
        "who didn't open them" is no state."""
        author, closer = person_field_for(self.schema, "author"), person_field_for(self.schema, "closer")
        if not (author and closer):
            return
        other = self.mark(_CLOSED_BY_SOMEONE_ELSE)
        own = None if other else self.mark(_CLOSED_BY_THE_AUTHOR)
        if own and not _CLOSE_VERB.search(self.q):
            own = None  # "their own authors" with no closing said: some other relation
            self.used.pop()
            self.how.pop()
        if other or own:
            self.add_filter(closer[0], author[0], "ne_field" if other else "eq_field")

    def _assigned_to_the_author(self) -> None:
        """ "assigned to the person who opened them", "where the assignee is also the author", "self-assigned",
        作者自己指派给自己: the author among the record's assignees (a list: `eq_field` reads it as "among")."""
        author, assignee = person_field_for(self.schema, "author"), person_field_for(self.schema, "assignee")
        if author and assignee and self.mark(_ASSIGNED_TO_THE_AUTHOR):
            self.add_filter(author[0], assignee[0], "eq_field")

    def _threads_only_the_starter_replied(self) -> None:
        """ "Monserrate's threads that got no reply from anyone else", "where nobody but Monserrate
        replied", "threads with only self-replies": threads with replies, all of them the starter's —
        one replier, the starter. Not threads without replies (that reading of "no reply" is undone)."""
        author, joined = person_field_for(self.schema, "author"), person_field_for(self.schema, "reply_user")
        replies = field_for(self.schema, "replies")
        starter = next(
            (
                f
                for f in self.filters
                if author and f.field == author[0] and f.op == "eq" and not f.negate and isinstance(f.value, str)
            ),
            None,
        )
        if not (starter and joined and replies and self.schema.has_path("reply_users_count")):
            return
        said = re.search(
            r"\b(?:no |without (?:a |any )?)(?:repl(?:y|ies)|answers?|responses?) (?:from|by) (?:anyone|anybody|someone|somebody|people|others?) else\b"
            r"|\b(?:nobody|no one|no-one|none) (?:but|except|other than|besides|apart from) [\w\u00C0-\u024F'’-]+"
            r"(?: (?:herself|himself|themselves))? (?:repl(?:ied|ies|y)|answered|responded)\b"
            r"|\bonly (?:self-?repl(?:ies|y)|(?:her|his|their) own repl(?:ies|y))\b",
            self.q,
            re.I,
        )
        if said is None or not _THREAD_WORD.search(self.q):
            return
        overlaps = lambda f: f.span is not None and f.span[0] < said.end() and said.start() < f.span[1]  # noqa: E731
        self.filters = [f for f in self.filters if not (f.field == replies and overlaps(f))]  # "no reply" was not all
        for word in re.finditer(r"\S+", said.group(0)):  # the starter's name is the person step's already
            span = (said.start() + word.start(), said.start() + word.end())
            if not self._is_used(span):
                self.use(span)
        if not self.has_filter(replies):
            self.filters.append(Filter(replies, "gte", 1, span=said.span()))
        self.filters.append(Filter("reply_users_count", "eq", 1, span=said.span()))
        self.filters.append(Filter(joined[0], "eq", starter.value, span=said.span()))

    def _a_replier_in_the_threads(self) -> None:
        """A person read as one of a thread's repliers (the linking step: "Clarine's threads Dann replied
        in") with the words that say it: the reply verb is read, and a negation ("never heard from Dann",
        "no reply from Dann", "Dann 一次都没回复过") keeps the threads whose repliers do not include them —
        threads with replies, not threads without any (that reading of "no reply" is undone)."""
        joined, replies = person_field_for(self.schema, "reply_user"), field_for(self.schema, "replies")
        replier = next(
            (f for f in self.filters if joined and f.field == joined[0] and f.op == "eq" and f.span is not None), None
        )
        if replier is None or replier.span is None or replies is None:
            return
        a, b = replier.span
        negated = re.search(
            r"(?:\b(?:never|not|n't|didn't|hasn't|haven't)\s+(?:\w+\s+)?(?:heard|hear)\s+(?:anything\s+)?from"
            r"|\b(?:no|without(?:\s+(?:any|a))?)\s+(?:single\s+)?(?:repl(?:y|ies)|answers?|responses?|word)\s+(?:\w+\s+)?(?:from|by)"
            # "didn't get a single reply from Nana", "never received any answer from Dann"
            r"|(?:\b(?:never|not)|n['’]t)\s+(?:\w+\s+){1,3}?(?:repl(?:y|ies)|answers?|responses?|word)\s+(?:from|by))\s+@?$",
            self.q[:a],
            re.I,
        )
        negated_after = re.match(
            r"\s*(?:一次)?(?:都|也)?(?:没有?|从没|从未)(?:回复|回)过?"
            r"|\s+(?:(?:has|have|had|did|does|do)(?=n['’]t)|has\s+|have\s+|had\s+|did\s+)?(?:never|not|n['’]t)\s+(?:once\s+)?"
            r"(?:repl(?:y|ied)|answer(?:ed)?|respond(?:ed)?)(?:\s+(?:in|to))?\b",
            self.q[b:],
            re.I,
        )
        said = (negated.start(), negated.end()) if negated else (b, b + negated_after.end()) if negated_after else None
        if said is None:
            verb = re.match(
                r"(?:['’]s)?\s*(?:(?:did|does|has|have|had|ever|also|once)\s+)*"
                r"(?:repl(?:y|ies|ied|ying)|respond(?:s|ed|ing)?|answer(?:s|ed|ing)?)(?:\s+(?:in|to))?\b"
                r"|\s*(?:有)?(?:回复|回)过?",
                self.q[b:],
                re.I,
            )
            if verb and verb.group(0).strip():
                self.use((b, b + verb.end()))
            return
        self.use(said)
        overlaps = lambda f: f.span is not None and f.span[0] < said[1] and said[0] < f.span[1]  # noqa: E731
        # the words read again here ("didn't reply": no "not a reply" condition) say only this
        self.filters = [f for f in self.filters if f is replier or not overlaps(f)]
        replier.op = "ne"
        if not self.has_filter(replies):
            self.filters.append(Filter(replies, "gte", 1, span=said))

    def _threads_without_someone(self) -> None:
        """ "threads Carman took no part in (didn't start, didn't reply)", "threads without Carman in them
        at all": threads neither started by someone nor replied to by them — the starter is not them and
        they are not among the thread's repliers."""
        author, joined = person_field_for(self.schema, "author"), person_field_for(self.schema, "reply_user")
        replies = field_for(self.schema, "replies")
        if not (author and joined and replies) or not _THREAD_WORD.search(self.q):
            return
        person = next(
            (f for f in self.filters if f.field == author[0] and f.op == "eq" and isinstance(f.value, str)), None
        )
        phrase = re.search(
            r"(?:\b(?:take|took|taken|takes|taking|had|has|have|having|play(?:ed|s)?) no part(?: in)?"
            r"|\b(?:did(?:n't| not)|never|does(?:n't| not)) (?:take part|participate|join|get involved)(?: in)?"
            r"|\bin (?:them|it) at all|\bin (?:them|it)(?= *(?:$|[?,.;:—-]))"
            # "threads Chantelle stayed out of", "kept out of"
            r"|\b(?:stay(?:ed|s|ing)?|kept|keep(?:s|ing)?) (?:well )?out of"
            # "not started by her and no reply from her": both parts said outright
            r"|\b(?:not|never) (?:started|opened|begun|kicked off) by (?:her|him|them|[\w\u00C0-\u024F'’-]+),? (?:and|or|nor|with)"
            r" (?:(?:with )?no|without(?: a| any)?|never (?:a|any)) (?:single )?(?:repl(?:y|ies)|answers?|responses?)"
            r" (?:from|by) (?:her|him|them|[\w\u00C0-\u024F'’-]+))\b(?:\s*\([^)]*\))?"
            # "既没发起也没回复过的", "没参与过的": neither started nor replied
            r"|既?(?:没有?|从没|从未)(?:发起|开启|开)过?(?:[，,、]?\s*)?(?:也|又)?(?:没有?|从没|从未)(?:回复|回|参与)过?"
            r"|(?:没有?|从没|从未)参与过?",
            self.q,
            re.I,
        )
        if person is None or phrase is None:
            return
        inside = lambda f: f.span is not None and phrase.start() <= f.span[0] and f.span[1] <= phrase.end()  # noqa: E731
        self.filters = [f for f in self.filters if not inside(f)]  # "(didn't start, didn't reply)" restates it
        person.negate = True
        self.use(phrase.span())
        self.add_filter(joined[0], person.value, "ne")
        if not self.has_filter(replies):
            self.add_filter(replies, 1, "gte")

    def _replies_in_others_threads(self) -> None:
        """ "Chantelle's replies in other people's threads", "threads she didn't start", "别人发起的讨论串":
        replies (a thread starter is recorded) whose thread someone other than the author started. Said
        of no one by name ("who answers other people's threads most"), the thread's starter is compared
        with each reply's author."""
        author, replying = person_field_for(self.schema, "author"), person_field_for(self.schema, "replied_to")
        mine = next(
            (f for f in self.filters if author and f.field == author[0] and f.op == "eq" and not f.negate), None
        )
        if not (author and replying) or any(
            f.field == replying[0] and f.op == "eq" and not f.negate for f in self.filters
        ):
            return  # (a thread starter excluded, "not started by Chantelle", still leaves other people's threads)
        if self.mark(
            r"(?:\b(?:in|on|under|within|inside)\s+)?\b(?:other people|others|someone else|somebody else|other users|other members"
            r"|other folks)['’]?s?\s+(?:threads?|posts?|discussions?)\b"
            r"|\bthreads?\s+(?:that\s+)?\w+\s+(?:did(?:n't| not)|never|has(?:n't| not)|had(?:n't| not))\s+(?:start|started|open|opened|begin|begun|kick(?:ed)? off)\b"
            r"|\bthreads?\s+(?:not|never)\s+(?:started|opened|begun|kicked off)\s+by\s+(?:her|him|them|themselves|\w+)\b"
            r"|\bthreads?\s+(?:that\s+|which\s+)?(?:other people|others|someone else|somebody else|another person|other users)"
            r"\s+(?:started|opened|began|begun|kicked off|created)\b"
            r"|\bthreads?\s+(?:started|opened|begun|kicked off|created)\s+by\s+(?:other people|others|someone else|somebody else"
            r"|another person|other users)\b"
            r"|\b(?:not counting|excluding|except(?: for)?|other than|leaving out|minus|apart from|aside from|but not|outside(?: of)?|not in)"
            r"\s+(?:the ones\s+|those\s+|any\s+)?(?:(?:in|on|under)\s+)?(?:her|his|their|my|your) own threads?\b"
            r"|(?<=threads)\b.{0,40}?(?:\bnot|n['’]t) (?:in )?(?:her|his|their|my|your) own\b"
            r"|(?:别人|他人|其他人)(?:发起|开启|创建|开)?的(?:讨论串|帖子|讨论|话题)"
        ):
            self.add_filter(replying[0], True, "exists")
            if mine:
                self.add_filter(replying[0], mine.value, "ne")
            else:
                self.add_filter(replying[0], author[0], "ne_field")

    def _replies_included(self) -> None:
        """ "lynne msgs may 2019 incl replies", "messages, replies included", "(replies too)": every message,
        replies with the rest — no condition, but read (not a topic "incl", nor the records narrowed to replies)."""
        replying = person_field_for(self.schema, "replied_to")
        if replying is None or self.has_filter(replying[0]):
            return
        self.mark(
            r"\b(?:incl\.?|including|inclusive of|counting|plus)\s+(?:(?:the|any|thread)\s+)*replies\b"
            r"|\b(?:thread\s+)?replies\s+(?:included|too|as well|counted(?:\s+too)?|and all)\b",
            "implied",
        )

    def _replies_as_the_records(self) -> None:
        """ "Marnie's replies", "her thread replies", "replies by Nana", "messages that were thread
        replies", "replies inside threads": the records are replies (a thread starter is recorded), not
        every message of hers. Not "with replies", "got 3 replies" or "replies to X" (the other rules
        read those)."""
        replying = person_field_for(self.schema, "replied_to")
        if replying is None or self.has_filter(replying[0]):
            return
        if self.mark(
            r"(?<=['’]s )(?:thread\s+)?replies\b|\b(?:her|his|their|my|your)\s+(?:thread\s+)?replies\b"
            r"|\breplies\s+(?=(?:written\s+|posted\s+|sent\s+)?by\b)"
            # "how many replies did Earlean write", "earlean thread replies": replies someone wrote
            r"|\b(?:thread\s+)?replies\s+(?=(?:did|does|do|has|have|had)\s+(?:\S+\s+){1,2}?(?:write|wrote|written|post|posted"
            r"|send|sent|make|made|leave|left|add|added|drop|dropped)\b)"
            r"|(?<!total )(?<!sum of )\bthread[\s-]+replies\b(?!\s*(?:count|total|number|per|each)\b)"
            r"|\b(?:were|was|are|is|as)\s+(?:thread\s+replies|replies\s+(?:inside|within|in)\s+(?:a\s+|any\s+)?threads?)\b"
            # "messages … that are replies": which messages, not a thread's count of them
            r"|(?<=\bare )replies\b|(?<=\bwere )replies\b"
            # "reply counts broken down by workspace", 每个工作区各有多少条回复: the replies, counted per group
            r"|\brepl(?:y|ies)\s+counts?(?=\s+(?:broken\s+down\s+|split\s+|grouped\s+)?(?:by|per|for\s+each|in\s+each|across)"
            r"\s+(?:workspace|channel|user|person|member|author|poster|month|week|day|year)s?\b)"
            r"|(?<=多少条)回复(?!的)|(?<=几条)回复(?!的)|(?<=多少条 )回复(?!的)"
            # 在讨论串里的回复, 她的回复中: the replies themselves, among which the rest of the question counts
            r"|(?:在\s*)?(?:讨论串|帖子|thread)\s*(?:里|中|内)的?\s*回复|的回复(?=\s*(?:中|里|当中|之中))"
            r"|回复\s*[（(]\s*(?:在\s*)?(?:讨论串|帖子|thread)\s*(?:里|中|内)的?\s*[)）]"  # 回复（thread 里的）
        ):
            self.add_filter(replying[0], True, "exists")
            return
        # "who wrote the most replies", "who replied to others the most", 谁回复别人最多: people ranked by
        # the replies they wrote (not by all their messages; "replied to X" is the replied_to rule's)
        said = _REPLIES_WRITTEN.search(self.q) or _WHO_REPLIED.search(self.q)
        words = next((said.span(i) for i in range(1, len(said.groups()) + 1) if said.group(i)), None) if said else None
        if words and self._used_as(words) in (None, "shape"):  # "who replied to others the most": the shape's words
            if not self._is_used(words):
                self.use(words)
            self.filters.append(Filter(replying[0], "exists", True, span=words))

    def _has_or_lacks(self) -> None:
        """Whether a record has a thing at all, said in any words the rules above did not list: a
        thing (a label, an assignee, comments, a description) with a negation before it in its
        clause ("issues that never got a label", "PRs lacking a description", "issues nobody has
        commented on") is absent; with "with"/"has"/"got" just before it, present. Not when a value
        follows ("not labelled bug" excludes a label; the negation step reads it) or when the
        field is already conditioned."""
        for noun in _THING.finditer(self.q):
            if self._is_used(noun.span()):
                continue
            word = next(k for k, v in noun.groupdict().items() if v)
            path, empty = self._thing_path(word), None
            if path is None or any(f.span and 0 <= f.span[0] - noun.end() <= 4 for f in self.filters):
                continue
            before = self.q[: noun.start()]
            lack = _LACK_BEFORE_PARTICIPLE if _PARTICIPLE.match(noun.group(0)) else _LACK_BEFORE_NOUN
            cue = lack.search(before) or _LACK_CUE_ZH.search(before)
            if cue and not self._is_used(cue.span()):
                empty = True
            else:
                cue = _HAVE_CUE.search(before)
                empty = False if cue and not self._is_used(cue.span()) else None
            if empty is None and _SOMEONE.search(noun.group(0)):
                empty, start = False, noun.start()  # "assigned to someone", "mentioning anybody": there is one
            elif empty is None:
                continue
            else:
                start = cue.start()
            if self.has_filter(path):
                # said twice ("no one has picked up yet (no assignee)"): read, if it says the same
                if any(f.field == path and (f.op in ("empty", "in")) == empty for f in self.filters):
                    self.use((start, noun.end()))
                continue
            self.use((start, noun.end()))
            if word in ("comment", "repl"):
                self.add_filter(path, [0, None], "in") if empty else self.add_filter(path, 1, "gte")
            else:
                self.add_filter(path, None, "empty" if empty else "not_empty")

    def _thing_path(self, word: str) -> str | None:
        if word in ("comment", "repl"):
            return self._count_field(word)
        if word in ("assignee", "mentioned"):
            return (person_field_for(self.schema, word) or (None,))[0]
        if word == "body":
            return "body" if self.schema.has_path("body") else None
        return field_for(self.schema, word)

    def _count_field(self, word: str) -> str | None:
        """The numeric field a counted noun refers to, if this collection has it."""
        candidates = {
            "addition": ["additions"],
            "lines added": ["additions"],
            "added lines": ["additions"],
            "新增": ["additions"],
            "deletion": ["deletions"],
            "lines deleted": ["deletions"],
            "lines removed": ["deletions"],
            "删除": ["deletions"],
            "file": ["changed_files"],
            "changed files": ["changed_files"],
            "文件": ["changed_files"],
            "comment": ["comments", "fields.comment.total"],
            "reaction": ["reactions.total_count"],  # "drew the most reactions": every emoji counted
            "评论": ["comments"],
            "留言": ["comments"],  # "留言超過 2 則": the comments on a PR or issue
            # a reply to an issue is a comment on it
            "repl": ["reply_count", "comments"],
            "回复": ["reply_count", "comments"],
            "answer": ["reply_count", "comments"],
            "respons": ["reply_count", "comments"],
        }
        for key, paths in candidates.items():
            if word.startswith(key):
                return next((p for p in paths if self.schema.has_path(p)), None)
        return None


_THREAD_WORD = re.compile(r"\bthreads?\b|讨论串|帖子", re.I)
# The author of a record named by its part, not by name: "the issue's own author", "the person who opened it".
_AUTHOR_NOUN = (
    r"(?:(?:(?:issue|pr|pull request|ticket|bug)['’]s\s+)?(?:own\s+|original\s+)?(?:authors?|reporters?|openers?|creators?|submitters?|filers?|OPs?)"
    r"|(?:person|one|people|user|folks?) (?:who|that) (?:opened|filed|created|reported|wrote|submitted|raised) (?:it|them|the \w+))"
)
_CLOSE_VERB = re.compile(r"\b(?:clos\w*|shut\w*|resolv\w*)\b|关", re.I)
# "closed by someone other than its author", "by somebody who didn't open them", "not by the reporter", 别人关的.
_CLOSED_BY_SOMEONE_ELSE = (
    r"\b(?:(?:closed|shut|resolved|done)\s+)?(?:by|is|was|were) (?:somebody|someone|anybody|anyone|people|a person|others?"
    r"|another person|a different person|other people)(?: else)?\s+(?:other than|besides|but|except|apart from|rather than|instead of|not)\s+"
    rf"(?:(?:the|its|their|his|her|whoever)\s+)?{_AUTHOR_NOUN}"
    r"|\b(?:(?:closed|shut|resolved|done)\s+)?by (?:somebody|someone|anybody|anyone|people|a person|others|another person"
    r"|a different person|other people|those) (?:who|that) (?:did(?:n['’]t| not)|had(?:n['’]t| not)|never|was(?:n['’]t| not)"
    r"|were(?:n['’]t| not)|is(?:n['’]t| not)|are(?:n['’]t| not))\s+(?:\w+\s+)?(?:open|file|create|report|write|wrote|submit|author"
    r"|start|raise)\w*(?:\s+(?:it|them|the \w+))?\b"
    rf"|\bnot (?:(?:closed|shut|resolved) )?by (?:the|its|their) {_AUTHOR_NOUN}"
    r"|(?:被)?(?:别人|他人|其他人|非作者|不是作者(?:本人)?的人)(?:关闭|关掉|关)"
)
# "did their own authors close", "the reporter closed the issue themselves", "self-closed", 作者自己关的.
_CLOSED_BY_THE_AUTHOR = (
    rf"\b(?:closed|shut|resolved) by (?:the|its|their) {_AUTHOR_NOUN}(?:\s+(?:themselves|himself|herself|themself))?"
    rf"|\b(?:the|its|their) {_AUTHOR_NOUN}\s+(?:\w+\s+)?(?:closed|shut|resolved|close|closes)(?:\s+(?:it|them|the \w+))?"
    r"\s+(?:themselves|himself|herself|themself)\b"
    r"|\b(?:their|its|his|her) own (?:authors?|reporters?|openers?|creators?|submitters?)\b"
    r"|\bself-?closed\b|\bclosed (?:it|them) (?:themselves|himself|herself|themself)\b"
    r"|(?:作者|提出者|发起人|提交者|提的人)?(?:自己|本人)(?:关闭|关掉|关)"
)
# The things a record has or lacks, by the role or count they are read as.
_THING = re.compile(
    r"\b(?:(?P<label>labels?|labell?ed|tags|tagged)|(?P<assignee>assignees?|assigned(?: to (?:anyone|anybody|someone|somebody|a person))?|owners?"
    r"|picked up|claimed|taken on)"
    r"|(?P<milestone>milestones?)|(?P<comment>comments?|comment(?:ed|ing)(?: on)?)|(?P<repl>repl(?:y|ies)|replied(?: to)?|answers?|answered|responses?)"
    r"|(?P<mentioned>(?:@-?)?mention(?:s|ed|ing)?(?: (?:anyone|anybody|someone|somebody|people|others))?)|(?P<reaction>reactions?)"
    r"|(?P<body>descriptions?|bod(?:y|ies)))\b",
    re.I,
)
# A negation before the thing. Before a noun ("a label", "comments") it says the record lacks it only
# directly ("no label", "without a milestone") or through a verb of having ("never got a label", "without
# ever having an assignee", "has not been given an assignee", "didn't receive any comments"): "were not
# replies" says what a message is, not what it lacks. Before a participle ("never labelled", "nobody has commented", "without anyone
# ever commenting") the negation itself says it.
_FILLING = (
    r"(?:(?:a|an|any|a single|single|one|even|ever|yet|so much as|once|at all|been|be|being|was|were|is|are|it|them"
    r"|they|do|does|did|has|have|had|to|anyone|anybody|someone|somebody|people)\s+)*"
)
_HAVING = (
    r"(?:get|gets|got|gotten|getting|receive|receives|received|have|has|had|having|given|assigned|attached|added"
    r"|drew|draw|attracted|attract)\s+"
)
# A contraction's "n't" with its apostrophe, or one of the usual contractions written without it:
# never the "nt" ending a word ("different people replied").
_NEGATION = (
    r"(?:\b(?:not|never|nobody|no one|no-one)\b|n['’]t\b"
    r"|\b(?:do|does|did|is|are|was|were|has|have|had|ca|wo|could|would|should)nt\b)"
)
_LACK_BEFORE_NOUN = re.compile(
    rf"(?:\b(?:no|zero|without|lacking|missing|none)\s+{_FILLING}(?:{_HAVING}{_FILLING})?|{_NEGATION}\s+{_FILLING}{_HAVING}{_FILLING})$",
    re.I,
)
_LACK_BEFORE_PARTICIPLE = re.compile(rf"(?:{_NEGATION}|\bwithout\b)\s+{_FILLING}$", re.I)
_PARTICIPLE = re.compile(
    r"(?:labell?ed|tagged|assigned|picked up|claimed|taken on|commented|commenting|replied|answered|mentioned"
    r"|mentioning)\b",
    re.I,
)
_LACK_CUE_ZH = re.compile(r"(?:没有?|无|未|从未|从没)[被打过任何人收到得到一个条了给有]{0,6}$")
_SOMEONE = re.compile(r"\b(?:anyone|anybody|someone|somebody|a person|people|others)$", re.I)
# Having it, said just before the thing: "with a", "that have any", "got some".
_HAVE_CUE = re.compile(
    r"\b(?:with|has|have|having|had|got|get|gets|received|carrying|bearing)\s+(?:(?:a|an|any|some|at least one|one or more)\s+)?$"
    r"|(?:有|带)(?:任何)?$",
    re.I,
)
# "don't have an assignee", "doesn't have any labels", "haven't got a milestone": what follows is absent.
# "an empty assignee list", "whose labels are empty": the list itself said to be empty
_EMPTY_LIST = (
    r"\b(?:an? |the )?empty {0}s?(?: list| field| array)?\b|\b{0}s? (?:list |field )?(?:is |are |was |were )?empty\b"
)
# A negation right before the words of having something ("don't tag anybody", 没有 @ 任何人, "never pinging
# others"): the something is absent.
_NEGATION_JUST_BEFORE = r"(?:\b(?:do|does|did)(?:n't| not)|n['’]t|\bnot|\bnever|\bwithout|\bno)\s+(?:(?:ever|even|once|actually)\s+)?$|(?:没有?|沒有?|未|不|无|無)\s*$"
_LACKS = r"(?:\b(?:do|does|did)(?:n't| not)|\bha(?:ve|s)(?:n't| not)(?: got)?) (?:have |got )?(?:an? |any |a single )?"
# A message that answers no one: "not replies to somebody", "aren't thread replies", 不是回复.
_NOT_A_REPLY = (
    r"\bnon-?repl(?:y|ies)\b|\b(?:rather than|instead of) (?:as )?(?:a )?(?:thread )?repl(?:y|ies)\b|\bneither (?:a )?(?:thread )?repl(?:y|ies)\b|\btop[- ]level\b|顶层|(?:\bnot|n't|\bnever)\s+(?:(?:itself|themselves)\s+)?(?:a\s+)?(?:thread\s+)?repl(?:y|ies)(?:\s+to\s+(?:somebody|someone|anyone|anybody|others?))?\b"
    r"|不是回复"
)
# A message outside any thread: neither a reply nor (with "standalone") a thread start.
_NOT_IN_A_THREAD = (
    r"(?:\bnot|n't|\bnever) (?:(?:been|being|was|were|is|are) )?(?:in|part of|inside) (?:any |a |one )?threads?\b|\bstand-?alone\b|\bnon-?threaded\b|\bunthreaded\b"
    r"|\bneither in a thread\b"
    r"|不属于(?:任何)?(?:一个)?(?:讨论串|帖子|线程)"
    r"|\boutside (?:of )?(?:any |a )?threads?\b|\b(?:no|without(?: a| any)?) threads?\b"
    r"|\bstand(?:s|ing)? alone\b|不在(?:任何)?(?:帖子|讨论串|线程)"
)
_CHINESE_DIGITS = {c: n for n, c in enumerate("一二三四五六七八九十", 1)} | {"两": 2}
# A count written as digits or as a word ("more than ten answers", "one or two replies").
_NUMBER = r"(\d+|" + "|".join(NUMBER_WORDS) + r")"


def _number_of(text: str) -> int:
    return int(text) if text.isdigit() else NUMBER_WORDS[text.lower()]


# "no longer open", "not open anymore", "不再开放": closed.
_NO_LONGER_OPEN = (
    r"\bno longer (?:open|active|pending)\b|\bnot (?:open|active|pending) any ?more\b|\bnot (?:still )?open\b"
    r"|\b(?:isn't|aren't|wasn't|weren't) (?:open|pending)\b|不再(?:开放|打开|开着)|已经不再开放"
    r"|(?:已经|已)?(?:不是|不在|并非|非)\s*(?:open|开放|打开|开着)(?:\s*(?:状态|的状态))?"
)
# "not closed (yet)", "nobody closed yet", "至今仍开放": open.
_NOT_CLOSED = (
    r"(?:\bnot|n['’]t) (?:yet )?closed(?: yet)?\b(?! as)|\b(?:is |are |still |has |have )?yet to (?:be |get )?(?:closed|resolved|shut)\b|(?:n't|\bnot) (?:yet )?been (?:closed|resolved)(?: yet)?\b|\b(?:nobody|no one|no-one) (?:has |have )?(?:ever )?closed\b|\bunclosed\b"
    r"|\bstill (?:open|pending)\b|至今仍(?:然)?(?:开放|打开|开着)|仍(?:然)?(?:开放|打开|开着)|仍未关闭|尚未关闭"
    r"|(?:还)?没有?(?:被)?关闭(?!.{0,3}(?:merge|合并|合入))|未(?:被)?关闭|(?:还)?没关(?!闭)(?:的|掉)?"
)
# Past participles that carry a date of their own ("merged", "closed"): a time before them dates them.
_DATED_VERBS = (
    r"merged|closed|opened|created|resolved|fixed|updated|filed|reported|submitted|posted|reviewed|shipped|landed"
)
# What may stand between a negation and the value it excludes: the words below, a preposition ("not
# on payments-api", "not for the docs team") and the words naming the value's field (`_names_of`).
_NEGATION_WORDS = (
    r"(?:\b(?:if\s+(?:you|we)\s+)?(?:don't|do not)\s+count|\bnot|n't|\bnever|\bwithout|\bnon-?|\bexcept(?: for)?|\bexcluding|\bother than|\bneither|\bnor|\bbut not|\bbesides|\bno"
    r"|\boutside(?: of)?|\bnot counting|\bleaving out|\bleave out|\bminus|\bapart from|\baside from|\bignoring|\bexclude|\bignore"
    r"|没有|不是|不带|除了|除|非|(?:既|也)?不在|不含|不包括|排除)\s*"
)
# What closes an exception said in Chinese after its value ("除了 X 以外的人", "除 X 之外").
_EXCEPTION_CLOSED = re.compile(r"\s*(?:以外|之外)(?:的(?:人|成员|用户)?)?")
_BETWEEN = (
    r"labell?ed|tagged|marked|with|the|a|an|any|by|from|in|on|for|of|at|under|authored|written|opened|created|filed|reported"
    r"|assigned|to|started|label|labels|tag|a label|as|one of|either|the ones|ones|anything|everything|those|that are"
    r"|which are|any issues|any prs"
    # "that don't have the bug label", "haven't got the docs tag": having the value, negated
    r"|have|has|had|got|carry|carrying"
    # "not done by the three maintainers X, Y and Z": the act, and the people named before their names
    r"|done|made|two|three|four|five|maintainers"
)


@functools.lru_cache(maxsize=256)
def _negation_before(field_names: tuple[str, ...]) -> re.Pattern[str]:
    """A negation at the end of the text, then only listed words (and the field's names) before the value."""
    names = "".join(f"|{re.escape(n)}s?" for n in field_names)
    return re.compile(rf"{_NEGATION_WORDS}(?:(?:{_BETWEEN}{names})\s+)*['\"‘“]?$", re.I)


def _fmt(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "…"


# The last update said before a time: "last touched before 2024", "last updated in 2022" (the update dated), and
# its absence, "not updated since 2023", "untouched since 2023", "nobody has updated since 2023", "without any update
# since": no update after the period named (`nothing_since`).
_UNTOUCHED = re.compile(
    r"(?:\blast\s+(?:updated|touched|modified|active)\s+(?:before|until|prior\s+to|in|during|on)?"
    r"|(?P<nothing_since>(?:\b(?:not|never|nobody|no\s+one)\b|n['’]t\b)(?:\s+\w+){0,2}?\s+(?:updated|touched|modified)"
    r"|\buntouched|\bwithout\s+(?:any\s+|an\s+)?(?:updates?|activity))(?:\s+(?:since|after))?)\s*$",
    re.I,
)


def _end_of_named(said: str, start: datetime) -> datetime:
    """The end of the period "since X" named when X is a year ("since 2023": the end of 2023), else its start."""
    year = re.fullmatch(r"\s*(?:since\s+|after\s+)?(?:the\s+(?:start|beginning)\s+of\s+)?(\d{4})\s*", said, re.I)
    if year and start == datetime(int(year.group(1)), 1, 1):
        return datetime(start.year + 1, 1, 1)
    return start


_ASSIGNED_TO_THE_AUTHOR = (
    r"\bassigned\s+to\s+(?:the\s+(?:same\s+)?(?:person|people|user|one|ones)\s+who\s+(?:opened|created|filed|reported|wrote)"
    r"\s+(?:them|it)|(?:their|its)\s+(?:own\s+)?(?:authors?|creators?|openers?|reporters?)|themselves|(?:him|her)self)\b"
    r"|\b(?:the\s+)?assignees?\s+(?:is|are|was|were)\s+(?:also\s+)?(?:the\s+)?(?:authors?|creators?|openers?|reporters?)\b"
    r"|\bself[- ]assigned\b|作者(?:自己)?(?:指派|分配)给(?:了)?自己|(?:指派|分配)给(?:了)?(?:作者|创建者)(?:自己|本人)?"
)

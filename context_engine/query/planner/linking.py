"""Step 2: link the question's words to stored values (labels, priorities, repositories, channels,
workspaces, teams) and its people to their fields in the role the sentence gives them."""

from __future__ import annotations

import re

from context_engine.query.fields import field_for, person_field_for, person_field_words
from context_engine.query.identity import Mention
from context_engine.query.ir import Filter
from context_engine.query.planner.draft import Draft
from context_engine.query.value_cues import value_cues
from context_engine.query.values import WHOLE_VALUE_END, begins_name, written

# "closed by X", "closed in 2023 by X", "closed by somebody other than X, Y or Z": the closer is named
# ("closures not done by the three maintainers X, Y and Z": the noun, and the people described before their names)
_CLOSED_BY = re.compile(
    r"\b(?:closed|resolved|shut|closures?|closings?)\s+(?:[\w'-]+\s+){0,5}?by\s+(?:(?:somebody|someone|anyone|anybody|people|others?)\s+)?"
    r"(?:(?:other than|except(?: for)?|besides|apart from|but)\s+)?"
    r"(?:the\s+(?:two|three|four|five|\d+)?\s*(?:maintainers|members|people|folks)\s+)?"
    r"(?:[\w.-]+(?:\s*,\s*|\s+(?:or|and|nor)\s+))*$"
)


# Words (alternatives: commas, "or", "/") running up to "in the title", and a title said to hold the words
# next: where a word is looked for, said outright.
_WORDS_RUN = r"(?:\s*(?:,|/|、|，|\bor\b|或者?)\s*(?:or\s+)?['\"‘“]?[\w.\-]+['\"’”]?)*"
_BEFORE_IN_THE_TITLE = re.compile(
    rf"['\"’”]?{_WORDS_RUN}\s+(?:in|on)\s+(?:the\s+|its\s+|their\s+)?(?:\w+\s+)?titles?\b", re.I
)
_AFTER_TITLE_SAYS = re.compile(
    r"(?:\btitles?\s+(?:that\s+)?(?:mention(?:s|ed|ing)?|says?|reads?|ha(?:s|ve)|contains?|includes?|with)"
    r"|标题\s*(?:里|中|上)?\s*(?:有|带有?|含有?|包含|提到|出现))\s*"
    r"(?:['\"‘“]?[\w.\-]+['\"’”]?\s*(?:,|/|、|，|\bor\b|或者?)\s*(?:or\s+)?)*['\"‘“]?$",
    re.I,
)


class LinkStep(Draft):
    """Stored values and people, as filters."""

    def _values(self) -> None:
        """Stored enum values named in the question: labels, priorities, types, repos, channels."""
        s = self.schema
        assignee = person_field_for(s, "assignee")
        # "not assigned", but not "not assigned to albertvillanova" (the negation step excludes that person)
        if assignee and self.mark(
            r"\bunassigned\b|\bnot assigned\b(?!\s+to\s+(?!(?:anyone|anybody|someone|somebody|any ?one|a person)\b))"
            r"|\bno assignee\b|未分配|没有负责人"
        ):
            self.add_filter(
                assignee[0].rsplit(".", 1)[0] if assignee[0].endswith(".name") else assignee[0], None, "empty"
            )
        priority = field_for(s, "priority")
        if priority:
            levels = s.fields[priority].enum or []
            for pattern, wanted in (
                (r"\bhighest[- ]prio(?:rity)?\b|\bcritical\b|\bblockers?\b|\bp[01]\b|最高优先级|紧急", ["Highest"]),
                (r"\bhigh[- ]pri(?:o|ority)?\b|\bhi[- ]?pri(?:o|ority)?\b|\bp2\b|高优先级", ["High", "Highest"]),
                (r"\blow[- ]pri(?:o|ority)?\b|低优先级", ["Low", "Lowest"]),
            ):
                if self.mark(pattern):
                    values = [v for v in wanted if v in levels] or wanted
                    self.add_filter(priority, values[0]) if len(values) == 1 else self.add_filter(
                        priority, values, "in"
                    )
                    break
        explicit_label = re.search(
            r"(?:\b(?:label(?:l?ed)?|tagged|with (?:the )?label)\s+|(?:标记为|标为|打上了?|打了|带有?)\s*)"
            r"['\"]?([\w.\-: /]+?)['\"]?(?:\s|$|\?|,|的)",
            self.q,
            re.I,
        )
        self._team()  # before labels: "infra team" names people, not the infra label
        self._author_association()
        order = [
            "repo",
            "channel",
            "workspace",
            "priority",
            "type",
            "project",
            "label",
            "milestone",
            "sprint",
            "component",
            "space",
            "team",
        ]
        if not s.kind.builtin:  # a tenant's own kind: each of its value roles names stored values ("sev1", "payments")
            order += [role for role in s.kind.values if role not in order and role not in ("title", "url")]
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
            if not values:
                self._value_as_said(role, path)
                continue
            for value in sorted(values, key=len, reverse=True):
                if len(value) < 2:
                    continue
                # ASCII boundaries: "的bug" names the value although CJK characters are word characters.
                pattern = rf"(?<![A-Za-z0-9_#]){written(value)}{WHOLE_VALUE_END}"
                flags = re.I
                if role == "priority":
                    pattern = rf"(?<![A-Za-z0-9_]){re.escape(value)}(?:[- ]priority)?(?![A-Za-z0-9_])"
                if role == "project":
                    # Keys are upper-case: "WEB" is the project, "web" the label when a label has that name.
                    labels = (
                        {str(v).lower() for v in (s.fields[field_for(s, "label")].enum or [])}
                        if field_for(s, "label")
                        else set()
                    )
                    pattern = rf"(?<![A-Za-z0-9_]){re.escape(value)}(?![A-Za-z0-9_])"
                    flags = 0 if value.lower() in labels else re.I
                for m in re.finditer(pattern, self.q, flags):
                    if self._is_used(m.span()):
                        continue
                    if (
                        role == "label"
                        and self._topic_phrase(m.start())
                        and not (explicit_label and explicit_label.group(1).lower() == value.lower())
                    ):
                        continue  # "about auth" is a topic, not necessarily the label
                    if self._said_in_the_title(m.span()):
                        continue  # "Arrow in the title": words of the title, whatever value shares them
                    self.use(m.span())
                    self.add_filter(path, value)
                    self.notes.append(f"{value!r} is a stored {role} ({path})")
                    if not s.kind.builtin:  # "the payments service": the role's own name says the field
                        self.mark(rf"\b{re.escape(role.replace('_', ' '))}\b", "field")
                    break
        if explicit_label and any(
            f.field == field_for(s, "label") and f.span and f.span[0] - explicit_label.start(1) in (0, 1)
            for f in self.filters
        ):
            self.use((explicit_label.start(), explicit_label.start(1)), "field")  # the cue: its value is used above
        tags = field_for(s, "label")
        if (
            tags
            and "adr" in (s.fields[tags].enum or [])
            and self.mark(r"\barchitecture decision records?\b|\bdecision records?\b|架构决策")
        ):
            self.add_filter(tags, "adr")
        sprint = field_for(s, "sprint")
        if sprint and self.mark(r"\b(?:the )?(?:current|this|active) sprint\b|本迭代|当前迭代|这个迭代"):
            numbered = [v for v in (s.fields[sprint].enum or []) if re.search(r"\d+$", v)]
            if numbered:
                self.add_filter(sprint, max(numbered, key=lambda v: int(re.search(r"(\d+)$", v).group(1))))
        reaction = field_for(s, "reaction")
        m = re.search(
            r"\b([a-z_+\-]+)\s+(?:reactions?|emoji)\b|:([a-z_+\-]+):|带\s*([a-z_+\-]+)\s*(?:表情|反应)", self.q, re.I
        )
        if reaction and m:
            name = (m.group(1) or m.group(2) or m.group(3)).lower()
            if name in (s.fields[reaction].enum or [name]):
                self.use(m.span())
                self.add_filter(reaction, name)

    def _team(self) -> None:
        """ "the web team": its members, from the people directory, in the author field."""
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

    def _said_in_the_title(self, span: tuple[int, int]) -> bool:
        """A word the question places in the title ("X in the title", "(docs or documentation in the
        title)", "whose title mentions X", 标题里带 X): the title's words, not a stored value of that name."""
        return bool(_BEFORE_IN_THE_TITLE.match(self.q, span[1]) or _AFTER_TITLE_SAYS.search(self.q[: span[0]]))

    def _topic_phrase(self, start: int) -> bool:
        """Words after a topic cue ("about streaming", "issues that mention streaming", 提到 streaming) are
        what the records say, even where a label has that name: "labelled streaming" is the label."""
        return bool(_TOPIC_CUE.search(self.q[:start]))

    def _repo(self, path: str) -> None:
        values = self.schema.fields[path].enum or []
        for value in sorted(values, key=len, reverse=True):
            short = value.split("/")[-1]
            for pattern in (
                rf"(?<![\w/]){re.escape(value)}(?![\w/])",
                rf"\b(?:in|into|to|from|for|on) (?:the )?{re.escape(short)} (?:repo|repository)\b",
                rf"\b(?:in|into) (?:the )?{re.escape(short)}\b(?! (?:label|tag|channel))",
                rf"\b{re.escape(short)} (?:repo|repository)\b",
                rf"{re.escape(short)}\s*仓库",
                rf"\b{re.escape(short)}\s+(?:prs?|pull requests?|commits?)\b",
                rf"\b(?:prs?|pull requests?|commits?)\s+{re.escape(short)}\b",
            ):
                m = re.search(pattern, self.q, re.I)
                if m and not self._is_used(m.span()):
                    self.use(m.span())
                    self.add_filter(path, value)
                    self.notes.append(f"repository {value}")
                    return

    def _channel(self, path: str) -> None:
        known = self.schema.fields[path].enum
        m = re.search(
            r"#([\w\-]+)|\b(?:in|on) (?:the )?([\w\-]+) channel\b|([\w\-]+)\s*频道|\b([\w\-]+) channel\b", self.q, re.I
        )
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

    def _value_as_said(self, role: str, path: str) -> None:
        """A value named by its kind ("milestone 3.0", "the 3.0 milestone") of a field whose values the schema
        does not list (too few records hold one to tell): the condition as written. A value nobody holds
        matches nothing, and the answer says no record matched."""
        for cue in value_cues(self.q):
            if cue.role == role and not self._is_used((cue.start, cue.end)):
                self.use((cue.start, cue.end))
                self.add_filter(path, cue.text)
                self.notes.append(f"{cue.text!r} read as a {role} ({path}) as written")
                return

    def _workspace(self, path: str) -> None:
        """A Slack workspace named like a channel ("#racket", "in elmlang", "the racket workspace"): several
        workspaces may each have a #general, and people call a community's main channel by its name."""
        values = sorted(self.schema.fields[path].enum or [], key=len, reverse=True)
        found: list[tuple[tuple[int, int], str]] = []
        for value in values:
            for m in re.finditer(
                rf"(?<![A-Za-z0-9_\-]){'#?' + re.escape(value)}(?:'s)?(?:\s+(?:workspace|slack|community))?(?![A-Za-z0-9_\-])",
                self.q,
                re.I,
            ):
                if not self._is_used(m.span()) and not any(a < m.end() and m.start() < b for (a, b), _ in found):
                    found.append((m.span(), value))
                    break
        # What people call a community: "the elm slack", "most elm messages", "clojure threads" — a word
        # that begins one workspace's name and only one, before a word for Slack or its messages (not
        # after a topic cue: "messages about elm ui" are about Elm UI).
        for m in re.finditer(
            r"(?<![A-Za-z0-9_\-#])([a-z]{3,})(?:'s)?\s+(?=(?:slack|workspace|community|messages?|threads?|posts?|"
            r"chat|channels?|folks|people|users)\b)",
            self.q,
            re.I,
        ):
            word = m.group(1).lower()
            # "elm" begins elmlang; "clojure" is clojurians but for its last letter
            named = [v for v in values if v.lower() != word and begins_name(word, v)]
            if (
                len(named) == 1
                and not self._is_used(m.span(1))
                and not self._topic_phrase(m.start())
                and all(v != named[0] for _, v in found)
            ):
                found.append((m.span(1), named[0]))
                if re.match(r"\s*(?:slack|workspace|community)\b", self.q[m.end(1) :], re.I):
                    self.use((m.end(1), m.end(1) + re.match(r"\s*\w+", self.q[m.end(1) :]).end()))
        found.sort()
        for span, value in found:
            self.use(span)
            self.notes.append(f"workspace {value}")
        if len(found) == 1:
            self.add_filter(path, found[0][1])
        elif found:
            # "outside elmlang and racket", "neither elmlang nor racket": the negation step reads the first one.
            self.add_filter(path, [v for _, v in found], "in")
            self.filters[-1].span = found[0][0]

    def _role_of(self, mention: Mention) -> str:
        before = self.q[: mention.start].lower()[-40:]
        after = self.q[mention.end :].lower()[:30]
        if mention.text.lower().endswith(("'s", "’s")) or mention.text.lower() in ("my", "our"):
            after = "'s" + after  # the possessive was read as part of the name; "my threads" is the asker's
        own = self._own_role(mention)
        if own:
            return own
        # Slack roles beyond authorship, where the collection stores them (`mentions`, `parent_user_id`).
        # A mention said in words where none is stored ("who mentions Rashid the most" over PRs, or
        # messages without mentions) is still the mentioned: the person stays unread rather than
        # becoming the author. A bare "@" before a name there is a handle ("what did @lhoestq merge").
        if not person_field_for(self.schema, "mentioned"):
            if re.search(
                r"(?:\bmention(?:s|ed|ing)?|\bmentions of|@-?mention\w*|\bping(?:s|ed|ing)?|\btag(?:s|ged|ging)"
                r"|提到(?:了)?|提及(?:了)?|@了)\s*@?$",
                before,
            ) and not re.search(r"\b(?:from|by)\s+@?$", before):
                return "mentioned"
        elif not re.search(r"\b(?:from|by)\s+@?$", before) and (
            re.search(
                r"(?:\bmention(?:s|ed|ing)?|\bmentions of|@-?mention\w*|@-?(?:ed|['’]d)|\bpinged|\bpinging|\btag(?:s|ged|ging)|提到(?:了)?|提及(?:了)?|@了?)\s*@?$",
                before,
            )
            or re.search(
                r"^(?:'s)?\s*(?:was|were|is|are|got|gets|get|has been|have been|had been|been)\s+(?:\w+\s+)?(?:@-?)?mentioned\b"
                r"|^\s*被(?:人)?(?:提到|提及|@)",
                after,
            )
            # "how many times was Nana mentioned" (but "Nana mentioned Odis" is Nana writing)
            or (
                re.search(r"\b(?:was|were|is|are|been|get|got|gets)\s+$", before)
                and re.search(r"^\s*(?:@-?)?mentioned\b", after)
            )
        ):
            return "mentioned"
        if person_field_for(self.schema, "replied_to") and (
            re.search(
                # "谁回 Jasmine 回得最多": a bare 回 after who replies
                r"\b(?:repl(?:y|ies|ied|iers?)|respond(?:s|ed|ers?)?|answer(?:s|ed|ers?)?)\s+(?:\w+\s+){0,2}?to\s+$"
                r"|(?:回复|(?<=谁)回|(?<=人)回)(?:了|过)?\s*$"
                # "who answers becki the most": answering someone is replying to them, said without "to"
                r"|\b(?:who|people|someone|somebody|anyone|anybody|users?|members?)\s+(?:\w+\s+){0,2}?answer(?:s|ed)?\s+@?$",
                before,
            )
            # "replies Kristeen wrote in threads Caprice started", "Kristeen answering Caprice's threads"
            or (
                re.search(r"\brepl(?:y|ies|ied)\b|\banswer\w*|\brespon\w*|回复", self.q, re.I)
                and any(
                    m is not mention and m.person is not None and m.start < mention.start for m in self.ctx.mentions
                )
                and (
                    (
                        re.search(r"\b(?:threads?|posts?)\s+(?:that\s+|which\s+)?$", before)
                        and re.search(r"^\s*(?:started|opened|kicked off|began|begun|created|posted)\b", after)
                    )
                    or (
                        re.search(r"\b(?:repl\w*|respon\w*|answer\w*)\s+(?:in\s+|on\s+|to\s+|under\s+)?$", before)
                        and re.search(r"^(?:'s|s'|’s)\s+(?:threads?|posts?|questions?|messages?)\b", after)
                    )
                    or re.search(r"^\s*发起的(?:讨论串|帖子|讨论)", after)
                )
            )
            # "how many replies did Wally get", "the answers Wally received": the replies to Wally
            or (
                re.search(
                    r"\b(?:repl(?:y|ies)|answers?|responses?)\s+(?:(?:did|does|do|has|have|had|that|which)\s+)?$",
                    before,
                )
                and _GOT.match(after)
            )
            # "replies in threads that weren't started by Chantelle": whose thread (negated below)
            or re.search(
                r"\bthreads?\s+(?:that\s+|which\s+)?(?:weren't|were not|wasn't|was not|not|never)\s+(?:been\s+)?"
                r"(?:started|opened|begun|kicked off)\s+by\s+$",
                before,
            )
            # the people replying to someone ("who answered Dann's threads", "how many different people
            # answered Dann", "repliers in threads started by Dann"): the replies whose thread is theirs
            # "Latarsha's most frequent replier", "Latarsha 的帖子谁回复最多": the people replying to her
            or re.search(r"^(?:'s|s'|’s)\s+(?:\w+\s+){0,2}(?:repliers?|responders?|answerers?)\b", after)
            # "top responder in Vincenzo's threads", "did Lynna reply in Odis's threads"
            or (
                re.search(r"\b(?:repl\w*|respon\w*|answer\w*)\s+(?:in|on|to|under)\s+$", before)
                and re.search(r"^(?:'s|s'|’s)\s+(?:threads?|posts?|questions?|messages?)\b", after)
            )
            or (
                re.search(
                    r"\bwho\b|\bwhom\b|谁|\bpeople\b|\bpersons?\b|\busers?\b|\brepliers\b|\bresponders\b|(?<![有别他])人",
                    # "answers only from other people": who may answer, not who is asked for
                    re.sub(
                        r"\b(?:only\s+)?(?:from|by)\s+(?:other|different)\s+(?:people|persons|users)\b",
                        " ",
                        self.q,
                        flags=re.I,
                    ),
                    re.I,
                )
                # "threads that got replies from at least three different people", "posts 3+ people replied
                # to": how many replied, not who
                and not re.search(
                    r"(?:\b(?:at least|more than|over|no more than|at most|exactly|only)\s+\w+|\b\w+\s*\+"
                    r"|\b\w+\s+or\s+(?:more|fewer|less))\s+(?:different |distinct )?(?:people|persons|users|repliers)\b"
                    r"|[\d一两二三四五六七八九十]\s*(?:个|位)?\s*(?:或更多|或以上|及以上|或更少|或以下|及以下)的?(?:不同的?)?人",
                    self.q,
                    re.I,
                )
                and re.search(r"\brepl(?:y|ies|ied|iers)\b|\brespon\w*|\banswer\w*|回复", self.q, re.I)
                and (
                    re.search(
                        r"^(?:'s|s'|’s)\s+(?:threads?|posts?|messages?|questions?)\b|^\s*的(?:帖子|消息|讨论)", after
                    )
                    or re.search(
                        r"\b(?:threads?|posts?|questions?)\s+(?:\w+\s+)?(?:started|opened|kicked off|begun|created|posted)\s+by\s+$"
                        r"|\b(?:answered|answering)\s+$",
                        before,
                    )
                    # "in threads Agustin started, who answered him", "in the threads I started"
                    or (
                        re.search(r"\b(?:threads?|posts?|questions?)\s+(?:that\s+|which\s+)?$", before)
                        and re.search(r"^\s*(?:started|opened|kicked off|began|begun|created|posted)\b", after)
                    )
                )
            )
        ):
            return "replied_to"
        if self._replier_in_anothers_threads(mention, before, after):
            return "reply_user"
        if re.search(r"^(?:'s)?\s+review queue\b", after):
            return "requested_reviewer"
        if re.search(
            r"\b(?:opened|created|filed|reported|raised|written|authored|submitted|started|posted) by\s+$", before
        ):
            return "author"  # said outright: what follows ("... have no assignee") is about the records
        if re.search(_CLOSED_BY, self.q[: mention.start].lower()) and person_field_for(self.schema, "closer"):
            return "closer"
        if (
            re.search(
                r"(review(?:s)? requested (?:from|of)|waiting (?:on|for)|awaiting|pending|requested|needs?)\s+$|需要\s*$|等\s*$",
                before,
            )
            or re.search(r"^(?:'s|s'|’s) review\b(?! of)", after)
            or (mention.text.lower() == "my" and re.search(r"^\s*review\b", after))
            or re.search(r"^\s*to review\b", after)
            or re.search(r"请\s*$", before)
        ):
            return "requested_reviewer"
        if (
            re.search(r"(reviewed|approved|reviews?|changes requested|commented on)\s+(by|from)\s+$", before)
            or re.search(
                r"^\s*(has |have |did )?(reviewed|approved|approve|approves|reviews|review|requested changes|request changes)\b(?! of)",
                after,
            )
            or re.search(r"^'s reviews", after)
            or re.search(r"^\s*(审查|评审|审核|review)", after)
        ):
            return "reviewer"
        if self.collection == "issues" and re.search(
            r"^\s*(?:(?:has|have)(?!\s+(?:\w+\s+)?(?:filed|opened|created|reported|raised|written|submitted|authored|posted"
            r"|started|closed|resolved|fixed|commented|merged)\b)|owns?|is working on|名下|手上|手里)",
            after,
        ):
            return "assignee"  # "X has 3 open issues"; "X has filed" is the author
        if self.collection == "issues" and re.search(r"^(?:'s|s'|’s)\s+plate\b", after):
            return "assignee"  # "the open issues sitting on lhoestq's plate"
        if self.collection == "issues" and re.search(
            r"^\s*(?:did |has |have )?(?:resolve|resolved|close|closed|complete|completed|finish|finished|fix|fixed|shut(?: down)?)\b"
            # "issues severo marked done", "albertvillanova's not-planned closures": the closing was theirs
            r"|^\s*(?:did |has |have )?marked (?:as )?(?:done|completed?|closed|resolved|fixed)\b"
            r"|^(?:'s|s'|’s)\s+(?:[\w'’-]+\s+)?(?:closures|closings|closes)\b"
            # "X 在 2023 年 1 月关掉的": when, said between the closer and the closing
            r"|^\s*(?:在\s*)?[\d\s年月日号號周週上下本今去前这這个個半季度]{0,20}(?:以[^，。？?]{0,20})?(?:关|關)(?:闭|閉|掉|了|的|过|過)",
            after,
        ):
            # GitHub records who closed an issue; Jira does not, and there the assignee did the work.
            return "closer" if person_field_for(self.schema, "closer") else "assignee"
        if re.search(r"^[^，。？,.?]{0,12}?(?<![a-z])(review|reviewed|审查|评审|审核)", after) and not re.search(
            r"请|等", before[-4:]
        ):
            return "reviewer"
        if (
            re.search(r"(assigned to|assignee is|owned by|owner is)\s+$", before)
            or re.search(r"^\s*(?:is|are|was|were|been|has been|have been)\s+assigned", after)
            or re.search(r"^\s*(?:is|are|was|were)\s+(?:one of|among)\s+(?:the\s+)?assignees\b", after)
            or (
                self.collection == "issues"
                and re.search(r"^\s*(?:is|are|was|were|got|has been|have been)\s+put on\b", after)
            )
            or re.search(r"^(?:'s|s'|’s)\s+(?:\w+\s+)?assigned\b", after)
            or re.search(r"分配给\s*$|指派给\s*$", before)
            or re.search(r"^\s*负责", after)
        ):
            return "assignee"
        if re.search(r"merged by\s+$", before):
            return "merger"
        if re.search(r"(?:(reported|filed|opened|created|raised|written|authored) )?by\s+$", before) or re.search(
            r"^\s*(?:has |have |did )?(report|reported|file|filed|raise|raised|open|opened|create|created)\b", after
        ):
            return "author"
        author = person_field_for(self.schema, "author")
        if self.collection == "issues" and not (author and author[1] == "github"):
            # A tracker's "X's tickets", "X is working on", "X完成了": the assignee, unless reported/filed.
            # A GitHub issue is its opener's ("severo issues"): assignees are few and optional there.
            return "assignee" if person_field_for(self.schema, "assignee") else "author"
        return "author"

    def _replier_in_anothers_threads(self, mention: Mention, before: str, after: str) -> bool:
        """A second person said as replying in the threads of the one named first ("Clarine's threads
        Dann replied in", "threads by Odis that never heard from Monserrate", "Odis 发起的讨论串里
        Monserrate 没回复过"): one of the thread's repliers, not its author (the records are the threads)."""
        if not (person_field_for(self.schema, "reply_user") and re.search(r"\bthreads?\b|讨论串|帖子", self.q, re.I)):
            return False
        earlier = [m.person for m in self.ctx.mentions if m.person is not None and m.start < mention.start]
        # "Nana's threads that got no reply from Nana": a reply said to come from someone is theirs, even
        # from the starter; "no one except Ana replied" in Ana's threads is the starter's rule's.
        return bool(
            earlier
            and re.search(
                r"\b(?:repl(?:y|ies)|answers?|responses?|word)\s+(?:\w+\s+){0,2}?(?:from|by)\s+@?$"
                r"|\b(?:heard|hear|hearing)\s+(?:\w+\s+)?from\s+@?$",
                before,
            )
        ) or bool(
            any(p != mention.person for p in earlier)
            and re.search(
                r"^(?:'s)?\s*(?:(?:(?:did|does|do|has|have|had)(?:n['’]?t)?|ever|never|not|n't|also|once)\s+)*"
                r"(?:repl(?:y|ies|ied|ying)|respond(?:s|ed|ing)?|answer(?:s|ed|ing)?|(?:chim|jump|weigh)(?:e|ed|es|ing)? in)\b"
                r"|^\s*(?:一次)?(?:都|也)?(?:没有?|从没|从未|有)?(?:回复|回)过?",
                after,
            )
        )

    def _own_role(self, mention: Mention) -> str | None:
        """A tenant's own kind: the people field whose name the question says around the person
        ("commanded by priyar", "did priyar command", "deployed by larsn" for `commander`, `deployed_by`;
        the word is read)."""
        start = max(0, mention.start - 40)
        for role, word in person_field_words(self.schema):
            m = re.compile(rf"{word}\s+(?:by\s+)?$", re.I).search(self.q, start, mention.start) or re.compile(
                rf"(?:'s)?\s+(?:(?:has|have|did|was|were)\s+)?{word}", re.I
            ).match(self.q, mention.end)
            if m:
                self.use(m.span(1), "person")
                return role
        return None

    def _only_person_field(self) -> tuple[str, str] | None:
        """A tenant's own kind with one people field: whoever the question names is in it ("deploys by
        larsn", "larsn's deploys")."""
        if self.schema.kind.builtin:
            return None
        present = [found for role in self.schema.kind.people if (found := person_field_for(self.schema, role))]
        return present[0] if len(present) == 1 else None

    def _referenced_with(self, role: str, before: int | None = None) -> tuple[str, tuple[str, str]] | None:
        """A role these records lack but the records they reference have, when the question names those
        ("incidents whose fix PR was reviewed by priya": an incident's `pr` is a pull request, and a pull
        request has reviewers): the reference and the field there. The words naming them are read.
        `before`: only when those records are named just before the person ("PRs authored by X")."""
        for via, target in self.schema.kind.references.items():
            joined = self.ctx.schemas.get(target)
            found = person_field_for(joined, role) if joined is not None and self.schema.has_path(via) else None
            if found is None:
                continue
            said = re.finditer(joined.kind.pattern(), self.q if before is None else self.q[:before], re.I | re.ASCII)
            # `before`: only the records named just before the person
            named = next((m for m in said if before is None or before - m.end() <= 25), None)
            if named:
                self.use(named.span(), "collection")
                for m in _RELATION_CUE.finditer(
                    self.q
                ):  # "the fix PR", "the PR that caused it": what the reference says
                    if abs(m.start() - named.end()) <= 20 or abs(named.start() - m.end()) <= 20:
                        self.use(m.span(), "collection")
                return via, found
        return None

    def _listed_with(self, mention: Mention, path: str) -> Filter | None:
        """The condition on the person named just before this one in a list ("X, Y and Z", "X's and
        Y's", "X 和 Y", "X 跟 Y"): the same field, only list words between them."""
        last = self.filters[-1] if self.filters else None
        if last is None or last.field != path or last.op not in ("eq", "in") or last.span is None:
            return None
        between = self.q[last.span[1] : mention.start]
        if not re.fullmatch(
            r"(?:['’]s)?\s*(?:,|and|or|&|nor|/|、|和|或|及|跟|与|同|vs\.?|versus)?\s*(?:and|or)?\s*", between, re.I
        ):
            return None
        return last

    def _people(self) -> set[str]:
        roles: set[str] = set()
        linked: set[tuple[str, str]] = set()
        for mention in self.ctx.mentions:
            person = mention.person
            if person is None:
                continue
            role = self._role_of(mention)
            # "incidents caused by PRs authored by X": the role of the record named just before the person
            joined = self._referenced_with(role, before=mention.start)
            found = (
                None
                if joined
                else person_field_for(self.schema, role)
                or (person_field_for(self.schema, "author") if role in _READ_AS_AUTHOR else None)
            )
            via = None
            if found is None and (joined := joined or self._referenced_with(role)):
                via, found = joined
            if found is None:
                found = self._only_person_field()
            if found is None:
                # "PRs reviewed by X" where no record says who reviewed: not X's own PRs in disguise.
                # The name stays unread, so the answer says what it could not use.
                self.confidence = min(self.confidence, 0.3)
                self.notes.append(f"{self.collection} has no field for a {role}")
                self.unplaced.append(((mention.start, mention.end), role))
                continue
            self.use((mention.start, mention.end), "person")
            if (person.key, role) in linked:
                continue  # named twice ("albert villanova (albertvillanova)"): one filter
            linked.add((person.key, role))
            path, kind = found
            handle = person.handle(kind)
            if handle is None:
                self.confidence = min(self.confidence, 0.5)
                self.notes.append(f"{person.name} has no {kind} handle")
                handle = person.key
            listed = self._listed_with(mention, path)
            if listed is not None:
                # "other than lhoestq, albertvillanova and mariosasko": one condition on the three
                listed.value = [*(listed.value if listed.op == "in" else [listed.value]), handle]
                listed.op, listed.span = "in", (listed.span[0], mention.end)
            else:
                self.add_filter(path, handle)
                self.filters[-1].via = via
            if role == "replied_to" and (author := person_field_for(self.schema, "author")):
                self.add_filter(author[0], person.handle(author[1]) or person.key, "ne")  # not their own follow-ups
                got = _GOT.match(self.q, mention.end)  # "how many replies did Wally get": said by the role
                if got:
                    self.use(got.span(1))
                self.mark(
                    r"\b(?:not counting|excluding|except(?: for)?|other than|besides|apart from|minus|but not)\s+"
                    r"(?:him|her|them|my|your|it)sel(?:f|ves)\b"  # said outright: "(not counting himself)"
                    r"|\bother (?:people|users|folks|members|persons)\b(?!['’]s?\s+(?:threads?|posts?|discussions?))"
                    r"|\b(?:someone|somebody|everyone|everybody) else\b(?!['’]s)"
                )
            roles.add(role)
            if role == "assignee":
                self.mark(r"\bsitting on\b|\bon\b(?=\s+\S+['’]s\s+plate\b)")  # "sitting on lhoestq's plate"
                self.mark(r"(?<=['’]s )plate\b")
            typo = f" (the closest name to {mention.text!r}, read as a typo)" if mention.score < 100 else ""
            self.notes.append(f"{mention.text!r} -> {person.name} ({handle}) as {role}{typo}")
            # Phrases that only told us the role are consumed too.
            for pattern in (
                r"\b(reviewed|approved|assigned to|reported|filed|opened|created|authored|written|wrote|merged) by\b",
                r"\bassigned to\b",
                r"\b(reviewed|reviews|approved)\b",
                r"分配给|审查|评审",
            ):
                m = re.search(pattern, self.q, re.I)
                if (m and role != "author") or (m and "by" in m.group(0)):
                    self.use(m.span())
        return roles

    def _author_association(self) -> None:
        """The author's relation to the repository, as GitHub records it (`author_association`): "outsiders",
        "people with no association to the repo" (NONE), "org members", "collaborators", "past contributors"
        (a bare "contributors" is anyone who contributed: no value), or a value said as written
        ("association NONE"). Each word its own condition, so a negation before a list of them ("not
        members, collaborators or past contributors") excludes each (`_negations`). Only the values the
        records hold: "first-time contributors" is no value of this dump and stays unread."""
        if not self.schema.has_path("author_association"):
            return
        stored = {str(v).upper() for v in self.schema.fields["author_association"].enum or []}
        said = re.search(r"\b(?:author[ _])?association\s+(?:is\s+|of\s+|=\s*)?['\"]?([A-Za-z_]+)\b", self.q, re.I)
        if said and said.group(1).upper() in stored and not self._is_used(said.span()):
            self.use(said.span())
            self.add_filter("author_association", said.group(1).upper())
        members = sorted(stored & {"MEMBER", "OWNER"})
        for m in re.finditer(_OUTSIDE_CONTRIBUTORS, self.q, re.I):
            if members and not self._is_used(m.span()):  # contributed from outside: anyone but the org's own
                self.use(m.span())
                self.add_filter("author_association", members[0], "ne") if len(members) == 1 else self.add_filter(
                    "author_association", members, "nin"
                )
        for pattern, value in _ASSOCIATIONS:
            if value not in stored:
                continue
            for m in re.finditer(pattern, self.q, re.I):
                if not self._is_used(m.span()):
                    self.use(m.span())
                    self.add_filter("author_association", value)


# Roles read as the author where the records do not say who did it: "merged by X" over a dump with
# no merger is X's merged PRs (the reading the question sets commit to); the author as themselves.
_READ_AS_AUTHOR = frozenset({"author", "merger"})
# How records are related, said beside the referenced records' noun ("the fix PR", "PRs that caused it").
# ("most-discussed enhancement issue" names the label: "discussed" says how much, not what about)
_TOPIC_CUE = re.compile(
    r"(?:\b(?:about|regarding|mention(?:s|ed|ing)?|on the topic of|related to|concerning"
    r"|(?:talk|talks|talked|talking|say|says|said) about)\s+|(?:关于|有关|(?:提到|提及|谈到|说到)了?|聊到?|讲到?)\s*)$",
    re.I,
)
_RELATION_CUE = re.compile(
    r"\b(?:fix(?:es|ed|ing)?|caus\w*|culprit|offending|related|linked|associated|triggering|shipp\w*"
    r"|ships?|contain\w*|includ\w*|deliver\w*)\b",
    re.I,
)
_GOT = re.compile(r"\s*(get|got|gotten|gets|receive[sd]?|draw|drew|attract(?:s|ed)?)\b", re.I)
# Contributors from outside the organisation: any author but its members and owners (a collaborator or a
# first-time contributor too), not only those with no association at all ("outsiders").
_OUTSIDE_CONTRIBUTORS = (
    r"\b(?:outside|external|non-?member|third[- ]party)\s+contributors?\b|\bcontributors?\s+from\s+outside\b|外部贡献者"
    r"|\b(?:people|persons|users|folks|authors|contributors|someone|somebody|anyone|anybody)\s+(?:from\s+)?outside"
    r"\s+(?:the|our|this)\s+(?:org(?:ani[sz]ation)?|company|core team|maintainers|team)\b"
    r"|\bnon[- ]?(?:org[- ])?members\b|组织外(?:部)?的人|组织以外的人"
)
# The words naming a value of `author_association` (GitHub's): whose relation to the repository they say.
_ASSOCIATIONS = (
    (
        (
            r"\boutsiders?\b|\boutside (?:users?|people|folks|authors?|reporters?)\b|\bunaffiliated\b"
            r"|\b(?:(?:people|persons|users|folks|authors|someone|somebody|anyone) )?(?:with )?(?:no |without (?:any |an? )?)"
            r"(?:association|affiliation|relationship|connection)"
            r"(?: (?:to|with) (?:the )?(?:repo(?:sitory)?|project|org(?:ani[sz]ation)?))?\b"
            r"|\bnot (?:associated|affiliated) with (?:the )?(?:repo(?:sitory)?|project|org(?:ani[sz]ation)?)\b"
            r"|外部(?:人员|用户|的人)|(?:与|和|跟)(?:仓库|项目)(?:没有|无)(?:任何)?关(?:联|系)的人"
        ),
        "NONE",
    ),
    (
        (
            r"\b(?:org(?:ani[sz]ation)?\s+)?(?<!team )(?<!workspace )(?<!channel )(?<!community )(?<!project )members\b"
            r"(?! of (?:the |a |that )?(?:team|workspace|channel|community|slack))"
            r"(?: of (?:the |this |our )?(?:org(?:ani[sz]ation)?|repo(?:sitory)?|project)\b)?|组织成员"
        ),
        "MEMBER",
    ),
    (r"\bcollaborators?\b|协作者", "COLLABORATOR"),
    (r"\b(?:past|previous|prior|returning|existing|repeat|earlier|former) contributors?\b|老贡献者", "CONTRIBUTOR"),
)

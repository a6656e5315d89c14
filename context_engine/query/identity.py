"""Identity resolution: people are names in questions and logins in data; the asker is an account.

The directory indexes every alias of a person (display name, first and last name, GitHub login,
Slack handle and id, Jira user, e-mail, nicknames). A question is scanned for exact alias matches
first (longest first), then fuzzy ones with rapidfuzz — never on everyday English words, and only on
capitalized words when the writer capitalizes names. "I"/"my"/"me"/"我" mean the asker. A real
tie is reported as ambiguous — never guessed; the engine asks the user, with the candidates.

Who *asks* (`--as`, an API key's person, an MCP identity) is never found that way: `asker` matches
one account exactly and holds the principals of that account's group only (`sources.people`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from context_engine.access import SYSTEMS, fold_account
from context_engine.text import HAN

# What kind of handle a data field holds; a person is written into a query in that kind.
HANDLE_KINDS = ("github", "slack_id", "jira", "email", "name")

_FIRST_PERSON = {"i", "me", "my", "mine", "myself"}
_CJK_FIRST_PERSON = re.compile(r"我(?!们)")
# A name joined to what the person did ("Clarine-started threads", "Dann-authored posts").
_NAME_PARTICIPLE = re.compile(
    r"(?<=[A-Za-z])-(?:started|opened|authored|created|initiated|led|filed|written|posted|run|owned|raised)$", re.I
)
# "给我看那条", "告诉我", "帮我查一下": the asker as the one the answer is for, as "show me" is — no condition.
# Not "分配给我的" (assigned to the asker): 给我 before a verb of showing only.
_CJK_POLITE_ME = re.compile(
    r"(?:告诉|帮|让|替)我|给我(?=\s*(?:看|列|查|找|说|讲|展示|显示|数|统计|算|瞧|一下|个|一个|一些|几个|点))"
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-\[\]]*[A-Za-z0-9\]]|[A-Za-z0-9]")
FUZZY_CUTOFF = 87

# Words a fuzzy match must never turn into a person ("merged" is not "Meredith").
COMMON_WORDS = frozenset(
    """
a about after all an and any are as at authored be been before between bug bugs by can closed
comment comments commit commits count created day days did do doc docs document documents done
draft during each for from github grouped has have how in into is issue issues it its label labels
last latest list many me merged message messages milestone month months most my of on open opened
or our past per pr prs pull pulls reopened request requested requests review reviewed reviewer
reviewers reviews show slack since than that the their them these this thread threads ticket
tickets to top total under was week weekly weeks were what when where which who whom whose why
with without wrote year years yesterday today assigned assignee assignees team teams repo repos
repository channel channels people person status state priority high low medium number times
pri prio p0 p1 p2 p3
""".split()
)

# Everyday English a question is written in. Only fuzzy matching consults this list (an exact alias
# still wins): "did I start" must not become Star or Stuart, "replied" not Randie.
ORDINARY_WORDS = COMMON_WORDS | frozenset(
    """
start started starts starting begin began begun create post posts posting reply replied replying
replies respond responded answer answered mention mentioned mentioning mentions send sent write
written writes writing said says talk talked asked ask question questions discussion discussions
active busiest longest biggest largest most least more fewer first second third ever every other
busier quieter chattier wordier noisier livelier
again also just only still since until before after people folks users members somebody anyone
earliest oldest newest latest earlier later recent recently previous next single
everyone group general random thing things something anything nothing great good best worst
contributors contributor maintainers maintainer reviewers reviewer committers committer collaborators collaborator
newcomers newcomer beginners beginner newbies bots bot admins admin outsiders outsider externals external humans
employees engineers developers devs strangers staff
""".split()
)

# Month and weekday names that are also first names ("April", "Sunday"): in a date ("in April
# 2019", "since April", "April 3") they are time, never a person.
CALENDAR_NAMES = frozenset(
    """
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday christmas xmas easter thanksgiving halloween
jan feb mar apr jun jul aug sep sept oct nov dec
""".split()
)
_DATE_BEFORE = re.compile(
    r"\b(?:in|since|before|after|during|until|till|from|through|of|by|last|this|next|early|mid|late|on)\s+$", re.I
)
# A lower-case "i" is the pronoun after an auxiliary ("did i", "have i") or before a verb ("i wrote").
_LOWER_I = re.compile(r"\b(?:did|do|have|had|am|was|can|could|should|will|would)\s+$", re.I)
_LOWER_I_AFTER = re.compile(
    r"^\s+(?:[a-z]+ed|wrote|write|have|had|did|do|am|was|own|sent|said|made|opened|open|merge|review|post)\b"
)
_DATE_AFTER = re.compile(r"^\s*(?:\d{1,4}\b|,\s*\d{4}|of\s+\d{4}\b|['’]\d\d\b|年)")  # "April of 2019", "march '19"


@dataclass(frozen=True)
class Person:
    key: str
    name: str
    handles: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    aliases: tuple[str, ...] = ()
    team: str | None = None
    # The principals of each account group of this person (`sources.people`), and those of the one
    # group the asker was matched to (empty for a person found in a question: finding grants nothing).
    accounts: tuple[tuple[str, ...], ...] = field(default=(), hash=False, compare=False)
    principals: tuple[str, ...] = field(default=(), hash=False, compare=False)
    # Where the person was seen (a Slack workspace): what tells two Rosalees apart for the asker.
    places: tuple[str, ...] = field(default=(), hash=False, compare=False)

    def handle(self, kind: str) -> str | None:
        if kind == "name":
            return self.name
        return self.handles.get(kind)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            **self.handles,
            **({"places": list(self.places)} if self.places else {}),
        }


@dataclass
class Mention:
    text: str
    start: int
    end: int
    person: Person | None = None
    candidates: list[Person] = field(default_factory=list)
    is_asker: bool = False
    score: float = 100.0

    @property
    def ambiguous(self) -> bool:
        return self.person is None and len(self.candidates) > 1


class UnknownPerson(LookupError):
    pass


class AmbiguousPerson(LookupError):
    def __init__(self, alias: str, candidates: list[Person]):
        names = ", ".join(f"{p.name} ({p.key})" for p in candidates)
        super().__init__(f"{alias!r} matches several people: {names}")
        self.candidates = candidates


class UnknownAsker(UnknownPerson):
    """The asker names no account exactly (a near miss, a display name, a handle)."""

    def __init__(self, asker: str, stale: bool = False):
        hint = (
            "; the people directory was merged by an older version without account groups: ingest again"
            if stale
            else ""
        )
        super().__init__(
            f"unknown asker {asker!r}: name one account exactly (a GitHub login, a Slack user id, "
            f"a Jira or Linear account, a verified e-mail, or system:account such as github:login){hint}"
        )


class AmbiguousAsker(AmbiguousPerson):
    """The asker names accounts that are not one group: the caller must choose."""

    def __init__(self, asker: str, choices: list[str]):
        LookupError.__init__(
            self, f"asker {asker!r} matches accounts of different people; use one of: " + ", ".join(choices)
        )
        self.candidates = []
        self.choices = choices


def places_of(record: dict[str, Any]) -> list[str]:
    """The Slack workspaces a people record was seen in (its identities' sources, "slack:racket")."""
    return list(
        dict.fromkeys(
            str(i["source"]).split(":", 1)[1]
            for i in record.get("identities") or ()
            if isinstance(i, dict) and str(i.get("source", "")).startswith("slack:")
        )
    )


def _person_from_record(record: dict[str, Any]) -> Person:
    handles = {}
    if record.get("login"):
        handles["github"] = record["login"]
    for kind in ("slack_id", "slack_handle", "jira", "email"):
        if record.get(kind):
            handles[kind] = str(record[kind])
    key = record.get("login") or record.get("slack_id") or record.get("email")
    accounts = tuple(
        tuple(str(p) for p in group.get("principals") or ())
        for group in record.get("accounts") or ()
        if isinstance(group, dict)
    )
    places = tuple(str(p) for p in record.get("places") or places_of(record))
    return Person(
        key=str(key),
        name=str(record.get("name") or key),
        handles=handles,
        aliases=tuple(str(a) for a in record.get("aliases") or ()),
        team=record.get("team"),
        accounts=tuple(a for a in accounts if a),
        places=places,
    )


# Systems whose accounts compare case-insensitively (GitHub logins, e-mail); the rest exactly.
_CASELESS_SYSTEMS = ("github", "email")


def _account_key(principal: str) -> str:
    """A principal as its system compares it."""
    system, _, account = principal.partition(":")
    return f"{system}:{fold_account(account)}" if system in _CASELESS_SYSTEMS else principal


# The systems a person's account groups hold principals of (groups such as github-team are not persons').
_PERSON_SYSTEMS = tuple(s for s in SYSTEMS if s != "github-team")


def _asker_keys(asker: str) -> list[str]:
    """The account keys `asker` may name: `system:account` names one; a bare account, any system's."""
    system, sep, _ = asker.partition(":")
    if sep and system in SYSTEMS:
        return [_account_key(asker)]
    return [_account_key(f"{system}:{asker}") for system in _PERSON_SYSTEMS]


class PeopleDirectory:
    def __init__(self, people: Iterable[dict[str, Any]]):
        people = [p for p in people if p.get("login") or p.get("slack_id") or p.get("email")]
        # A directory merged before account groups existed names no one's accounts: no asker is
        # resolved against it (refused, never silently holding nothing) until it is merged again.
        self.merged_without_accounts = any("accounts" not in p for p in people)
        self.people = [_person_from_record(p) for p in people]
        self.by_key = {p.key: p for p in self.people}
        # alias (lower-cased) -> people; `strong` aliases identify a person on their own.
        self.index: dict[str, set[int]] = {}
        self.cjk_aliases: list[tuple[str, int]] = []
        for i, person in enumerate(self.people):
            for alias in self.aliases(person):
                self.index.setdefault(alias.lower(), set()).add(i)
                if HAN.search(alias) and len(alias) >= 2:
                    self.cjk_aliases.append((alias, i))
        self.cjk_aliases.sort(key=lambda a: -len(a[0]))
        self._alias_keys = list(self.index)
        self._handle_keys = [a for a in self._alias_keys if self._is_handle(a)]

    @staticmethod
    def aliases(person: Person) -> set[str]:
        """Every text that names `person` in a question (the value index indexes the same ones)."""
        aliases = {person.name, person.key, *person.aliases}
        for kind in ("github", "slack_id", "slack_handle", "jira"):
            if person.handles.get(kind):
                aliases.add(person.handles[kind])
        if person.handles.get("email"):
            aliases.add(person.handles["email"])
            aliases.add(person.handles["email"].split("@")[0])
        parts = person.name.split()
        if len(parts) > 1:
            aliases.update(parts)  # a first or last name alone; ties are reported, not guessed
        elif HAN.search(person.name) and len(person.name) == 3:
            aliases.add(person.name[1:])  # a Chinese given name without the surname
        return {a.strip() for a in aliases if a and a.strip()}

    def _is_handle(self, alias: str) -> bool:
        return any(
            alias in (h.lower() for h in self.people[i].handles.values()) or alias == self.people[i].key.lower()
            for i in self.index.get(alias, ())
        )

    def __len__(self) -> int:
        return len(self.people)

    @cached_property
    def _accounts(self) -> dict[str, list[tuple[int, int, str]]]:
        """Account key -> (person, account group, principal as stated), for `asker`."""
        out: dict[str, list[tuple[int, int, str]]] = {}
        for i, person in enumerate(self.people):
            for g, principals in enumerate(person.accounts):
                for principal in principals:
                    out.setdefault(_account_key(principal), []).append((i, g, principal))
        return out

    def asker(self, asker: str) -> Person:
        """The person who asks, holding the principals of the ONE account group `asker` names exactly:
        an account (GitHub login, Slack id, Jira / Linear account, verified e-mail) or a namespaced
        principal (`github:login`, `slack:U…`); the directory key of a person with no account (a git
        author) names them holding nothing. Never fuzzy, never a name or handle.
        Raises UnknownAsker, or AmbiguousAsker with the namespaced choices."""
        if not isinstance(asker, str) or not asker.strip():
            raise UnknownAsker(str(asker))
        if self.merged_without_accounts:
            raise UnknownAsker(asker, stale=True)
        asker = asker.strip()
        matched: dict[tuple[int, int], str] = {}  # (person, group) -> the principal named
        for key in _asker_keys(asker):
            for i, g, principal in self._accounts.get(key, ()):
                matched.setdefault((i, g), principal)
        if not matched:
            # A person with no account any source vouches for (a git author) is named by its key and
            # holds nothing; a key is never a way into someone's accounts (it may come from a git e-mail).
            owners = [person for person in self.people if person.key == asker and not person.accounts]
            if len(owners) == 1:
                return owners[0]
            raise UnknownAsker(asker)
        if len(matched) > 1:
            choices = []
            for (i, g), hit in sorted(matched.items()):
                others = [p for (j, h), q in matched.items() if (j, h) != (i, g) for p in self.people[j].accounts[h]]
                choices.append(
                    hit if hit not in others else next((p for p in self.people[i].accounts[g] if p not in others), hit)
                )
            raise AmbiguousAsker(asker, sorted(set(choices)))
        ((i, g),) = matched
        return replace(self.people[i], principals=self.people[i].accounts[g])

    def lookup(self, alias: str) -> Person:
        """Find one person by any alias, fuzzily (a person named in a question or by a planner; never
        the asker: see `asker`). Raises UnknownPerson / AmbiguousPerson."""
        alias = alias.strip().lstrip("@")
        hits = self.index.get(alias.lower())
        if hits is None:
            match = process.extractOne(alias.lower(), self._alias_keys, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF)
            hits = self.index[match[0]] if match else set()
        people = [self.people[i] for i in sorted(hits)]
        if not people:
            raise UnknownPerson(f"unknown person {alias!r}: not in the people directory")
        if len(people) > 1:
            raise AmbiguousPerson(alias, people)
        return people[0]

    def closest(self, text: str, limit: int = 5) -> list[Person]:
        """The people whose aliases are most like `text`, for "did you mean" (the directory is the
        tenant's, readable by all its members)."""
        people: list[Person] = []
        for alias, _, _ in process.extract(
            text.lower(), self._alias_keys, scorer=fuzz.ratio, score_cutoff=60, limit=4 * limit
        ):
            people += [self.people[i] for i in sorted(self.index[alias]) if self.people[i] not in people]
        return people[:limit]

    def find_mentions(
        self, question: str, asker: Person | None = None, reserved: frozenset[str] = frozenset()
    ) -> list[Mention]:
        """People named in the question, left to right. `reserved` words are never people."""
        mentions: list[Mention] = []
        taken: list[tuple[int, int]] = []

        def free(a: int, b: int) -> bool:
            return all(b <= s or a >= e for s, e in taken)

        def add(mention: Mention) -> None:
            mentions.append(mention)
            taken.append((mention.start, mention.end))

        for alias, i in self.cjk_aliases:
            for m in re.finditer(re.escape(alias), question):
                if free(m.start(), m.end()):
                    add(Mention(alias, m.start(), m.end(), person=self.people[i]))
        polite_me = {m.end() - 1 for m in _CJK_POLITE_ME.finditer(question)}
        for m in _CJK_FIRST_PERSON.finditer(question):
            if free(m.start(), m.end()) and m.start() not in polite_me:
                add(Mention("我", m.start(), m.end(), person=asker, is_asker=True))

        # "don't", "isn't": the word before a contraction's "'t" is no one ("Don" is someone).
        words = [
            (m.group(0), m.start(), m.end())
            for m in _WORD.finditer(question)
            if not re.match(r"['’]t\b", question[m.end() :])
        ]
        # "Clarine-started threads": the name before a hyphenated participle is a word of its own
        words = [
            (w[: cut.start()], a, a + cut.start()) if (cut := _NAME_PARTICIPLE.search(w)) else (w, a, b)
            for w, a, b in words
        ]
        # A writer who capitalizes some word after the first ("PRs by Rashed") capitalizes names:
        # then only capitalized words may be misspelt names, lower-case ones are plain English.
        writes_names_capitalized = any(w[0][0].isupper() and w[0] != "I" for w in words[1:])
        slots: list[tuple[str, int, int]] | None = None  # where persons are named: computed once, when needed

        def a_word_not_a_name(text: str, low: str, start: int, end: int) -> bool:
            """ "top elmlang poster", "mention match", "please": a lower-case common word outside a
            person's place is that word, though someone is called so."""
            nonlocal slots
            if not (text.islower() and is_english(low)):
                return False
            slots = person_slots(question) if slots is None else slots
            return not any(a <= start and end <= b for _, a, b in slots)

        for n in (3, 2, 1):
            for j in range(len(words) - n + 1):
                start, end = words[j][1], words[j + n - 1][2]
                if not free(start, end):
                    continue
                text = question[start:end]
                clean = re.sub(r"'s$", "", text)
                low = clean.lower()
                polite = low == "me" and re.search(
                    r"\b(show|tell|give|get|find|list|let|help|remind)\s+$", question[:start], re.I
                )
                if (
                    n == 1
                    and low in _FIRST_PERSON
                    and (
                        low != "i"
                        or text == "I"
                        or _LOWER_I.search(question[:start])
                        or _LOWER_I_AFTER.search(question[end:])
                    )
                    and not polite
                ):
                    add(Mention(text, start, end, person=asker, is_asker=True))
                    continue
                if _ELSE.match(low) and _SOMEONE_BEFORE.search(question[:start]):
                    continue  # "someone else's thread": no one called Else
                if _GLOSS_BEFORE.search(question[:start]) and re.match(r"\s*[)）]", question[end:]):
                    continue  # "讲宏（macro）的消息": a Chinese word's translation in brackets, not anyone
                hits = self.index.get(low)
                if n == 1 and (hits or len(low) >= 5) and a_word_not_a_name(text, low, start, end):
                    continue  # (without a hit, a word shorter than five letters is looked up no further)
                if (
                    n == 1
                    and low in CALENDAR_NAMES
                    and (_DATE_BEFORE.search(question[:start]) or _DATE_AFTER.search(question[end:]))
                ):
                    continue  # a date ("in April 2019"), not April the person
                if low in CALENDAR_NAMES and (re.search(r"['’]s$", text) or re.match(r"['’]s\b", question[end:])):
                    continue  # a month's possessive ("list April's macro threads"): the month's, not April's
                if (n == 1 and low in COMMON_WORDS) or (low in reserved and not (hits and self._is_handle(low))):
                    continue  # a stored value ("bug") is not a person, unless it is someone's exact login
                if hits:
                    self._add_hits(add, text, start, end, hits, 100.0)
                elif (
                    n <= 2
                    and len(low) >= 5
                    and not any(w[0].lower() in ORDINARY_WORDS | reserved for w in words[j : j + n])
                ):
                    if text[0].isupper() or not writes_names_capitalized:
                        self._fuzzy(add, low, text, start, end, self._alias_keys)
                    elif n == 1 and len(low) >= 7:
                        # Logins are written in lower case even by writers who capitalize names:
                        # a long lower-case word may be a misspelt login, never a misspelt display name
                        # (a short one is more likely a name written small: "albert" is not albertz).
                        self._fuzzy(add, low, text, start, end, self._handle_keys)
        return sorted(mentions, key=lambda m: m.start)

    def _add_hits(self, add, text: str, start: int, end: int, hits: set[int], score: float) -> None:
        people = [self.people[i] for i in sorted(hits)]
        if len(people) == 1:
            add(Mention(text, start, end, person=people[0], score=score))
        else:
            add(Mention(text, start, end, candidates=people, score=score))

    def _fuzzy(self, add, low: str, text: str, start: int, end: int, keys: list[str]) -> None:
        """A typo: one edit for short words, two for long ones. Edit distance, not a similarity
        ratio, so "merge" never becomes "mkserge" while "Rashed" still finds "Rashid"; two swapped
        letters are one edit ("sevreo" is "severo"). Several people equally close are a tie (declined)."""
        max_edits = 1 if len(low) <= 7 else 2
        matches = process.extract(low, keys, scorer=OSA.distance, score_cutoff=max_edits, limit=5)
        if not matches:
            return
        best = min(distance for _, distance, _ in matches)
        if best > 1 and all(self._is_handle(alias) for alias, d, _ in matches if d == best):
            # Two edits from a login only ("Kowalski": rpowalski): a guess, offered, never resolved.
            people = sorted({i for alias, d, _ in matches if d == best for i in self.index[alias]})
            add(Mention(text, start, end, candidates=[self.people[i] for i in people], score=100.0 - 10 * best))
            return
        hits: set[int] = set()
        for alias, distance, _ in matches:
            if distance == best:
                hits |= self.index[alias]
        # A word one letter short of one login may begin another ("albert": albertz, albertvillanova):
        # a name cut short is as close to each, so all of them are the candidates.
        if len(low) >= 4:
            hits |= {i for alias in keys if alias.startswith(low) for i in self.index[alias]}
        # ... and a word that is one part of another login ("Suraj": surak by a typo, patil-suraj by name)
        hits |= {i for alias in keys if low in re.split(r"[-_.]", alias) for i in self.index[alias]}
        self._add_hits(add, text, start, end, hits, 100.0 - 10 * best)


# ------------------------------------------------------------------------------------------------
# Person slots: where a question names someone, whether or not the directory knows the name
# ------------------------------------------------------------------------------------------------

# A capitalised name of up to three words, with the lower-case particles of family names ("Patrick von Platen").
_PARTICLES = r"von|van|der|den|de|da|di|del|della|du|le|la|bin|al"
_NAME = (
    rf"(?:@[\w.\-]+|[A-Z][\w\u00C0-\u024F'\-]*(?:\s+(?:(?:{_PARTICLES})\s+)?"
    r"[A-Z][\w\u00C0-\u024F'\-]*){0,2})"
)
_LOGIN_LIKE = r"(?:[a-z][a-z0-9]*[0-9_\-][a-z0-9_\-]*[a-z0-9])"
# Words that lead to a person: "by X", "assigned to X", "messages from X", "did X merge", "X's".
_PERSON_CUES = [
    re.compile(
        rf"\b(?:(?:assigned|given|requested|sent|mentioned|reported|opened|merged|authored|created|written|"
        rf"filed|reviewed|approved|closed|started|posted|raised|submitted|owned)\s+(?:to|by|for)|by|"
        rf"(?:messages?|posts?|prs?|pull requests?|commits?|anything|something|updates?|reviews?|work|tickets?|"
        rf"issues?|threads?)\s+from|assigned|mentioning|waiting (?:for|on)|"
        rf"(?:repl(?:y|ies|ied)|respond(?:s|ed)?|answer(?:s|ed)?|talk(?:s|ed)?|wr[io]te)\s+(?:the\s+)?(?:most\s+|more\s+)?to)"
        rf"\s+({_NAME}|{_LOGIN_LIKE})"
    ),
    re.compile(rf"\b({_NAME})'s\b"),
    # "who mentions Wilhelmina Thorncastle most": a full name whom messages mention (one word there, "mention
    # SDKs", may be a subject; "mentioning" is read above)
    re.compile(
        r"\b(?:mentions?|mentioned|@-?mention(?:s|ed)?)\s+([A-Z][a-z]+(?:[ -][A-Z][a-z'-]+)+)\b(?!\s+(?:by|to)\b)"
    ),
    # "anyone called Ingrid Falk", "a contributor named Zed": what someone is called is a name
    re.compile(rf"\b(?:called|named)\s+({_NAME})"),
    # "issues by quin": a plain lower-case word right after "<records> by" is who wrote them
    re.compile(
        r"\b(?:[Pp][Rr]s?|[Pp]ull [Rr]equests?|[Ii]ssues?|[Tt]ickets?|[Bb]ugs?|[Mm]essages?|[Pp]osts?|[Tt]hreads?"
        r"|[Cc]ommits?)\s+by\s+([a-z][a-z0-9]{2,})\b"
    ),
    # "has Ignatius Pembleton ever opened a pull request", "have Zed and ... merged"
    re.compile(
        rf"\b(?:[Hh]as|[Hh]ave)\s+({_NAME})\s+(?:ever\s+|actually\s+|already\s+|been\s+)?(?:merged|opened|reviewed|"
        rf"written|closed|created|filed|posted|committed|approved|shipped|authored|started|reported|fixed|"
        rf"submitted|landed|worked on|assigned)\b"
    ),
    # "分配给 Wilhelmina Okafor-Strand 的 issue": a name in Latin letters after "assigned to"
    re.compile(rf"(?:分配给|指派给|交给)\s*({_NAME})"),
    re.compile(
        rf"\b[Dd]id\s+({_NAME}|[a-z][\w\-]*)\s+(?:ever\s+|actually\s+|already\s+)?(?:merge|open|review|write|"
        rf"close|create|file|post|commit|approve|ship|author|start|fix|work|send|submit|report|comment|do|"
        rf"finish|resolve|land)\b"
    ),
    re.compile(
        rf"^\W*({_NAME})\s+(?:merged|opened|reviewed|wrote|closed|created|filed|posted|committed|approved|"
        rf"shipped|authored|started|reported|fixed|submitted|landed)\b"
    ),
    # "issues Patrick von Platen filed", "PRs zed-dev merged": the records, then who did what to them.
    re.compile(
        rf"\b(?:[Pp][Rr]s?|[Pp]ull [Rr]equests?|[Ii]ssues?|[Tt]ickets?|[Bb]ugs?|[Mm]essages?|[Tt]hreads?|[Cc]ommits?)\s+"
        rf"({_NAME}|{_LOGIN_LIKE})\s+(?:has\s+|have\s+|had\s+)?(?:merged|opened|reviewed|wrote|closed|created|"
        rf"filed|posted|committed|approved|shipped|authored|started|reported|fixed|submitted|landed|raised)\b"
    ),
    # "how many issues is Mario assigned to", "Mario was assigned": the assignee.
    re.compile(
        rf"\b(?:is|was|are|were)\s+({_NAME})\s+assigned\b|\b({_NAME})\s+(?:is|was|are|were|has been|got|gets)\s+assigned\b"
    ),
    # "what is Marguerite Okonkwo-Blaise working on", "what has Zed been up to": someone's work
    re.compile(
        rf"\b[Ww]hat\s+(?:is|are|was|has|have|did)\s+({_NAME})\s+(?:been\s+)?(?:working on|doing|up to|shipping|done|"
        rf"posting|writing|saying|sending|talking about|discussing|merging|opening|filing|reviewing)\b"
    ),
    # "everything Ingrid Vasquez-Holloway has opened": a full name before what someone has done
    re.compile(
        rf"(?<![\w'-])([A-Z][\w\u00C0-\u024F'\-]*(?:\s+(?:(?:{_PARTICLES})\s+)?[A-Z][\w\u00C0-\u024F'\-]*){{1,2}})\s+"
        rf"(?:has|have|had)\s+(?:ever\s+|already\s+|been\s+)?(?:merged|opened|reviewed|written|wrote|closed|created|"
        rf"filed|posted|committed|approved|shipped|authored|started|reported|fixed|submitted|landed|raised|sent|"
        rf"posting|writing|saying|working on)\b"
    ),
    # A name in Latin letters before what a person does in Chinese ("Nobody Atall 开了哪些 PR", "Quentin 在
    # 2021 年合并了"); before 的 only a full name ("Nobody Atall 的 PR"): "Docker 的 issue" is a topic.
    re.compile(
        rf"(?:^|(?<=[\s\u3000-\u303f\uff00-\uffef\u4e00-\u9fff]))({_NAME}|{_LOGIN_LIKE})\s*"
        rf"(?=在|合并|提交|创建|负责|写了|写的|写过|发了|发的|发过|评审|审查|审核|关闭|解决|完成|打开|开了|开过|开的|提了|提的|提过|报的|"
        rf"上周|本周|这周|上个月|这个月|本月|今年|去年|最近|一共|总共)"
        rf"|(?:^|(?<=[\s\u3000-\u303f\uff00-\uffef\u4e00-\u9fff]))([A-Z][a-z]+\s+[A-Z][a-z]+)\s*(?=的)"
    ),
]
# A Chinese name (a common surname and one or two characters) before what a person does, or after
# "assigned to".
_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕"
    "丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)
_COMPOUND_SURNAMES = frozenset(
    "欧阳 司马 诸葛 上官 东方 皇甫 令狐 慕容 司徒 夏侯 端木 公孙 尉迟 长孙 宇文 西门 独孤 南宫 轩辕 澹台".split()
)
_CJK_BEFORE = re.compile(
    r"(?=的|合并|提交|创建|负责|写了|写的|发了|发的|评审|审查|审核|关闭|解决|完成|打开|开了|提了|提的|报的"
    r"|说了|说的|说过|讲了|讲的|聊了|聊的|问了|问的|问过)"
)
# Cues after which a name follows ("分配给张三", "跟李四", "@ 欧阳若曦": whom a message mentions).
_CJK_AFTER = re.compile(r"(?:分配给|指派给|交给|由|和|跟|@\s*)(?!任何|别人|谁|其他)([\u4e00-\u9fff]{2,4})")
_CJK_PARTICLES = "的了在和提合发写负创评审关解完打开吗呢"  # a third character that is not part of the name
# Time words that run into a name in Chinese ("上周张三合并"): a name starts after them.
_CJK_TIME = re.compile(
    r"(?:上|本|这|下|每)(?:个)?(?:周|星期|礼拜|月|季度)|(?:今|去|前|明)年|(?:今|昨|前|明)天|最近|近期|以来|一共|总共|周末|工作日"
)
_CJK_TIME_AT_END = re.compile(rf"(?:{_CJK_TIME.pattern})$")
_GLOSS_BEFORE = re.compile(r"[\u4e00-\u9fff]\s*[（(]\s*$")
_CJK_IN_ENGLISH = re.compile(
    r"(?<![\u4e00-\u9fff])(?P<before>[\u4e00-\u9fff]{2,4})(?=(?:['’]s)?\s+(?:posted|wrote|sent|said|merged|opened|closed"
    r"|created|filed|reported|reviewed|commented|replied|answered|started|mentioned|has|have|had|did|is|was)\b)"
    r"|\b(?:by|from|did|does|has|for|of)\s+(?P<after>[\u4e00-\u9fff]{2,4})(?![\u4e00-\u9fff])",
    re.I,
)
# Common words whose last character is also a surname ("任何": any; "如何": how; "为何": why).
_CJK_WORDS_ENDING_IN_SURNAME = frozenset({"任何", "如何", "为何", "几何", "有何", "没何"})
# What introduces a topic in Chinese ("提到 X", "关于 X"): the words after it are the subject, not a person.
_CJK_TOPIC_CUE = re.compile(r"(?:(?:提到|提及|涉及|谈到|说到)了?|关于|有关|讨论|谈论|聊到?)\s*$")
# Words that open a possessive or a "did X" without being anyone.
_ELSE = re.compile(r"else$")
_SOMEONE_BEFORE = re.compile(r"\b(?:some|any|no|every)(?:one|body)\s+$|\bno one\s+$|\b(?:who|what|where)\s+$", re.I)
NOT_NAMES = frozenset(
    """
i i'd i'm i've i'll i’d i’m i’ve i’ll we you they he she it its anyone anybody someone somebody everyone everybody nobody none no one team folks
people what that there here who whoever whomever whose whom let today tonight yesterday tomorrow week month year quarter sprint else
date dates time name names size age title author owner type kind area component project milestone channel
space workspace activity volume default hand others other altogether all together total
任何人 任何一个人 别人 其他人 他人 某人 有人 没人 谁
""".split()
)


# How often a word must occur in English text (pyspellchecker's counts) to be read as that word rather
# than as someone's name when written in lower case outside a person's place: "please" 675k, "match" 82k,
# "poster" 8k are words; "sam" 5k, "jasmine" 1.6k, "odis" 50 are more likely the people called so.
_COMMON_ENOUGH = 6000


def is_english(word: str) -> bool:
    from context_engine.query.spelling import english_words  # spelling reads identity's word lists

    return english_words().word_frequency[word] >= _COMMON_ENOUGH


def person_slots(question: str) -> list[tuple[str, int, int]]:
    """Spans of the question in a person's place ("by Nobody Atall", "what did Zed merge", "Quentin's
    PRs", "张三的PR"), found by the words around them, whether or not anyone has that name."""
    slots: list[tuple[str, int, int]] = []
    for cue in _PERSON_CUES:
        for m in cue.finditer(question):
            group = next(g for g in range(1, (m.lastindex or 1) + 1) if m.group(g) is not None)
            start, end = m.span(group)
            text = question[start:end].lstrip("@")
            if re.match(r"mentioning\s+$", question[m.start() : start], re.I) and text[:1].islower():
                continue  # "mentioning elm-test": a lower-case word there is a subject; "mentioning @kim" a person
            if _CJK_TOPIC_CUE.search(question[:start]):
                continue  # "提到 Typed Racket 的消息": what the messages are about, not whose they are
            start = end - len(text)
            if text.lower().endswith("'s"):
                text, end = text[:-2], end - 2
            words = text.split()
            # Leading words that name the records, not the person ("PRs Quentin merged").
            # ... and an English word capitalised for beginning a later sentence ("… PRs. Include Zed's").
            while len(words) > 1 and (
                words[0].lower() in COMMON_WORDS
                or (re.search(r"[.?!;:]\s+$", question[:start]) and is_english(words[0].lower()))
            ):
                dropped = words.pop(0)
                start = question.index(words[0], start + len(dropped))
            # Trailing capitalised words that are not names ("by Rashid Last week" is not a name).
            while words and words[-1].lower() in ORDINARY_WORDS | CALENDAR_NAMES | NOT_NAMES:
                words.pop()
            # "by nobody" is no one; "by Nobody Atall" is someone's full name.
            if words and (
                (len(words) > 1 and words[0][0].isupper()) or words[0].lower() not in ORDINARY_WORDS | NOT_NAMES
            ):
                text = " ".join(words)
                slots.append((text, start, start + len(text)))
    for run in re.finditer(r"[\u4e00-\u9fff]+", question):
        for cue in _CJK_BEFORE.finditer(question, run.start(), run.end()):
            head = question[run.start() : cue.start()]
            # when it was done may come between the name and the verb ("慕容子轩今年合并"), as well as before
            while (when := _CJK_TIME_AT_END.search(head)) and when.start() > 0:
                head = head[: when.start()]
            end = run.start() + len(head)
            head = head[max((t.end() for t in _CJK_TIME.finditer(head)), default=0) :]
            for size in (4, 3, 2):
                # A compound surname and one or two characters ("欧阳静怡"), or a surname and one or two.
                name = head[-size:] if len(head) >= size else ""
                compound = size > 2 and name[:2] in _COMPOUND_SURNAMES
                # "任何标签" is "any label": a name does not start inside a common word.
                if (
                    name
                    and (compound or (size < 4 and name[0] in _SURNAMES))
                    and head[-size - 1 :][:2] not in _CJK_WORDS_ENDING_IN_SURNAME
                ):
                    slots.append((name, end - size, end))
                    break
    for m in _CJK_AFTER.finditer(question):
        name = m.group(1)
        size = 2 if name[:2] in _COMPOUND_SURNAMES else 1  # 欧阳若曦: a compound surname and two characters
        name = name[: size + 2]
        if len(name) == size + 2 and name[-1] in _CJK_PARTICLES:
            name = name[:-1]
        if len(name) > size and (size == 2 or name[0] in _SURNAMES):
            slots.append((name, m.start(1), m.start(1) + len(name)))
    # A Chinese name in an English sentence, where English would put a person ("上官明哲 posted how many",
    # "messages by 王芳"): the whole run, if it starts with a surname.
    for m in _CJK_IN_ENGLISH.finditer(question):
        group = "before" if m.group("before") else "after"
        name = m.group(group)
        size = 2 if name[:2] in _COMPOUND_SURNAMES else 1
        if len(name) > size and (size == 2 or name[0] in _SURNAMES):
            slots.append((name, m.start(group), m.end(group)))
    kept: list[tuple[str, int, int]] = []
    for slot in sorted(set(slots), key=lambda s: (s[1], -s[2])):
        if all(slot[2] <= k[1] or slot[1] >= k[2] for k in kept):
            kept.append(slot)
    return kept

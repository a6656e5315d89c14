"""One identity directory from the person fragments every connector emits.

Input: records of the "people" collection as connectors write them, each a *fragment* of one
person with some of `login` and `github_id` (GitHub), `name`, `email` / `emails`, `slack_id`,
`slack_handle`, `jira` (Jira name / accountId / Linear user), `aliases`, `team` and `source`
("slack:elmlang", "git:context-engine", "jira:ENG", ...). Fragments whose source is `git` or starts
with `git:` come from commit authors; their names become the person's `git_names`. A record that
already carries `identities` is a person this module merged before: its identities, regrouped by
source, stand for the fragments it absorbed, so merging a directory again changes nothing.

Output (`Directory.people`): one record per person in the shape the bundled sample corpus uses
(`login, name, email, slack_id, slack_handle, jira, team, aliases, acl`) plus `emails`,
`git_names`, `identities` [{source, kind, value}], `evidence` [{rule, detail, access}] and
`accounts` [{principals, evidence}].

Two union-finds over the same fragments:

* **Account groups** (access). A fragment's source vouches only for the accounts it issues and the
  e-mail addresses it verifies (`VOUCHED`, keyed by the source's system, which connector code sets:
  a record cannot say what its source vouches for). Fragments join only on what both vouch for:
  the same account (GitHub login, Slack id, Jira / Linear account), the same verified e-mail (unless
  the join would hold two accounts of one system: a shared mailbox is not a person), a GitHub
  noreply address `123+login@users.noreply.github.com` whose login AND numeric id a GitHub fragment
  states, or an operator's override. A group's principals are the accounts its fragments vouch for;
  an asker holds those of ONE group, never a person's union. Names, handles, aliases, git author
  e-mails and document authors never join a group.
* **Display people** (finding people in questions): every account group, then every rule below,
  strongest first:
  1. exact keys: the same GitHub login, Slack id or Jira id (case-insensitive except Slack ids);
     then the same e-mail address, unless the clusters it would join hold two different logins /
     Slack ids / Jira ids (that becomes a Conflict); a GitHub noreply address names its login;
     a Slack handle or e-mail local part equal to a GitHub login, when exactly one cluster has it
     (rule "handle=login");
  2. overrides from a hand-written `people.yaml` / CSV: forced, contradictions included;
  3. names, repeated until nothing changes: exact CJK names, exact pinyin aliases, and latin names
     by rapidfuzz `token_sort_ratio` (accents stripped); an equal name outranks a similar one. Two
     clusters join when each is among the other's best matches and nothing in the resulting person
     contradicts (two logins, Slack ids or Jira ids); "J. Smith" never joins on initials alone.
     Anything less certain is listed in `Directory.conflicts` and left apart. E-mail addresses are
     not exclusive (people have several), so a git author with another address can still join.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_engine.access import fold_account, principals_of_accounts
from context_engine.sources.input_caps import parse_yaml, reading_csv
from context_engine.sources.problems import SourceError
from context_engine.text import CJK_CHAR

# A person has at most one of each per system, so two different values mean two people.
EXCLUSIVE_KINDS = ("login", "slack_id", "jira")
# Kinds whose shared value joins fragments without any judgement.
KEY_KINDS = ("login", "slack_id", "jira", "email")
IDENTITY_KINDS = ("login", "github_id", "email", "slack_id", "slack_handle", "jira", "name", "alias", "team")

# What a fragment's source vouches for, by the source's system (`source` up to its first ":", set by
# the connector's code): the accounts the system issues and the e-mail addresses it verifies (a
# Slack profile, a GitHub API user, a Jira / Linear account). A git author's name and e-mail and a
# document's front matter are whatever the writer typed: git and docs vouch for nothing.
VOUCHED = {
    "github": frozenset({"login", "github_id", "email"}),
    "slack": frozenset({"slack_id", "email"}),
    "jira": frozenset({"jira", "email"}),
    "linear": frozenset({"jira", "email"}),
}
# An operator's own directory vouches for every account it states: the overrides file (source
# "override", made by `_override_identities`, never by a connector) and the bundled sample corpus
# (source "sample", set by `sources/sample.py`, whose records state each person's accounts whole).
OPERATOR_SOURCES = frozenset({"override", "sample"})
_OPERATOR_VOUCHES = frozenset({"login", "github_id", "slack_id", "jira", "email"})

# token_sort_ratio (Indel similarity of the token-sorted strings) for latin full names.
# 92 admits one dropped or added letter in any name of 6+ letters ("Jon Smith"/"John Smith" 94.7,
# "Hannah Muller"/"Hannah Mueller" 96.3) and any word order ("Chen Alex"), but rejects one changed
# letter in names under 13 letters ("Alex Chen"/"Alec Chen" 88.9, "Rashid Khan"/"Rashed Khan"
# 90.9): a changed letter is as often a different person as a typo.
NAME_THRESHOLD = 92

_NOREPLY = re.compile(r"^(?:\d+\+)?([a-z0-9](?:[a-z0-9-]*[a-z0-9])?)@users\.noreply\.github\.com$")
# The noreply form GitHub has used since 2017: the account's numeric id, then its login.
_NOREPLY_ID = re.compile(r"^(\d+)\+([a-z0-9](?:[a-z0-9-]*[a-z0-9])?)@users\.noreply\.github\.com$")
_SLACK_ID = re.compile(r"^[UW][A-Z0-9]{6,}$")
# Addresses many people share: never a key.
_SHARED_EMAIL = re.compile(r"^(no-?reply|noreply\+.*|do-?not-?reply|root|admin|bot|ci)@|^noreply@github\.com$")
# Letters NFKD does not decompose into a base letter plus an accent.
_TRANSLIT = str.maketrans(
    {"ı": "i", "ø": "o", "ß": "ss", "æ": "ae", "œ": "oe", "đ": "d", "ł": "l", "þ": "th", "ð": "d"}
)

Identity = tuple[str, str, str]  # (source, kind, value)


@dataclass(frozen=True, order=True)
class Conflict:
    """People that might be one person; left apart for a human (or an override) to decide.
    `name` is the name in doubt, `candidates` labels everyone involved ("name (login x)")."""

    name: str
    candidates: tuple[str, ...]
    reason: str


@dataclass
class Directory:
    people: list[dict[str, Any]]
    conflicts: list[Conflict]
    # Fragments with no key at all (a document author's bare name) that no person claimed.
    unmatched: list[dict[str, Any]] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------
# Fragments -> identities
# ------------------------------------------------------------------------------------------------


def _text(value: Any) -> str | None:
    if isinstance(value, (str, int)) and str(value).strip():
        return str(value).strip()
    return None


def _listed(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [t for t in (_text(v) for v in value) if t]
    return [t] if (t := _text(value)) else []


def identities_of(fragment: dict[str, Any]) -> frozenset[Identity]:
    """Every (source, kind, value) a fragment states; a merged person states its `identities`."""
    if isinstance(fragment.get("identities"), list):
        return frozenset(
            (str(i["source"]), str(i["kind"]), str(i["value"]))
            for i in fragment["identities"]
            if isinstance(i, dict) and i.get("kind") in IDENTITY_KINDS and _text(i.get("value"))
        )
    source = _text(fragment.get("source")) or "unknown"
    out: set[Identity] = set()
    for kind in ("login", "github_id", "slack_id", "jira", "name", "team"):
        if value := _text(fragment.get(kind)):
            out.add((source, kind, value))
    if handle := _text(fragment.get("slack_handle")):
        out.add((source, "slack_handle", handle.lstrip("@")))
    for email in _listed(fragment.get("email")) + _listed(fragment.get("emails")):
        out.add((source, "email", fold_account(email)))
    for alias in _listed(fragment.get("aliases")):
        out.add((source, "alias", alias))
    return frozenset(out)


def _key(kind: str, value: str) -> str | None:
    """The union-find key of an identity, or None when it is not a key."""
    if kind == "slack_id":
        return f"slack_id:{value}"
    if kind in ("login", "jira"):
        return f"{kind}:{fold_account(value)}"
    if kind == "email" and "@" in value and not _SHARED_EMAIL.search(value):
        return f"email:{value}"
    return None


def is_git_source(source: str) -> bool:
    return source == "git" or source.startswith("git:")


# ------------------------------------------------------------------------------------------------
# Names
# ------------------------------------------------------------------------------------------------


def normalize_name(name: str) -> str:
    """Lower-case, accents stripped, punctuation to spaces; latin tokens sorted, CJK kept whole."""
    text = unicodedata.normalize("NFKD", name.lower().translate(_TRANSLIT))
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"[\W_]+", " ", text)
    if CJK_CHAR.search(text):
        return text.replace(" ", "")
    return " ".join(sorted(text.split()))


@dataclass(frozen=True)
class _Variant:
    key: str  # normalize_name()
    shown: str  # as written
    exact_only: bool  # pinyin of a CJK name: short and too alike for fuzzy scores
    cjk: bool


# ------------------------------------------------------------------------------------------------
# Union-find over fragments
# ------------------------------------------------------------------------------------------------


class _Clusters:
    def __init__(self, nodes: list[frozenset[Identity]], carried: list[list[dict[str, str]]]):
        self.parent = list(range(len(nodes)))
        self.identities: list[set[Identity]] = [set(n) for n in nodes]
        self.evidence: list[set[tuple[str, str]]] = [{(e["rule"], e["detail"]) for e in c} for c in carried]
        self._exclusive: dict[int, dict[str, set[str]]] = {}  # root -> exclusive keys, until its next union

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def exclusive(self, root: int) -> dict[str, set[str]]:
        if root not in self._exclusive:
            out: dict[str, set[str]] = defaultdict(set)
            for _, kind, value in self.identities[root]:
                if kind in EXCLUSIVE_KINDS:
                    out[kind].add(value if kind == "slack_id" else fold_account(value))
            self._exclusive[root] = out
        return self._exclusive[root]

    def contradicts(self, a: int, b: int) -> bool:
        ea, eb = self.exclusive(self.find(a)), self.exclusive(self.find(b))
        return any(ea.get(k) and eb.get(k) and ea[k] != eb[k] for k in EXCLUSIVE_KINDS)

    def union(self, a: int, b: int, rule: str | None = None, detail: str = "") -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if ra > rb:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self._exclusive.pop(ra, None)
        self.identities[ra] |= self.identities[rb]
        self.evidence[ra] |= self.evidence[rb]
        if rule:
            self.evidence[ra].add((rule, detail))
        return True

    def roots(self) -> list[int]:
        return sorted({self.find(i) for i in range(len(self.parent))})

    def values(self, root: int, kind: str) -> list[str]:
        return sorted({v for _, k, v in self.identities[root] if k == kind})

    def display(self, root: int) -> str:
        return _choose_name(self.identities[root]) or "?"

    def label(self, root: int) -> str:
        for kind in ("login", "slack_id", "email", "jira"):
            if values := self.values(root, kind):
                return f"{self.display(root)} ({kind} {values[0]})"
        return self.display(root)


# ------------------------------------------------------------------------------------------------
# The merge
# ------------------------------------------------------------------------------------------------


def merge_people(fragments: list[dict[str, Any]], overrides: list[dict[str, Any]] | None = None) -> Directory:
    """Merge person fragments (and previously merged persons) into one directory."""
    overrides = [_check_override(o, f"override {i + 1}") for i, o in enumerate(overrides or [])]
    nodes, carried, previous = _nodes(fragments)
    # Override nodes follow the fragments' (indices len(nodes)...), in the display clusters too.
    accounts = _AccountGroups(nodes + [_override_identities(o) for o in overrides], overrides)
    clusters = _Clusters(nodes, carried)
    conflicts: list[tuple[str, tuple[int, ...], str]] = list(accounts.conflicts)  # (subject kind, node ids, reason)

    for members in previous:  # a person merged before stays one person
        for i in members[1:]:
            clusters.union(members[0], i)
    _absorb_into_previous(clusters, nodes, previous)
    _join_exclusive_keys(clusters, nodes)
    _join_emails(clusters, nodes, conflicts)
    _join_handles(clusters, conflicts)
    _apply_overrides(clusters, nodes, overrides)
    for members in accounts.groups():  # one account group is always within one display person
        for i in members[1:]:
            clusters.union(members[0], i)
    name_conflicts = _join_names(clusters)

    return _directory(clusters, accounts, conflicts, name_conflicts)


def _nodes(fragments: Iterable[dict[str, Any]]) -> tuple[list[frozenset[Identity]], list[list[dict]], list[list[int]]]:
    """One node per distinct identity set (duplicate fragments are one), merged persons first.

    A merged person is split again into one node per source: its identities of one source are what
    that source's fragments stated, so the account groups are decided afresh from what each source
    vouches for (a directory stored by an older, looser merge grants nothing it should not), and its
    override identities are left out (the overrides passed in say them again, or no longer).
    `previous` lists each merged person's nodes. Display evidence is carried over; evidence that
    granted access is not (it is derived again)."""
    seen: dict[frozenset[Identity], int] = {}
    nodes: list[frozenset[Identity]] = []
    carried: list[list[dict]] = []
    previous: list[list[int]] = []

    def node(ids: frozenset[Identity], evidence: list[dict]) -> int:
        if ids in seen:
            carried[seen[ids]].extend(evidence)
            return seen[ids]
        seen[ids] = len(nodes)
        nodes.append(ids)
        carried.append(list(evidence))
        return seen[ids]

    ordered = sorted((f for f in fragments if isinstance(f, dict)), key=lambda f: "identities" not in f)
    for fragment in ordered:
        ids = identities_of(fragment)
        if not ids:
            continue
        evidence = [
            {"rule": str(e["rule"]), "detail": str(e["detail"])}
            for e in fragment.get("evidence") or []
            if isinstance(e, dict) and "rule" in e and "detail" in e and not e.get("access")
        ]
        if "identities" not in fragment:
            node(ids, evidence)
            continue
        by_source: dict[str, set[Identity]] = defaultdict(set)
        for identity in ids:
            # What an override said comes from the overrides given now, never from a stored record.
            if identity[0] != "override":
                by_source[identity[0]].add(identity)
        members = [
            node(frozenset(by_source[source]), evidence if k == 0 else []) for k, source in enumerate(sorted(by_source))
        ]
        if members:
            previous.append(list(dict.fromkeys(members)))
    return nodes, carried, previous


def _absorb_into_previous(clusters: _Clusters, nodes: list[frozenset[Identity]], previous: list[list[int]]) -> None:
    """A fragment whose every identity one earlier merged person lists is that person's again,
    even when it has no key (a bare name joined by name matching last time)."""
    owners: dict[Identity, set[int]] = defaultdict(set)
    for p, members in enumerate(previous):
        for i in members:
            for identity in nodes[i]:
                owners[identity].add(p)
    in_previous = {i for members in previous for i in members}
    for i, ids in enumerate(nodes):
        if i in in_previous:
            continue
        common = set.intersection(*(owners.get(x, set()) for x in ids))
        if len(common) == 1:
            clusters.union(i, previous[common.pop()][0])


# ------------------------------------------------------------------------------------------------
# Account groups: what grants access
# ------------------------------------------------------------------------------------------------


def _system(source: str) -> str:
    return "operator" if source in OPERATOR_SOURCES else source.split(":", 1)[0]


def vouched(identity: Identity) -> bool:
    """Whether the identity's own source vouches for it (an account it issued, an e-mail it verified)."""
    source, kind, _ = identity
    system = _system(source)
    return kind in (_OPERATOR_VOUCHES if system == "operator" else VOUCHED.get(system, frozenset()))


def _accounts(ids: Iterable[Identity]) -> set[tuple[str, str]]:
    """(principal system, account) for every identity its source vouches for: the accounts a group of
    these identities may act as. Jira-shaped ids are Linear's when Linear states them."""
    out = set()
    for identity in ids:
        source, kind, value = identity
        if not vouched(identity):
            continue
        if kind == "login":
            out.add(("github", value))
        elif kind == "slack_id":
            out.add(("slack", value))
        elif kind == "jira":
            out.add(("linear" if _system(source) == "linear" else "jira", value))
        elif kind == "email" and _key("email", value) and not _NOREPLY.match(value):
            out.add(("email", fold_account(value)))
    return out


def _account_key(system: str, account: str) -> str:
    """Accounts are compared as their systems compare them: Slack ids exactly, the rest case-insensitively."""
    return f"{system}:{account if system == 'slack' else fold_account(account)}"


class _AccountGroups:
    """The union-find over verified evidence only: which fragments are one set of accounts."""

    def __init__(self, nodes: list[frozenset[Identity]], overrides: list[dict[str, Any]]):
        self.nodes = nodes
        self.parent = list(range(len(nodes)))
        self.evidence: list[set[tuple[str, str]]] = [set() for _ in nodes]
        self.keys: list[set[str]] = [{_account_key(*a) for a in _accounts(ids)} for ids in nodes]
        self.conflicts: list[tuple[str, tuple[int, ...], str]] = []
        first_override = len(nodes) - len(overrides)
        for i, ids in enumerate(nodes[:first_override]):
            source = next(iter(ids))[0]  # a node is one source's (a fragment, or a stored person's part)
            if _system(source) == "operator" and len(self.keys[i]) > 1:
                # One operator record stating several accounts (the sample corpus) is the evidence.
                self.evidence[i].add(("operator-record", f"{source}: " + ", ".join(sorted(self.keys[i]))))
        self._join_same_accounts()
        self._join_verified_emails()
        self._join_noreply_ids()
        for k, override in enumerate(overrides):
            self._join_override(first_override + k, override)

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int, rule: str, detail: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            ra, rb = min(ra, rb), max(ra, rb)
            self.parent[rb] = ra
            self.keys[ra] |= self.keys[rb]
            self.evidence[ra] |= self.evidence[rb]
        self.evidence[ra].add((rule, detail))

    def contradicts(self, a: int, b: int) -> bool:
        """Two different accounts of one system (other than e-mail) in one group: two people."""

        def by_system(root: int) -> dict[str, set[str]]:
            out: dict[str, set[str]] = defaultdict(set)
            for key in self.keys[root]:
                system, _, account = key.partition(":")
                if system != "email":
                    out[system].add(account)
            return out

        ea, eb = by_system(self.find(a)), by_system(self.find(b))
        return any(ea[s] != eb[s] for s in ea.keys() & eb.keys())

    def _holders(self, wanted) -> dict[str, list[int]]:
        out: dict[str, list[int]] = defaultdict(list)
        for i, keys in enumerate(self.keys):
            for key in keys:
                if wanted(key):
                    out[key].append(i)
        return out

    def _join_same_accounts(self) -> None:
        for key, members in sorted(self._holders(lambda k: not k.startswith("email:")).items()):
            for i in members[1:]:
                self.union(members[0], i, "same-account", key)

    def _join_verified_emails(self) -> None:
        for key, members in sorted(self._holders(lambda k: k.startswith("email:")).items()):
            roots = sorted({self.find(i) for i in members})
            if len(roots) < 2:
                continue
            if any(self.contradicts(a, b) for k, a in enumerate(roots) for b in roots[k + 1 :]):
                self.conflicts.append(
                    ("email", tuple(roots), (f"verified e-mail {key[6:]} is shared by different accounts"))
                )
                continue
            for r in roots[1:]:
                self.union(roots[0], r, "verified-email", key[6:])

    def _join_noreply_ids(self) -> None:
        """`123+login@users.noreply.github.com` (git commits carry them) is the GitHub account a GitHub
        fragment states with that login AND that numeric id; it joins only a fragment that holds no
        account of its own (a Jira / Slack / Linear profile stating someone's public noreply address
        gets nothing of theirs)."""
        github: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, ids in enumerate(self.nodes):
            logins = {fold_account(v) for s, k, v in ids if k == "login" and vouched((s, k, v))}
            for s, k, v in ids:
                if k == "github_id" and vouched((s, k, v)):
                    for login in logins:
                        github[(v, login)].append(i)
        for i, ids in enumerate(self.nodes):
            for _, kind, value in sorted(ids):
                m = _NOREPLY_ID.match(fold_account(value)) if kind == "email" else None
                for owner in github.get((m.group(1), m.group(2)), []) if m else []:
                    if self.find(owner) == self.find(i):
                        continue
                    if self.keys[self.find(i)] - {_account_key("github", m.group(2))}:
                        # Nobody but GitHub can verify a noreply address (no mail reaches it), and the
                        # login and id in it are public: it ties a commit author (who holds no account)
                        # to the GitHub account, never another system's account to it.
                        self.conflicts.append(
                            (
                                "email",
                                (owner, i),
                                (f"noreply address {value.lower()} is stated by an account of another system"),
                            )
                        )
                    elif self.contradicts(owner, i):
                        self.conflicts.append(
                            ("email", (owner, i), (f"noreply address {value.lower()} is held by different accounts"))
                        )
                    else:
                        self.union(owner, i, "github-noreply-id", value.lower())

    def _join_override(self, node: int, override: dict[str, Any]) -> None:
        """An operator's mapping: forced, contradictions included; it may name any identity."""
        wanted = _override_keys(self.nodes[node])
        for i, ids in enumerate(self.nodes[:node]):
            if _override_keys(ids) & wanted:
                self.union(node, i, "override", _override_detail(override, wanted))
        self.evidence[self.find(node)].add(("override", _override_detail(override, wanted)))

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = defaultdict(list)
        for i in range(len(self.parent)):
            out[self.find(i)].append(i)
        return [out[r] for r in sorted(out)]

    def record(self, members: list[int]) -> dict[str, Any]:
        """One group (its node ids, from `groups`) as a person record stores it."""
        accounts = _accounts(x for i in members for x in self.nodes[i])
        return {
            "principals": principals_of_accounts(accounts),
            "evidence": [{"rule": r, "detail": d} for r, d in sorted(self.evidence[self.find(members[0])])],
        }


def _join_exclusive_keys(clusters: _Clusters, nodes: list[frozenset[Identity]]) -> None:
    by_key: dict[str, list[int]] = defaultdict(list)
    for i, ids in enumerate(nodes):
        for _, kind, value in ids:
            if kind in EXCLUSIVE_KINDS and (key := _key(kind, value)):
                by_key[key].append(i)
            elif kind == "email" and (m := _NOREPLY.match(value)):
                by_key[f"noreply:{m.group(1)}"].append(i)
    logins = {key.split(":", 1)[1] for key in by_key if key.startswith("login:")}
    for key in sorted(by_key):
        members = by_key[key]
        if key.startswith("noreply:"):
            login = key.split(":", 1)[1]
            if login in logins:
                for i in members:
                    clusters.union(by_key[f"login:{login}"][0], i, "noreply=login", f"{login}@users.noreply.github.com")
            continue
        for i in members[1:]:
            clusters.union(members[0], i)


def _join_emails(clusters: _Clusters, nodes: list[frozenset[Identity]], conflicts: list) -> None:
    by_email: dict[str, set[int]] = defaultdict(set)
    for i, ids in enumerate(nodes):
        for _, kind, value in ids:
            if kind == "email" and _key(kind, value):
                by_email[value].add(i)
    for email in sorted(by_email):
        members = sorted(by_email[email])
        roots = sorted({clusters.find(i) for i in members})
        if len(roots) < 2:
            continue
        if any(clusters.contradicts(a, b) for k, a in enumerate(roots) for b in roots[k + 1 :]):
            conflicts.append(("email", tuple(roots), f"e-mail {email} is shared by people with different accounts"))
            continue
        for r in roots[1:]:
            clusters.union(roots[0], r)


def _join_handles(clusters: _Clusters, conflicts: list) -> None:
    """A Slack handle or e-mail local part equal to a GitHub login, when exactly one cluster has it."""
    handles: dict[str, set[int]] = defaultdict(set)
    logins: dict[str, int] = {}
    for root in clusters.roots():
        for _, kind, value in clusters.identities[root]:
            if kind == "slack_handle":
                handles[value.lower()].add(root)
            elif kind == "email" and not _NOREPLY.match(value):
                handles[value.split("@")[0]].add(root)
            elif kind == "login":
                logins[value.lower()] = root
    for login in sorted(logins):
        own = clusters.find(logins[login])
        holders = sorted({clusters.find(r) for r in handles.get(login, ())})
        if not holders or own in holders:
            continue
        if len(holders) > 1:
            conflicts.append(
                ("handle", (own, *holders), f"several Slack handles / e-mail names equal the login {login}")
            )
        elif not clusters.contradicts(own, holders[0]):
            clusters.union(own, holders[0], "handle=login", login)


def _override_keys(ids: Iterable[Identity]) -> set[str]:
    """Keys an override can name; a Slack handle counts here because a human wrote it."""
    keys = {k for _, kind, value in ids if (k := _key(kind, value))}
    return keys | {f"slack_handle:{value.lower()}" for _, kind, value in ids if kind == "slack_handle"}


def _override_detail(override: dict[str, Any], keys: set[str]) -> str:
    return f"{override['name'] or ''}: " + ", ".join(sorted(keys))


def _apply_overrides(clusters: _Clusters, nodes: list[frozenset[Identity]], overrides: list[dict]) -> None:
    """Each override becomes a node of source "override", forced together with every cluster that
    holds one of its keys, contradictions included: a human decided."""
    holders: dict[str, list[int]] = defaultdict(list)
    for i, ids in enumerate(nodes):
        for key in _override_keys(ids):
            holders[key].append(i)
    for override in overrides:
        ids = _override_identities(override)
        node = len(nodes)
        nodes.append(ids)
        clusters.parent.append(node)
        clusters.identities.append(set(ids))
        clusters.evidence.append(set())
        wanted = _override_keys(ids)
        for key in sorted(wanted):
            for i in holders.get(key, ()):
                clusters.union(node, i)
        clusters.evidence[clusters.find(node)].add(("override", _override_detail(override, wanted)))


# ------------------------------------------------------------------------------------------------
# Name matching
# ------------------------------------------------------------------------------------------------


def _variants(clusters: _Clusters, root: int) -> list[_Variant]:
    ids = clusters.identities[root]
    handles = {v.lower() for _, k, v in ids if k in ("login", "slack_handle", "jira")}
    handles |= {v.split("@")[0] for _, k, v in ids if k == "email"}
    names = {v for _, k, v in ids if k in ("name", "alias")}
    has_cjk_name = any(CJK_CHAR.search(n) for n in names)
    out = set()
    for name in names:
        key = normalize_name(name)
        cjk = bool(CJK_CHAR.search(key))
        if name.lower() in handles or not key:
            continue
        if cjk:
            if len(key) >= 2:
                out.add(_Variant(key, name, True, True))
        elif len(key.split()) >= 2 and max(len(t) for t in key.split()) >= 2:  # a full name, not "Al"
            out.add(_Variant(key, name, has_cjk_name, False))
    return sorted(out, key=lambda v: (v.key, v.shown))


def _initials_match(short: str, full: str) -> bool:
    """ "j smith" fits "john smith": every word equal, or an initial that starts the other word."""
    a, b = short.split(), full.split()
    if len(a) != len(b) or a == b or not any(len(t) == 1 for t in a):
        return False
    rest = list(b)
    for token in (t for t in a if len(t) > 1):
        if token not in rest:
            return False
        rest.remove(token)
    for initial in (t for t in a if len(t) == 1):
        hit = next((t for t in rest if t.startswith(initial)), None)
        if hit is None:
            return False
        rest.remove(hit)
    return True


def _name_links(clusters: _Clusters) -> tuple[dict[int, dict[int, tuple]], dict[int, set[int]]]:
    """Strong links (root -> other root -> (score, rule, detail)) and weak, initials-only ones
    (root of the initials -> roots of the full names)."""
    from rapidfuzz import fuzz, process  # import here: only merging needs it

    owners: dict[str, set[int]] = defaultdict(set)
    variants: dict[str, list[tuple[int, _Variant]]] = defaultdict(list)
    for root in clusters.roots():
        for v in _variants(clusters, root):
            owners[v.key].add(root)
            variants[v.key].append((root, v))
    strong: dict[int, dict[int, tuple]] = defaultdict(dict)
    weak: dict[int, set[int]] = defaultdict(set)

    def link(a: int, b: int, score: float, rule: str, detail: str) -> None:
        if a == b or clusters.contradicts(a, b):
            return
        for x, y in ((a, b), (b, a)):
            if score > strong[x].get(y, (0,))[0]:
                strong[x][y] = (score, rule, detail)

    # Evidence quotes a name as written; the smallest spelling, so input order never shows.
    shown = {key: min(v.shown for _, v in held) for key, held in variants.items()}
    for key, held in variants.items():  # the same normalized name in several clusters
        roots = sorted({r for r, _ in held})
        rule = "cjk-name" if held[0][1].cjk else "pinyin" if any(v.exact_only for _, v in held) else "name"
        for k, a in enumerate(roots):
            for b in roots[k + 1 :]:
                link(a, b, 100.0, rule, shown[key])

    # Latin names compared within blocks of the same first letter (of the token-sorted form):
    # an edit to a name's very first letter is not worth comparing everyone with everyone.
    blocks: dict[str, list[str]] = defaultdict(list)
    for key, held in variants.items():
        if not held[0][1].cjk:
            blocks[key[0]].append(key)
    for block in blocks.values():
        block.sort()
        fuzzy_keys = [k for k in block if not any(v.exact_only for _, v in variants[k])]
        for start in range(0, len(fuzzy_keys), 1000):  # bounded memory: 1000 x block scores at a time
            rows = fuzzy_keys[start : start + 1000]
            # Keys are token-sorted already, so plain ratio here is token_sort_ratio.
            scores = process.cdist(rows, fuzzy_keys, scorer=fuzz.ratio, score_cutoff=NAME_THRESHOLD, workers=1)
            for i, j in zip(*scores.nonzero()):
                a_key, b_key = rows[i], fuzzy_keys[j]
                if a_key < b_key:
                    detail = f"{shown[a_key]} ~ {shown[b_key]} ({scores[i, j]:.0f})"
                    for a in owners[a_key]:
                        for b in owners[b_key]:
                            link(a, b, float(scores[i, j]), "fuzzy-name", detail)
        for short in (k for k in block if any(len(t) == 1 for t in k.split())):
            for full in block:
                if _initials_match(short, full):
                    for a in owners[short]:
                        weak[a] |= {b for b in owners[full] if b != a and not clusters.contradicts(a, b)}
    return strong, weak


def _best(links: dict[int, tuple]) -> list[int]:
    """The candidates of the best tier: equal names beat similar ones."""
    top = max((score for score, _, _ in links.values()), default=0.0)
    return sorted(b for b, (score, _, _) in links.items() if (score == 100.0) == (top == 100.0))


def _compatible(clusters: _Clusters, members: list[int]) -> bool:
    return not any(clusters.contradicts(x, y) for k, x in enumerate(members) for y in members[k + 1 :])


def _join_names(clusters: _Clusters) -> list[tuple[str, tuple[int, ...], str]]:
    """Join each cluster with its best name matches when all of them can be one person (no two
    logins / Slack ids / Jira ids among them, also through chains of matches); repeat until
    nothing changes. The last pass's doubts are the conflicts."""
    while True:
        strong, weak = _name_links(clusters)
        conflicts = []
        best = {a: _best(links) for a, links in strong.items()}
        for a in sorted(best):
            if not _compatible(clusters, [a, *best[a]]):
                conflicts.append(("name", (a, *best[a]), "several people have this name"))
        # Two clusters join when each is among the other's best matches. Joins that chain into one
        # component merge whole or not at all, so no join depends on which one went first.
        edges = [(a, b) for a in sorted(best) for b in best[a] if a < b and a in best.get(b, ())]
        component = _Components()
        for a, b in edges:
            component.union(a, b)
        merged = False
        for members in component.sets():
            if not _compatible(clusters, members):
                conflicts.append(("name", tuple(members), "several people have this name"))
                continue
            for a, b in (e for e in edges if e[0] in members):
                _, rule, detail = strong[a][b]
                merged |= clusters.union(a, b, rule, detail)
        if not merged:
            break
    for a in sorted(weak):
        if weak[a] and not strong.get(a):
            reason = "only initials match" if len(weak[a]) == 1 else "only initials match, several people"
            conflicts.append(("name", (a, *sorted(weak[a])), reason))
    return conflicts


class _Components:
    """A throwaway union-find over cluster roots."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}

    def find(self, x: int) -> int:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def sets(self) -> list[list[int]]:
        out: dict[int, list[int]] = defaultdict(list)
        for x in sorted(self.parent):
            out[self.find(x)].append(x)
        return [out[k] for k in sorted(out)]


# ------------------------------------------------------------------------------------------------
# Clusters -> person records
# ------------------------------------------------------------------------------------------------


def _sources_by_value(ids: Iterable[Identity], kinds: tuple[str, ...]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for source, kind, value in ids:
        if kind in kinds:
            out[value].add(source)
    return out


def _pick(ids: set[Identity], kind: str) -> str | None:
    """The value most sources agree on (an override first); ties alphabetically."""
    held = _sources_by_value(ids, (kind,))
    if not held:
        return None
    return min(
        held,
        key=lambda v: (
            not any(s == "override" for s in held[v]),
            bool(_NOREPLY.match(v)) if kind == "email" else False,
            -len(held[v]),
            v,
        ),
    )


def _choose_name(ids: set[Identity]) -> str | None:
    """An override's name, else a real name (not a handle) most non-git sources use."""
    handles = {v.lower() for _, k, v in ids if k in ("login", "slack_handle", "jira")}
    handles |= {v.split("@")[0] for _, k, v in ids if k == "email"}
    held = _sources_by_value(ids, ("name",)) or _sources_by_value(ids, ("alias",))
    if not held:
        return _pick(ids, "login") or _pick(ids, "slack_handle") or _pick(ids, "email")

    def rank(name: str) -> tuple:
        sources = held[name]
        full = bool(CJK_CHAR.search(name)) or len(name.split()) > 1
        return (
            "override" not in sources,
            name.lower() in handles,
            -sum(not is_git_source(s) for s in sources),
            -len(sources),
            not full,
            name,
        )

    return min(held, key=rank)


def _person(clusters: _Clusters, root: int, accounts: list[dict[str, Any]]) -> dict[str, Any]:
    """The display person of a cluster; `accounts` are its account groups that grant something."""
    ids = clusters.identities[root]
    name = _choose_name(ids)
    key_values = {v.lower() for _, k, v in ids if k in ("login", "slack_id", "slack_handle", "jira", "email")}
    aliases: dict[str, str] = {}
    for _, kind, value in sorted(ids, key=lambda i: (i[1] != "name", i[2], i[0])):
        # A "name" that is a handle is a connector's placeholder (GitHub gives only a login);
        # an alias that equals a handle was written on purpose and stays.
        if value != name and (kind == "alias" or (kind == "name" and value.lower() not in key_values)):
            aliases.setdefault(value.casefold(), value)
    git_names = sorted({v for s, k, v in ids if is_git_source(s) and k in ("name", "alias")})
    evidence = set(clusters.evidence[root])
    # An exact key that two sources share is why their fragments are one person.
    for kind in KEY_KINDS:
        for value, sources in _sources_by_value(ids, (kind,)).items():
            if len(sources - {"override"}) > 1 and _key(kind, value):
                evidence.add((kind, value))
    granting = {(e["rule"], e["detail"]) for group in accounts for e in group["evidence"]}
    return {
        "login": _pick(ids, "login"),
        "name": name,
        "email": _pick(ids, "email"),
        "emails": sorted({v for _, k, v in ids if k == "email"}),
        "slack_id": _pick(ids, "slack_id"),
        "slack_handle": _pick(ids, "slack_handle"),
        "jira": _pick(ids, "jira"),
        "team": _pick(ids, "team"),
        "aliases": sorted(aliases.values(), key=str.casefold),
        "git_names": git_names,
        "identities": [{"source": s, "kind": k, "value": v} for s, k, v in sorted(ids)],
        # `access`: whether the evidence joined accounts (and so their access), or only helps find people.
        "evidence": [{"rule": r, "detail": d, "access": (r, d) in granting} for r, d in sorted(evidence | granting)],
        "accounts": accounts,
        "acl": ["*"],
        "source": "people",
    }


def _has_key(ids: set[Identity]) -> bool:
    return any(_key(kind, value) for _, kind, value in ids)


def _directory(clusters: _Clusters, accounts: _AccountGroups, key_conflicts: list, name_conflicts: list) -> Directory:
    people, unmatched = [], []
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for members in accounts.groups():
        group = accounts.record(members)
        if group["principals"]:
            groups[clusters.find(members[0])].append(group)
    for root in clusters.roots():
        if _has_key(clusters.identities[root]):
            people.append(_person(clusters, root, sorted(groups[root], key=lambda g: g["principals"])))
        else:
            unmatched.append(
                {"name": clusters.display(root), "sources": sorted({s for s, _, _ in clusters.identities[root]})}
            )
    people.sort(
        key=lambda p: (str(p["login"] or p["slack_id"] or p["email"] or p["jira"] or "").lower(), p["name"] or "")
    )

    # Doubts about overlapping sets of people are one conflict ("A matches B and C" and "B
    # matches A and C"), named after the first person who raised it.
    raised = []
    for subject, members, reason in key_conflicts + name_conflicts:
        roots = list(dict.fromkeys(clusters.find(m) for m in members))
        if len(roots) < 2 or (subject == "handle" and clusters.find(members[0]) in roots[1:]):
            continue  # resolved later (an override, or a merge by another key)
        name = clusters.display(roots[0]) if subject == "name" else clusters.label(roots[0])
        raised.append((name, roots, reason))
    raised.sort(key=lambda r: (r[0], clusters.label(r[1][0]), r[2]))
    overlap = _Components()
    for _, roots, _ in raised:
        for r in roots[1:]:
            overlap.union(roots[0], r)
    groups = {members[0]: members for members in overlap.sets()}
    conflicts: dict[int, Conflict] = {}
    for name, roots, reason in raised:
        group = overlap.find(roots[0])
        if group not in conflicts:  # candidates: everyone in doubt, the one who raised it too
            labels = tuple(sorted(clusters.label(m) for m in groups[group]))
            conflicts[group] = Conflict(name, labels, reason)
    return Directory(people, sorted(conflicts.values()), sorted(unmatched, key=lambda u: (u["name"], u["sources"])))


# ------------------------------------------------------------------------------------------------
# Overrides
# ------------------------------------------------------------------------------------------------

_OVERRIDE_FIELDS = {"name", "aliases", "github", "slack", "email", "emails", "jira", "team"}


def _check_override(entry: Any, where: str) -> dict[str, Any]:
    """One override as {name, team, aliases, github, slack, emails, jira} (lists); SourceError if bad."""
    if not isinstance(entry, dict):
        raise SourceError(
            f"{where}: expected a mapping of name/github/slack/email/jira/team, got {type(entry).__name__}"
        )
    unknown = set(entry) - _OVERRIDE_FIELDS
    if unknown:
        raise SourceError(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")

    def split(value: Any) -> list[str]:
        if isinstance(value, str):
            return [p.strip() for p in value.split(";") if p.strip()]
        return _listed(value)

    out = {
        "name": _text(entry.get("name")),
        "team": _text(entry.get("team")),
        "aliases": split(entry.get("aliases")),
        "github": split(entry.get("github")),
        "slack": [s.lstrip("@") for s in split(entry.get("slack"))],
        "emails": [fold_account(e) for e in split(entry.get("email")) + split(entry.get("emails"))],
        "jira": split(entry.get("jira")),
    }
    if not (out["github"] or out["slack"] or out["emails"] or out["jira"]):
        raise SourceError(f"{where}: an override needs at least one of github, slack, email, jira")
    return out


def _override_identities(override: dict[str, Any]) -> frozenset[Identity]:
    ids: set[Identity] = set()
    for login in override["github"]:
        ids.add(("override", "login", login))
    for slack in override["slack"]:
        ids.add(("override", "slack_id" if _SLACK_ID.match(slack) else "slack_handle", slack))
    for email in override["emails"]:
        ids.add(("override", "email", email))
    for jira in override["jira"]:
        ids.add(("override", "jira", jira))
    for alias in override["aliases"]:
        ids.add(("override", "alias", alias))
    for kind in ("name", "team"):
        if override[kind]:
            ids.add(("override", kind, override[kind]))
    return frozenset(ids)


def load_overrides(path: Path) -> list[dict[str, Any]]:
    """Entries of a `people.yaml` (a list of mappings) or a CSV with those columns
    (`aliases`/`emails` `;`-separated). Overrides are written by hand, so any mistake is fatal."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"cannot read {path}: {exc}") from None
    if path.suffix.lower() == ".csv":
        with reading_csv(str(path)):
            rows = list(csv.DictReader(text.splitlines()))
        if rows and None in rows[0]:
            raise SourceError(f"{path}: a row has more cells than the header")
        entries: Any = [{k.strip(): v for k, v in row.items() if v not in (None, "")} for row in rows]
    elif path.suffix.lower() in (".yaml", ".yml"):
        import yaml  # only overrides need it

        try:
            entries = parse_yaml(text)  # weighed before it is built: no alias bombs
        except yaml.YAMLError as exc:
            raise SourceError(f"{path} is not valid YAML: {str(exc).splitlines()[0]}") from None
        if isinstance(entries, dict) and isinstance(entries.get("people"), list):
            entries = entries["people"]
    else:
        raise SourceError(f"{path}: overrides must be .yaml, .yml or .csv")
    if not isinstance(entries, list):
        raise SourceError(f"{path}: expected a list of people")
    return [_check_override(e, f"{path} entry {i + 1}") for i, e in enumerate(entries)]

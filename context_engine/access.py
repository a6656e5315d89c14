"""Who may read a record: namespaced principals, deny by default, and lists that never widen.

An access list (`acl`, hidden) holds principals. A principal names its system, so an account in one
system can never be mistaken for a namesake in another: `github:<login>`, `slack:<user id>`,
`jira:<account id>`, `linear:<user id>`, `email:<address>`; groups likewise (`github-team:<org>/<team>`).
`PUBLIC` ("*") means every member of the tenant. A record without an access list, or with an empty
one, is readable by nobody: visibility must be stated by the source (or by the operator), never assumed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from context_engine.text import ASCII_LOWER

PUBLIC = "*"
"""The access-list entry that lets every member of the tenant read a record."""

SYSTEMS = ("github", "github-team", "slack", "jira", "linear", "email")


def fold_account(account: str) -> str:
    """An account as caseless systems compare it: ASCII letters lower-cased, nothing else touched.
    Never `str.lower()`: Unicode case mapping turns some other letters into ASCII ones (KELVIN SIGN
    "\u212a" into "k"), so two different accounts or addresses would be one ("\u212aate" = "kate")."""
    return account.translate(ASCII_LOWER)


def principal(system: str, account: str) -> str:
    """`system:account`; e-mail addresses are compared case-insensitively, as mail systems do."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown principal system {system!r}; known: {', '.join(SYSTEMS)}")
    account = str(account).strip()
    return f"{system}:{fold_account(account) if system == 'email' else account}"


def check_principals(principals: Any) -> list[str]:
    """The asker's principals as plain strings; anything else (a dict, a nested list) is refused."""
    if isinstance(principals, (str, bytes)) or not isinstance(principals, (list, tuple, set, frozenset)):
        raise TypeError("principals must be a list of strings")
    for item in principals:
        if type(item) is not str:
            raise TypeError(f"a principal must be a plain string, got {type(item).__name__}")
    return list(principals)


def principals_of_accounts(accounts: Iterable[tuple[str, str]]) -> list[str]:
    """The principals of one account group: one per (system, account) its sources vouched for
    (`sources.people`). Anything that is not an access system (a display name, a Slack handle, an
    alias) is refused with ValueError: those find people in questions, they never grant access."""
    return sorted({principal(system, account) for system, account in accounts})


def slack_members(members: Iterable[str]) -> list[str]:
    return sorted({principal("slack", m) for m in members if m})


def merge_acl(existing: list[str] | None, incoming: list[str] | None, authoritative: bool) -> list[str]:
    """The access list to store when a record is written again.

    An authoritative source (an export listing a private channel's members, an API stating a
    repository's visibility) replaces the list. Anything else (a webhook that does not know the
    membership, a re-delivery) may only narrow it: the result is never wider than what was stored.
    """
    incoming = sorted(set(incoming or []))
    if authoritative or existing is None:
        return incoming
    existing = sorted(set(existing))
    if PUBLIC in existing:
        return incoming
    if PUBLIC in incoming:
        return existing
    return sorted(set(existing) & set(incoming))

"""Classes 1 and 2, Unicode case mapping: accounts of caseless systems (GitHub logins, e-mail
addresses, Jira / Linear accounts) were compared with `str.lower()`, which maps KELVIN SIGN (U+212A)
to the ASCII "k". So a verified e-mail or a Jira account spelt with it joined the account group of
someone else's ASCII namesake (and held their principals), and an asker spelt with it was that
account. Only ASCII letters fold now (`access.fold_account`)."""

from __future__ import annotations

import pytest

from context_engine.query.identity import PeopleDirectory, UnknownAsker
from context_engine.sources.people import merge_people

KELVIN = "\u212a"
KATE = [
    {"login": "kate-gh", "email": "kate@acme.io", "name": "Kate Jones", "source": "github:dump"},
    {"jira": "kate", "name": "Kate Jones", "source": "jira:OPS", "email": "kate@acme.io"},
]


def _groups(fragments) -> list[list[str]]:
    return sorted(g["principals"] for p in merge_people(fragments).people for g in p["accounts"])


@pytest.mark.parametrize(
    "mallory",
    [
        {"slack_id": "U0MALLORY1", "email": f"{KELVIN}ate@acme.io", "name": "Mallory", "source": "slack:acme"},
        {"jira": f"{KELVIN}ate", "name": "Mallory", "source": "jira:ENG"},
        {"jira": "mallory", "email": f"{KELVIN}ATE@acme.io", "name": "Mallory", "source": "linear:ENG"},
    ],
    ids=["slack-email", "jira-account", "linear-email"],
)
def test_a_unicode_spelling_of_an_account_never_joins_its_ascii_namesake(mallory):
    groups = _groups([*KATE, mallory])
    kates = [g for g in groups if "github:kate-gh" in g]
    assert kates == [["email:kate@acme.io", "github:kate-gh", "jira:kate"]]
    directory = PeopleDirectory(merge_people([*KATE, mallory]).people)
    for asker in ("U0MALLORY1", f"{KELVIN}ate@acme.io", f"jira:{KELVIN}ate"):
        try:
            held = directory.asker(asker).principals
        except UnknownAsker:
            continue
        assert "github:kate-gh" not in held and "email:kate@acme.io" not in held


@pytest.mark.parametrize(
    "asker", [f"{KELVIN}ate-gh", f"github:{KELVIN}ate-gh", f"{KELVIN}ate@acme.io", f"email:{KELVIN}ATE@ACME.IO"]
)
def test_an_asker_spelt_with_a_unicode_letter_is_refused(asker):
    directory = PeopleDirectory(merge_people(KATE).people)
    assert directory.asker("KATE-GH").principals == ("email:kate@acme.io", "github:kate-gh", "jira:kate")
    with pytest.raises(UnknownAsker):
        directory.asker(asker)

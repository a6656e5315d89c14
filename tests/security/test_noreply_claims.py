"""Class 1, a GitHub noreply address proves nothing outside GitHub: `ID+login@users.noreply.github.com`
is public (the id is one API call away) and no mail reaches it, so no Slack, Jira or Linear profile
stating it was verified. Attacked: a Jira (or Slack, Linear) account whose profile e-mail was the
victim's noreply address joined the victim's GitHub account group (rule github-noreply-id), and its
holder asked with `github:victim`. The rule now ties only a fragment without accounts of its own (a
git commit author) to the GitHub account."""

from __future__ import annotations

import pytest

from context_engine.query.identity import PeopleDirectory
from context_engine.sources.people import merge_people

VICTIM = {"login": "victim", "github_id": 4242, "name": "Victor Tim", "source": "github:dump"}
NOREPLY = "4242+victim@users.noreply.github.com"


@pytest.mark.parametrize(
    "claim, asker",
    [
        ({"jira": "mallory", "name": "Mallory", "email": NOREPLY, "source": "jira:ENG"}, "jira:mallory"),
        ({"slack_id": "U0MALLORY9", "name": "Mallory", "email": NOREPLY.upper(), "source": "slack:acme"}, "U0MALLORY9"),
        ({"jira": "mallory@evil.io", "email": NOREPLY, "source": "linear:ENG"}, "linear:mallory@evil.io"),
    ],
    ids=["jira", "slack", "linear"],
)
def test_an_account_stating_someones_noreply_address_gets_nothing_of_theirs(claim, asker):
    for fragments in ([VICTIM, claim], [claim, VICTIM]):
        directory = merge_people(fragments)
        held = PeopleDirectory(directory.people).asker(asker).principals
        assert "github:victim" not in held
        # The merge stored and merged again decides the same.
        again = merge_people(directory.people)
        assert "github:victim" not in PeopleDirectory(again.people).asker(asker).principals


def test_a_commit_author_with_the_noreply_address_still_joins_the_github_account():
    author = {"name": "Victor Tim", "email": NOREPLY, "source": "git:infra"}
    person = next(p for p in merge_people([VICTIM, author]).people if p["login"] == "victim")
    assert [g["principals"] for g in person["accounts"]] == [["github:victim"]]
    assert {"rule": "github-noreply-id", "detail": NOREPLY} in person["accounts"][0]["evidence"]

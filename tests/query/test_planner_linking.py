"""Linking people to fields (query/planner/linking.py) on a small GitHub tenant: whose issues "by X" and
"X issues" are, a person named twice is one filter, and a login read through a typo says so in the notes."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from context_engine.query.identity import PeopleDirectory
from context_engine.query.offline import OfflinePlanner
from context_engine.query.plan import PlanningContext
from context_engine.query.schema import schema_from_documents

NOW = datetime(2025, 2, 1, 12, tzinfo=timezone.utc)
PEOPLE = [{"login": login, "name": login, "accounts": []} for login in ("kwasi-a", "thandeka", "rmoreau", "bystrom")]


def _issue(n: int, author: str, assignee: str, state: str) -> dict:
    return {"id": n, "number": n, "repo": "octo/tools", "title": f"issue {n}", "state": state,
            "created_at": datetime(2024, 1 + n % 12, 3), "user": {"login": author},
            "assignees": [{"login": assignee}], "assignee": {"login": assignee}, "closed_by": {"login": assignee},
            "labels": [{"name": "needs triage" if n % 2 else "feature"}]}


@pytest.fixture(scope="module")
def github():
    issues = [_issue(n, PEOPLE[n % 4]["login"], PEOPLE[(n + 1) % 4]["login"], "open" if n % 3 else "closed")
              for n in range(40)]
    return {"issues": schema_from_documents("issues", issues)}, PeopleDirectory(PEOPLE)


def _plan(github, question):
    schemas, directory = github
    ctx = PlanningContext(question=question, now=NOW, schemas=schemas, directory=directory,
                          mentions=[m for m in directory.find_mentions(question) if m.person])
    return OfflinePlanner().plan(ctx)


def _match(plan) -> dict:
    return next(stage["$match"] for stage in plan.pipeline if "$match" in stage)


@pytest.mark.parametrize("question", ["issues by thandeka", "thandeka issues", "thandeka's tickets",
                                      "tickets from thandeka last year"])
def test_a_github_issue_belongs_to_its_opener(github, question):
    assert _match(_plan(github, question)).get("user.login") == "thandeka"


@pytest.mark.parametrize("question, field", [("issues assigned to thandeka", "assignees.login"),
                                             ("issues thandeka closed", "closed_by.login")])
def test_other_roles_still_win_over_the_opener(github, question, field):
    match = _match(_plan(github, question))
    assert match.get(field) == "thandeka" and "user.login" not in match


def test_a_person_named_twice_is_one_filter(github):
    match = _match(_plan(github, "issues by rmoreau (rmoreau) in 2024"))
    assert match["user.login"] == "rmoreau" and "$and" not in match


def test_a_typo_read_as_a_login_says_so(github):
    plan = _plan(github, "How many Issues did rmorau open in 2024?")
    assert _match(plan)["user.login"] == "rmoreau"
    assert any("rmorau" in note and "typo" in note for note in plan.notes), plan.notes
    exact = _plan(github, "How many Issues did rmoreau open in 2024?")
    assert not any("typo" in note for note in exact.notes)

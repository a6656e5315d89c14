"""Identity cannot be borrowed: a name-bearing field an attacker controls (a git author name or
e-mail, a Jira display name, a document's front-matter author, a Slack handle, a GitHub profile
name) may make them look like someone else in the people directory, but never joins their accounts
to that person's, so they never read that person's private channel. Verified evidence (the same
verified e-mail, a GitHub noreply address with the account's numeric id, an operator's overrides)
still joins accounts.

Every fragment is made by its connector's own code from the input an attacker could write, ingested
by the real ingest, and read back through `context-engine query` / `ask` (in process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_engine.cli import main
from context_engine.config import Settings
from context_engine.ingest import ingest
from context_engine.resources import forget, principals_for
from context_engine.sources.docs import read_docs
from context_engine.sources.git import people_from_commits
from context_engine.sources.github import people_from_github
from context_engine.sources.jira import read_jira
from context_engine.sources.problems import ReadProblems
from context_engine.sources.slack import read_slack_export

SECRET = "initech acquisition term sheet"
EXEC_SLACK = "U0EXEC001"
EXEC = {
    "id": EXEC_SLACK,
    "name": "vera",
    "real_name": "Vera Boss",
    "profile": {"email": "vera@corp.io", "real_name": "Vera Boss", "display_name": "Vera"},
}
# The exec's GitHub account, in the cases where she has one: GitHub's API states her e-mail, which
# her Slack profile verifies too, so the two are one account group.
EXEC_GITHUB = {"login": "vboss", "id": 42, "name": "Vera Boss", "email": "vera@corp.io"}
MALLORY = {"login": "mallory-gh", "id": 777, "name": "Mallory Gh"}
MALLORY_NOREPLY = "777+mallory-gh@users.noreply.github.com"


def _slack_export(root: Path, users: list[dict]) -> Path:
    """A workspace export: #general (public) and #exec-private (the exec alone)."""
    export = root / "corp-slack-export"
    export.mkdir(parents=True)
    (export / "users.json").write_text(json.dumps(users))
    (export / "channels.json").write_text(json.dumps([{"id": "C0GEN", "name": "general", "members": []}]))
    (export / "groups.json").write_text(json.dumps([{"id": "G0EXEC", "name": "exec-private", "members": [EXEC_SLACK]}]))
    for channel, text in (("general", "lunch at noon"), ("exec-private", SECRET)):
        (export / channel).mkdir()
        (export / channel / "2026-11-02.json").write_text(
            json.dumps([{"type": "message", "user": EXEC_SLACK, "text": text, "ts": "1762070400.000100"}])
        )
    return export


def _github_people(*users: dict) -> list[dict]:
    return people_from_github([{"user": user} for user in users], "github:corp/app")


def _jira_people(root: Path, user: dict) -> list[dict]:
    path = root / "jira.json"
    path.write_text(
        json.dumps(
            {
                "issues": [
                    {
                        "key": "ENG-1",
                        "fields": {"summary": "rotate the deploy keys", "project": {"key": "ENG"}, "assignee": user},
                    }
                ]
            }
        )
    )
    return read_jira([path], ReadProblems())["people"]


def _doc_people(root: Path, author: str) -> list[dict]:
    docs = root / "docs"
    docs.mkdir()
    (docs / "plan.md").write_text(f"---\ntitle: Plan\nauthor: {author}\n---\n# Plan\nQ4 plan.\n")
    return read_docs(docs, ReadProblems())["people"]


def _attack(name: str, root: Path) -> tuple[list[dict], list[dict]]:
    """(extra Slack users, people fragments) of one attack, made by the connectors from attacker input."""
    if name == "git-author-name":
        # A commit by "Vera Boss" from the attacker's own GitHub noreply address.
        return [], _github_people(MALLORY) + people_from_commits(
            [{"author": {"name": "Vera Boss", "email": MALLORY_NOREPLY}}], "git:corp/app"
        )
    if name == "git-author-email":
        # A commit under the attacker's GitHub profile name, from the exec's Slack e-mail address.
        return [], _github_people(MALLORY) + people_from_commits(
            [{"author": {"name": "Mallory Gh", "email": "vera@corp.io"}}], "git:corp/app"
        )
    if name == "jira-display-name":
        return [], _jira_people(
            root, {"name": "mallory-j", "displayName": "Vera Boss", "emailAddress": "mallory@evil.example"}
        )
    if name == "doc-front-matter-author":
        return [], _github_people(MALLORY) + _doc_people(root, f"Vera Boss <{MALLORY_NOREPLY}>")
    if name == "slack-handle-equals-login":
        # The exec's GitHub login is "vboss" (her notes are hers alone); the attacker's Slack handle is "vboss" too.
        mal = {"id": "U0MAL0001", "name": "vboss", "real_name": "Mal Icious", "profile": {"email": "mal@evil.example"}}
        return [mal], _github_people({**EXEC_GITHUB, "email": None})
    if name == "github-profile-name":
        # A GitHub user whose profile name is the exec's (GitHub does not check names), plus fields
        # a record cannot make count: a Slack id, an operator's source, identities of its own.
        forged = {
            **MALLORY,
            "name": "Vera Boss",
            "slack_id": EXEC_SLACK,
            "source": "sample",
            "identities": [{"source": "override", "kind": "slack_id", "value": EXEC_SLACK}],
        }
        return [], _github_people(forged)
    raise AssertionError(name)


# The exec's GitHub-only notes, in every tenant: readable by github:vboss alone.
NOTES = {"doc_id": "VBOSS-NOTES", "title": "board notes", "body": f"notes: {SECRET}", "acl": ["github:vboss"]}
# attack -> (the attacker's --as, the principals they hold: their own accounts, nothing else)
ATTACKS = {
    "git-author-name": ("mallory-gh", ["github:mallory-gh"]),
    "git-author-email": ("mallory-gh", ["github:mallory-gh"]),
    "jira-display-name": ("mallory-j", ["email:mallory@evil.example", "jira:mallory-j"]),
    "doc-front-matter-author": ("mallory-gh", ["github:mallory-gh"]),
    "slack-handle-equals-login": ("U0MAL0001", ["email:mal@evil.example", "slack:U0MAL0001"]),
    "github-profile-name": ("mallory-gh", ["github:mallory-gh"]),
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """One tenant per attack (tenants never share a record), and "verified" for the joins that count."""
    root = tmp_path_factory.mktemp("identity-merge")
    batches: dict[str, dict[str, list[dict]]] = {}
    for name in ATTACKS:
        here = root / name
        here.mkdir()
        users, people = _attack(name, here)
        slack = read_slack_export(_slack_export(here, [EXEC, *users]), ReadProblems())
        batches[name.replace("-", "_")] = {
            "messages": slack["messages"],
            "documents": [NOTES],
            "people": slack["people"] + people,
        }
    here = root / "verified"
    here.mkdir()
    slack = read_slack_export(_slack_export(here, [EXEC]), ReadProblems())
    commits = [
        {"author": {"name": "V. Boss", "email": "42+vboss@users.noreply.github.com"}},
        {"author": {"name": "V. Boss", "email": "43+vboss@users.noreply.github.com"}},
    ]
    batches["verified"] = {
        "messages": slack["messages"],
        "people": slack["people"] + _github_people(EXEC_GITHUB) + people_from_commits(commits, "git:corp/app"),
    }
    ingest(Settings(data_dir=root / "data", mongodb_uri=None), batches)  # indexed: `ask` searches too
    return root / "data"


def _query(capsys, data_dir: Path, tenant: str, asker: str, collection: str = "messages") -> list[dict]:
    code = main(
        ["query", collection, '[{"$match": {}}]', "--as", asker, "--tenant", tenant, "--data-dir", str(data_dir)]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)["records"]


def _principals(data_dir: Path, tenant: str, asker: str) -> list[str]:
    settings = Settings(data_dir=data_dir, mongodb_uri=None, tenant=tenant, asker=asker, use_llm=False)
    forget(settings)
    return principals_for(settings)


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_borrowed_name_grants_nothing(data_dir, capsys, attack):
    tenant = attack.replace("-", "_")
    asker, own = ATTACKS[attack]
    assert _principals(data_dir, tenant, asker) == own
    seen = _query(capsys, data_dir, tenant, asker)
    assert [r["channel"] for r in seen] == ["general"]
    assert SECRET not in json.dumps(seen)
    assert _query(capsys, data_dir, tenant, asker, "documents") == []
    # The check can fail: the exec herself reads her channel (and, with a GitHub account, her notes).
    assert SECRET in json.dumps(_query(capsys, data_dir, tenant, EXEC_SLACK))
    if attack == "slack-handle-equals-login":
        assert SECRET in json.dumps(_query(capsys, data_dir, tenant, "vboss", "documents"))


def test_the_name_still_finds_the_exec_but_her_accounts_stay_hers(data_dir, capsys):
    """The display person may hold the attacker's commit (names help find people); the access groups don't."""
    assert main(["people", "--json", "--tenant", "git_author_name", "--data-dir", str(data_dir)]) == 0
    people = json.loads(capsys.readouterr().out)["people"]
    vera = next(p for p in people if p["slack_id"] == EXEC_SLACK)
    assert "Vera Boss" in vera["git_names"] or any(i["source"] == "git:corp/app" for i in vera["identities"])
    assert all(
        EXEC_SLACK not in " ".join(g["principals"]) or "github:mallory-gh" not in g["principals"]
        for p in people
        for g in p["accounts"]
    )
    assert not any(e["access"] for e in vera["evidence"] if e["rule"] in ("name", "fuzzy-name", "email"))


@pytest.mark.parametrize("attack", ["git-author-name", "slack-handle-equals-login"])
def test_ask_as_the_attacker_never_answers_from_the_private_channel(data_dir, capsys, attack):
    def ask(asker: str) -> str:
        code = main(
            [
                "ask",
                "what about initech?",
                "--json",
                "--as",
                asker,
                "--tenant",
                attack.replace("-", "_"),
                "--now",
                "2026-11-30T12:00:00Z",
                "--data-dir",
                str(data_dir),
            ]
        )
        out, err = capsys.readouterr()
        assert code == 0, err
        return out

    assert SECRET not in ask(ATTACKS[attack][0])
    assert SECRET in ask(EXEC_SLACK)  # the question does reach the channel for its member


def test_verified_email_joins_slack_and_github(data_dir, capsys):
    assert _principals(data_dir, "verified", "vboss") == ["email:vera@corp.io", "github:vboss", "slack:U0EXEC001"]
    assert SECRET in json.dumps(_query(capsys, data_dir, "verified", "vboss"))


def test_noreply_address_joins_only_with_the_accounts_numeric_id(data_dir, capsys):
    assert main(["people", "--json", "--tenant", "verified", "--data-dir", str(data_dir)]) == 0
    (vera,) = json.loads(capsys.readouterr().out)["people"]
    (group,) = vera["accounts"]
    granting = {(e["rule"], e["detail"]) for e in group["evidence"]}
    assert ("github-noreply-id", "42+vboss@users.noreply.github.com") in granting
    assert ("verified-email", "vera@corp.io") in granting
    # 43 is not vboss's id: that address names the login only, which finds her but joins nothing.
    assert "43+vboss@users.noreply.github.com" in vera["emails"]
    assert not any("43+vboss" in e["detail"] for e in vera["evidence"] if e["access"])


def test_an_operator_override_joins_what_no_source_vouches_for(tmp_path, capsys):
    ola = {"id": "U0OLA0001", "name": "ola", "real_name": "Ola Ops", "profile": {"email": "ola@corp.io"}}
    export = _slack_export(tmp_path, [EXEC, ola])
    (export / "groups.json").write_text(
        json.dumps([{"id": "G0EXEC", "name": "exec-private", "members": ["U0OLA0001"]}])
    )
    slack = read_slack_export(export, ReadProblems())
    people = slack["people"] + _github_people({"login": "ola-gh", "id": 5, "name": "Ola Ops"})
    data = tmp_path / "data"
    ingest(
        Settings(data_dir=data, mongodb_uri=None),
        {"t1": {"messages": slack["messages"], "people": people}},
        index=False,
    )
    assert SECRET not in json.dumps(_query(capsys, data, "t1", "ola-gh"))  # the same name joins nothing
    overrides = tmp_path / "people.yaml"
    overrides.write_text("- name: Ola Ops\n  github: ola-gh\n  slack: U0OLA0001\n")
    assert main(["ingest", "people", str(overrides), "--no-index", "--tenant", "t1", "--data-dir", str(data)]) == 0
    capsys.readouterr()
    assert _principals(data, "t1", "ola-gh") == ["email:ola@corp.io", "github:ola-gh", "slack:U0OLA0001"]
    assert SECRET in json.dumps(_query(capsys, data, "t1", "ola-gh"))


def test_people_command_says_which_evidence_grants_access(data_dir, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line, whatever the terminal
    assert main(["people", "--tenant", "verified", "--data-dir", str(data_dir)]) == 0
    table = capsys.readouterr().out
    assert "verified-email vera@corp.io (grants access)" in table
    assert "github-noreply-id 42+vboss@users.noreply.github.com (grants access)" in table
    assert "(finding only)" in table  # the unverified e-mail and login matches are shown for what they are
    assert "email:vera@corp.io, github:vboss, slack:U0EXEC001" in table

"""The asker is exact: `--as`, an API key's person and an MCP identity name one account (a GitHub
login in any case, a Slack id exactly, a Jira/Linear account, a verified e-mail in any case, or
`system:account`), else they are refused in one line. A near miss is never guessed into someone
who can read a private channel (`sokafor1` is not Sam Okafor)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from context_engine.cli import main
from context_engine.config import Settings
from context_engine.ingest import ingest
from context_engine.query.identity import AmbiguousAsker, UnknownAsker, UnknownPerson
from context_engine.resources import forget, principals_for
from context_engine.sources.sample import generate
from tests.conftest import run_cli

NOW = "2026-11-30T12:00:00Z"
PRIVATE = '[{"$match": {"channel": "security-private"}}, {"$count": "n"}]'


@pytest.fixture(scope="module")
def sam() -> dict:
    """Sam Okafor of the sample corpus: a member of #security-private."""
    return next(p for p in generate()["acme"]["people"] if p["login"] == "sokafor")


def near_misses(sam: dict) -> list[str]:
    return [
        "sokafor1",
        sam["name"],
        sam["name"].split()[0],
        sam["slack_handle"],
        sam["slack_id"].lower(),
        "@" + sam["login"],
        "github:sokafor1",
        "slack:" + sam["slack_id"].lower(),
    ]


def exact_names(sam: dict) -> list[str]:
    return [
        sam["login"],
        sam["login"].upper(),
        sam["slack_id"],
        sam["email"].upper(),
        f"github:{sam['login']}",
        f"slack:{sam['slack_id']}",
        f"email:{sam['email']}",
    ]


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_near_misses_are_refused_in_one_line_with_exit_2(sample_dir, sam, capsys):
    for asker in near_misses(sam):
        for command in (["ask", "my open PRs", "--now", NOW], ["query", "messages", PRIVATE], ["schema"]):
            code, out, err = _run(capsys, *command, "--as", asker, "--data-dir", str(sample_dir))
            assert code == 2, (asker, command, out)
            assert err.startswith(f"context-engine: error: --as: unknown asker {asker!r}"), err
            assert err.count("\n") == 1 and out == ""


def test_the_refusal_is_one_line_from_the_real_program(sample_dir):
    out = run_cli("query", "messages", PRIVATE, "--as", "sokafor1", "--data-dir", str(sample_dir))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [out.stderr.strip()] and "unknown asker 'sokafor1'" in out.stderr


def test_exact_names_of_one_account_all_read_what_sam_reads(sample_dir, sam, capsys):
    counts = set()
    for asker in exact_names(sam):
        code, out, err = _run(capsys, "query", "messages", PRIVATE, "--as", asker, "--data-dir", str(sample_dir))
        assert code == 0, (asker, err)
        counts.add(json.loads(out)["records"][0]["n"])
    assert len(counts) == 1 and counts.pop() > 0
    # and a person who is no member reads none of it (so the count above is Sam's access, not everyone's)
    code, out, _ = _run(capsys, "query", "messages", PRIVATE, "--as", "zwei-dev", "--data-dir", str(sample_dir))
    assert code == 0 and json.loads(out)["records"] == [{"n": 0}]


def test_library_callers_get_a_precise_exception(sample_dir, sam):
    for asker in near_misses(sam):
        settings = Settings(data_dir=sample_dir, mongodb_uri=None, tenant="acme", asker=asker, use_llm=False)
        with pytest.raises(UnknownAsker, match="unknown asker"):
            principals_for(settings)
    from context_engine.assistant.graph import graph

    with pytest.raises(UnknownAsker):
        graph.invoke(
            {"question": "my open PRs", "now": NOW},
            context={"user": "sokafor1", "data_dir": str(sample_dir), "tenant": "acme", "use_llm": False},
        )


@pytest.fixture(scope="module")
def two_sams(tmp_path_factory):
    """`sam` is a GitHub login and, in another system, someone else's Jira account: two groups."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("two-sams"), mongodb_uri=None, tenant="t1", use_llm=False)
    people = [
        {"login": "sam", "github_id": 7, "name": "Sam Reader", "source": "github:t/app"},
        {"jira": "sam", "name": "Samira Other", "email": "samira@corp.io", "source": "jira:ENG"},
    ]
    ingest(
        settings,
        {"t1": {"people": people, "documents": [{"doc_id": "D1", "title": "x", "body": "y", "acl": ["*"]}]}},
        index=False,
    )
    forget(settings)
    return settings


def test_an_identifier_naming_two_groups_is_refused_with_the_choices(two_sams, capsys):
    with pytest.raises(AmbiguousAsker) as refused:
        principals_for(two_sams.with_overrides(asker="sam"))
    assert refused.value.choices == ["github:sam", "jira:sam"]
    code, _, err = _run(capsys, "schema", "--as", "sam", "--tenant", "t1", "--data-dir", str(two_sams.data_dir))
    assert code == 2 and err.count("\n") == 1 and "github:sam, jira:sam" in err
    assert principals_for(two_sams.with_overrides(asker="jira:sam")) == ["email:samira@corp.io", "jira:sam"]
    assert principals_for(two_sams.with_overrides(asker="github:sam")) == ["github:sam"]


def test_server_refuses_to_start_with_a_fuzzy_key_person(sample_dir, sam):
    from context_engine.server import ApiKey, check_key_people, create_app

    settings = Settings(data_dir=sample_dir, mongodb_uri=None, use_llm=False)
    for asker in near_misses(sam):
        keys = {"k-fuzzy-1": ApiKey(tenant="acme", user=asker)}
        with pytest.raises(ValueError, match="unknown asker"):
            check_key_people(settings, keys)
        with pytest.raises(ValueError, match="unknown asker"):
            create_app(settings, keys)
    check_key_people(settings, {"k-exact-1": ApiKey(tenant="acme", user="slack:" + sam["slack_id"])})


def test_serve_refuses_a_fuzzy_key_person_in_one_line(sample_dir, tmp_path):
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"k-fuzzy-1": {"tenant": "acme", "user": "sokafor1"}}))
    out = run_cli("serve", "--keys", str(keys), "--port", "0", "--data-dir", str(sample_dir))
    assert out.returncode == 2 and "unknown asker 'sokafor1'" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_mcp_refuses_a_fuzzy_identity(sample_dir, sam, tmp_path):
    from context_engine.mcp_server import http_app
    from context_engine.server import ApiKey

    settings = Settings(data_dir=sample_dir, mongodb_uri=None, use_llm=False)
    with pytest.raises(ValueError, match="unknown asker"):
        http_app(settings, {"k-fuzzy-1": ApiKey(tenant="acme", user=sam["name"])})
    out = subprocess.run(
        [sys.executable, "-m", "context_engine.cli", "mcp", "--data-dir", str(sample_dir), "--as", "sokafor1"],
        capture_output=True,
        text=True,
        timeout=120,
        input="",
    )
    assert out.returncode == 2 and "unknown asker 'sokafor1'" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_unknown_asker_is_still_an_unknown_person_for_existing_handlers():
    assert issubclass(UnknownAsker, UnknownPerson)


def test_a_directory_merged_before_account_groups_names_no_asker():
    """Records without `accounts` (an older data dir) resolve nobody, with the way out in the message."""
    from context_engine.query.identity import PeopleDirectory

    old = PeopleDirectory([{"login": "sokafor", "name": "Sam Okafor", "slack_id": "U0DCC75DEF"}])
    with pytest.raises(UnknownAsker, match="ingest again"):
        old.asker("sokafor")
    merged = PeopleDirectory(
        [
            {
                "login": "sokafor",
                "name": "Sam Okafor",
                "slack_id": "U0DCC75DEF",
                "accounts": [{"principals": ["github:sokafor", "slack:U0DCC75DEF"]}],
            }
        ]
    )
    assert merged.asker("SoKafor").principals == ("github:sokafor", "slack:U0DCC75DEF")
    assert merged.lookup("Sam").key == "sokafor"  # finding by a first name still works, it just grants nothing
    assert merged.lookup("Sam").principals == ()


def test_a_directory_key_names_only_a_person_without_accounts():
    from context_engine.query.identity import PeopleDirectory

    directory = PeopleDirectory(
        [
            {"email": "dev@example.org", "name": "Git Author", "accounts": []},  # a git author: no verified account
            # A display person whose login came from an attacker's git noreply address (unverified) and
            # whose only account group is the exec's Slack account: the login is its key, not a way in.
            {
                "login": "bob",
                "name": "Vera Boss",
                "slack_id": "U0EXEC001",
                "accounts": [{"principals": ["slack:U0EXEC001"]}],
            },
        ]
    )
    assert directory.asker("dev@example.org").principals == ()
    with pytest.raises(UnknownAsker):
        directory.asker("bob")
    assert directory.asker("U0EXEC001").principals == ("slack:U0EXEC001",)

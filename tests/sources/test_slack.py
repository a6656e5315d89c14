"""The Slack export connector, on a small hand-written export and on the three real exports."""

import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest

from context_engine.answering.links import references
from context_engine.sources.normalize import normalize
from context_engine.sources.problems import ReadProblems, SourceError
from context_engine.sources.slack import read_slack_export, render_text, workspace_name
from tests.conftest import EVAL_DATA, TEST_DATA_DIR

FIXTURE = TEST_DATA_DIR / "connectors" / "slack" / "acme-slack-export"
REAL = EVAL_DATA / "slack"
WORKSPACES = ("clojurians", "elmlang", "racket")

PARENT_TS = "1709546400.000100"
MENTION_MARKUP = re.compile(r"<@[UW][A-Z0-9]+(\|[^>]*)?>")


@pytest.fixture(scope="module")
def acme() -> tuple[dict[str, list[dict]], ReadProblems]:
    problems = ReadProblems()
    return read_slack_export(FIXTURE, problems), problems


def by_ts(out: dict[str, list[dict]]) -> dict[str, dict]:
    return {m["ts"]: m for m in out["messages"]}


# --------------------------------------------------------------------------------------------
# The hand-written export
# --------------------------------------------------------------------------------------------
def test_reads_every_message_skips_noise_and_reports_broken_input(acme):
    out, problems = acme
    # general: parent, two replies (on two days), a bot post, one plain message; the join is noise.
    assert sorted((m["channel"], m["ts"]) for m in out["messages"]) == sorted(
        [
            ("general", PARENT_TS),
            ("general", "1709546700.000200"),
            ("general", "1709632800.000500"),
            ("general", "1709550000.000300"),
            ("general", "1709553600.000400"),
            ("security", "1709546500.000600"),
            ("mpdm-alice--bob--carol-1", "1709546600.000700"),
            ("D01AB", "1709546800.000800"),
        ]
    )
    # users.json entry without id, a message without ts, a non-object, a truncated day file, an unlisted folder.
    assert problems.count == 5
    assert any("orphan/" in e and "no channel listing" in e for e in problems.examples)
    assert any("2024-03-06.json" in e and "unreadable JSON" in e for e in problems.examples)
    assert any("2024-03-05.json[1]" in e and "ts" in e for e in problems.examples)
    assert any("users.json[4]" in e for e in problems.examples)


def test_every_record_normalizes_with_its_source_and_workspace(acme):
    out, _ = acme
    for collection, records in out.items():
        for record in records:
            doc = normalize(collection, record)
            assert doc["source"] == "slack:acme" and doc["workspace"] == "acme"
    assert normalize("messages", by_ts(out)[PARENT_TS])["ref"] == f"C01GEN:{PARENT_TS}"


def test_thread_parent_gets_reply_fields_from_the_replies_present(acme):
    out, _ = acme
    messages = by_ts(out)
    parent = messages[PARENT_TS]
    assert parent["thread_ts"] == PARENT_TS
    assert parent["reply_count"] == 2
    assert parent["reply_users"] == ["U02BOB", "U03CAROL"] and parent["reply_users_count"] == 2
    assert parent["latest_reply"] == "1709632800.000500"  # the reply filed under the next day
    for ts in ("1709546700.000200", "1709632800.000500"):
        assert messages[ts]["parent_user_id"] == "U01ALICE"
    assert "reply_count" not in messages["1709553600.000400"]  # a message nobody answered is no thread


def test_text_is_rendered_readable_and_mentions_are_resolved(acme):
    out, _ = acme
    messages = by_ts(out)
    assert (
        messages[PARENT_TS]["text"]
        == "Deploy failing again, see the fix PR (https://github.com/acme/web/pull/42) & #random"
    )
    assert messages["1709546700.000200"]["text"] == "@alice.d looks good <3, merging"
    assert messages["1709546700.000200"]["mentions"] == ["U01ALICE"]
    # A deleted user with an empty display name is shown by real name; mentioned twice, listed once.
    assert messages["1709632800.000500"]["text"] == "Fixed by @Bob Stone, thanks @Bob Stone"
    assert messages["1709632800.000500"]["mentions"] == ["U02BOB"]
    # Unknown user -> the label; auto-linked text -> the URL alone; a channel id -> its name.
    assert (
        messages["1709553600.000400"]["text"]
        == "@here ask @ghost or ops@acme.io, docs at http://wiki.acme.io and #general"
    )
    assert messages["1709553600.000400"]["mentions"] == ["U09GHOST"]
    assert messages[PARENT_TS]["reactions"] == [{"name": "eyes", "users": ["U02BOB"], "count": 1}]


def test_render_text_keeps_escaped_entities_literal():
    assert render_text("a &amp;lt; b &gt; c", {}, {}) == ("a &lt; b > c", [])
    assert render_text("<@U1> <https://x.io/a?b=1&amp;c=2>", {"U1": "Ann"}, {}) == (
        "@Ann https://x.io/a?b=1&c=2",
        ["U1"],
    )


def test_a_message_linking_a_pull_request_references_it(acme):
    out, _ = acme
    messages = by_ts(out)
    targets = [r.target for r in references(normalize("messages", messages[PARENT_TS]))]
    assert targets == ["acme/web#42"]
    assert [r.target for r in references(normalize("messages", messages["1709550000.000300"]))] == ["acme/web#42"]
    assert [r.target for r in references(normalize("messages", messages["1709546500.000600"]))] == ["ENG-231"]


def test_private_channels_are_readable_by_their_members_only(acme):
    out, _ = acme
    acl = {m["channel"]: m["acl"] for m in out["messages"]}
    assert acl == {
        "general": ["*"],
        "security": ["slack:U01ALICE", "slack:U03CAROL"],
        "mpdm-alice--bob--carol-1": ["slack:U01ALICE", "slack:U02BOB", "slack:U03CAROL"],
        "D01AB": ["slack:U01ALICE", "slack:U02BOB"],
    }
    assert {m["channel_id"] for m in out["messages"] if m["channel"] == "security"} == {"G01SEC"}


def test_bot_posts_are_authored_by_their_bot_id(acme):
    out, _ = acme
    bot = by_ts(out)["1709550000.000300"]
    assert bot["user"] == "B0DEPLOY"
    assert bot["user_profile"] == {"real_name": "deploybot", "display_name": "deploybot", "name": "deploybot"}


def test_people_fragments_from_users_json(acme):
    out, _ = acme
    people = {p["slack_id"]: p for p in out["people"]}
    assert set(people) == {"U01ALICE", "U02BOB", "U03CAROL", "U04DEPLOY"}
    assert people["U01ALICE"] == {
        "slack_id": "U01ALICE",
        "slack_handle": "alice",
        "name": "Alice Doe",
        "email": "alice@acme.io",
        "aliases": ["alice.d"],
        "workspace": "acme",
        "acl": ["*"],
        "source": "slack:acme",
    }
    assert people["U02BOB"]["name"] == "Bob Stone" and people["U02BOB"]["deleted"] is True
    assert people["U03CAROL"]["name"] == "Caro" and "deleted" not in people["U03CAROL"]
    assert people["U04DEPLOY"]["bot"] is True


def test_a_zip_reads_like_the_directory_even_inside_a_top_folder(acme, tmp_path):
    archive = tmp_path / "acme-slack-export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for file in FIXTURE.rglob("*"):
            if file.is_file():
                zf.write(file, "export/" + file.relative_to(FIXTURE).as_posix())
    problems = ReadProblems()
    assert read_slack_export(archive, problems) == acme[0]
    assert problems.count == acme[1].count


def test_an_unreadable_source_raises_source_error(tmp_path):
    with pytest.raises(SourceError, match="no such file"):
        read_slack_export(tmp_path / "missing.zip", ReadProblems())
    not_zip = tmp_path / "notes.zip"
    not_zip.write_text("hello")
    with pytest.raises(SourceError, match="not a zip"):
        read_slack_export(not_zip, ReadProblems())
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("data/records.json", json.dumps([{"a": 1}]))
    with pytest.raises(SourceError, match="not a Slack export"):
        read_slack_export(other, ReadProblems())
    broken = tmp_path / "broken-slack-export"
    shutil.copytree(FIXTURE, broken)
    (broken / "channels.json").write_text('{"general": 1}')
    with pytest.raises(SourceError, match=r"channels\.json"):
        read_slack_export(broken, ReadProblems())


def test_no_permalink_is_invented_from_the_file_name(acme):
    """The export says nothing of its workspace's URL: its messages link nowhere, and a citation falls
    back to the `channel:ts` ref."""
    out, _ = acme
    assert not [m for m in out["messages"] if "permalink" in m]
    doc = normalize("messages", by_ts(out)[PARENT_TS])
    assert "permalink" not in doc and doc["ref"] == f"C01GEN:{PARENT_TS}"


def _with_shared_files(tmp_path: Path, *permalinks: str) -> Path:
    """The hand-written export, renamed as a download might be, with files shared on the given hosts."""
    root = tmp_path / "export (3)"
    shutil.copytree(FIXTURE, root)
    day = root / "general" / "2024-03-04.json"
    messages = json.loads(day.read_text())
    messages.append(
        {
            "type": "message",
            "subtype": "file_share",
            "user": "U01ALICE",
            "text": "the trace",
            "ts": "1709560000.000900",
            "files": [{"id": f"F0{i}", "name": "trace.txt", "permalink": link} for i, link in enumerate(permalinks)],
        }
    )
    day.write_text(json.dumps(messages))
    return root


def test_the_workspace_url_comes_from_the_files_shared_in_it(tmp_path):
    out = read_slack_export(
        _with_shared_files(tmp_path, "https://acme-corp.slack.com/files/U01ALICE/F01/trace.txt"), ReadProblems()
    )
    messages = by_ts(out)
    assert messages[PARENT_TS]["permalink"] == "https://acme-corp.slack.com/archives/C01GEN/p1709546400000100"
    for ts in ("1709546700.000200", "1709632800.000500"):
        assert messages[ts]["permalink"] == (
            f"https://acme-corp.slack.com/archives/C01GEN/p{ts.replace('.', '')}?thread_ts={PARENT_TS}&cid=C01GEN"
        )
    assert all(m["permalink"].startswith("https://acme-corp.slack.com/archives/") for m in out["messages"])
    assert out["messages"][0]["workspace"] == "export-(3)"  # the label still comes from the file name


@pytest.mark.parametrize(
    "links",
    [
        ("https://acme.slack.com/files/U1/F1/a.txt", "https://other.slack.com/files/U1/F2/b.txt"),  # which one?
        ("https://files.example.com/files/a.txt",),  # not Slack
        ("https://acme.slack.com.evil.io/files/a.txt",),  # Slack's name inside another host
        ("http://acme.slack.com/files/U1/F1/a.txt",),  # Slack serves https only
        ("https://acme.slack.com/archives/C01GEN/p1",),  # a message link may point at any workspace
    ],
)
def test_files_that_do_not_name_one_workspace_give_no_permalink(tmp_path, links):
    out = read_slack_export(_with_shared_files(tmp_path, *links), ReadProblems())
    assert not [m for m in out["messages"] if "permalink" in m]


def test_workspace_name_from_the_export_name():
    assert workspace_name(Path("/x/clojurians-slack-export.zip")) == "clojurians"
    assert workspace_name(Path("elmlang-slack-export")) == "elmlang"
    assert workspace_name(Path("Acme Corp Slack export Jan 1 2024 - Mar 1 2024.zip")) == "acme-corp"
    assert workspace_name(Path("dump.zip")) == "dump"


# --------------------------------------------------------------------------------------------
# The real exports
# --------------------------------------------------------------------------------------------
def raw_counts(archive: Path) -> tuple[int, int, int]:
    """(messages, threads, users) counted straight from the zip. A thread is a conversation: a
    parent with its replies, or a message nobody answered (what the dataset's 5,899 counts)."""
    with zipfile.ZipFile(archive) as zf:
        messages = [
            m
            for name in zf.namelist()
            if name.count("/") == 1 and name.endswith(".json")
            for m in json.loads(zf.read(name))
        ]
        users = len(json.loads(zf.read("users.json")))
    threads = {m.get("thread_ts") or m["ts"] for m in messages}
    return len(messages), len(threads), users


@pytest.fixture(scope="module")
def real() -> dict[str, dict[str, list[dict]]]:
    if not REAL.is_dir():
        pytest.skip("the shared Slack exports are not on this machine")
    problems = ReadProblems()
    out = {ws: read_slack_export(REAL / f"{ws}-slack-export.zip", problems) for ws in WORKSPACES}
    assert problems.count == 0, problems.examples
    return out


def test_real_exports_counts_match_the_files(real):
    totals = [0, 0, 0]
    for ws, out in real.items():
        messages, threads, users = raw_counts(REAL / f"{ws}-slack-export.zip")
        got_threads = {m.get("thread_ts") or m["ts"] for m in out["messages"]}
        assert (len(out["messages"]), len(got_threads), len(out["people"])) == (messages, threads, users), ws
        totals = [totals[0] + messages, totals[1] + threads, totals[2] + users]
    assert totals == [52_739, 5_899, 1_563]  # /work/shared/data/README.md


def test_real_threads_parents_know_their_replies(real):
    for ws, out in real.items():
        replies: dict[str, list[dict]] = {}
        for m in out["messages"]:
            if m.get("thread_ts") and m["thread_ts"] != m["ts"]:
                replies.setdefault(m["thread_ts"], []).append(m)
        parents = {m["ts"]: m for m in out["messages"] if m["ts"] in replies}
        assert set(parents) == set(replies), ws  # no reply without its parent
        for ts, parent in parents.items():
            assert parent["reply_count"] == len(replies[ts])
            assert parent["reply_users_count"] == len(set(parent["reply_users"]))
            assert parent["latest_reply"] == max((r["ts"] for r in replies[ts]), key=float)
            assert all(r["parent_user_id"] == parent["user"] for r in replies[ts])


def test_real_records_normalize_and_carry_their_workspace(real):
    for ws, out in real.items():
        refs = set()
        for m in out["messages"]:
            doc = normalize("messages", m)
            refs.add(doc["ref"])
            assert doc["source"] == f"slack:{ws}" and doc["acl"] == ["*"]
            assert "permalink" not in doc  # these exports share no files: nothing says where they live
            # Slack escapes the `<` people type, so markup left over would be an unrendered mention.
            assert not MENTION_MARKUP.search(doc["text"]) and "&gt;" not in doc["text"]
        assert len(refs) == len(out["messages"])
        for person in out["people"]:
            assert normalize("people", person)["ref"] == person["slack_id"]


def test_real_mentions_and_pull_request_links(real):
    elm = {m["ts"]: m for m in real["elmlang"]["messages"]}
    reply = elm["1546232595.388300"]
    assert reply["mentions"] == ["U77374417"]
    assert reply["text"].startswith("@Fred `--optimize` doesn't minify")
    assert "https://guide.elm-lang.org/optimization/asset_size.html#instructions provides" in reply["text"]
    racket = real["racket"]["messages"]
    # A user missing from users.json is shown by the name the mention carries.
    assert any("@samth" in m["text"] and "U0702F2CE" in m["mentions"] for m in racket)
    linked = {r.target for m in racket for r in references(normalize("messages", m)) if r.kind == "github"}
    assert {"racket/scribble#111", "racket/racket#1690"} <= linked

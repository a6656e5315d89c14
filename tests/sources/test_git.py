"""The git connector against real repositories: this project's own, and small ones built here with
`git` (fixed identities and dates, no user or system config)."""

import shutil
import subprocess

import pytest

from context_engine.sources.git import parse_log_stream, read_git_repo, repo_from_remote
from context_engine.sources.normalize import normalize
from context_engine.sources.problems import ReadProblems, SourceError
from tests.conftest import REPO_ROOT
from tests.sources.conftest import Repo

PROJECT = REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


def _all_normalize(out):
    for collection, records in out.items():
        for record in records:
            normalize(collection, record)  # raises RecordError on a malformed record


WEIRD_MESSAGE = "Move notes\n\nFields\x1eand\ttabs, a fake stat line:\n1\t2\tfake.txt\n\nend"
NOTES = "".join(f"note line {i}\n" for i in range(40))


@pytest.fixture
def widgets(tmp_path) -> Repo:
    repo = Repo(tmp_path / "widgets", tmp_path)
    repo.git("remote", "add", "origin", "git@github.com:acme/widgets.git")
    # .mailmap maps Alice's old address to her canonical name and address
    repo.write(".mailmap", "Alice Liddell <alice@example.com> <alice@old.example>\n")
    repo.write("README.md", "# Widgets\nSmall widgets.\n")
    repo.write("logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    repo.write("notes.txt", NOTES)
    repo.git(
        "commit", "-q", "-m", "Initial import", who="alice-old <alice@old.example>", date="2026-01-05T10:00:00+01:00"
    )
    repo.git("checkout", "-q", "-b", "feature-x")
    repo.write("feature.py", "def x():\n    return 1\n\n")
    repo.git(
        "commit", "-q", "-m", "Feature x", who="Alice Liddell <alice@example.com>", date="2026-01-06T09:00:00+00:00"
    )
    repo.git("checkout", "-q", "main")
    repo.git(
        "merge",
        "-q",
        "--no-ff",
        "feature-x",
        "-m",
        "Merge pull request #12 from alice/feature-x\n\nAdd feature X\n\nIt adds x().",
        who="Bob Merger <bob@example.com>",
        date="2026-01-07T12:00:00+00:00",
    )
    repo.write("cache.py", "CACHE = {}\n")
    repo.git(
        "commit",
        "-q",
        "-m",
        "Add cache (#13)\n\n* first try\n* second try",
        who="Carol <12345+carol-gh@users.noreply.github.com>",
        date="2026-01-08T08:30:00-05:00",
    )
    repo.git("mv", "notes.txt", "docs-notes.txt")
    repo.git("commit", "-q", "-m", WEIRD_MESSAGE, who="Bob Builder <bob@example.com>", date="2026-01-09T10:00:00+00:00")
    repo.git(
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "Empty commit",
        who="Bob Builder <bob@example.com>",
        date="2026-01-10T10:00:00+00:00",
    )
    return repo


def test_reads_this_projects_own_history():
    if subprocess.run(["git", "-C", str(PROJECT), "rev-parse", "--git-dir"], capture_output=True).returncode != 0:
        pytest.skip("the project is not a git checkout here")
    expected = int(
        subprocess.run(
            ["git", "-C", str(PROJECT), "rev-list", "--count", "HEAD"], capture_output=True, text=True, check=True
        ).stdout
    )
    problems = ReadProblems()
    out = read_git_repo(PROJECT, problems)
    assert problems.count == 0
    assert len(out["commits"]) == expected
    assert len({c["sha"] for c in out["commits"]}) == expected
    assert out["people"] and sum(len(c["files"]) for c in out["commits"]) >= expected  # numstat was read
    _all_normalize(out)


def test_merge_and_squash_commits_become_pull_requests(widgets):
    problems = ReadProblems()
    out = read_git_repo(widgets.root, problems)
    assert problems.count == 0
    assert len(out["commits"]) == 6
    prs = {pr["number"]: pr for pr in out["pull_requests"]}
    assert sorted(prs) == [12, 13]

    merge = prs[12]
    assert (merge["title"], merge["body"]) == ("Add feature X", "It adds x().")
    assert merge["head"] == {"ref": "feature-x", "label": "alice:feature-x"}
    assert merge["user"] == {"login": "alice", "name": "Alice Liddell", "email": "alice@example.com"}  # branch tip
    assert merge["merged_by"]["name"] == "Bob Merger"
    assert merge["merged_at"] == merge["closed_at"] == merge["created_at"] == "2026-01-07T12:00:00+00:00"
    assert (merge["changed_files"], merge["additions"]) == (1, 3)  # diffed against the first parent
    assert merge["html_url"] == "https://github.com/acme/widgets/pull/12"
    assert normalize("pull_requests", merge)["ref"] == "acme/widgets#12"

    squash = prs[13]
    assert (squash["title"], squash["body"]) == ("Add cache", "* first try\n* second try")
    assert squash["user"]["login"] == "carol-gh"  # a GitHub noreply address names the real login
    assert squash["state"] == "closed" and squash["merged"] is True and squash["recovered_from"] == "git"
    _all_normalize(out)


def test_commit_records_numstat_binary_rename_and_message(widgets):
    out = read_git_repo(widgets.root, ReadProblems())
    commits = {c["message"].split("\n")[0]: c for c in out["commits"]}
    first = commits["Initial import"]
    files = {f["filename"]: f for f in first["files"]}
    assert files["README.md"] == {"filename": "README.md", "additions": 2, "deletions": 0}
    assert files["logo.png"] == {"filename": "logo.png", "additions": 0, "deletions": 0, "binary": True}
    assert first["author"]["date"] == "2026-01-05T10:00:00+01:00" and first["parents"] == []
    assert first["repo"] == "acme/widgets" and first["source"] == "git:acme/widgets" and "acl" not in first
    assert first["html_url"] == f"https://github.com/acme/widgets/commit/{first['sha']}"

    moved = commits["Move notes"]
    assert moved["message"] == WEIRD_MESSAGE  # a record separator, tabs and a stat-like line survive
    assert moved["files"] == [
        {"filename": "docs-notes.txt", "additions": 0, "deletions": 0, "previous_filename": "notes.txt"}
    ]
    assert commits["Empty commit"]["files"] == []
    assert commits["Add cache (#13)"]["author"]["date"] == "2026-01-08T08:30:00-05:00"


def test_mailmap_is_applied_and_people_carry_aliases(widgets):
    out = read_git_repo(widgets.root, ReadProblems())
    first = next(c for c in out["commits"] if c["message"] == "Initial import")
    assert first["author"]["name"] == "Alice Liddell" and first["author"]["email"] == "alice@example.com"
    people = {p["email"]: p for p in out["people"]}
    assert set(people) == {"alice@example.com", "bob@example.com", "12345+carol-gh@users.noreply.github.com"}
    assert people["alice@example.com"]["aliases"] == []  # the old identity folded in, not an alias
    bob = people["bob@example.com"]
    assert bob["name"] == "Bob Builder" and bob["aliases"] == ["Bob Merger"]  # the name used most wins
    assert people["12345+carol-gh@users.noreply.github.com"]["login"] == "carol-gh"
    assert all(p["source"] == "git:acme/widgets" and p["acl"] == ["*"] for p in out["people"])


def test_since_limits_history(widgets):
    out = read_git_repo(widgets.root, ReadProblems(), since="2026-01-08T00:00:00+00:00")
    assert [c["message"].split("\n")[0] for c in out["commits"]] == ["Empty commit", "Move notes", "Add cache (#13)"]
    assert [pr["number"] for pr in out["pull_requests"]] == [13]


def test_repository_without_remote_or_commits(tmp_path):
    repo = Repo(tmp_path / "scratch", tmp_path)
    assert read_git_repo(repo.root, ReadProblems()) == {"commits": [], "pull_requests": [], "people": []}
    repo.write("a.txt", "a\n")
    repo.git("commit", "-q", "-m", "Fix a thing (#4)")
    repo.write("a.txt", "a\nb\n")
    repo.git("commit", "-q", "-m", "Fix a thing (#4)", date="2026-02-01T00:00:00+00:00")  # a cherry-pick
    out = read_git_repo(repo.root, ReadProblems())
    assert out["commits"][0]["repo"] == "local/scratch" and "html_url" not in out["commits"][0]
    assert [pr["merge_commit_sha"] for pr in out["pull_requests"]] == [out["commits"][1]["sha"]]  # the original
    assert out["pull_requests"][0]["base"]["repo"]["full_name"] == "local/scratch"
    assert "html_url" not in out["pull_requests"][0]
    _all_normalize(out)


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://github.com/acme/widgets.git", ("acme/widgets", True)),
        ("https://user:secret@github.com/acme/widgets", ("acme/widgets", True)),
        ("git@github.com:acme/widgets.git", ("acme/widgets", True)),
        ("ssh://git@github.com/acme/widgets.git", ("acme/widgets", True)),
        ("git@gitlab.com:group/sub/project.git", ("group/sub/project", False)),
        ("https://gitlab.example.com/team/app", ("team/app", False)),
        ("/srv/git/widgets.git", None),
        ("file:///srv/git/widgets.git", None),
        ("../widgets", None),
        ("https://github.com/acme", None),
    ],
)
def test_repo_name_from_remote_url(url, expected):
    repo = repo_from_remote(url)
    assert (repo and (repo.name, repo.github)) == expected


def test_unreadable_sources_raise_one_line_errors(tmp_path, monkeypatch):
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(SourceError, match="not a directory"):
        read_git_repo(tmp_path / "file.txt", ReadProblems())
    with pytest.raises(SourceError, match="not a directory"):
        read_git_repo(tmp_path / "missing", ReadProblems())
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # never find a repository above
    with pytest.raises(SourceError, match="not a git repository") as error:
        read_git_repo(plain, ReadProblems())
    assert "\n" not in str(error.value)
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on PATH
    with pytest.raises(SourceError, match="git` command is not installed"):
        read_git_repo(plain, ReadProblems())


def _fake_commit(sha: str, date: str, stats: bytes = b"") -> bytes:
    fields = [sha, "", "Ann", "ann@example.com", date, "Ann", "ann@example.com", date, "msg\n"]
    return b"\x1e" + "\0".join(fields).encode() + b"\0" + stats


def test_a_commit_that_does_not_parse_is_reported_and_skipped():
    good = "a" * 40
    stream = (
        _fake_commit(good, "2026-01-01T00:00:00+00:00", b"\n1\t2\tx.py\0")
        + _fake_commit("b" * 40, "yesterday-ish")
        + _fake_commit("c" * 40, "2026-01-02T00:00:00+00:00", b"\nx\t2\tbad.py\0")
        + _fake_commit("d" * 40, "2026-01-03T00:00:00+00:00", b"\n0\t0\t\0old.py\0new.py\0")
    )
    chunks = [stream[i : i + 7] for i in range(0, len(stream), 7)]  # tokens split across reads
    problems = ReadProblems()
    commits = list(parse_log_stream(chunks, problems))
    assert [c["sha"] for c in commits] == [good, "d" * 40]
    assert commits[0]["files"] == [{"filename": "x.py", "additions": 1, "deletions": 2}]
    assert commits[1]["files"][0]["previous_filename"] == "old.py"
    assert problems.count == 2 and "bad author date" in problems.examples[0]


def test_ingests_into_the_embedded_store(widgets, tmp_path):
    from context_engine.config import Settings
    from context_engine.ingest import ingest
    from context_engine.store.documents import open_store

    settings = Settings(data_dir=tmp_path / "store", mongodb_uri=None)
    (report,) = ingest(settings, {"t1": read_git_repo(widgets.root, ReadProblems())}, index=False)
    assert report.skipped == 0
    store = open_store(settings)
    refs = sorted(d["ref"] for d in store.collection("pull_requests").find({"tenant_id": "t1"}))
    assert refs == ["acme/widgets#12", "acme/widgets#13"]
    assert store.collection("commits").count_documents({"tenant_id": "t1"}) == 6
    merged = store.collection("pull_requests").find_one({"ref": "acme/widgets#12"})
    assert merged["merged_at"].year == 2026  # ISO dates with offsets became real dates

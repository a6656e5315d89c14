"""Local git repositories: commits, pull requests recovered from merge messages, and authors.

One `git log HEAD --use-mailmap --numstat -z` subprocess is read as a stream. The format puts a
record separator (0x1E) before each commit and NUL between its fields:

    \\x1e<sha>\\0<parents>\\0<author name>\\0<author email>\\0<author date>\\0<committer name>\\0
    <committer email>\\0<committer date>\\0<message>\\0 \\n<add>\\t<del>\\t<path>\\0 ...

Fields are taken by position, so no message text can break the parse (git refuses NUL bytes in
messages). With `-z` numstat paths are never quoted; a rename is `<add>\\t<del>\\t\\0<old>\\0<new>\\0`
and a binary file has `-` for both counts. A numstat token always starts with a digit or `-`
(after an optional newline), so a token starting with 0x1E is always the next commit.

Merge commits are diffed against their first parent (`--diff-merges=first-parent`), as GitHub shows
them, so a merged pull request's merge commit lists the files the pull request changed.

Pull requests are recovered from two message conventions (`recovered_from: "git"`):
- GitHub merge commits, `Merge pull request #N from owner/branch` + a paragraph with the title;
- squash merges, a subject ending in `(#N)`.
The PR author: git knows a name and an email, not a GitHub login. `user.login` is the real login
when the email is a GitHub noreply address (`[id+]login@users.noreply.github.com`); otherwise it
is the email's local part (a stand-in, not a verified login), or the name when there is no email.
`user.name` and `user.email` always carry the git identity so the people directory can match it.
For a merge commit the author is the author of the merged branch's tip (the PR's last commit) and
`merged_by` is the merge commit's author (who pressed the button); a squash commit's author is the
PR author. Nothing is known about when a recovered PR was opened: `created_at` is `merged_at`.

A clone carries no access information: records have no access list, and ingest applies the
operator's `--public` declaration or denies access.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from context_engine.sources.problems import ReadProblems, SourceError
from context_engine.text import parse_datetime

_RS = "\x1e"
_FIELDS = (
    "sha",
    "parents",
    "author_name",
    "author_email",
    "author_date",
    "committer_name",
    "committer_email",
    "committer_date",
    "message",
)
_FORMAT = "%x1e%H%x00%P%x00%aN%x00%aE%x00%aI%x00%cN%x00%cE%x00%cI%x00%B"
_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")  # SHA-1 or SHA-256 repositories
_CHUNK = 1 << 16

_MERGE_PR = re.compile(r"^Merge pull request #(\d+) from (\S+)")
_SQUASH_PR = re.compile(r"^(.*\S)\s*\(#(\d+)\)$")
_NOREPLY = re.compile(r"^(?:\d+\+)?([^@]+)@users\.noreply\.github\.com$", re.IGNORECASE)
_SCP_URL = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!/)(.+)$")  # git@github.com:owner/name.git


@dataclass
class RepoIdentity:
    name: str  # "owner/name", or "local/<directory>" without a hosted remote
    github: bool


def read_git_repo(path: Path, problems: ReadProblems, since: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Commits reachable from HEAD (after `since`, any date git's `--since` accepts), the pull requests
    their messages record, and one people fragment per author."""
    path = Path(path)
    if not path.is_dir():
        raise SourceError(f"cannot read {path}: not a directory")
    common_dir = _git_text(path, "rev-parse", "--path-format=absolute", "--git-common-dir")
    repo = _repo_identity(path, Path(common_dir))
    out: dict[str, list[dict[str, Any]]] = {"commits": [], "pull_requests": [], "people": []}
    if not _has_head(path):
        return out  # a fresh repository: no history yet is not an error
    args = [
        "log",
        "HEAD",
        "--use-mailmap",
        "--numstat",
        "-z",
        "--diff-merges=first-parent",
        "--no-ext-diff",
        "--no-textconv",
        "-O",
        os.devnull,
        "--encoding=UTF-8",
        "--no-color",
        f"--format={_FORMAT}",
    ]
    if since:
        args.append(f"--since={since}")
    source = f"git:{repo.name}"
    for raw in _stream_log(path, args, problems):
        out["commits"].append(_commit_record(raw, repo, source))
    out["pull_requests"] = recover_pull_requests(out["commits"], repo, source)
    out["people"] = people_from_commits(out["commits"], source)
    return out


# -- running git ---------------------------------------------------------------------------------


def _git_env() -> dict[str, str]:
    # C locale: messages we report stay stable; no prompt: a read must never wait for a password.
    # No transport at all: the repository's own config is the input's, not the operator's, and a
    # partial clone's missing object would make `git log` fetch it from the promisor remote, running
    # the repository's `core.sshCommand` (or any transport it names). GIT_ALLOW_PROTOCOL overrides
    # every `protocol.*.allow` a repository's config may set; GIT_NO_LAZY_FETCH (git >= 2.44) too.
    return {
        **os.environ,
        "LC_ALL": "C",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "GIT_ALLOW_PROTOCOL": "",
        "GIT_NO_LAZY_FETCH": "1",
    }


# Settings a repository's own config could use to run a command or read a file outside the input,
# overridden on the command line (which wins over every config file): a user's or repository's
# log.showSignature would run gpg and print its output into the stream; mailmap.file names any file
# on the host, whose names would land in the records (diff.orderFile, another, is overridden by
# `log -O /dev/null`); fsmonitor, external diff and textconv drivers are commands.
_SAFE_CONFIG = (
    "log.showSignature=false",
    "mailmap.file=",
    "core.fsmonitor=false",
    "diff.external=",
    "protocol.allow=never",
)


def _git_command(path: Path, *args: str) -> list[str]:
    config = [part for setting in _SAFE_CONFIG for part in ("-c", setting)]
    return ["git", "-C", str(path), *config, *args]


def _run_git(path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(_git_command(path, *args), capture_output=True, env=_git_env(), timeout=60)
    except FileNotFoundError:
        raise SourceError("cannot read git repositories: the `git` command is not installed") from None


def _git_text(path: Path, *args: str) -> str:
    done = _run_git(path, *args)
    if done.returncode != 0:
        raise SourceError(f"cannot read {path}: {_first_line(done.stderr)}")
    return done.stdout.decode("utf-8", "replace").strip()


def _has_head(path: Path) -> bool:
    return _run_git(path, "rev-parse", "-q", "--verify", "HEAD^{commit}").returncode == 0


def _first_line(stderr: bytes) -> str:
    lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[0].removeprefix("fatal: ").strip() if lines else "git failed"


def _stream_log(path: Path, args: list[str], problems: ReadProblems) -> Iterator[dict[str, Any]]:
    # stderr goes to a file: a pipe we do not drain could fill up and stall git.
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(_git_command(path, *args), stdout=subprocess.PIPE, stderr=errors, env=_git_env())
        except FileNotFoundError:
            raise SourceError("cannot read git repositories: the `git` command is not installed") from None
        try:
            yield from parse_log_stream(_chunks(proc.stdout), problems, where=str(path))
        finally:
            proc.stdout.close()
            if proc.poll() is None:
                proc.kill()  # only when the reader stopped early
            code = proc.wait()
        if code != 0:
            errors.seek(0)
            raise SourceError(f"git log failed in {path}: {_first_line(errors.read())}")


def _chunks(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(_CHUNK):
        yield chunk


# -- parsing the stream --------------------------------------------------------------------------


def _tokens(chunks: Iterable[bytes]) -> Iterator[str]:
    tail = b""
    for chunk in chunks:
        parts = (tail + chunk).split(b"\0")
        tail = parts.pop()
        for part in parts:
            yield part.decode("utf-8", "replace")
    if tail:
        yield tail.decode("utf-8", "replace")


def parse_log_stream(
    chunks: Iterable[bytes], problems: ReadProblems, where: str = "git log"
) -> Iterator[dict[str, Any]]:
    """Raw commits (`_FIELDS` + `files`) from the bytes of `git log -z --numstat --format=_FORMAT`.
    A commit that does not parse is reported and skipped; reading resumes at the next commit."""
    tokens = _tokens(chunks)
    token = next(tokens, None)
    while token is not None:
        if not token.startswith(_RS):
            problems.add(where, "unexpected output between commits, skipped")
            token = next(tokens, None)
            continue
        values = [token[1:]] + [next(tokens, None) for _ in _FIELDS[1:]]
        if values[-1] is None:
            problems.add(f"{where}: {values[0][:12]}", "output ended inside the commit")
            return
        raw: dict[str, Any] = dict(zip(_FIELDS, values))
        raw["files"], why = [], None
        token = next(tokens, None)
        while token is not None and not token.startswith(_RS):
            try:
                raw["files"].append(_numstat(token, tokens))
            except ValueError as exc:
                why = why or str(exc)
            token = next(tokens, None)
        why = why or _invalid(raw)
        if why:
            problems.add(f"{where}: {raw['sha'][:12] or '?'}", why)
        else:
            yield raw


def _numstat(token: str, tokens: Iterator[str]) -> dict[str, Any]:
    counts = token.lstrip("\n").split("\t", 2)
    if len(counts) != 3:
        raise ValueError(f"malformed numstat line {token[:40]!r}")
    added, deleted, filename = counts
    previous = None
    if not filename:  # a rename: the old and the new path follow as their own tokens
        previous, filename = next(tokens, None), next(tokens, None)
        if previous is None or filename is None:
            raise ValueError("output ended inside a rename")
    binary = added == "-" and deleted == "-"
    if not binary and not (added.isdigit() and deleted.isdigit()):
        raise ValueError(f"malformed numstat counts {added!r}/{deleted!r}")
    entry: dict[str, Any] = {
        "filename": filename,
        "additions": 0 if binary else int(added),
        "deletions": 0 if binary else int(deleted),
    }
    if binary:
        entry["binary"] = True
    if previous is not None:
        entry["previous_filename"] = previous
    return entry


def _invalid(raw: dict[str, Any]) -> str | None:
    if not _SHA.match(raw["sha"]):
        return f"bad commit id {raw['sha'][:50]!r}"
    if any(not _SHA.match(p) for p in raw["parents"].split()):
        return "bad parent id"
    for key in ("author_date", "committer_date"):
        if parse_datetime(raw[key]) is None:
            return f"bad {key.replace('_', ' ')} {raw[key][:40]!r}"
    return None


# -- records -------------------------------------------------------------------------------------


def _commit_record(raw: dict[str, Any], repo: RepoIdentity, source: str) -> dict[str, Any]:
    record = {
        "sha": raw["sha"],
        "author": {"name": raw["author_name"], "email": raw["author_email"], "date": raw["author_date"]},
        "committer": {"name": raw["committer_name"], "email": raw["committer_email"], "date": raw["committer_date"]},
        "message": raw["message"].rstrip("\n"),
        "parents": raw["parents"].split(),
        "files": raw["files"],
        "repo": repo.name,
    }
    if repo.github:
        record["html_url"] = f"https://github.com/{repo.name}/commit/{raw['sha']}"
    record.update(source=source)
    return record


def recover_pull_requests(commits: list[dict[str, Any]], repo: RepoIdentity, source: str) -> list[dict[str, Any]]:
    """Merged pull requests named by merge and squash commit messages, newest first like `commits`.
    A number seen twice (a cherry-pick onto a release branch) keeps its oldest, original commit."""
    authors = {c["sha"]: c["author"] for c in commits}
    found: dict[int, dict[str, Any]] = {}
    for commit in reversed(commits):  # oldest first, so the original claims the number
        pr = _pull_request(commit, authors, repo, source)
        if pr is not None:
            found.setdefault(pr["number"], pr)
    return list(reversed(found.values()))


def _pull_request(
    commit: dict[str, Any], authors: dict[str, dict[str, Any]], repo: RepoIdentity, source: str
) -> dict[str, Any] | None:
    subject, _, rest = commit["message"].partition("\n")
    merged_at = commit["committer"]["date"]
    merge = _MERGE_PR.match(subject)
    if merge:
        number, title, body = int(merge.group(1)), *_title_and_body(rest)
        owner, _, branch = merge.group(2).partition("/")
        tip = commit["parents"][1] if len(commit["parents"]) > 1 else None
        author = authors.get(tip, commit["author"]) if tip else commit["author"]
        extra: dict[str, Any] = {
            "head": {"ref": branch or owner, "label": f"{owner}:{branch}" if branch else owner},
            "merged_by": _user(commit["author"]),
        }
    else:
        squash = _SQUASH_PR.match(subject)
        if not squash:
            return None
        number, title, body = int(squash.group(2)), squash.group(1), rest.strip() or None
        author, extra = commit["author"], {}
    pr: dict[str, Any] = {
        "number": number,
        "title": title or subject,
        "body": body,
        "state": "closed",
        "merged": True,
        "merged_at": merged_at,
        "closed_at": merged_at,
        "created_at": merged_at,
        "user": _user(author),
        **extra,
        "base": {"repo": {"full_name": repo.name}},
        "merge_commit_sha": commit["sha"],
        "additions": sum(f["additions"] for f in commit["files"]),
        "deletions": sum(f["deletions"] for f in commit["files"]),
        "changed_files": len(commit["files"]),
    }
    if repo.github:
        pr["html_url"] = f"https://github.com/{repo.name}/pull/{number}"
    pr.update(recovered_from="git", source=source)
    return pr


def _title_and_body(rest: str) -> tuple[str, str | None]:
    """The paragraph after a merge subject is the PR title; anything after it, the body."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", rest.strip()) if p.strip()]
    if not paragraphs:
        return "", None
    return " ".join(paragraphs[0].split()), "\n\n".join(paragraphs[1:]) or None


def github_login(email: str) -> str | None:
    match = _NOREPLY.match(email)
    return match.group(1) if match else None


def _user(identity: dict[str, Any]) -> dict[str, Any]:
    email, name = identity["email"], identity["name"]
    login = github_login(email) or (email.split("@", 1)[0] if email else name)
    return {"login": login, "name": name, "email": email}


def people_from_commits(commits: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """One fragment per author email (after .mailmap): the name used most, the others as aliases.
    Authors without an email cannot be told apart from namesakes and are left out; so are bots.
    A git author's name and e-mail are whatever the committer typed: the directory uses them to find
    people, never to join accounts (`people.VOUCHED` has no "git"; a noreply address with a numeric
    id counts only when a GitHub fragment states that id)."""
    names_by_email: dict[str, Counter[str]] = {}
    shown: dict[str, str] = {}  # the spelling first seen (newest commit) for a case-folded email
    for commit in commits:
        email, name = commit["author"]["email"], commit["author"]["name"]
        if not email:
            continue
        key = email.lower()
        shown.setdefault(key, email)
        names_by_email.setdefault(key, Counter())[name] += 1
    people = []
    for key, counts in names_by_email.items():
        login = github_login(key)
        if login and login.endswith("[bot]"):
            continue
        names = [name for name, _ in counts.most_common() if name]
        person: dict[str, Any] = {"name": names[0] if names else key, "email": shown[key], "aliases": names[1:]}
        if login:
            person["login"] = login
        person.update(acl=["*"], source=source)
        people.append(person)
    return people


# -- which repository ----------------------------------------------------------------------------


def _repo_identity(path: Path, common_dir: Path) -> RepoIdentity:
    origin = _run_git(path, "config", "--get", "remote.origin.url")  # exit code 1: no origin remote
    hosted = repo_from_remote(origin.stdout.decode("utf-8", "replace") if origin.returncode == 0 else "")
    if hosted:
        return hosted
    # <top>/.git for a work tree (and its linked worktrees), <name>.git for a bare repository
    directory = common_dir.parent.name if common_dir.name == ".git" else common_dir.name.removesuffix(".git")
    return RepoIdentity(f"local/{directory}", github=False)


def repo_from_remote(url: str) -> RepoIdentity | None:
    """`owner/name` from a hosted remote, https or ssh form (`git@host:owner/name.git`); GitLab
    subgroups keep their full path. Local paths and file:// remotes are not hosted: None."""
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http", "ssh", "git", "git+ssh", "ssh+git"):
            return None
        host, repo_path = parts.hostname or "", parts.path
    else:
        scp = _SCP_URL.match(url)
        if not scp:
            return None
        host, repo_path = scp.group(1).lower(), scp.group(2)
    segments = [s for s in repo_path.strip("/").removesuffix(".git").split("/") if s]
    if not host or len(segments) < 2:
        return None
    github = host in ("github.com", "www.github.com")
    return RepoIdentity("/".join(segments[:2] if github else segments), github=github)

"""Slack workspace exports: the .zip Slack's "Export data" produces, or the same tree unpacked.

Layout (https://slack.com/help/articles/220556107):

- `users.json`: the members, `[{id, name (the handle), real_name, deleted, is_bot, profile{real_name,
  display_name, email}}]`.
- `channels.json` (public channels), `groups.json` (private channels), `mpims.json` (group DMs),
  `dms.json` (DMs): `[{id, name, members: [user ids]}]`; a DM has no name, its folder is its id.
- `<channel folder>/<YYYY-MM-DD>.json`: that day's messages (UTC) as a JSON array of
  `{type, user, text, ts, thread_ts, reply_count, reply_users, replies, user_profile, reactions, ...}`.
  A thread is its parent (`thread_ts == ts`) plus every message whose `thread_ts` points at it; the
  parent and its replies may sit in different day files.

Each message becomes one `messages` record in that same shape (what `sample.add_thread` produces)
plus `channel` (name), `channel_id`, `mentions`, `acl`, `source`, `workspace` (a label: the export's
file name without `-slack-export`), and `permalink` only when the export itself says where the
workspace lives:

- The workspace URL is the one host of the files shared in it (`files[].permalink`,
  `https://<domain>.slack.com/files/...`); an export with no shared file, or files on several hosts,
  has none, and its messages carry no permalink (citations fall back to the `channel:ts` ref) rather
  than a link guessed from the file name, which is whatever the downloader named it.

- `text` is rendered as people read it: `<@U1>` -> `@display name`, `<#C1|dev>` -> `#dev`,
  `<url|label>` -> `label (url)` (just the URL when the label is the URL without its scheme, as
  Slack writes auto-linked text), `<url>` -> `url`, `<!here>` -> `@here`, then `&lt; &gt; &amp;`
  unescaped. The mentioned user ids go to `mentions`. Rendering keeps URLs whole, so
  `answering.links.references` finds the PRs, issues and threads a message links.
- A thread parent that lacks `reply_count`/`reply_users`/`reply_users_count`/`latest_reply` gets
  them from the replies present; a reply gets `parent_user_id`. Values the export has are kept.
- Membership and channel-settings events (`channel_join`, `channel_topic`, `pinned_item`, ... see
  `NOISE_SUBTYPES`) say nothing about the work and are skipped; every other message (bot posts,
  file shares, thread broadcasts, tombstones that still anchor a thread) goes in.
- A message without `user` (an integration or bot post) gets `user` = its `bot_id`, else its
  `username`, so the same bot is always the same author.
- Public channels: `acl` ["*"]; private channels, group DMs and DMs: their members as `slack:<user id>` (an
  empty list when the export does not list them: nobody but an admin query reads them).

`users.json` also yields one `people` fragment per user (`slack_id`, `slack_handle`, `name`,
`email`, `aliases`), deleted users included (their messages exist) with `deleted: true`.

Unreadable export (missing, not a zip, no channel list) -> `SourceError`; a malformed day file,
message or user, or a message folder no listing names -> `problems.add` and skipped.
"""

from __future__ import annotations

import re
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from context_engine.access import PUBLIC, slack_members
from context_engine.sources.input_caps import check_zip, parse_json, read_capped, read_member
from context_engine.sources.input_files import NotReadable, input_root, open_input, walk_input, zip_member_refusal
from context_engine.sources.normalize import source_fields
from context_engine.sources.problems import ReadProblems, SourceError

NOISE_SUBTYPES = frozenset(
    {
        "channel_join",
        "channel_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "channel_archive",
        "channel_unarchive",
        "group_join",
        "group_leave",
        "group_topic",
        "group_purpose",
        "group_name",
        "group_archive",
        "group_unarchive",
        "pinned_item",
        "unpinned_item",
        "bot_add",
        "bot_remove",
    }
)

# (listing file, private?) in the order Slack documents them.
_CHANNEL_LISTS = (("channels.json", False), ("groups.json", True), ("mpims.json", True), ("dms.json", True))
_DAY_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
_SLACK_TS = re.compile(r"^\d+\.\d+$")
_MARKUP = re.compile(r"<([^<>]+)>")
_EXPORT_SUFFIX = re.compile(r"(?i)(?:-slack-export| slack export).*$")


@dataclass(frozen=True)
class Channel:
    id: str
    name: str  # also its folder in the export
    acl: tuple[str, ...]


# --------------------------------------------------------------------------------------------
# The export's files, from a zip or a directory
# --------------------------------------------------------------------------------------------
class _ExportFiles:
    """JSON files of an export by their path relative to the export root (where `users.json` is).
    Only regular files inside the export are read (`input_files`): a symlinked `users.json`, a FIFO
    or a zip member that is a symlink or whose name leaves the archive is refused and named."""

    def __init__(self, path: Path, problems: ReadProblems) -> None:
        self.path = path
        self.real = input_root(path)
        self._zip: zipfile.ZipFile | None = None
        if self.real.is_dir():
            names = [rel.as_posix() for rel in walk_input(self.real, problems, lambda rel: rel.suffix == ".json")]
        elif self.real.is_file():
            try:
                self._zip = zipfile.ZipFile(self.real)
            except (zipfile.BadZipFile, OSError) as exc:
                raise SourceError(f"cannot read {path}: not a zip file or directory ({exc})") from None
            check_zip(self._zip, str(path))
            names = []
            for info in self._zip.infolist():
                if not info.filename.endswith(".json"):
                    continue
                refusal = zip_member_refusal(info)
                if refusal:
                    problems.refuse(info.filename, refusal)
                else:
                    names.append(info.filename)
        else:
            raise SourceError(f"cannot read {path}: not a zip file or directory")
        # Zips made by hand often wrap everything in one top folder: the root is where the listings are.
        listing = next((n for n in sorted(names, key=len) if PurePosixPath(n).name in dict(_CHANNEL_LISTS)), None)
        if listing is None:
            raise SourceError(f"{path} is not a Slack export: no channels.json, groups.json, mpims.json or dms.json")
        self.root = str(PurePosixPath(listing).parent)
        prefix = "" if self.root == "." else self.root + "/"
        self.names = sorted(n[len(prefix) :] for n in names if n.startswith(prefix))

    def read(self, name: str) -> Any:
        """Parsed JSON of one file; raises ValueError (bad JSON or encoding, FileTooLarge, JsonBomb) or
        OSError (NotReadable: not a regular file inside the export)."""
        full = name if self.root == "." else f"{self.root}/{name}"
        if self._zip:
            return parse_json(read_member(self._zip, full))
        with open_input(self.real / full, self.real) as fh:
            return parse_json(read_capped(fh))

    def close(self) -> None:
        if self._zip:
            self._zip.close()


def workspace_name(path: Path) -> str:
    """`clojurians-slack-export.zip` -> `clojurians` (Slack's own "Acme Slack export Jan 1 2024 - ..." -> `acme`)."""
    stem = path.name[:-4] if path.name.lower().endswith(".zip") else path.name
    return _EXPORT_SUFFIX.sub("", stem).strip().lower().replace(" ", "-") or stem


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------
def read_slack_export(path: Path, problems: ReadProblems, workspace: str | None = None) -> dict[str, list[dict]]:
    """`{"messages": [...], "people": [...]}` from one workspace export (.zip or directory).
    `workspace` (the `<workspace>.slack.com` subdomain) defaults to the file name without `-slack-export`."""
    files = _ExportFiles(Path(path), problems)
    try:
        workspace = workspace or workspace_name(files.path)
        source = f"slack:{workspace}"
        users = _read_users(files, problems)
        channels = _read_channels(files)
        day_files: dict[str, list[str]] = defaultdict(list)  # folder -> its day files, in date order
        for name in files.names:
            folder, _, day = name.partition("/")
            if _DAY_FILE.match(day):
                day_files[folder].append(name)
        for folder in sorted(set(day_files) - {channel.name for channel in channels}):
            problems.add(f"{files.path}:{folder}/", "no channel listing names this folder: its messages are skipped")
        raw = {
            channel: list(_read_channel_messages(files, day_files.get(channel.name, []), problems))
            for channel in channels
        }
    finally:
        files.close()
    names = _display_names(users, raw)
    channel_names = {channel.id: channel.name for channel in channels}
    url = workspace_url(message for channel_messages in raw.values() for message in channel_messages)
    messages: list[dict] = []
    for channel, channel_messages in raw.items():
        messages += _channel_records(channel, channel_messages, names, channel_names, users, workspace, source, url)
    people = [_person(user, workspace, source) for user in users.values()]
    return {"messages": messages, "people": people}


def _read_json_list(files: _ExportFiles, name: str, problems: ReadProblems) -> list[Any] | None:
    try:
        data = files.read(name)
    except NotReadable as exc:
        problems.refuse(name, exc.kind)
        return None
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        problems.add(f"{files.path}:{name}", f"unreadable JSON ({exc})")
        return None
    if not isinstance(data, list):
        problems.add(f"{files.path}:{name}", "expected a JSON array")
        return None
    return data


def _read_users(files: _ExportFiles, problems: ReadProblems) -> dict[str, dict[str, Any]]:
    if "users.json" not in files.names:
        problems.add(str(files.path), "no users.json: mentions keep their user ids and no people are read")
        return {}
    users: dict[str, dict[str, Any]] = {}
    for i, user in enumerate(_read_json_list(files, "users.json", problems) or []):
        if isinstance(user, dict) and isinstance(user.get("id"), str):
            users[user["id"]] = user
        else:
            problems.add(f"{files.path}:users.json[{i}]", "a user needs a string `id`")
    return users


def _read_channels(files: _ExportFiles) -> list[Channel]:
    """Every listed channel. A broken listing makes the export unreadable: without it no message can
    be given a channel id or an access list."""
    channels: list[Channel] = []
    for listing, private in _CHANNEL_LISTS:
        if listing not in files.names:
            continue
        try:
            entries = files.read(listing)
        except NotReadable as exc:
            raise SourceError(
                f"{files.path}: {listing} is a {exc.kind}, not a regular file inside the export"
            ) from None
        except (ValueError, OSError, zipfile.BadZipFile) as exc:
            raise SourceError(f"{files.path}: {listing} is unreadable ({exc})") from None
        if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("id"), str) for e in entries
        ):
            raise SourceError(f"{files.path}: {listing} is not a list of channels with ids")
        for entry in entries:
            name = entry.get("name") or entry["id"]  # DMs have no name; their folder is the id
            members = [m for m in entry.get("members") or [] if isinstance(m, str)]
            acl = tuple(slack_members(members)) if private else (PUBLIC,)
            channels.append(Channel(entry["id"], name, acl))
    return channels


def _read_channel_messages(files: _ExportFiles, day_files: list[str], problems: ReadProblems) -> Iterator[dict]:
    for name in day_files:
        for i, message in enumerate(_read_json_list(files, name, problems) or []):
            where = f"{files.path}:{name}[{i}]"
            if not isinstance(message, dict):
                problems.add(where, "not a JSON object")
            elif not isinstance(message.get("ts"), str) or not _SLACK_TS.match(message["ts"]):
                problems.add(where, "a message needs a Slack `ts` string like 1546215120.504800")
            elif message.get("thread_ts") is not None and not (
                isinstance(message["thread_ts"], str) and _SLACK_TS.match(message["thread_ts"])
            ):
                problems.add(where, "`thread_ts` is not a Slack timestamp string")
            elif message.get("subtype") not in NOISE_SUBTYPES:
                yield message


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------
def _profile(user: dict[str, Any]) -> dict[str, Any]:
    return user.get("profile") if isinstance(user.get("profile"), dict) else {}


def _display_names(users: dict[str, dict], raw: dict[Channel, list[dict]]) -> dict[str, str]:
    """What `@mention` shows for each user id: display name, else real name, else handle. Users the
    directory lacks are named by the `user_profile` their own messages carry."""
    names: dict[str, str] = {}
    for uid, user in users.items():
        profile = _profile(user)
        name = profile.get("display_name") or profile.get("real_name") or user.get("real_name") or user.get("name")
        if isinstance(name, str) and name:
            names[uid] = name
    for messages in raw.values():
        for message in messages:
            profile = message.get("user_profile")
            if isinstance(profile, dict) and isinstance(message.get("user"), str) and message["user"] not in names:
                name = profile.get("display_name") or profile.get("real_name") or profile.get("name")
                if isinstance(name, str) and name:
                    names[message["user"]] = name
    return names


def _link(url: str, label: str) -> str:
    bare = url.split(":", 1)[1].lstrip("/") if ":" in url else url
    if not label or label in (url, bare):
        return bare if url.startswith("mailto:") else url
    return f"{label} ({url})"


def render_text(text: str, names: dict[str, str], channel_names: dict[str, str]) -> tuple[str, list[str]]:
    """(readable text, mentioned user ids in order) of Slack `mrkdwn` with `<...>` markup."""
    mentions: list[str] = []

    def one(match: re.Match[str]) -> str:
        target, _, label = match.group(1).partition("|")
        if target.startswith("@"):
            uid = target[1:]
            if uid not in mentions:
                mentions.append(uid)
            return "@" + (names.get(uid) or label or uid)
        if target.startswith("#"):
            return "#" + (label or channel_names.get(target[1:]) or target[1:])
        if target.startswith("!"):  # <!here>, <!subteam^S1|@team>, <!date^...|fallback>
            return label or "@" + target[1:].split("^", 1)[0]
        return _link(target, label)

    rendered = _MARKUP.sub(one, text)
    # Slack escapes only these three; &amp; last so "&amp;lt;" stays the text "&lt;".
    rendered = rendered.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return rendered, mentions


_FILE_PERMALINK = re.compile(r"(https://[a-z0-9][a-z0-9-]*\.(?:enterprise\.)?slack\.com)/files/", re.IGNORECASE)


def workspace_url(messages: Iterable[dict[str, Any]]) -> str | None:
    """`https://<domain>.slack.com` when the files shared in the export all link there, else None."""
    hosts = set()
    for message in messages:
        files = message.get("files")
        for file in files if isinstance(files, list) else ():
            found = _FILE_PERMALINK.match(file.get("permalink") or "") if isinstance(file, dict) else None
            if found:
                hosts.add(found.group(1).lower())
    return hosts.pop() if len(hosts) == 1 else None


def _permalink(url: str, channel_id: str, ts: str, thread_ts: str | None) -> str:
    link = f"{url}/archives/{channel_id}/p{ts.replace('.', '')}"
    if thread_ts and thread_ts != ts:
        link += f"?thread_ts={thread_ts}&cid={channel_id}"
    return link


def _author(message: dict[str, Any]) -> str | None:
    user = message.get("user") or message.get("bot_id") or message.get("username")
    return user if isinstance(user, str) else None


def _user_profile(message: dict[str, Any], user: dict[str, Any] | None) -> dict[str, Any] | None:
    if isinstance(message.get("user_profile"), dict):
        return message["user_profile"]
    if user:
        profile = _profile(user)
        real = profile.get("real_name") or user.get("real_name") or user.get("name")
        return {"real_name": real, "display_name": profile.get("display_name") or real, "name": user.get("name")}
    bot = message.get("bot_profile") if isinstance(message.get("bot_profile"), dict) else {}
    name = message.get("username") or bot.get("name")
    return {"real_name": name, "display_name": name, "name": name} if name else None


def _channel_records(
    channel: Channel,
    messages: list[dict],
    names: dict[str, str],
    channel_names: dict[str, str],
    users: dict[str, dict],
    workspace: str,
    source: str,
    url: str | None,
) -> list[dict]:
    records = []
    for message in sorted(messages, key=lambda m: float(m["ts"])):
        record = source_fields(message)  # never the engine's fields (`acl`, `source` ...): see normalize
        author = _author(message)
        if author:
            record["user"] = author
        profile = _user_profile(message, users.get(author or ""))
        if profile:
            record["user_profile"] = profile
        text = message.get("text") if isinstance(message.get("text"), str) else ""
        record["text"], record["mentions"] = render_text(text, names, channel_names)
        record.update(
            type=message.get("type") or "message",
            channel=channel.name,
            channel_id=channel.id,
            acl=list(channel.acl),
            source=source,
            workspace=workspace,
        )
        if url:
            record["permalink"] = _permalink(url, channel.id, message["ts"], message.get("thread_ts"))
        records.append(record)
    _complete_threads(records)
    return records


def _complete_threads(records: list[dict]) -> None:
    """Give parents the reply fields Slack's API has (from the replies present when the export lacks
    them) and replies their parent's author, so every thread is queryable from either end."""
    replies: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        if record.get("thread_ts") and record["thread_ts"] != record["ts"]:
            replies[record["thread_ts"]].append(record)
    for parent in records:
        thread = replies.get(parent["ts"])
        if not thread:
            continue
        repliers = list(dict.fromkeys(r["user"] for r in thread if r.get("user")))
        parent.setdefault("thread_ts", parent["ts"])
        parent.setdefault("reply_count", len(thread))
        parent.setdefault("reply_users", repliers)
        parent.setdefault("reply_users_count", len(parent["reply_users"]))
        parent.setdefault("latest_reply", max((r["ts"] for r in thread), key=float))
        for reply in thread:
            if parent.get("user"):
                reply.setdefault("parent_user_id", parent["user"])


def _person(user: dict[str, Any], workspace: str, source: str) -> dict[str, Any]:
    profile = _profile(user)
    name = user.get("real_name") or profile.get("real_name") or profile.get("display_name") or user.get("name")
    variants = (
        profile.get("display_name"),
        user.get("real_name"),
        profile.get("real_name"),
        profile.get("real_name_normalized"),
        profile.get("display_name_normalized"),
    )
    aliases = [v for v in dict.fromkeys(variants) if isinstance(v, str) and v and v != name]
    person: dict[str, Any] = {
        "slack_id": user["id"],
        "name": name or user["id"],
        "aliases": aliases,
        "workspace": workspace,
        "acl": ["*"],
        "source": source,
    }
    if isinstance(user.get("name"), str) and user["name"]:
        person["slack_handle"] = user["name"]
    if isinstance(profile.get("email"), str) and profile["email"]:
        person["email"] = profile["email"]  # Slack verifies it: it joins accounts (`people.VOUCHED`)
    if user.get("deleted"):
        person["deleted"] = True
    if user.get("is_bot"):
        person["bot"] = True
    return person

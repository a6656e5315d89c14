"""Sentence splitting and chunking of stored records for the semantic half (docs/ARCHITECTURE.md, the semantic half).

- `split_sentences(text)`: sentence boundaries for Chinese (`。！？；…`, no spaces needed) and
  Western text (`.!?` followed by whitespace), not breaking on abbreviations ("e.g.", "Mr.",
  "et al."), initials, list numbers, decimals, versions or URLs. Paragraphs, headings, list items
  and fenced code blocks are units of their own.
- `chunk_text(text, max_tokens, overlap_sentences)`: sentences packed into chunks of at most
  `max_tokens` (counted cheaply: whitespace words, CJK characters / 1.5), with sentence overlap;
  an over-long sentence is split hard. Chunk text is a slice of the input, so spacing survives.
- `chunk_record(collection, record)`: the text-bearing chunks of one stored record, each carrying
  the record's ref, title, URL, author, date, tenant and ACL; `chunk_threads(messages)` makes each
  Slack thread (parent + replies) one unit; `chunk_collection` dispatches between the two. A
  tenant's own kind (`kinds`) is chunked from its spec: its text fields, the first one the title.

Chunk metadata is the *record's* (a PR's review chunks carry the PR author and date; who wrote a
review is in the text), so filters on a chunk mean the same as filters on its record.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from context_engine.kinds import BUILTIN, CollectionSpec
from context_engine.query.fields import record_ref, role_paths
from context_engine.query.schema import values_at
from context_engine.sources.normalize import normalize, slack_ts_to_datetime
from context_engine.text import CJK_CHAR, WORD_UNIT, count_tokens, parse_datetime, sentence_spans, split_sentences

__all__ = [
    "CHUNK_TOKENS",
    "Chunk",
    "chunk_collection",
    "chunk_document",
    "chunk_record",
    "chunk_spans",
    "chunk_text",
    "chunk_threads",
    "count_tokens",
    "embedding_text",
    "sentence_spans",
    "split_sentences",
    "text_collections",
]


def text_collections(kinds: Iterable[CollectionSpec] | None = None) -> tuple[str, ...]:
    """The collections whose records the semantic index holds: the searchable kinds, in the registry's
    order (`kinds`: a tenant's; default: the built-in ones)."""
    return tuple(kind.name for kind in (BUILTIN.values() if kinds is None else kinds) if kind.searchable)


# Words per chunk: ~450 word pieces, inside multilingual-e5's 512-token window, so a chunk is embedded
# whole; a typical abstract, PR description or Slack thread stays one unit.
CHUNK_TOKENS = 300


# --------------------------------------------------------------------------------------------
# Chunks of text
# --------------------------------------------------------------------------------------------
def _hard_split(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    """Split one over-long span into pieces of at most max_tokens, between words / CJK characters."""
    pieces: list[tuple[int, int]] = []
    piece_start = piece_end = None
    words = cjk = 0
    for unit in WORD_UNIT.finditer(text, start, end):
        is_cjk = len(unit.group()) == 1 and bool(CJK_CHAR.match(unit.group()))
        new_words, new_cjk = words + (not is_cjk), cjk + is_cjk
        if piece_start is not None and new_words + math.ceil(new_cjk / 1.5) > max_tokens:
            pieces.append((piece_start, piece_end))
            piece_start, new_words, new_cjk = None, int(not is_cjk), int(is_cjk)
        if piece_start is None:
            piece_start = unit.start()
        piece_end, words, cjk = unit.end(), new_words, new_cjk
    if piece_start is not None:
        pieces.append((piece_start, piece_end))
    return pieces


def chunk_spans(text: str, max_tokens: int = CHUNK_TOKENS, overlap_sentences: int = 1) -> list[tuple[int, int]]:
    """(start, end) offsets of the chunks `chunk_text` returns."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    if overlap_sentences < 0:
        raise ValueError("overlap_sentences must be >= 0")
    units: list[tuple[int, int, int]] = []  # (start, end, tokens)
    for start, end in sentence_spans(text or ""):
        tokens = count_tokens(text[start:end])
        if tokens <= max_tokens:
            units.append((start, end, tokens))
        else:
            units.extend((s, e, count_tokens(text[s:e])) for s, e in _hard_split(text, start, end, max_tokens))
    chunks: list[tuple[int, int]] = []
    current: list[tuple[int, int, int]] = []
    total = 0
    for unit in units:
        if current and total + unit[2] > max_tokens:
            chunks.append((current[0][0], current[-1][1]))
            carry = current[-overlap_sentences:] if overlap_sentences else []
            while carry and sum(u[2] for u in carry) + unit[2] > max_tokens:
                carry = carry[1:]
            current, total = list(carry), sum(u[2] for u in carry)
        current.append(unit)
        total += unit[2]
    if current:
        chunks.append((current[0][0], current[-1][1]))
    return chunks


def chunk_text(text: str, max_tokens: int = CHUNK_TOKENS, overlap_sentences: int = 1) -> list[str]:
    """Sentences packed into chunks of at most ~max_tokens, consecutive chunks sharing up to
    `overlap_sentences` sentences (fewer when the overlap would not fit)."""
    return [text[s:e] for s, e in chunk_spans(text, max_tokens, overlap_sentences)]


# --------------------------------------------------------------------------------------------
# Chunks of records
# --------------------------------------------------------------------------------------------
@dataclass
class Chunk:
    id: str  # f"{tenant_id}:{collection}:{doc_ref}:{position}"
    doc_ref: str
    collection: str
    text: str
    title: str | None = None
    url: str | None = None
    author: str | None = None
    date: datetime | None = None
    tenant_id: str = ""
    acl: list[str] = field(default_factory=lambda: ["*"])
    position: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _get(record: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(record, dict):
            return None
        record = record.get(key)
    return record


def _plain(value: Any) -> str:
    """Text of a field: a string, or the text nodes of a rich-text (Jira ADF) document."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.replace("\r\n", "\n").replace("\r", "\n").strip()
    if isinstance(value, dict):
        if value.get("type") == "text":
            return str(value.get("text") or "")
        parts = [_plain(v) for v in value.get("content") or []]
        sep = "\n\n" if value.get("type") in ("doc", None) else ("" if value.get("type") == "paragraph" else "\n")
        return sep.join(p for p in parts if p).strip()
    if isinstance(value, list):
        return "\n\n".join(p for p in map(_plain, value) if p)
    return ""


_SLACK_LINK = re.compile(r"<((?:https?|mailto):[^|>]+)\|([^>]+)>")
_SLACK_BARE = re.compile(r"<((?:https?|mailto):[^|>]+)>")
_SLACK_MENTION = re.compile(r"<([@#!])([^|>]+)(?:\|([^>]+))?>")


def _slack_text(text: str, names: dict[str, str] | None = None) -> str:
    """Slack mrkdwn links and mentions as plain text: `<url|ENG-1>` -> `ENG-1 (url)`, `<@U1>` ->
    `@Name` when the thread shows U1's name."""
    text = _SLACK_LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})", text)
    text = _SLACK_BARE.sub(lambda m: m.group(1), text)
    names = names or {}
    return _SLACK_MENTION.sub(lambda m: f"{m.group(1)}{m.group(3) or names.get(m.group(2)) or m.group(2)}", text)


def _login(user: Any) -> str | None:
    if isinstance(user, dict):
        value = user.get("login") or user.get("name") or user.get("displayName") or user.get("email")
        return str(value) if value else None
    return str(user) if user else None


def _display(user: Any) -> str | None:
    if isinstance(user, dict):
        value = user.get("displayName") or user.get("login") or user.get("name") or user.get("email")
        return str(value) if value else None
    return str(user) if user else None


def _date(*values: Any) -> datetime | None:
    for value in values:
        if isinstance(value, datetime):  # naive UTC, as the store holds it
            return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        if isinstance(value, str):
            parsed = parse_datetime(value)
            if parsed is not None:
                return parsed
    return None


def _url(record: dict[str, Any]) -> str | None:
    for key in ("html_url", "permalink", "url"):
        value = record.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _comment_line(who: str | None, body: str, where: str | None = None) -> str:
    head = " ".join(p for p in (who, f"on {where}" if where else None) if p)
    return f"{head}: {body}" if head else body


def _time_key(*values: Any) -> tuple[int, str]:
    when = _date(*values)
    return (0, when.isoformat()) if when else (1, "")


def _own_groups(kind: CollectionSpec, record: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A tenant's own kind: its text fields as one group (the first one, its subject, is the title),
    its first author field, its `created` time and its `url` role (else a URL field it has)."""
    texts = [text for path in kind.text if (text := _plain(list(values_at(record, path))))]
    title = texts[0].split("\n", 1)[0][:200] if texts else None
    author = next(
        (
            str(v)
            for field in kind.people.get("author", ())
            for v in values_at(record, field.path)
            if v not in (None, "")
        ),
        None,
    )
    url = next(
        (v for path in role_paths(kind, "url") for v in values_at(record, path) if isinstance(v, str) and v), None
    )
    meta = {
        "url": url or _url(record),
        "title": title,
        "author": author,
        "date": _date(*(v for path in kind.times.get("created", ()) for v in values_at(record, path))),
    }
    return meta, ["\n\n".join(texts)]


def _groups(
    collection: str, record: dict[str, Any], kind: CollectionSpec | None = None
) -> tuple[dict[str, Any], list[str]]:
    """(metadata, text groups) of one normalized record; each group is chunked on its own. `kind`: the
    collection's spec, for a tenant's own kind."""
    if kind is not None and not kind.builtin:
        return _own_groups(kind, record)
    meta: dict[str, Any] = {"url": _url(record)}
    groups: list[str] = []
    if collection in ("pull_requests", "issues") and isinstance(record.get("fields"), dict):  # Jira
        fields = record["fields"]
        title = _plain(fields.get("summary"))
        meta.update(
            title=title or None,
            author=_login(fields.get("reporter") or fields.get("creator")),
            date=_date(fields.get("created"), fields.get("updated")),
        )
        groups.append("\n\n".join(p for p in (title, _plain(fields.get("description"))) if p))
        comments = _get(fields, "comment", "comments") or []
        comments = sorted((c for c in comments if isinstance(c, dict)), key=lambda c: _time_key(c.get("created")))
        groups.append(
            "\n\n".join(
                _comment_line(_display(c.get("author")), _plain(c.get("body")))
                for c in comments
                if _plain(c.get("body"))
            )
        )
    elif collection in ("pull_requests", "issues"):  # GitHub
        title = _plain(record.get("title"))
        meta.update(
            title=title or None,
            author=_login(record.get("user")),
            date=_date(record.get("created_at"), record.get("updated_at")),
        )
        groups.append("\n\n".join(p for p in (title, _plain(record.get("body"))) if p))
        discussion: list[tuple[tuple[int, str], str]] = []
        for review in record.get("reviews") or []:
            if isinstance(review, dict) and _plain(review.get("body")):
                state = review.get("state")
                who = _login(review.get("user"))
                who = f"{who} ({state.lower().replace('_', ' ')})" if who and isinstance(state, str) else who
                discussion.append((_time_key(review.get("submitted_at")), _comment_line(who, _plain(review["body"]))))
        for comment in record.get("review_comments") or []:
            if isinstance(comment, dict) and _plain(comment.get("body")):
                discussion.append(
                    (
                        _time_key(comment.get("created_at")),
                        _comment_line(_login(comment.get("user")), _plain(comment["body"]), comment.get("path")),
                    )
                )
        comments = record.get("comments")  # a count in /issues dumps, a list when comments are embedded
        if isinstance(comments, list):
            for comment in comments:
                if isinstance(comment, dict) and _plain(comment.get("body")):
                    discussion.append(
                        (
                            _time_key(comment.get("created_at")),
                            _comment_line(_login(comment.get("user")), _plain(comment["body"])),
                        )
                    )
        discussion.sort(key=lambda item: item[0])  # stable: reviews before inline comments at equal times
        groups.append("\n\n".join(text for _, text in discussion))
    elif collection == "documents":
        title = _plain(record.get("title"))
        body = _plain(record.get("body") or record.get("content") or record.get("text"))
        first_line = body.split("\n", 1)[0].lstrip("# ").strip()
        meta.update(
            title=title or None,
            author=_login(record.get("author")),
            date=_date(record.get("created_at"), record.get("updated_at"), record.get("date")),
        )
        groups.append(body if title and first_line == title else "\n\n".join(p for p in (title, body) if p))
    elif collection == "commits":
        message = _plain(record.get("message") or _get(record, "commit", "message"))
        author = record.get("author") if isinstance(record.get("author"), dict) else _get(record, "commit", "author")
        meta.update(
            title=message.split("\n", 1)[0] or None,
            author=_login(author),
            date=_date(
                _get(record, "author", "date"),
                _get(record, "commit", "author", "date"),
                _get(record, "committer", "date"),
                record.get("date"),
            ),
        )
        groups.append(message)
    elif collection == "messages":
        text = _slack_text(_plain(record.get("text")))
        meta.update(
            title=_thread_title(record, text),
            author=_login(record.get("user")),
            date=_date(record.get("date")) or _slack_date(record.get("ts")),
        )
        groups.append(_message_line(record, text))
    elif collection == "people":
        pass
    else:
        raise ValueError(f"no chunking for collection {collection!r}")
    return meta, groups


def _slack_date(ts: Any) -> datetime | None:
    try:
        return slack_ts_to_datetime(str(ts))
    except (TypeError, ValueError, OverflowError):
        return None


def _thread_title(parent: dict[str, Any], text: str) -> str | None:
    line = text.split("\n", 1)[0].strip()
    if len(line) > 80:
        line = line[:77].rstrip() + "..."
    channel = parent.get("channel")
    return f"#{channel}: {line}" if channel else (line or None)


def _speaker(message: dict[str, Any]) -> str | None:
    profile = message.get("user_profile") if isinstance(message.get("user_profile"), dict) else {}
    who = profile.get("real_name") or profile.get("display_name") or message.get("username") or message.get("user")
    return str(who) if who else None


def _message_line(message: dict[str, Any], text: str | None = None, names: dict[str, str] | None = None) -> str:
    text = _slack_text(_plain(message.get("text")), names) if text is None else text
    return _comment_line(_speaker(message), text) if text else ""


def _tenant(record: dict[str, Any], tenant: str | None) -> str:
    value = record.get("tenant_id") or tenant
    if not value:
        raise ValueError("a chunk needs a tenant: the record has no tenant_id and none was given")
    return str(value)


def _build(
    collection: str,
    ref: str,
    meta: dict[str, Any],
    groups: Iterable[str],
    tenant: str,
    acl: list[str],
    max_tokens: int,
    overlap_sentences: int,
) -> list[Chunk]:
    chunks: list[Chunk] = []
    for group in groups:
        for text in chunk_text(group, max_tokens, overlap_sentences) if group.strip() else []:
            position = len(chunks)
            chunks.append(
                Chunk(
                    id=f"{tenant}:{collection}:{ref}:{position}",
                    doc_ref=ref,
                    collection=collection,
                    text=text,
                    title=meta.get("title"),
                    url=meta.get("url"),
                    author=meta.get("author"),
                    date=meta.get("date"),
                    tenant_id=tenant,
                    acl=list(acl),
                    position=position,
                )
            )
    return chunks


def _normalized(collection: str, record: dict[str, Any], kind: CollectionSpec | None = None) -> dict[str, Any]:
    if record.get("ref"):
        return record
    if kind is not None and not kind.builtin:  # a tenant's own records are stored as they came, refs aside
        return {**record, "ref": record_ref(record, kind)}
    doc = normalize(collection, record)  # which drops the tenant: the store sets it on what it stores
    if "tenant_id" in record:
        doc["tenant_id"] = record["tenant_id"]
    return doc


def _acl(record: dict[str, Any]) -> list[str]:
    acl = record.get("acl")
    if acl is None:  # deny by default: a record nobody said is public is readable by nobody
        return []
    return [str(a) for a in acl] if isinstance(acl, (list, tuple, set)) else [str(acl)]


def chunk_record(
    collection: str,
    record: dict[str, Any],
    *,
    tenant: str | None = None,
    max_tokens: int = CHUNK_TOKENS,
    overlap_sentences: int = 1,
    kind: CollectionSpec | None = None,
) -> list[Chunk]:
    """The text-bearing chunks of one stored record, positions 0.. in order.

    pull_requests / GitHub issues: title + body, then the reviews and comments as a second group;
    Jira issues: summary + description, then the comments; documents: title + body; commits: the
    message; messages: the one message (use `chunk_threads` to keep Slack threads together);
    people: none; a tenant's own kind (`kind`): its text fields. A record without `ref` is normalized
    first; `tenant` is used when the record has no `tenant_id`.
    """
    record = _normalized(collection, record, kind)
    meta, groups = _groups(collection, record, kind)
    return _build(
        collection,
        str(record["ref"]),
        meta,
        groups,
        _tenant(record, tenant),
        _acl(record),
        max_tokens,
        overlap_sentences,
    )


def _ts(message: dict[str, Any]) -> float:
    try:
        return float(message.get("ts"))
    except (TypeError, ValueError):
        return math.inf


def _common_acl(acls: list[list[str]]) -> list[str]:
    """Principals allowed to see every one of the messages ("*" is everyone)."""
    allowed: set[str] | None = None
    for acl in acls:
        if "*" in acl:
            continue
        allowed = set(acl) if allowed is None else allowed & set(acl)
    return ["*"] if allowed is None else sorted(allowed)


def chunk_threads(
    messages: Iterable[dict[str, Any]],
    *,
    tenant: str | None = None,
    max_tokens: int = CHUNK_TOKENS,
    overlap_sentences: int = 1,
) -> list[Chunk]:
    """Slack messages grouped into threads, each thread one unit of chunks.

    A parent (`thread_ts == ts`, or no `thread_ts`) and its replies (same `channel_id` and
    `thread_ts`) become one text in time order, chunked; the chunks carry the parent's ref, URL,
    author, date and tenant, and only the principals who can see every message of the unit. Replies
    whose parent is not among `messages` still form one unit (ref `channel_id:thread_ts`).
    """
    threads: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    # (tenant, Slack user id) -> the name their messages show, to render `<@U...>` mentions.
    names: dict[str, dict[str, str]] = {}
    for message in messages:
        message = _normalized("messages", message)
        tenant_key = str(message.get("tenant_id") or tenant or "")
        speaker = _speaker(message)
        if message.get("user") and speaker:
            names.setdefault(tenant_key, {}).setdefault(str(message["user"]), speaker)
        key_ts = str(message.get("thread_ts") or message.get("ts"))
        threads.setdefault((tenant_key, str(message.get("channel_id")), key_ts), []).append(message)
    chunks: list[Chunk] = []
    for (tenant_key, channel_id, thread_ts), group in threads.items():
        tenant_names = names.get(tenant_key, {})
        group.sort(key=_ts)
        parent = next((m for m in group if str(m.get("ts")) == thread_ts), None)
        head = parent or group[0]
        # The unit holds every message's text, so only those who may read every one of them read it
        # (a reply narrowed below its parent, by a webhook or an export, never rides on the parent's list).
        acl = _common_acl([_acl(m) for m in group])
        ref = str(parent["ref"]) if parent is not None else f"{channel_id}:{thread_ts}"
        meta, _ = _groups("messages", head)
        if parent is None:
            meta["date"] = _slack_date(thread_ts) or meta.get("date")
        text = "\n\n".join(line for line in (_message_line(m, names=tenant_names) for m in group) if line)
        chunks.extend(_build("messages", ref, meta, [text], _tenant(head, tenant), acl, max_tokens, overlap_sentences))
    return chunks


def _chunk_groups(
    kind: CollectionSpec, records: Iterable[dict[str, Any]], tenant: str | None, max_tokens: int, overlap_sentences: int
) -> list[Chunk]:
    """A tenant's own kind whose records sharing a `chunk_group` value are one unit (as a Slack thread
    is): their texts in `created` order, under the first record's ref, title, author and date, readable
    by the principals who may read every one of them. A record without the value is a unit of its own."""
    units: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for position, record in enumerate(records):
        record = _normalized(kind.name, record, kind)
        group = next((str(v) for v in values_at(record, kind.chunk_group) if v not in (None, "")), None)
        units.setdefault((str(record.get("tenant_id") or tenant or ""), group or f"\0{position}"), []).append(record)
    chunks: list[Chunk] = []
    for group in units.values():
        group.sort(key=lambda r: _time_key(*(v for path in kind.times.get("created", ()) for v in values_at(r, path))))
        meta, _ = _own_groups(kind, group[0])
        text = "\n\n".join(body for r in group for body in _own_groups(kind, r)[1] if body)
        chunks.extend(
            _build(
                kind.name,
                str(group[0]["ref"]),
                meta,
                [text],
                _tenant(group[0], tenant),
                _common_acl([_acl(r) for r in group]),
                max_tokens,
                overlap_sentences,
            )
        )
    return chunks


def chunk_collection(
    collection: str,
    records: Iterable[dict[str, Any]],
    *,
    tenant: str | None = None,
    max_tokens: int = CHUNK_TOKENS,
    overlap_sentences: int = 1,
    kind: CollectionSpec | None = None,
) -> list[Chunk]:
    """All chunks of a collection's records: threads for messages, `chunk_record` otherwise. `kind`:
    the collection's spec, for a tenant's own kind (default: the built-in one of that name)."""
    if collection == "messages" and (kind is None or kind.builtin):
        return chunk_threads(records, tenant=tenant, max_tokens=max_tokens, overlap_sentences=overlap_sentences)
    if kind is not None and not kind.builtin and not kind.searchable:
        return []
    if kind is not None and not kind.builtin and kind.chunk_group:
        return _chunk_groups(kind, records, tenant, max_tokens, overlap_sentences)
    chunks: list[Chunk] = []
    for record in records:
        chunks.extend(
            chunk_record(
                collection, record, tenant=tenant, max_tokens=max_tokens, overlap_sentences=overlap_sentences, kind=kind
            )
        )
    return chunks


def embedding_text(chunk: Chunk) -> str:
    """What the dense model embeds for a chunk: its text, preceded by its record's title when the
    chunk does not start with it (a later chunk of a long PR or page still says what it is about)."""
    return titled_text(chunk.title, chunk.text)


def titled_text(title: str | None, text: str) -> str:
    """`text`, preceded by `title` unless it already starts with it (see `embedding_text`)."""
    title = (title or "").strip()
    if not title or text.lstrip().startswith(title):
        return text
    return f"{title}\n{text}"


def sample_organisation_texts(tenants: Iterable[str] | None = None) -> list[str]:
    """What the dense model embeds when the bundled sample organisation is ingested, in ingest's order
    (tenant, then collection): the offline text for calibration and embedding benchmarks."""
    from context_engine.sources.sample import generate  # lazy: builds the whole sample organisation

    corpus = generate()
    return [
        embedding_text(chunk)
        for tenant in (tenants or corpus)
        for collection in text_collections()
        for chunk in chunk_collection(collection, corpus[tenant].get(collection, []), tenant=tenant)
    ]


def chunk_document(
    doc_id: str,
    title: str | None,
    text: str,
    *,
    tenant: str,
    collection: str = "documents",
    acl: list[str] | None = None,
    url: str | None = None,
    max_tokens: int = CHUNK_TOKENS,
    overlap_sentences: int = 1,
) -> list[Chunk]:
    """Chunks of a plain titled document (a BEIR corpus entry, a page): "title text", chunked."""
    body = f"{title or ''} {text or ''}".strip()
    return _build(
        collection,
        str(doc_id),
        {"title": title or None, "url": url},
        [body],
        tenant,
        list(acl or []),
        max_tokens,
        overlap_sentences,
    )

"""Documents from a folder of exported pages: Markdown, Notion exports and Confluence HTML exports.

- Markdown (`.md`, `.markdown`), with optional YAML front matter between `---` lines: `title`,
  `author` (a name, `{name, email}` or a list), `date`/`created`, `updated`/`last_modified`,
  `tags` (list or comma-separated), `space`, `url`, `id`/`doc_id`. The title falls back to the first
  `# ` heading, then to the file name.
- Notion exports (Markdown or HTML): every page is `Title <32 hex id>.md|.html`, its sub-pages in a
  folder `Title <id>/`. The id becomes `doc_id` (and the enclosing page's id `parent_id`); the title
  is the page's heading, else the file name without the id. Database pages carry properties: `Key: Value` lines under the heading (Markdown)
  or a `<table class="properties">` (HTML); Created/Created time, Last edited time, Tags,
  Owner/Created by/Author are read.
- Confluence HTML exports (`<Space>/<Page-Title>_<pageid>.html` or `<pageid>.html`): the title
  comes from `<title>` ("Space : Page") or the first `<h1>`, the author and dates from the
  "Created by ..., last modified by ... on <date>" line, `doc_id` = `confluence:<pageid>`. Any
  other HTML page is read the same way.

Record: `doc_id, title, body, author{name[, email]}, created_at, updated_at, tags, space, url,
path, links, format (markdown|notion|confluence), source "docs:<root folder name>"`.
`path` is relative to the root. `url` is the page's real address (front matter `url`) and is left
out when the export does not say it: a `file://` path on the ingesting machine would be a link
nobody else can open. `space` is the front matter's, Confluence's space, or else the top folder.
`updated_at` falls back to the file's modification time. Links are the page's http(s) hrefs.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from context_engine.sources.html_text import html_page
from context_engine.sources.input_caps import FileTooLarge, parse_yaml, read_capped
from context_engine.sources.input_files import NotReadable, input_root, open_input, walk_input
from context_engine.sources.problems import ReadProblems, SourceError

MARKDOWN_SUFFIXES = (".md", ".markdown")
HTML_SUFFIXES = (".html", ".htm")
_NOTION_NAME = re.compile(r"^(.*\S)\s+([0-9a-f]{32})$")
_CONFLUENCE_ID = re.compile(r"(?:^|_)(\d{3,})$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_HEADING = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)
_URL = re.compile(r"https?://[^\s<>()\[\]{}\"'`|]+")
_NOTION_PROPERTY = re.compile(r"^([A-Z][\w ]{0,30}):[ \t]+(.+)$")
_CONFLUENCE_META = re.compile(r"Created by (.+?)(?:, last modified(?: by (.+?))?)? on (.+)$")


class DocError(ValueError):
    """One page that cannot be read (bad encoding, bad front matter): skipped and counted."""


def read_docs(root: Path, problems: ReadProblems, source: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """`documents` and `people` (authors) from every page under `root` (regular files inside it only:
    see `input_files`)."""
    given = root
    root = input_root(root)
    if not root.is_dir():
        raise SourceError(f"cannot read {given}: not a folder")
    source = source or f"docs:{root.name}"
    documents: list[dict[str, Any]] = []
    people: dict[str, dict[str, Any]] = {}

    def is_page(rel: Path) -> bool:
        return rel.suffix.lower() in MARKDOWN_SUFFIXES + HTML_SUFFIXES

    for rel in walk_input(root, problems, is_page):
        suffix = rel.suffix.lower()
        try:
            with open_input(root / rel, root) as fh:
                modified = os.fstat(fh.fileno()).st_mtime
                text = read_capped(fh).decode("utf-8-sig")
            doc = (markdown_document if suffix in MARKDOWN_SUFFIXES else html_document)(text, rel)
        except NotReadable as exc:
            problems.refuse(rel.as_posix(), exc.kind)
            continue
        except UnicodeDecodeError:
            problems.add(rel.as_posix(), "not UTF-8 text")
            continue
        except FileTooLarge as exc:
            problems.add(rel.as_posix(), str(exc))
            continue
        except OSError as exc:
            problems.add(rel.as_posix(), f"unreadable ({exc.strerror or exc})")
            continue
        except DocError as exc:
            problems.add(rel.as_posix(), str(exc))
            continue
        doc.setdefault("updated_at", _iso(datetime.fromtimestamp(modified, tz=UTC)))
        doc["source"] = source
        documents.append(doc)
        # Front matter is whatever the writer typed: an author finds a person, never joins accounts.
        author = doc.get("author") or {}
        if author.get("name"):
            person = people.setdefault(
                author.get("email") or author["name"],
                {"name": author["name"], "aliases": [], "acl": ["*"], "source": source},
            )
            if author.get("email"):
                person["email"] = author["email"]
    return {"documents": documents, "people": list(people.values())}


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------
def markdown_document(text: str, rel: Path) -> dict[str, Any]:
    meta, body = _front_matter(text)
    notion = _NOTION_NAME.match(rel.stem)
    properties = _markdown_properties(body) if notion else {}
    heading = _HEADING.search(body)
    # A file name loses characters a title may have (Notion drops ":"), so the heading comes first.
    title = meta.get("title") or (heading.group(1) if heading else None) or (notion.group(1) if notion else rel.stem)
    return _document(
        rel,
        "notion" if notion else "markdown",
        str(title),
        body.strip(),
        meta,
        properties,
        _links(body),
        notion.group(2) if notion else None,
    )


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    import yaml  # only pages with front matter need it

    try:
        meta = parse_yaml(match.group(1))  # weighed before it is built: no alias bombs
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        why = "" if isinstance(exc, yaml.MarkedYAMLError) else f": {exc}"
        raise DocError(f"bad YAML front matter{f' (line {mark.line + 2})' if mark else ''}{why}") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise DocError("front matter is not a mapping of keys to values")
    return {str(k).lower(): v for k, v in meta.items()}, text[match.end() :]


def _markdown_properties(body: str) -> dict[str, str]:
    """Notion's `Key: Value` property lines between the page heading and the first blank line after them."""
    lines = body.lstrip().split("\n")
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    properties: dict[str, str] = {}
    for line in lines:
        if not line.strip():
            if properties:
                break
            continue
        match = _NOTION_PROPERTY.match(line.strip())
        if not match:
            break
        properties[match.group(1)] = match.group(2).strip()
    return properties


def _links(text: str) -> list[str]:
    return list(dict.fromkeys(url.rstrip(".,;:!?") for url in _URL.findall(text)))


# --------------------------------------------------------------------------------------------
# HTML (Confluence, Notion)
# --------------------------------------------------------------------------------------------
def html_document(text: str, rel: Path) -> dict[str, Any]:
    page = html_page(text)
    notion = _NOTION_NAME.match(rel.stem)
    meta: dict[str, Any] = {}
    if notion:
        title = page.h1 or page.title or notion.group(1)
        fmt, doc_id = "notion", notion.group(2)
    else:
        fmt = "confluence"
        page_id = _CONFLUENCE_ID.search(rel.stem)
        doc_id = f"confluence:{page_id.group(1)}" if page_id else None
        title = page.title or page.h1 or rel.stem
        if " : " in title:  # "Engineering : Deploy runbook"
            space, title = title.split(" : ", 1)
            meta["space"] = space.strip()
        meta.update(_confluence_metadata(page.metadata_line, page.author))
    return _document(rel, fmt, title.strip(), page.text, meta, page.properties, page.links, doc_id)


def _confluence_metadata(line: str | None, author: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"author": author} if author else {}
    match = _CONFLUENCE_META.search(line or "")
    if match:
        meta.setdefault("author", match.group(1).strip())
        meta["updated" if "last modified" in match.group(0) else "created"] = match.group(3).strip()
    return meta


# --------------------------------------------------------------------------------------------
# The record
# --------------------------------------------------------------------------------------------
def _document(
    rel: Path,
    fmt: str,
    title: str,
    body: str,
    meta: dict[str, Any],
    properties: dict[str, str],
    links: list[str],
    page_id: str | None,
) -> dict[str, Any]:
    def prop(*names: str) -> str | None:
        return next((properties[n] for n in names if properties.get(n)), None)

    doc_id = meta.get("doc_id") or meta.get("id") or page_id or rel.as_posix()
    doc: dict[str, Any] = {"doc_id": str(doc_id), "title": title, "body": body}
    author = _author(meta.get("author") or prop("Owner", "Created by", "Author"))
    if author:
        doc["author"] = author
    created = _date(meta.get("created") or meta.get("date") or prop("Created", "Created time", "Date"))
    updated = _date(
        meta.get("updated")
        or meta.get("last_modified")
        or meta.get("lastmod")
        or prop("Last edited time", "Updated", "Last edited")
    )
    if created:
        doc["created_at"] = created
    if updated or created:
        doc["updated_at"] = updated or created
    doc["tags"] = _tags(meta.get("tags") if "tags" in meta else prop("Tags"))
    space = meta.get("space") or _top_folder(rel)
    if space:
        doc["space"] = str(space)
    if isinstance(meta.get("url"), str):
        doc["url"] = meta["url"]
    parent = next((m.group(2) for part in reversed(rel.parts[:-1]) if (m := _NOTION_NAME.match(part))), None)
    if fmt == "notion" and parent:
        doc["parent_id"] = parent
    doc["path"] = rel.as_posix()
    doc["links"] = links
    doc["format"] = fmt
    return doc


def _top_folder(rel: Path) -> str | None:
    if len(rel.parts) < 2:
        return None
    match = _NOTION_NAME.match(rel.parts[0])
    return match.group(1) if match else rel.parts[0]


def _author(value: Any) -> dict[str, str] | None:
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, dict):
        name, email = value.get("name"), value.get("email")
        if not name and not email:
            return None
        return {"name": str(name or email), **({"email": str(email)} if email else {})}
    if isinstance(value, str) and value.strip():
        # "Ann Lee <ann@acme.io>" is how Hugo/Jekyll sites often write it
        match = re.match(r"^(.*?)\s*<([^<>@\s]+@[^<>\s]+)>$", value.strip())
        if match:
            return {"name": match.group(1) or match.group(2), "email": match.group(2)}
        return {"name": value.strip()}
    return None


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return []
    return [str(tag).strip() for tag in value if str(tag).strip()]


def _date(value: Any) -> str | None:
    """A date from front matter (YAML gives date/datetime objects) or a property as ISO 8601 UTC;
    None for one that is no date in UTC (0001-01-01 00:00+01:00 is before year 1 there)."""
    try:
        return _date_or_overflow(value)
    except OverflowError:
        return None


def _date_or_overflow(value: Any) -> str | None:
    if isinstance(value, datetime):
        return _iso(value)
    if isinstance(value, date):
        return _iso(datetime(value.year, value.month, value.day))
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().lstrip("@")  # Notion HTML writes "@May 2, 2024 10:15 AM"
    try:
        return _iso(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        pass
    import dateparser  # slow to import; only for dates that are not ISO

    parsed = dateparser.parse(text, settings={"TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": True})
    return _iso(parsed) if parsed else None


def _iso(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

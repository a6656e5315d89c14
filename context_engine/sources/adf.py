"""Atlassian Document Format (ADF) to plain text.

Jira Cloud's REST v3 returns rich-text fields (description, comment bodies, environment) as an ADF
tree: `{"type": "doc", "version": 1, "content": [block nodes]}`, blocks (paragraph, heading,
bulletList/orderedList > listItem, codeBlock, blockquote, panel, table > tableRow > tableCell,
rule, expand, taskList, decisionList, mediaSingle) holding inline nodes (text with `marks`,
hardBreak, mention, emoji, inlineCard, status, date). The engine searches and quotes plain text, and
finds cross-links by URL, so a link keeps its href: `[the PR](https://...)` becomes
`the PR (https://...)`, a smart link (inlineCard) becomes its URL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

# Blocks end a line; everything else is inline and runs together.
_BLOCKS = frozenset(
    {
        "doc",
        "paragraph",
        "heading",
        "bulletList",
        "orderedList",
        "listItem",
        "codeBlock",
        "blockquote",
        "panel",
        "table",
        "tableRow",
        "tableCell",
        "tableHeader",
        "rule",
        "expand",
        "nestedExpand",
        "taskList",
        "taskItem",
        "decisionList",
        "decisionItem",
        "mediaSingle",
        "mediaGroup",
        "blockCard",
        "embedCard",
        "layoutSection",
        "layoutColumn",
    }
)


def is_adf(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "doc" and isinstance(value.get("content"), list)


def adf_to_text(doc: dict[str, Any]) -> str:
    lines: list[str] = []
    _block(doc, lines, prefix="")
    return "\n".join(lines).strip()


def _block(node: dict[str, Any], lines: list[str], prefix: str) -> None:
    kind = node.get("type")
    content = [c for c in node.get("content") or [] if isinstance(c, dict)]
    if kind == "rule":
        lines.append(prefix + "---")
    elif kind in ("blockCard", "embedCard"):
        url = (node.get("attrs") or {}).get("url")
        if url:
            lines.append(prefix + url)
    elif kind in ("bulletList", "orderedList"):
        start = (node.get("attrs") or {}).get("order", 1) if kind == "orderedList" else None
        for i, item in enumerate(content):
            marker = f"{start + i}. " if isinstance(start, int) else "- "
            _list_item(item, lines, prefix, marker)
    elif kind in ("taskList", "decisionList"):
        for item in content:
            done = (item.get("attrs") or {}).get("state") in ("DONE", "DECIDED")
            _list_item(item, lines, prefix, "[x] " if done else "[ ] ")
    elif kind == "tableRow":
        cells = []
        for cell in content:
            cell_lines: list[str] = []
            _block(cell, cell_lines, "")
            cells.append(" ".join(line.strip() for line in cell_lines if line.strip()))
        lines.append(prefix + " | ".join(cells))
    elif kind == "blockquote":
        for child in content:
            _block(child, lines, prefix + "> ")
    elif kind in ("expand", "nestedExpand") and (node.get("attrs") or {}).get("title"):
        lines.append(prefix + str(node["attrs"]["title"]))
        for child in content:
            _block(child, lines, prefix)
    elif kind == "heading":
        level = (node.get("attrs") or {}).get("level", 1)
        lines.append(prefix + "#" * (level if isinstance(level, int) else 1) + " " + _inline(content))
    elif kind in _BLOCKS and any(c.get("type") in _BLOCKS for c in content):
        for child in content:
            _block(child, lines, prefix)
    elif kind in _BLOCKS or kind is None:
        lines.extend(prefix + line for line in _inline(content).split("\n"))
    else:  # an inline node where a block was expected: keep its text
        lines.append(prefix + _inline([node]))


def _list_item(item: dict[str, Any], lines: list[str], prefix: str, marker: str) -> None:
    item_lines: list[str] = []
    children = [c for c in item.get("content") or [] if isinstance(c, dict)]
    if children and all(c.get("type") not in _BLOCKS for c in children):
        item_lines.append(_inline(children))  # taskItem/decisionItem hold inline nodes directly
    else:
        for child in children:
            _block(child, item_lines, "")
    item_lines = [line for line in item_lines if line.strip()] or [""]
    lines.append(prefix + marker + item_lines[0])
    lines.extend(prefix + "  " + line for line in item_lines[1:])


def _inline(nodes: list[dict[str, Any]]) -> str:
    return "".join(_inline_text(n) for n in nodes if isinstance(n, dict))


def _inline_text(node: dict[str, Any]) -> str:
    kind = node.get("type")
    attrs = node.get("attrs") or {}
    if kind == "text":
        text = str(node.get("text") or "")
        href = next(
            (
                m.get("attrs", {}).get("href")
                for m in node.get("marks") or []
                if isinstance(m, dict) and m.get("type") == "link"
            ),
            None,
        )
        return f"{text} ({href})" if href and href != text else text
    if kind == "hardBreak":
        return "\n"
    if kind == "mention":
        text = str(attrs.get("text") or "")
        return text if text.startswith("@") or not text else "@" + text
    if kind == "emoji":
        return str(attrs.get("text") or attrs.get("shortName") or "")
    if kind in ("inlineCard", "blockCard", "embedCard"):
        return str(attrs.get("url") or "")
    if kind == "status":
        return f"[{attrs.get('text', '')}]"
    if kind == "date":
        try:  # a Unix time in milliseconds, as a string
            return datetime.fromtimestamp(int(attrs["timestamp"]) / 1000, tz=UTC).strftime("%Y-%m-%d")
        except (KeyError, TypeError, ValueError, OverflowError):
            return ""
    if kind == "media":
        return str(attrs.get("alt") or "")
    return _inline([c for c in node.get("content") or [] if isinstance(c, dict)])

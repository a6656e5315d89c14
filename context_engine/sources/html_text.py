"""Plain text and page metadata from an exported HTML page (Confluence, Notion), with the standard
library's `html.parser`.

Links keep their target in the text (`the runbook (https://...)`) so cross-links survive; page
chrome is left out of the text (head, scripts, Confluence's breadcrumbs, footer and "Created by"
line, Notion's property table) but read on the side: the `<title>`, the first `<h1>`, Confluence's
author/editor line, Notion's properties.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = frozenset({"br", "hr", "img", "meta", "link", "input", "col", "area", "base", "wbr", "source", "embed"})
_BLOCK = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "header",
        "main",
        "aside",
        "ul",
        "ol",
        "li",
        "table",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "pre",
        "blockquote",
        "dl",
        "dt",
        "dd",
        "figure",
        "details",
        "summary",
        "tbody",
        "thead",
    }
)
_SKIP_TAGS = frozenset({"head", "title", "script", "style", "noscript", "template", "svg", "button"})
_SKIP_IDS = frozenset({"footer", "breadcrumb-section", "breadcrumbs", "navigation"})
_SKIP_CLASSES = frozenset({"page-metadata", "properties", "footer-body"})
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


@dataclass
class HtmlPage:
    text: str = ""
    title: str | None = None
    h1: str | None = None
    links: list[str] = field(default_factory=list)
    metadata_line: str | None = None  # Confluence: "Created by Ann Lee, last modified by Bo on Mar 02, 2024"
    author: str | None = None  # Confluence: <span class="author">
    properties: dict[str, str] = field(default_factory=dict)  # Notion: the page's property table


def html_page(html: str) -> HtmlPage:
    parser = _PageParser()
    parser.feed(html)
    parser.close()
    return parser.page()


@dataclass
class _Open:
    tag: str
    skip: bool
    capture: str | None = None  # which side buffer this element's text goes to
    href: str | None = None
    text_start: int = 0
    classes: frozenset[str] = frozenset()


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[_Open] = []
        self.parts: list[str] = []
        self.captured: dict[str, list[str]] = {}
        self.links: list[str] = []
        self.properties: dict[str, str] = {}
        self.row: dict[str, list[str]] = {}

    # -- structure ---------------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {k: v or "" for k, v in attrs}
        if tag in _VOID:
            if tag in ("br", "hr") and not self._skipping():
                self.parts.append("\n")
            elif tag == "img" and attr.get("alt") and not self._skipping():
                self.parts.append(f" {attr['alt']} ")
            return
        classes = set(attr.get("class", "").split())
        skip = self._skipping() or tag in _SKIP_TAGS or attr.get("id") in _SKIP_IDS or bool(classes & _SKIP_CLASSES)
        entry = _Open(
            tag, skip, self._capture_for(tag, attr, classes), text_start=len(self.parts), classes=frozenset(classes)
        )
        if tag == "a" and attr.get("href"):
            entry.href = attr["href"]
        if tag in _BLOCK and not skip:
            self.parts.append("\n- " if tag == "li" else "\n")
        if tag == "tr":
            self.row = {}
        if "selected-value" in classes and self.row.get("prop_td"):
            self.row["prop_td"].append(", ")  # Notion multi-select values are adjacent spans
        self.stack.append(entry)

    def _capture_for(self, tag: str, attr: dict[str, str], classes: set[str]) -> str | None:
        if tag == "title":
            return "title"
        if tag == "h1" and "h1" not in self.captured:
            return "h1"
        if "page-metadata" in classes:
            return "metadata"
        if tag == "span" and "author" in classes:
            return "author"
        if tag in ("th", "td") and self._inside_class("properties"):
            return "prop_" + tag
        return None

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        # Exports are often sloppy (unclosed <p>, <li>): close everything up to the matching tag.
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i].tag == tag:
                for entry in reversed(self.stack[i:]):
                    self._close(entry)
                del self.stack[i:]
                return

    def _close(self, entry: _Open) -> None:
        if entry.href and not entry.skip and entry.href.startswith(("http://", "https://")):
            self.links.append(entry.href)
            shown = "".join(self.parts[entry.text_start :]).strip()
            if shown != entry.href:
                self.parts.append(f" ({entry.href})")
        if entry.tag in ("td", "th") and not entry.skip:
            self.parts.append(" | ")
        if entry.tag in _BLOCK and not entry.skip:
            self.parts.append("\n")
        if entry.tag == "tr" and self.row.get("prop_th"):
            key = _clean("".join(self.row["prop_th"]))
            self.properties[key] = _clean("".join(self.row.get("prop_td", [])))

    def handle_data(self, data: str) -> None:
        for entry in self.stack:
            if entry.capture in ("prop_th", "prop_td"):
                self.row.setdefault(entry.capture, []).append(data)
            elif entry.capture:
                self.captured.setdefault(entry.capture, []).append(data)
        if not self._skipping():
            self.parts.append(data)

    def _skipping(self) -> bool:
        return bool(self.stack) and self.stack[-1].skip

    def _inside_class(self, name: str) -> bool:
        return any(name in entry.classes for entry in self.stack)

    # -- result ------------------------------------------------------------------------------------
    def page(self) -> HtmlPage:
        for entry in reversed(self.stack):  # unclosed at the end of the file
            self._close(entry)
        self.stack = []
        lines = [_clean(line).strip(" |") for line in "".join(self.parts).split("\n")]
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
        text = re.sub(r"\n+(?=- )", "\n", re.sub(r"\n- \n", "\n", text))  # list items on adjacent lines

        def captured(name: str) -> str | None:
            return _clean("".join(self.captured.get(name, []))) or None

        return HtmlPage(
            text=text,
            title=captured("title"),
            h1=captured("h1"),
            links=list(dict.fromkeys(self.links)),
            metadata_line=captured("metadata"),
            author=captured("author"),
            properties=self.properties,
        )


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text).strip()

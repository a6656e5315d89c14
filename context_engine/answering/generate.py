"""Cited answers from the structured result, the retrieved contexts and the cross-link chain (docs/ARCHITECTURE.md, the answer).

- `compose_answer(...)`: offline. The structured half's answer word for word (its numbers exactly as
  queried), then extractive snippets of the contexts with `[n]` citations, and for a "why" question
  how the linked records connect ("PR acme/infra#812 [1] fixes ENG-231 [2]. ..."). Declines plainly,
  saying what was searched, when nothing found answers the question.
- `generate_answer(llm, ...)`: grounded generation with a chat model that sees only the numbered
  sources; the structured answer is put in front of the model's text by code, so its numbers are
  verbatim; citations are re-derived from the `[n]` the model wrote (unknown numbers dropped).

One numbering for both: structured citations first (so the structured text's own `[i]` stay right),
then contexts, then linked records, each record one number (`id` is its ref). Citations are
`{"n", "id", "title", "url", "collection"}`, ordered by `n`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document

from context_engine.answering.links import RELATIONS, Link, LinkChain, LinkedRecord
from context_engine.answering.topic import mentions, topic_words
from context_engine.chat_models import guarded
from context_engine.prompts import ANSWER_SYSTEM, ANSWER_USER, NO_ANSWER
from context_engine.text import count_tokens, split_sentences

__all__ = [
    "Answer",
    "compose_answer",
    "generate_answer",
    "is_ownership_question",
    "is_why_question",
    "ownership_statements",
]

SNIPPET_TOKENS = 40  # per context in a composed answer
SOURCE_TOKENS = 300  # per source shown to the model (contexts arrive already compressed)
CHAIN_LINKS = 6  # links told in a "why" answer or shown to the model

_WHY = re.compile(
    r"\bwhy\b|\bhow come\b|\bwhat led\b|\breasons?\b|\bbackground\b|\bmotivation\b|为什么|为何|原因|"
    r"怎么回事|\bwarum\b|\bwieso\b|\bweshalb\b|\bgrund\b",
    re.I,
)
_MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_ID_MARKER = re.compile(r"\[([^\[\]\s]+)\]")  # a source cited by its id: "[acme/infra#812]"
_HEADING = re.compile(r"^\s*#{1,6}\s")
_VERBS = {
    "fixes": "fixes",
    "implements": "implements",
    "documented in": "is documented in",
    "discussed in": "was discussed in",
    "mentions": "mentions",
}


@dataclass
class Answer:
    text: str
    citations: list[dict[str, Any]] = field(default_factory=list)
    # The part of `text` whose claims come from retrieved passages, for the reflect node to check; the
    # structured part (query results) and the cross-link chain (stored links) are exact by construction.
    claims: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "citations": self.citations}


def is_why_question(question: str) -> bool:
    """Does the question ask for reasons or a history (English, Chinese, German)?"""
    return bool(_WHY.search(question))


class _Sources:
    """Citation numbers in order of first use, one per record."""

    def __init__(self) -> None:
        self.by_ref: dict[str, dict[str, Any]] = {}

    def number(self, ref: str, title: str | None, url: str | None, collection: str | None) -> int:
        if ref not in self.by_ref:
            self.by_ref[ref] = {
                "n": len(self.by_ref) + 1,
                "id": ref,
                "title": title or ref,
                "url": url,
                "collection": collection,
            }
        return self.by_ref[ref]["n"]

    def citations(self, used: set[int] | None = None) -> list[dict[str, Any]]:
        return [dict(c) for c in self.by_ref.values() if used is None or c["n"] in used]


def _structured_sources(structured: dict[str, Any] | None, sources: _Sources) -> set[int]:
    return {
        sources.number(str(cite["id"]), cite.get("title"), cite.get("url"), cite.get("collection"))
        for cite in (structured or {}).get("citations", [])
    }


def _context_number(doc: Document, sources: _Sources) -> int:
    meta = doc.metadata
    return sources.number(
        str(meta.get("doc_ref") or doc.id), meta.get("title"), meta.get("url"), meta.get("collection")
    )


def _record_number(record: LinkedRecord, sources: _Sources) -> int:
    return sources.number(record.ref, record.title, record.url, record.collection)


def _excerpt(text: str, budget: int, title: str | None = None) -> str:
    """The leading sentences of a (compressed) context within `budget` tokens; headings and the title
    (the citation already names it) left out."""
    kept: list[str] = []
    used = 0
    for sentence in split_sentences(text):
        sentence = " ".join(sentence.split())
        if _HEADING.match(sentence) or sentence == title:
            continue
        cost = count_tokens(sentence)
        if used + cost > budget:
            if not kept:  # one over-long sentence: its first words
                kept.append(" ".join(sentence.split()[:budget]) + " …")
            break
        kept.append(sentence)
        used += cost
    return " ".join(kept)


def _chain_links(chain: LinkChain | None) -> list[Link]:
    """The links worth telling: those touching the start records first, stronger relations first."""
    if chain is None:
        return []
    hop = {r.ref: r.hop for r in chain.records}
    ordered = sorted(
        chain.links, key=lambda link: (min(hop[link.source], hop[link.target]), RELATIONS.index(link.relation))
    )
    return ordered[:CHAIN_LINKS]


def _name(record: LinkedRecord, first: bool) -> str:
    """How a linked record is named in a sentence: in full the first time, then short."""
    if record.collection == "messages":
        channel = record.title.split(":", 1)[0] if record.title.startswith("#") else "Slack"
        return f"the {channel} thread of {record.date[:10]}" if first and record.date else f"the {channel} thread"
    short = {"pull_requests": f"PR {record.ref}", "commits": f"commit {record.ref[:7]}"}.get(
        record.collection, record.ref
    )
    return f"{short} “{record.title}”" if first and record.title != record.ref else short


def _chain_text(chain: LinkChain, links: list[Link], sources: _Sources) -> str:
    named: set[str] = set()
    sentences = []
    for link in links:
        parts = []
        for ref in (link.source, link.target):
            record = chain.record(ref)
            parts.append(f"{_name(record, ref not in named)} [{_record_number(record, sources)}]")
            named.add(ref)
        sentence = f"{parts[0]} {_VERBS[link.relation]} {parts[1]}."
        sentences.append(sentence[:1].upper() + sentence[1:])
    return " ".join(sentences)


def _declined(question: str, structured: dict[str, Any] | None, contexts: list[Document]) -> Answer:
    lines = []
    if structured and structured.get("answer"):
        lines.append(structured["answer"])
    queried = sorted({q["collection"] for q in (structured or {}).get("queries", []) if q.get("collection")})
    lines.append(
        f"Nothing in the sources answers this question. I searched the indexed pull requests, issues, "
        f"Slack threads, documents and commits for “{question}”"
        + (f" and queried the {', '.join(queried)} records" if queried else "")
        + (
            "; 1 passage came back and it does not answer it"
            if len(contexts) == 1
            else f"; {len(contexts)} passages came back and none of them answers it"
        )
        + ", so I give no answer."
    )
    return Answer("\n\n".join(lines), [])


def compose_answer(
    question: str,
    *,
    structured: dict[str, Any] | None = None,
    contexts: list[Document],
    chain: LinkChain | None,
    declined: bool = False,
) -> Answer:
    """An offline answer composed from the results (see the module docstring).

    `structured` is the structured half's result as `nodes.generate.structured_result` gives it
    (`answer`, `citations`, `queries`, `records`); `contexts` are the compressed hits.
    """
    if declined or not (contexts or (structured and structured.get("answer"))):
        return _declined(question, structured, contexts)
    sources = _Sources()
    parts = []
    if structured and structured.get("answer"):
        _structured_sources(structured, sources)
        parts.append(structured["answer"])
    snippets = []
    for doc in contexts:
        title = doc.metadata.get("title") or doc.metadata.get("doc_ref")
        excerpt = _excerpt(doc.page_content, SNIPPET_TOKENS, title)
        if excerpt:
            snippets.append(f"- {title}: “{excerpt}” [{_context_number(doc, sources)}]")
    if snippets:
        parts.append("From the sources:\n" + "\n".join(snippets))
    links = _chain_links(chain) if is_why_question(question) else []
    if links:
        parts.append("How they connect: " + _chain_text(chain, links, sources))
    return Answer("\n\n".join(parts), sources.citations(), claims="\n".join(snippets))


def _source_blocks(
    contexts: list[Document], chain: LinkChain | None, links: list[Link], sources: _Sources
) -> tuple[str, str]:
    """The numbered sources and the links between them, as the model sees them."""
    blocks: dict[int, list[str]] = {}
    for doc in contexts:
        n = _context_number(doc, sources)
        blocks.setdefault(n, []).append(_excerpt(doc.page_content, SOURCE_TOKENS))
    for link in links:
        for ref in (link.source, link.target):
            record = chain.record(ref)
            n = _record_number(record, sources)
            if n not in blocks:
                blocks[n] = [_excerpt(record.text, SOURCE_TOKENS // 3)]
    cite = {c["n"]: c for c in sources.citations()}
    text = "\n\n".join(
        f"[{n}] {cite[n]['title']} ({cite[n]['collection']})\n" + "\n…\n".join(parts)
        for n, parts in sorted(blocks.items())
    )
    link_lines = [
        f"[{_record_number(chain.record(link.source), sources)}] {link.relation} "
        f"[{_record_number(chain.record(link.target), sources)}]"
        for link in links
    ]
    return text or "(none)", "\n".join(link_lines) or "(none)"


def _cited(text: str, sources: _Sources) -> tuple[str, set[int]]:
    """The text with sources cited by id turned into numbers and unknown numbers removed, and the
    numbers it cites."""
    text = _ID_MARKER.sub(
        lambda m: f"[{sources.by_ref[m.group(1)]['n']}]" if m.group(1) in sources.by_ref else m.group(0), text
    )
    known = {c["n"] for c in sources.citations()}
    used: set[int] = set()

    def keep(match: re.Match) -> str:
        numbers = [int(n) for n in match.group(1).split(",") if int(n) in known]
        used.update(numbers)
        return "".join(f"[{n}]" for n in numbers)

    return _MARKER.sub(keep, text), used


def generate_answer(
    llm: Any, question: str, *, structured: dict[str, Any] | None, contexts: list[Document], chain: LinkChain | None
) -> Answer:
    """A grounded answer written by `llm` from the numbered sources only (see the module docstring).

    The model declining (it writes NO_ANSWER) gives the declined answer; a model failure or an answer
    that cites no source gives the offline composed answer instead.
    """
    sources = _Sources()
    structured_numbers = _structured_sources(structured, sources)
    links = _chain_links(chain)
    source_text, link_text = _source_blocks(contexts, chain, links, sources)
    structured_text = (structured or {}).get("answer") or "(none)"
    messages = [
        ("system", ANSWER_SYSTEM),
        (
            "human",
            ANSWER_USER.format(question=question, structured=structured_text, sources=source_text, links=link_text),
        ),
    ]
    try:
        reply = guarded(llm).invoke(messages)  # the client retried the request; the run hears of a failure
    except Exception:  # noqa: BLE001 - connection, timeout, server errors: the offline answer is still grounded
        return compose_answer(question, structured=structured, contexts=contexts, chain=chain)
    written = str(reply.content).strip()
    if written == NO_ANSWER or (written.startswith(NO_ANSWER) and not _MARKER.search(written)):
        return compose_answer(question, structured=structured, contexts=contexts, chain=chain, declined=True)
    written, used = _cited(written, sources)
    if not used:
        return compose_answer(question, structured=structured, contexts=contexts, chain=chain)
    claims = written
    if structured and structured.get("answer"):
        used |= structured_numbers
        written = structured["answer"] + "\n\n" + written
    return Answer(written, sources.citations(used), claims=claims)


# "who owns X?" is answered by what the documents say about X's owner, never by a structured guess
# (the most frequent author is not the owner).
_OWNERSHIP_QUESTION = re.compile(
    r"\bwho\s+(?:owns|maintains|is\s+(?:the\s+)?(?:owner|maintainer)\s+of|is\s+responsible\s+for|is\s+in\s+charge\s+of)\b|"
    r"\bwho(?:'s|\s+is)\s+(?:the\s+)?(?:owner|maintainer)\b|\bowner\s+of\b|谁负责|负责人是谁|谁是.{0,12}负责人|归谁管|谁在维护",
    re.I,
)
_OWNERSHIP_STATEMENT = re.compile(
    r"\bowners?\b\W{0,3}[:：]|\bowned\s+by\b|\bmaintainers?\b\W{0,3}[:：]|\bmaintained\s+by\b|"
    r"\bresponsible\s+for\b|负责人\s*[:：]|由.{1,16}负责",
    re.I,
)


def is_ownership_question(question: str) -> bool:
    return bool(_OWNERSHIP_QUESTION.search(question))


def ownership_statements(question: str, hits: list[Document]) -> list[Document]:
    """The sentences of `hits` that say who owns the question's subject: each a Document of that one
    statement, with its source's metadata. A hit counts only if it is about the subject (see
    `answering.topic.mentions`); a sentence that asks ("Who owns X these days?") says nothing."""
    subject = topic_words(_OWNERSHIP_QUESTION.sub(" ", question))
    found: list[Document] = []
    seen: set[str] = set()
    for hit in hits:
        ref = str(hit.metadata.get("doc_ref") or hit.id)
        title = str(hit.metadata.get("title") or "")
        if ref in seen or not (subject and mentions(subject, f"{title}\n{hit.page_content}")):
            continue
        statements = [
            " ".join(line.replace("*", "").split())
            for line in hit.page_content.splitlines()
            if _OWNERSHIP_STATEMENT.search(line) and not line.rstrip().endswith(("?", "？"))
        ]
        if statements:
            seen.add(ref)
            found.append(Document(page_content=" ".join(statements), id=hit.id, metadata=dict(hit.metadata)))
    return found

"""Reflection: is an answer grounded in what it cites, and if not, what to do next (docs/ARCHITECTURE.md, the answer).

`reflect(question, answer_text, citations, contexts)` checks
- every answer sentence that makes a claim against the context it cites (`[n]` -> `contexts[n-1]`,
  `citations[n-1]` names the source) with `grounding.support`; a sentence that cites nothing is
  checked against all contexts. Below `SUPPORTED` the sentence is *unsupported*;
- the question's entities (names, identifiers, numbers, quoted phrases, Latin words in Chinese
  text) against all contexts: those found in none are *missing*.
Grounded = something was answered, no unsupported sentence and nothing missing -> "accept".
Otherwise "retry" while `attempts_left`, with a rewritten query: the question with its missing
entities repeated (BM25 counts a repeated query term again, so they weigh more) or, when only
claims are unsupported or nothing was found, the question's content words alone (a wider, keyword
query). With no attempts left: "decline". With a chat model (`llm`) the model judges each claim
against its sources (prompt `prompts/grounding.py: SUPPORT_SYSTEM`); the offline check stands for a
claim the model gives no usable answer on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document
from pydantic import BaseModel

from context_engine.answering.grounding import support
from context_engine.chat_models import structured_output
from context_engine.retrievers.compress import content_terms, unit_tokens
from context_engine.text import HAN, split_sentences

__all__ = ["SUPPORTED", "Verdict", "question_entities", "reflect"]

# support() at or above this backs a claim: a sentence sharing at most half of its weighted content
# words with its source is a paraphrase too loose to trust, or a claim of its own.
SUPPORTED = 0.5

_MARKER = re.compile(r"\[(\d+)\]")
_URL = re.compile(r"https?://\S+|\([^()\s]*/[^()\s]*\)")
_QUOTED = re.compile(r"[\"“「『']([^\"”」』']{2,60})[\"”」』']")
_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[-_#/.:@][A-Za-z0-9]+)+|\b\d+(?:\.\d+)?\b")
_CAPITALISED = re.compile(r"\b[A-Z][A-Za-z0-9]*(?:\s+[A-Z][A-Za-z0-9]*)*")
_LATIN_IN_CJK = re.compile(r"[A-Za-z][A-Za-z0-9+.#-]*")
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?。，；：！？])")
_WORD = re.compile(r"[\u4e00-\u9fff]+|[^\W_][\w\-#/.]*")
# "- Title (ENG-231): “quote” [3]", a composed answer's line: the title names the source, the quote is
# the claim (the title's words and numbers are not in the passage, so kept they would fail it).
_SOURCE_NAME = re.compile(r"^\s*[-*•]\s+[^“”\n]*?:\s*(?=“)")


@dataclass
class Verdict:
    grounded: bool
    unsupported: list[str] = field(default_factory=list)  # answer sentences their sources do not back
    missing: list[str] = field(default_factory=list)  # question entities no context covers
    action: str = "accept"  # accept | retry | decline
    rewritten_query: str | None = None
    reasons: list[str] = field(default_factory=list)


class _Supported(BaseModel):
    supported: str


def question_entities(question: str) -> list[str]:
    """What a question names: quoted phrases, identifiers and numbers (ENG-231, acme/infra#812, 2024),
    capitalised words past the first word and, in Chinese text, its Latin words ("CI", "runner")."""
    found: dict[str, None] = {}
    for match in _QUOTED.finditer(question):
        found.setdefault(match.group(1).strip(), None)
    for match in _IDENTIFIER.finditer(question):
        found.setdefault(match.group(), None)
    first_word = re.match(r"\s*\S+", question)
    for match in _CAPITALISED.finditer(question):
        if first_word is None or match.start() >= first_word.end():
            found.setdefault(match.group(), None)
    if HAN.search(question):
        for match in _LATIN_IN_CJK.finditer(question):
            found.setdefault(match.group(), None)
    # Drop an entity that is part of a longer one ("Redis" inside "Redis Cluster").
    names = list(found)
    return [n for n in names if not any(n != other and n in other for other in names) and content_terms(n)]


def _keywords(question: str) -> str:
    """The question's content words as written (no stems), for a wider keyword query: Latin words
    that are not stopwords or question filler, and the content words of Chinese runs."""
    words = []
    for match in _WORD.finditer(question):
        word = match.group().rstrip(".")
        if HAN.match(word):
            words.extend(content_terms(word))
        elif content_terms(word):
            words.append(word)
    return " ".join(words)


def _text(context: Document | str) -> str:
    return context.page_content if isinstance(context, Document) else str(context)


def _claims(answer_text: str) -> list[tuple[str, list[int]]]:
    """(claim text without markers and URLs, cited numbers) of each answer sentence that says something."""
    claims = []
    for line in answer_text.splitlines():
        # A sentence without a marker is backed by the markers of its line ("- Title: “quote.” [3]").
        line_cited = [int(n) for n in _MARKER.findall(line)]
        for sentence in split_sentences(_SOURCE_NAME.sub("", line)):
            cited = [int(n) for n in _MARKER.findall(sentence)] or line_cited
            claim = _URL.sub(" ", _MARKER.sub(" ", sentence))
            claim = _SPACE_BEFORE_PUNCT.sub(r"\1", _SPACES.sub(" ", claim)).strip(" -*•\t")
            if content_terms(claim):
                claims.append((claim, cited))
    return claims


def _sources(cited: list[int], texts: list[str]) -> list[str]:
    """The contexts a claim cites (none when it cites only numbers that name no context); all of
    them when it cites nothing."""
    return [texts[n - 1] for n in cited if 1 <= n <= len(texts)] if cited else texts


def _offline_supported(claim: str, sources: list[str]) -> bool:
    return bool(sources) and max(support(claim, source) for source in sources) >= SUPPORTED


def _unsupported(claims: list[tuple[str, list[int]]], texts: list[str], llm: Any) -> list[int]:
    """Indexes of the claims their sources do not back: the model's yes/no per claim (one question
    per claim: small models judge one claim far more reliably than a numbered list), the offline
    check for a claim the model gave no usable answer on, or for all without a model."""
    sources = [_sources(cited, texts) for _, cited in claims]
    verdicts: list[bool | None] = [None] * len(claims)
    if llm is not None and texts:
        from context_engine.prompts import SUPPORT_SYSTEM

        judge = structured_output(llm, _Supported).with_retry(stop_after_attempt=2)
        prompts = [
            [("system", SUPPORT_SYSTEM), ("human", "Source:\n" + "\n\n".join(found) + f"\n\nSentence: {claim}")]
            for (claim, _), found in zip(claims, sources)
        ]
        for i, out in enumerate(judge.batch(prompts, return_exceptions=True)):
            answer = out.supported.strip().lower() if isinstance(out, _Supported) else ""
            verdicts[i] = {"yes": True, "no": False}.get(answer)
    return [
        i
        for i, (claim, _) in enumerate(claims)
        if not (verdicts[i] if verdicts[i] is not None else _offline_supported(claim, sources[i]))
    ]


def reflect(
    question: str,
    answer_text: str,
    citations: Sequence[dict],
    contexts: Sequence[Document | str],
    llm: Any = None,
    *,
    attempts_left: int = 1,
) -> Verdict:
    """Check `answer_text` against the contexts its `[n]` markers cite and the question's entities
    against all contexts; decide accept / retry (with a rewritten query) / decline."""
    texts = [_text(c) for c in contexts]
    claims = _claims(answer_text)
    unsupported_idx = _unsupported(claims, texts, llm)
    unsupported = [claims[i][0] for i in unsupported_idx]
    covered = set().union(*(unit_tokens(t) for t in texts)) if texts else set()
    missing = [e for e in question_entities(question) if not set(content_terms(e)) <= covered]
    reasons = []
    for i in unsupported_idx:
        cited = [citations[n - 1].get("id") or f"[{n}]" for n in claims[i][1] if 1 <= n <= len(citations)]
        reasons.append(f"not backed by {', '.join(map(str, cited)) or 'any context'}: {claims[i][0]}")
    if missing:
        reasons.append(f"no context mentions {', '.join(missing)}")
    if not claims:
        reasons.append("the answer states nothing to check")
    grounded = bool(claims) and not unsupported and not missing
    if grounded:
        return Verdict(True, [], [], "accept", None, reasons)
    if attempts_left <= 0:
        return Verdict(False, unsupported, missing, "decline", None, reasons)
    rewritten = f"{question} {' '.join(missing)}" if missing else _keywords(question) or question
    return Verdict(False, unsupported, missing, "retry", rewritten, reasons)

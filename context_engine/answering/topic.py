"""Topic inside structure: which of a hybrid question's structured rows are about its topic.

"what happened with the duplicate charges in payments in September?" has conditions the structured
half applies (the payments repository, September) and a topic ("duplicate charges") that no
condition says. The query returns every September PR in payments; the records about the topic must
come first, and when none is about it the answer must say so rather than present the rest.

A row is about the topic when
- its own text mentions the topic's words (half of them, and two when there are two: `_enough`), or
- the semantic search found it, and that hit mentions the topic's words, or
- it is linked (one hop, the cross-link index: "Fixes PAY-88", a PR URL in a thread, a document's
  links) to one of the semantic hits that mention the topic's words. The PR that fixed the duplicate
  charges is written in Chinese; the postmortem that names it is found by the English words.

The topic's words are the planner's full-text words when it wrote some, else the router's topic, without the words the query already filters on (a
repository, a label): those hold for every row and say nothing about which rows are on topic. When the planner read
the topic as words of the records' subject (a word condition: "threads about macros"), every row the query found
has them: the router's leftover words ("started", "drew") do not narrow them again.
Matching rows keep the query's order among themselves after the ones mentioning the most words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from context_engine.answering.route import CONTENT_CUES
from context_engine.query.schema import values_at
from context_engine.query.validate import is_word_pattern
from context_engine.text import HAN, tokenize

EVIDENCE_HITS = 5  # semantic hits about the topic whose links count

__all__ = ["TopicMatch", "filter_words", "match_topic", "mentions", "names_a_subject", "order_rows", "topic_words"]


@dataclass
class TopicMatch:
    topic: str  # the router's topic words, without those the query filters on
    words: list[str]  # the words matched (tokens: stems, jieba words)
    of: int  # records the query found
    matched: list[str] = field(default_factory=list)  # refs about the topic, best first
    why: dict[str, str] = field(default_factory=dict)  # ref -> how it was found to be about it

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "words": self.words, "of": self.of, "matched": self.matched, "why": self.why}


def filter_words(pipeline: list[dict[str, Any]]) -> set[str]:
    """The tokens of what the query's first `$match` filters on (not its `$text`): the string values
    ("acme/payments") and the fields' names ("merged_at": "merged PRs" is a condition, not a topic)."""
    match: dict[str, Any] = next((stage["$match"] for stage in pipeline[:1] if "$match" in stage), {})
    words: set[str] = set()
    stack: list[Any] = [match]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            words.update(tokenize(value))
        elif isinstance(value, dict):
            for key, inner in value.items():
                if key == "$text":
                    continue
                if not key.startswith("$"):
                    words.update(tokenize(key.replace("_", " ").replace(".", " ")))
                stack.append(inner)
        elif isinstance(value, list):
            stack.extend(value)
    return words


# Words that introduce a subject: "PRs about X", "messages mentioning X", "关于X的PR". With a content
# cue ("what happened with X", "why ...") or the planner's own full-text words, they are what makes the
# router's leftover words a topic; without them the leftovers are the question's own wording ("what
# am I working on?" is a list of the asker's records, not records about "working").
SUBJECT_MARKERS = re.compile(
    r"\babout\b|\bregarding\b|\bconcerning\b|\bmention(?:s|ed|ing)?\b|\brelated\s+to\b|\bwent\s+wrong\b|"
    r"\btitled\b|\bcontaining\b|关于|有关|涉及|提到|提及|相关",
    re.I,
)


def names_a_subject(question: str, pipeline: list[dict[str, Any]]) -> bool:
    """Does the question name a subject beside its conditions (see SUBJECT_MARKERS)?"""
    return bool(planner_text(pipeline) or SUBJECT_MARKERS.search(question) or CONTENT_CUES.search(question))


def planner_text(pipeline: list[dict[str, Any]]) -> str:
    """The `$text` words of the query's first `$match` ("" when it has none)."""
    match: dict[str, Any] = next((stage["$match"] for stage in pipeline[:1] if "$match" in stage), {})
    text = match.get("$text")
    return str(text.get("$search") or "") if isinstance(text, dict) else ""


def _reads_words(pipeline: list[dict[str, Any]]) -> bool:
    """Does the query's first `$match` hold a word condition (`validate.is_word_pattern`): the topic as words?"""
    stack: list[Any] = [next((stage["$match"] for stage in pipeline[:1] if "$match" in stage), {})]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            pattern = value.get("$regex")
            if isinstance(pattern, str) and is_word_pattern(pattern):
                return True
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def topic_words(text: str) -> list[str]:
    """The tokens a text's words are matched by (stems, jieba words; no stopwords, no lone Chinese character)."""
    return list(dict.fromkeys(w for w in tokenize(text, drop_stopwords=True) if not (len(w) == 1 and HAN.match(w))))


def mentions(words: list[str], text: str) -> bool:
    """Does `text` mention enough of `words` to be about them (see `_enough`)?"""
    return _enough(_found(words, text), words)


def _found(words: list[str], text: str) -> int:
    """How many of the topic's words the text contains."""
    present = set(tokenize(text))
    return sum(w in present for w in words)


def _enough(found: int, words: list[str]) -> bool:
    """Half of the topic's words, and two when it has two or more: "duplicate events" is not about
    "duplicate charges"; a filler word the router left in the topic ("went wrong") does not sink it."""
    return found > 0 and found >= max(min(2, len(words)), math.ceil(len(words) / 2))


def _row_text(row: dict[str, Any], text_fields: list[str]) -> str:
    return "\n".join(v for path in text_fields for v in values_at(row, path) if isinstance(v, str))


def match_topic(
    topic: str,
    rows: list[dict[str, Any]],
    text_fields: list[str],
    pipeline: list[dict[str, Any]],
    hits: Iterable[dict[str, Any]],
    linked: Callable[[list[str]], Iterable[tuple[str, str]]],
) -> TopicMatch:
    """Which `rows` (records with a `ref`) are about `topic`.

    `hits`: the semantic hits, best first (dicts with `doc_ref` and `text`); `linked(refs)`: the
    (source, target) links touching those refs, read within the asker's scope.
    """
    filtered = filter_words(pipeline)
    # The planner's own full-text words are the topic as the query reads it ("重复扣款", not the
    # router's "支付仓库里 重复扣款"); one Chinese character ("里", "的") is no topic word.
    topic = planner_text(pipeline) or topic
    words = [] if _reads_words(pipeline) else [w for w in topic_words(topic) if w not in filtered]
    records = [r for r in rows if r.get("ref")]
    shown = " ".join(w for w in topic.split() if not set(tokenize(w)) <= filtered) or topic
    result = TopicMatch(topic=shown, words=words, of=len(records))
    if not words:  # the topic is what the query filters on: every row is about it
        result.matched = [str(r["ref"]) for r in records]
        result.why = dict.fromkeys(result.matched, "the query's own conditions")
        return result
    refs = {str(r["ref"]) for r in records}
    scored: dict[str, float] = {}
    for row in records:
        found = _found(words, _row_text(row, text_fields))
        if _enough(found, words):
            ref = str(row["ref"])
            scored[ref] = found / len(words)
            result.why[ref] = f"mentions {found} of the {len(words)} topic words"
    evidence: list[str] = []
    for hit in hits:
        ref = str(hit.get("doc_ref") or "")
        if not ref or ref in evidence or not _enough(_found(words, hit.get("text", "")), words):
            continue
        evidence.append(ref)
        if ref in refs and ref not in scored:
            scored[ref] = 0.5
            result.why[ref] = "found by the search for the topic"
        if len(evidence) == EVIDENCE_HITS:
            break
    if evidence:
        for source, target in linked(evidence):
            for ref, other in ((source, target), (target, source)):
                if ref in refs and other in evidence and ref not in scored:
                    scored[ref] = 0.5
                    result.why[ref] = f"linked with {other}, which is about the topic"
    order = {str(r["ref"]): i for i, r in enumerate(records)}
    result.matched = sorted(scored, key=lambda ref: (-scored[ref], order[ref]))
    return result


def order_rows(rows: list[dict[str, Any]], match: TopicMatch) -> list[dict[str, Any]]:
    """The rows about the topic, best first (the others are left out: the answer says how many)."""
    by_ref = {str(r["ref"]): r for r in rows if r.get("ref")}
    return [by_ref[ref] for ref in match.matched]

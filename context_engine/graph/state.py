"""Typed graph state: what goes in, what flows between nodes, what comes out.

Hits (semantic, structured, fused, reranked, compressed) travel as plain dicts
(`retrievers.hits.hit_to_dict`) so the state serialises as JSON for Studio, LangServe and `ask --json`.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from typing_extensions import TypedDict


class InputState(TypedDict, total=False):
    question: str
    now: str  # ISO 8601; the clock when absent


class StructuredState(InputState, total=False):
    resolution: dict[str, Any]                 # people and time ranges found, or why resolution failed
    plan: dict[str, Any] | None                # the current {collection, pipeline, ...}
    attempts: Annotated[list[dict[str, Any]], operator.add]  # every plan tried, with its error
    error: str | None                          # the current attempt's validation or database error
    rows: list[dict[str, Any]]
    outcome: str                               # success | no_results | max_attempts | resolution_failed


class State(StructuredState, total=False):
    route: str                                 # structured | semantic | hybrid
    route_reasons: list[str]
    search_query: str                          # what the semantic half searches (rewritten on retry)
    semantic: dict[str, list[dict[str, Any]]]  # {"bm25": hits, "dense": hits} of the last retrieval
    fused: list[dict[str, Any]]                # structured rows + BM25 + dense, fused
    reranked: list[dict[str, Any]]
    contexts: list[dict[str, Any]]             # compressed, what the answer may use
    answer: str
    claims: str                                # the part of the answer drawn from passages: what reflect checks
    citations: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    records: list[dict[str, Any]]
    declined: bool                             # nothing found answers the question
    reflection: dict[str, Any]                 # the reflect node's last verdict
    reflections: int                           # retries the reflect node has asked for


class OutputState(TypedDict, total=False):
    question: str
    route: str
    answer: str
    queries: list[dict[str, Any]]
    records: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    outcome: str
    semantic: dict[str, list[dict[str, Any]]]
    fused: list[dict[str, Any]]
    declined: bool
    reflection: dict[str, Any]

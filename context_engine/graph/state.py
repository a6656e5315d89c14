"""Typed graph state: what goes in, what flows between nodes, what comes out."""

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
    route: str
    answer: str
    citations: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    records: list[dict[str, Any]]


class OutputState(TypedDict, total=False):
    question: str
    route: str
    answer: str
    queries: list[dict[str, Any]]
    records: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    outcome: str

"""What a planner produces, and what it is given.

Both planners (offline and LLM) take a `PlanningContext` and return a `Plan`: a collection and a
MongoDB aggregation pipeline, plus how confident the planner is and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from context_engine.query.identity import Mention, PeopleDirectory, Person
from context_engine.query.schema import CollectionSchema
from context_engine.query.timeexpr import TimeRange


@dataclass
class Plan:
    collection: str
    pipeline: list[dict[str, Any]]
    confidence: float = 1.0
    planner: str = "offline"
    notes: list[str] = field(default_factory=list)
    person_field: tuple[str, str] | None = None  # (path, handle kind) a result groups by, for display names
    collection_named: bool = True  # False: the question named no kind of record and the planner guessed

    def to_json(self) -> dict[str, Any]:
        return {"collection": self.collection, "pipeline": self.pipeline, "confidence": self.confidence,
                "planner": self.planner, "notes": self.notes, "collection_named": self.collection_named}


@dataclass
class Attempt:
    plan: Plan
    error: str | None = None


@dataclass
class PlanningContext:
    question: str
    now: datetime
    schemas: dict[str, CollectionSchema]
    directory: PeopleDirectory
    asker: Person | None = None
    mentions: list[Mention] = field(default_factory=list)
    times: list[TimeRange] = field(default_factory=list)
    previous: list[Attempt] = field(default_factory=list)  # failed attempts, for self-correction

"""What a planner produces, and what it is given.

Both planners (offline and LLM) take a `PlanningContext` and return a `Plan`: a collection and a
MongoDB aggregation pipeline (compiled from the plan's IR, `query/ir.py`, when it has one), plus how
confident the planner is, why, and which words of the question it understood. Plans and resolutions
travel as JSON (pipelines in MongoDB Extended JSON, `{"$date": ...}`) between graph nodes; the
functions here are the one way to and from that form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from context_engine.query.identity import Mention, PeopleDirectory, Person
from context_engine.query.ir import PlanIR, from_extended_json, to_extended_json
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
    ir: PlanIR | None = None  # what the pipeline was compiled from (None: a pipeline written directly)
    # Spans of the question, {"text", "start", "end", "how"}: what the plan consumed ("how": collection,
    # person, time, value, shape, topic, filler ...) and what it could not read (the answer ignores it).
    understood: list[dict[str, Any]] = field(default_factory=list)
    not_understood: list[dict[str, Any]] = field(default_factory=list)
    read_as: str = ""  # the question as planned, when its spelling was corrected ("numbr" -> "number")

    def to_json(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "pipeline": to_extended_json(self.pipeline),
            "confidence": self.confidence,
            "planner": self.planner,
            "notes": list(self.notes),
            "collection_named": self.collection_named,
            "person_field": list(self.person_field) if self.person_field else [],
            "ir": self.ir.to_json() if self.ir else None,
            "understood": [dict(s) for s in self.understood],
            "not_understood": [dict(s) for s in self.not_understood],
            "read_as": self.read_as,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        return cls(
            collection=data["collection"],
            pipeline=from_extended_json(data["pipeline"]),
            confidence=data.get("confidence", 1.0),
            planner=data.get("planner", "offline"),
            notes=list(data.get("notes", [])),
            collection_named=data.get("collection_named", True),
            person_field=tuple(data["person_field"]) if data.get("person_field") else None,
            ir=PlanIR.from_json(data["ir"]) if data.get("ir") else None,
            understood=list(data.get("understood") or []),
            not_understood=list(data.get("not_understood") or []),
            read_as=data.get("read_as") or "",
        )


@dataclass
class Attempt:
    plan: Plan
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"plan": self.plan.to_json(), "error": self.error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        return cls(Plan.from_json(data["plan"]), data.get("error"))


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
    draft: Plan | None = None  # the offline plan of this question, once built (the LLM planner's draft)
    context_set: Any = None  # the tenant's `query.context_sets.ContextSet` (templates, facets); None: none used
    read_as: str = ""  # the question as planned when misspelt words were read as the words meant
    # The kind of record the question is about when it names none: a follow-up's words, planned as a change
    # to the last answer's records ("only those with 5+ replies" after a question about threads)
    collection: str = ""

    def resolution_json(self) -> dict[str, Any]:
        """The people and times resolution found, as JSON: resolved once, carried to every later step."""
        return {
            "read_as": self.read_as,
            "people": [
                {
                    "text": m.text,
                    "start": m.start,
                    "end": m.end,
                    "key": m.person.key,
                    "name": m.person.name,
                    "asker": m.is_asker,
                }
                for m in self.mentions
                if m.person
            ],
            "times": [
                {
                    "text": t.text,
                    "start": t.start.isoformat() if t.start else "",
                    "end": t.end.isoformat() if t.end else "",
                    "verb": t.verb or "",
                }
                for t in self.times
            ],
        }

    @classmethod
    def from_resolution(
        cls,
        resolution: dict[str, Any],
        question: str,
        now: datetime,
        schemas: dict[str, CollectionSchema],
        directory: PeopleDirectory,
        asker: Person | None,
    ) -> PlanningContext:
        """The planning context of a resolution made earlier (`resolution_json`): no resolving again."""
        by_key = {p.key: p for p in directory.people}
        mentions = [
            Mention(m["text"], m["start"], m["end"], person=by_key[m["key"]], is_asker=m["asker"])
            for m in resolution.get("people", [])
            if m["key"] in by_key
        ]
        times = [
            TimeRange(
                datetime.fromisoformat(t["start"]) if t["start"] else None,
                datetime.fromisoformat(t["end"]) if t["end"] else None,
                t["text"],
                t["verb"] or None,
            )
            for t in resolution.get("times", [])
        ]
        # Positions are in the question as read (corrected): planning reads that text.
        return cls(
            question=resolution.get("read_as") or question,
            now=now,
            schemas=schemas,
            directory=directory,
            asker=asker,
            mentions=mentions,
            times=times,
            read_as=resolution.get("read_as") or "",
        )

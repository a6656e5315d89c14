"""A tenant's own kinds: a list that shows fields of another collection the records refer to ("the
names of teachers and the courses they teach": a teacher's `course_arrange.Course_ID` is a course's
`Course_ID`). The reference is found by rule over field names, never by a list per collection: a field
named like an id here whose last key is the other collection's key (`Course_ID` and `Course_ID`), or
the other way round (a station's `Station_ID` named by a train's `train_station.Station_ID`)."""

from __future__ import annotations

import re

from context_engine.query.ir import Join, Shape
from context_engine.query.planner.own_fields import OwnFieldStep
from context_engine.query.schema import CollectionSchema

_ID_NAME = re.compile(r"id$|_id|^id|code$", re.I)


def reference(here: CollectionSchema, there: CollectionSchema) -> tuple[str, str] | None:
    """(a path here, a path there) holding the same ids, one of them the key of its collection: the key
    of the other collection first (the records refer to it), else this collection's key referred to."""
    pairs = []
    for local, info in here.fields.items():
        leaf = local.rsplit(".", 1)[-1]
        if "object" in info.types or not _ID_NAME.search(leaf):
            continue
        for foreign, other in there.fields.items():
            if foreign.rsplit(".", 1)[-1].lower() != leaf.lower() or "object" in other.types:
                continue
            if foreign == there.kind.key:
                pairs.append((0, local.count("."), local, foreign))
            elif local == here.kind.key:
                pairs.append((1, foreign.count("."), local, foreign))
    if not pairs:
        return None
    _, _, local, foreign = min(pairs)
    return local, foreign


class OwnJoinStep(OwnFieldStep):
    """The fields of a referenced collection a list question names."""

    def own_join(self, shape: Shape) -> Join | None:
        """The join whose fields the question names and no field of the collection read; the fields
        shown as `<collection>.<path>`."""
        if self.schema.kind.builtin or shape.kind != "list":
            return None
        # Words that name a field here ("the years ... in order of year") are this collection's.
        local = [(m.start, m.end) for m in self.own_field_mentions()]
        local += [span for span, how in zip(self.used, self.how) if how == "field"]
        for name, other in self.ctx.schemas.items():
            if name == self.collection or other.kind.builtin:
                continue
            link = reference(self.schema, other)
            if link is None:
                continue
            mentions = [
                m
                for m in self.own_field_mentions(other)
                if not self._is_used((m.start, m.end))
                and not any(m.start < end and start < m.end for start, end in local)
                and m.path != link[1]
                and not _ID_NAME.search(m.path)
            ]
            if not mentions:
                continue
            for m in mentions:
                self.use((m.start, m.end), "field")
            shape.fields = list(dict.fromkeys([*shape.fields, *(f"{name}.{m.path}" for m in mentions)]))
            self.notes.append(f"joined with {name} on {link[0]} = {link[1]}")
            return Join(name, *link)
        return None

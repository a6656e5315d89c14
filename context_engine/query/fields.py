"""Field roles: which source field plays "author", "merged date", "status" in a collection.

Sources keep their own field names (GitHub's `user.login`, Jira's `fields.assignee.name`, Slack's
`user`), so the planners ask for a role and get the first candidate path the tenant's discovered
schema actually has. The roles are the collection's kind's (`schema.kind`, `kinds`): a built-in kind's
or a tenant's own spec. A person role also says which handle kind the field stores.
"""

from __future__ import annotations

import re
from typing import Any

from context_engine.kinds import CollectionSpec, Registry
from context_engine.query.schema import CollectionSchema, values_at

# Jira statuses that mean the work is finished; everything else is open.
DONE_STATUSES = ("Done", "Closed", "Resolved", "Won't Do", "Won't Fix", "Cancelled", "Canceled", "Duplicate")


def registry_of(schemas: dict[str, CollectionSchema]) -> Registry:
    """The kinds of a tenant whose schemas these are: the built-in ones and its own."""
    return Registry(s.own_kind for s in schemas.values() if s.own_kind is not None)


def role_paths(kind: CollectionSpec, role: str) -> tuple[str, ...]:
    """The candidate paths of a value role. A tenant's own kind that declares no `title` is titled by
    its first text field (its subject)."""
    paths = kind.roles().get(role, ())
    if not paths and role == "title" and kind.text:
        return kind.text[:1]
    return paths


def people_paths(kind: CollectionSpec) -> set[str]:
    """Every path that holds a person in this kind."""
    return {path for fields in kind.people_roles().values() for path, _ in fields}


def record_ref(doc: dict[str, Any], kind: CollectionSpec | None) -> str | None:
    """A record's reference, as answers cite it and links find it: its `ref`, else (a tenant's own
    kind) the spec's prefix and the value of its key ("INC-" + 42)."""
    if doc.get("ref") is not None or kind is None or kind.builtin:
        return doc.get("ref")
    key = next(iter(values_at(doc, kind.key)), None)
    return None if key in (None, "") else f"{kind.ref_prefix}{key}"


def field_for(schema: CollectionSchema | None, role: str) -> str | None:
    if schema is None:
        return None
    for path in role_paths(schema.kind, role):
        if schema.has_path(path):
            return path
    return None


def person_field_for(schema: CollectionSchema | None, role: str) -> tuple[str, str] | None:
    if schema is None:
        return None
    for path, kind in schema.kind.people_roles().get(role, ()):
        if schema.has_path(path):
            return path, kind
    return None


def handle_kind(schema: CollectionSchema | None, path: str) -> str | None:
    """The kind of handle a person field holds ("github" for `user.login`, "name" for a Jira reporter's name)."""
    if schema is None:
        return None
    return next((kind for paths in schema.kind.people_roles().values() for p, kind in paths if p == path), None)


def person_field_words(schema: CollectionSchema) -> list[tuple[str, str]]:
    """A tenant's own kind: each people role its records have, with the word its field's name says, as a
    pattern ("commander": "command…", "deployed_by": "deploy…"), so "commanded by X" and "who commanded
    the most" read that field. Built-in kinds say their roles with their own rules."""
    if schema.kind.builtin:
        return []
    found = []
    for role, paths in schema.kind.people_roles().items():
        for path, _ in paths:
            stem = re.sub(r"(?:_by|_at|ed|ee|er|or|s)$", "", path.rsplit(".", 1)[-1].lower()).replace("_", " ")
            if len(stem) >= 4 and schema.has_path(path):
                found.append((role, rf"\b({re.escape(stem)}\w*)"))
    return found

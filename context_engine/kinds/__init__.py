"""The registry of collection kinds: the built-in specs and a tenant's own (`kinds.spec`).

`Registry` is what every module asks: the kinds a tenant has, in a fixed order (built-in first, then
the tenant's own by name), each a `CollectionSpec`. A tenant's own specs are stored with its records
(the store's `collection_kinds`); the built-in ones are code (`kinds.builtin`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from context_engine.kinds.builtin import BUILTIN
from context_engine.kinds.spec import CollectionSpec, PersonField, SpecError, check_name

__all__ = [
    "BUILTIN",
    "BUILTIN_NAMES",
    "RESERVED",
    "CollectionSpec",
    "PersonField",
    "Registry",
    "SpecError",
    "builtin_registry",
    "check_name",
]

BUILTIN_NAMES: tuple[str, ...] = tuple(BUILTIN)
RESERVED: frozenset[str] = frozenset({"collection_kinds", "index_vectors", "index_revisions", "store_meta"})
"""Names no tenant's collection may take: the engine's own collections."""


class Registry:
    """The kinds one tenant has: built-in ones and its own."""

    def __init__(self, own: Iterable[CollectionSpec] = ()):
        self._specs: dict[str, CollectionSpec] = dict(BUILTIN)
        for spec in sorted(own, key=lambda s: s.name):
            if spec.name in BUILTIN or spec.name in RESERVED:
                raise SpecError(f"collection name {spec.name!r} is taken by the engine; choose another")
            self._specs[spec.name] = spec

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[CollectionSpec]:
        return iter(self._specs.values())

    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def get(self, name: str) -> CollectionSpec | None:
        return self._specs.get(name)

    def own(self) -> list[CollectionSpec]:
        """The tenant's own kinds (not built-in)."""
        return [s for s in self._specs.values() if not s.builtin]


def builtin_registry() -> Registry:
    return Registry()

"""What the engine knows about one kind of record: a collection spec.

A spec is data. The built-in kinds (`kinds.builtin`) are specs, and so is every collection a team
ingests from its own files or MongoDB (`ingest json`, `ingest mongodb`), stored per tenant beside the
records (`kinds.registry`). Every module that needs to know something about a kind — which field is
the author, which dates there are, which text to index and link, the words that name it — reads it
here, so adding a kind is one spec plus its connector.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

# A collection's name as MongoDB and the plan language see it: letters, digits and '_', starting with
# a letter (TEND's "Allergy_Type" and "CONTESTANTS" are names; "system.x", "a.b" and "$x" are not).
NAME_RULE = "1-64 characters: letters, digits or '_', starting with a letter"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
# A field path: dotted keys, none hidden, none an operator.
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_ -]{0,63}(?:\.[A-Za-z_][A-Za-z0-9_ -]{0,63}){0,7}")
HANDLE_KINDS = ("github", "slack_id", "jira", "email", "name")
"""What a people field stores: a GitHub login, a Slack user id, a Jira user, an e-mail address, a name."""
_HIDDEN = ("_id", "tenant_id", "acl")


class SpecError(ValueError):
    """A collection spec that cannot be used; the message is one line for the user."""


def check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise SpecError(f"collection name {name!r} is not allowed ({NAME_RULE})")
    return name


def check_path(path: object, what: str) -> str:
    if not isinstance(path, str) or not _PATH.fullmatch(path) or path.split(".")[0] in _HIDDEN:
        raise SpecError(f"{what}: {path!r} is not a field path (dotted keys of letters, digits, '_', '-' or spaces)")
    return path


@dataclass(frozen=True)
class PersonField:
    """A field that holds a person: where, and which kind of handle it stores."""

    path: str
    handle: str = "name"


@dataclass(frozen=True)
class CollectionSpec:
    """One kind of record.

    Roles are the plan language's names for fields (`author`, `created`, `label`): each maps to the
    candidate paths in preference order, the first one a tenant's discovered schema has being used
    (a Jira issue and a GitHub issue keep their reporter in different fields).
    """

    name: str
    noun: str  # one record, as an answer says it: "pull request", "incident"
    plural: str = ""  # several: "pull requests", "incidents" (default: noun + "s")
    key: str = "ref"  # the field whose value is the record's reference
    ref_prefix: str = ""  # a generic record's ref is prefix + key value ("INC-" + "42")
    words: tuple[str, ...] = ()  # regular expressions (English, matched case-insensitively) naming it
    words_zh: tuple[str, ...] = ()  # Chinese words naming it
    people: dict[str, tuple[PersonField, ...]] = field(default_factory=dict)  # role -> fields
    times: dict[str, tuple[str, ...]] = field(default_factory=dict)  # date role -> paths
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)  # other role -> paths
    text: tuple[str, ...] = ()  # free text, first = the subject (title); indexed for search
    link_text: tuple[str, ...] | None = None  # text that can reference other records (None: `text`)
    references: dict[str, str] = field(default_factory=dict)  # field -> collection its values are refs of
    chunk_group: str | None = None  # records sharing this field's value are one unit of search
    labels: dict[str, str] = field(default_factory=dict)  # path -> how an answer labels it
    searchable: bool = True  # its text goes to the semantic index
    builtin: bool = False  # one of the engine's own kinds (a connector writes it)

    def __post_init__(self) -> None:
        check_name(self.name)
        if not self.plural:
            object.__setattr__(self, "plural", self.noun + "s")
        if not self.words and not self.builtin:  # "incident", "incidents", "gas station(s)" for gas_station
            names = dict.fromkeys(w.lower().replace("_", " ") for w in (self.noun, self.plural, self.name))
            object.__setattr__(self, "words", tuple(rf"\b{re.escape(w)}\b" for w in names))
        if self.link_text is None:
            object.__setattr__(self, "link_text", self.text)
        for role, people in self.people.items():
            for person in people:
                check_path(person.path, f"people field of role {role!r}")
                if person.handle not in HANDLE_KINDS:
                    raise SpecError(
                        f"people field {person.path!r}: handle kind {person.handle!r} is not one of "
                        f"{', '.join(HANDLE_KINDS)}"
                    )
        for what, table in (("time", self.times), ("value", self.values)):
            for role, paths in table.items():
                for path in paths:
                    check_path(path, f"{what} field of role {role!r}")
        for path in self.text + (self.link_text or ()) + tuple(self.references) + tuple(self.labels):
            check_path(path, "field")
        for target in self.references.values():
            check_name(target)
        if self.chunk_group is not None:
            check_path(self.chunk_group, "chunk group")
        if not self.builtin:
            check_path(self.key, "key")

    def roles(self) -> dict[str, tuple[str, ...]]:
        """Every value role (dates included) -> its candidate paths."""
        return {**self.times, **self.values}

    def people_roles(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """Role -> (path, handle kind) candidates, as the planners read them."""
        return {role: tuple((p.path, p.handle) for p in fields) for role, fields in self.people.items()}

    def pattern(self) -> str:
        """One regular expression for the words that name this kind (English words with ASCII word
        boundaries; Chinese words anywhere)."""
        return "|".join([*self.words, *self.words_zh])

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["people"] = {role: [asdict(p) for p in people] for role, people in self.people.items()}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CollectionSpec:
        if not isinstance(data, dict):
            raise SpecError("a collection spec is a JSON object")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise SpecError(
                f"unknown collection spec field(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        try:
            kwargs = dict(data)
            kwargs["people"] = {
                role: tuple(PersonField(**p) if isinstance(p, dict) else PersonField(p) for p in people)
                for role, people in (data.get("people") or {}).items()
            }
            for name in ("times", "values"):
                kwargs[name] = {
                    role: tuple([paths] if isinstance(paths, str) else paths)
                    for role, paths in (data.get(name) or {}).items()
                }
            for name in ("words", "words_zh", "text", "link_text"):
                if name in data:
                    kwargs[name] = tuple([data[name]] if isinstance(data[name], str) else data[name])
            return cls(**kwargs)
        except TypeError as exc:
            raise SpecError(f"collection spec: {exc}") from None

"""Context sets: a tenant's own solved questions (templates), named filters (facets) and value-search
settings, as one editable file in the data dir.

    <data-dir>/context_sets/<tenant>.json | .yaml     (else the shipped defaults, `context_sets.json`)

A **template** is a parameterised question and the plan that answers it:

    {"name": "prs-merged-by", "question": "PRs {who} merged {when}",
     "params": {"who": "person", "when": "time"},
     "plan": {"collection": "pull_requests",
              "pipeline": [{"$match": {"user.login": "{{who.github}}", "merged_at": {"$gte": "{{when.start}}",
                                                                                 "$lt": "{{when.end}}"}}}]},
     "example": {"question": "PRs Rashid merged last week", "values": {"who": "rsh-dev", ...}}}

A placeholder is a whole JSON string `{{param}}` or `{{param.part}}` (a person's handle kind, a
time's `start`/`end`), so a bound value keeps its type (a date stays a date). A time bound open at
one end drops the condition that names the missing end ("before 2021" has no `$gte`). The plan is
`{collection, pipeline}` today; a typed IR form (`{"ir": ...}`) is a later key of the same object.

A **facet** is a `$match` fragment of one collection and the phrases (English, Chinese) that name
it ("good first issues", "not planned").

Every template and facet is validated on load: instantiated with typed sample values and run
through `validate.validate_pipeline` against the tenant's schema. The tenant's own file must be
valid whole (a bad one is a `ContextSetError`: one line naming the template); a shipped default
that does not fit this tenant's data (a Jira-shaped template on GitHub issues) is inactive.
The file is weighed before it is parsed (size cap; YAML aliases counted at full size).
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, utils

from context_engine.config import check_tenant
from context_engine.query.plan import from_extended_json, to_extended_json
from context_engine.query.schema import CollectionSchema
from context_engine.query.validate import ValidationPolicy, validate_pipeline
from context_engine.sources.input_caps import parse_yaml
from context_engine.store.regular_files import read_regular_text

MAX_FILE_BYTES = 512_000  # a context set is hand-sized: hundreds of templates, not a data dump
MAX_TEMPLATES = 1_000
MAX_TEXT = 500  # characters of a question, a name or a phrase
PARAM_TYPES = ("person", "time", "label", "repo", "channel", "value", "number", "text")
# What a placeholder may read of each type's bound value.
PARAM_PARTS = {"person": ("github", "jira", "slack_id", "slack_handle", "email", "name"), "time": ("start", "end")}
VALUE_KINDS = ("person", "label", "milestone", "repo", "channel", "project", "component", "status", "state_reason")
FILE_KEYS = {"version", "match_threshold", "value_search", "templates", "facets"}
TEMPLATE_KEYS = {"name", "question", "params", "plan", "example", "source"}
FACET_KEYS = {"name", "collection", "match", "phrases"}
_PLACEHOLDER = re.compile(r"^\{\{([A-Za-z_][A-Za-z0-9_]*)(?:\.([a-z_]+))?\}\}$")
_QUESTION_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SAMPLE_TIME = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC))


class ContextSetError(ValueError):
    """A context set that cannot be used: one line naming the file, the template or the facet."""


@dataclass(frozen=True)
class Slot:
    """A value found in a question: its span and what it stands for (a `Person`, a `TimeRange`, a
    number, a stored value's string)."""

    kind: str
    start: int
    end: int
    value: Any


@dataclass
class Template:
    name: str
    question: str
    params: dict[str, str]
    collection: str
    pipeline: list[dict[str, Any]]  # Extended JSON, with placeholders
    example: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # where it came from: "shipped", "feedback #12", "cli"

    def to_json(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "question": self.question,
            "params": dict(self.params),
            "plan": {"collection": self.collection, "pipeline": self.pipeline},
        }
        if self.example:
            out["example"] = self.example
        if self.source:
            out["source"] = self.source
        return out

    def masked(self) -> str:
        return _QUESTION_PARAM.sub(lambda m: _slot_token(self.params.get(m.group(1), "value")), self.question)

    def instantiate(self, bindings: dict[str, Any]) -> list[dict[str, Any]]:
        """The pipeline with every placeholder replaced by its bound value (Python values: datetimes)."""
        return _substitute(from_extended_json(copy.deepcopy(self.pipeline)), self.params, bindings)

    def example_bindings(self) -> dict[str, Any]:
        """The example's values as bindings (a person as a handle map, a time as a range)."""
        values = self.example.get("values") or {}
        return {name: _binding_from_json(self.params[name], values[name]) for name in self.params if name in values}


@dataclass
class Facet:
    name: str
    collection: str
    match: dict[str, Any]
    phrases: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "collection": self.collection, "match": self.match, "phrases": list(self.phrases)}

    def spans(self, question: str) -> list[tuple[int, int]]:
        """Where the question says the phrases, longest phrase first ("closed as not planned" before
        "not planned"): whole words for Latin script, the characters for Chinese."""
        found = []
        for phrase in sorted(self.phrases, key=len, reverse=True):
            if phrase.isascii():
                found += [m.span() for m in re.finditer(rf"(?<!\w){re.escape(phrase)}(?!\w)", question, re.I)]
            else:
                found += [(m.start(), m.end()) for m in re.finditer(re.escape(phrase), question)]
        return found


@dataclass
class ContextSet:
    templates: list[Template] = field(default_factory=list)
    facets: list[Facet] = field(default_factory=list)
    value_search: dict[str, Any] = field(default_factory=lambda: {"fuzzy_threshold": 85, "kinds": list(VALUE_KINDS)})
    match_threshold: float = 85.0
    inactive: list[str] = field(default_factory=list)  # shipped templates/facets that do not fit this tenant's data

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 2,
            "match_threshold": self.match_threshold,
            "value_search": self.value_search,
            "templates": [t.to_json() for t in self.templates],
            "facets": [f.to_json() for f in self.facets],
        }

    def template(self, name: str) -> Template | None:
        return next((t for t in self.templates if t.name == name), None)

    def match_template(self, question: str, values: list[Slot]) -> tuple[Template, dict[str, Any], float] | None:
        """The template whose masked question is closest to this one's (`matching_templates`' first)."""
        return next(iter(self.matching_templates(question, values)), None)

    def matching_templates(self, question: str, values: list[Slot]) -> list[tuple[Template, dict[str, Any], float]]:
        """The templates whose masked question is close to this one's, with their parameters bound to
        the question's values, when the score reaches `match_threshold`; best first, and of equal
        scores the one saying more words first (a question matching "PRs {who} merged {when}" and "the
        three oldest PRs {who} merged {when}" alike says what the longer one does). Every value of the
        question must be taken by a parameter and every parameter bound (by type, in order of
        appearance): a template that would drop a person or a time the question names is no match."""
        masked = mask(question, values)
        found = sorted(values, key=lambda s: s.start)
        scored = []
        for template in self.templates:
            bindings = _bind(template, found)
            if bindings is None:
                continue
            score = min(
                float(fuzz.token_set_ratio(masked, template.masked(), processor=utils.default_process)),
                _coverage(template.masked(), masked),
            )
            if score >= self.match_threshold:
                scored.append((template, bindings, score))
        return sorted(scored, key=lambda m: (-m[2], -len(utils.default_process(m[0].masked()).split())))

    def similar_templates(self, question: str, k: int = 3) -> list[tuple[Template, float]]:
        """The k templates most like the question (its words against each template's question and
        example question), best first: examples for the model's prompt."""
        scored = []
        for template in self.templates:
            texts = [template.masked(), str(template.example.get("question") or "")]
            score = max(fuzz.token_set_ratio(question, t, processor=utils.default_process) for t in texts if t)
            scored.append((template, float(score)))
        return sorted(scored, key=lambda pair: (-pair[1], pair[0].name))[:k]

    def matching_facets(self, question: str, collection: str | None = None) -> list[Facet]:
        """The facets one of whose phrases the question says (whole words for Latin script, the
        characters for Chinese), of one collection when given."""
        return [f for f in self.facets if (collection is None or f.collection == collection) and f.spans(question)]


def _coverage(template: str, question: str) -> float:
    """The share (0-100) of the template's words that the question says, each up to an inflection
    ("merge" for "merged"). token_set_ratio alone scores a question whose words are a subset of the
    template's as a near-perfect match: "open PRs by Rashid" against "open PRs waiting for {who}
    review" would drop "waiting for review" and answer with the wrong filter."""
    wanted = utils.default_process(template).split()
    said = utils.default_process(question).split()
    if not wanted:
        return 100.0
    covered = sum(1 for word in wanted if any(same_word(word, other) for other in said))
    return 100.0 * covered / len(wanted)


def same_word(a: str, b: str) -> bool:
    """One word up to an inflection ("merge", "merged"; "label", "labelled"): the same word, or two
    sharing their first four letters and close overall. A short word is itself only: "any" is not "many"."""
    return a == b or (len(a) >= 4 and len(b) >= 4 and a[:4] == b[:4] and fuzz.ratio(a, b) >= 80)


def _slot_token(kind: str) -> str:
    return f"slot{kind}"  # one alphanumeric token: survives rapidfuzz's processing as a word


def mask(question: str, values: list[Slot]) -> str:
    """The question with each value's span replaced by its kind's token ("PRs slotperson merged slottime")."""
    out, at = [], 0
    for slot in sorted(values, key=lambda s: s.start):
        if slot.start < at:
            continue  # overlapping spans: the first one wins
        out += [question[at : slot.start], f" {_slot_token(slot.kind)} "]
        at = slot.end
    out.append(question[at:])
    return re.sub(r"\s+", " ", "".join(out)).strip()


_NUMBER = re.compile(r"(?<![\w.])\d{1,6}(?![\w.])")


def slots_for(
    question: str, mentions: Sequence[Any] = (), times: Sequence[Any] = (), values: Sequence[Slot] = ()
) -> list[Slot]:
    """The slots of a question from what resolution found: people (`Mention`s, with spans), times
    (`TimeRange`s, located by their text), bare numbers, and any value slots already found (e.g. from
    the value index). A number inside a time or a person's span belongs to that span."""
    slots = [Slot("person", m.start, m.end, m.person) for m in mentions if getattr(m, "person", None) is not None]
    at = 0
    for rng in times:
        start = question.find(rng.text, at) if rng.text else -1
        if start >= 0:
            slots.append(Slot("time", start, start + len(rng.text), rng))
            at = start + len(rng.text)
    slots += list(values)
    taken = [(s.start, s.end) for s in slots]
    for m in _NUMBER.finditer(question):
        if not any(a <= m.start() < b for a, b in taken):
            slots.append(Slot("number", m.start(), m.end(), int(m.group())))
    return sorted(slots, key=lambda s: s.start)


def _bind(template: Template, slots: list[Slot]) -> dict[str, Any] | None:
    order = [m.group(1) for m in _QUESTION_PARAM.finditer(template.question) if m.group(1) in template.params]
    if sorted(template.params[name] for name in order) != sorted(s.kind for s in slots):
        return None
    bindings: dict[str, Any] = {}
    remaining = list(slots)
    for name in order:
        slot = next(s for s in remaining if s.kind == template.params[name])
        remaining.remove(slot)
        bindings[name] = slot.value
    return bindings


# -- placeholders ---------------------------------------------------------------------------------

_MISSING = object()


def _part(kind: str, value: Any, part: str | None) -> Any:
    """What `{{param.part}}` reads of a bound value; _MISSING when the value has no such part."""
    if kind == "person":
        if isinstance(value, dict):  # a person given as JSON: {"github": "rsh-dev", ...} or a plain handle
            got = value.get(part or "github")
        elif isinstance(value, str):
            got = value
        else:
            got = value.handle(part or "github")
        return _MISSING if got is None else got
    if kind == "time":
        bound = getattr(value, part or "start", None)
        return _MISSING if bound is None else bound
    return value


def _substitute(node: Any, params: dict[str, str], bindings: dict[str, Any]) -> Any:
    if isinstance(node, str):
        m = _PLACEHOLDER.match(node)
        if not m:
            return node
        return _part(params[m.group(1)], bindings[m.group(1)], m.group(2))
    if isinstance(node, list):
        return [v for v in (_substitute(v, params, bindings) for v in node) if v is not _MISSING]
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            got = _substitute(value, params, bindings)
            if got is not _MISSING:
                out[key] = got
        # An open-ended time drops its missing bound's condition, and a condition left with no bound at all.
        return _MISSING if node and not out else out
    return node


def _placeholders(node: Any) -> Iterator[tuple[str, str | None]]:
    if isinstance(node, str):
        m = _PLACEHOLDER.match(node)
        if m:
            yield m.group(1), m.group(2)
        elif "{{" in node:
            yield node, "malformed"
    elif isinstance(node, list):
        for value in node:
            yield from _placeholders(value)
    elif isinstance(node, dict):
        for value in node.values():
            yield from _placeholders(value)


@dataclass(frozen=True)
class _SampleTime:
    start: datetime
    end: datetime


def _sample(kind: str) -> Any:
    """A typed sample value per parameter type, to validate a template before any question binds it."""
    if kind == "person":
        return dict.fromkeys(PARAM_PARTS["person"], "sample")
    if kind == "time":
        return _SampleTime(*_SAMPLE_TIME)
    if kind == "number":
        return 5
    return "sample"


def _binding_from_json(kind: str, value: Any) -> Any:
    if kind == "time" and isinstance(value, dict):
        start, end = (
            from_extended_json({"$date": value[k]}) if isinstance(value.get(k), str) else None for k in ("start", "end")
        )
        return _SampleTime(start, end)  # type: ignore[arg-type]
    return value


# -- reading and checking -------------------------------------------------------------------------


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        raise ContextSetError(f"{what} must be a non-empty string of at most {MAX_TEXT} characters")
    return value


def _keys(item: Any, allowed: set[str], what: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ContextSetError(f"{what} must be an object")
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise ContextSetError(
            f"{what} has unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(allowed))}"
        )
    return item


def template_from_json(item: Any, index: int = 0) -> Template:
    """A template from its JSON form; ContextSetError (naming it) for anything malformed."""
    label = (
        f"template {item.get('name')!r}"
        if isinstance(item, dict) and isinstance(item.get("name"), str)
        else f"template #{index + 1}"
    )
    item = _keys(item, TEMPLATE_KEYS, label)
    name = _text(item.get("name"), f"{label}: name")
    if not _NAME.match(name):
        raise ContextSetError(
            f"{label}: a name is 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
        )
    question = _text(item.get("question"), f"{label}: question")
    params = item.get("params") or {}
    if not isinstance(params, dict) or any(not isinstance(k, str) or v not in PARAM_TYPES for k, v in params.items()):
        raise ContextSetError(f"{label}: params must map names to one of {', '.join(PARAM_TYPES)}")
    plan = _keys(item.get("plan"), {"collection", "pipeline"}, f"{label}: plan")
    collection, pipeline = plan.get("collection"), plan.get("pipeline")
    if not isinstance(collection, str) or not isinstance(pipeline, list):
        raise ContextSetError(f"{label}: plan needs a collection (string) and a pipeline (list of stages)")
    named = [m.group(1) for m in _QUESTION_PARAM.finditer(question)]
    for param in params:
        if param not in named:
            raise ContextSetError(f"{label}: parameter {param!r} is not in the question (write it as {{{param}}})")
    for param in named:
        if param not in params:
            raise ContextSetError(f"{label}: the question names {{{param}}}, which is not a parameter")
    used = set()
    for param, part in _placeholders(pipeline):
        if part == "malformed":
            raise ContextSetError(
                f"{label}: {param[:60]!r} is not a placeholder; write {{{{name}}}} or {{{{name.part}}}} "
                "as a whole string"
            )
        if param not in params:
            raise ContextSetError(f"{label}: the plan uses {{{{{param}}}}}, which is not a parameter")
        allowed = PARAM_PARTS.get(params[param], ())
        if part is not None and part not in allowed:
            raise ContextSetError(
                f"{label}: {{{{{param}.{part}}}}}: a {params[param]} has "
                + (f"parts {', '.join(allowed)}" if allowed else "no parts")
            )
        used.add(param)
    for param in params:
        if param not in used:
            raise ContextSetError(f"{label}: parameter {param!r} is not used by the plan")
    example = item.get("example") or {}
    if not isinstance(example, dict) or set(example) - {"question", "values"}:
        raise ContextSetError(f'{label}: example must be {{"question": ..., "values": {{...}}}}')
    source = item.get("source") or ""
    return Template(name, question, dict(params), collection, pipeline, example, str(source)[:MAX_TEXT])


def facet_from_json(item: Any, index: int = 0) -> Facet:
    label = (
        f"facet {item.get('name')!r}"
        if isinstance(item, dict) and isinstance(item.get("name"), str)
        else f"facet #{index + 1}"
    )
    item = _keys(item, FACET_KEYS, label)
    name = _text(item.get("name"), f"{label}: name")
    collection = _text(item.get("collection"), f"{label}: collection")
    match = item.get("match")
    if not isinstance(match, dict) or not match:
        raise ContextSetError(f"{label}: match must be a non-empty $match object")
    phrases = item.get("phrases") or []
    if not isinstance(phrases, list) or not phrases:
        raise ContextSetError(f"{label}: phrases must be a non-empty list of what people call it")
    return Facet(name, collection, match, [_text(p, f"{label}: a phrase") for p in phrases])


def context_set_from_json(data: Any) -> ContextSet:
    """A context set from its JSON form, checked for shape (not yet against a schema)."""
    data = _keys(data, FILE_KEYS, "the context set")
    raw_templates, raw_facets = data.get("templates") or [], data.get("facets") or []
    if not isinstance(raw_templates, list) or not isinstance(raw_facets, list):
        raise ContextSetError("templates and facets must be lists")
    if len(raw_templates) > MAX_TEMPLATES or len(raw_facets) > MAX_TEMPLATES:
        raise ContextSetError(f"at most {MAX_TEMPLATES} templates and {MAX_TEMPLATES} facets")
    templates = [template_from_json(t, i) for i, t in enumerate(raw_templates)]
    seen: set[str] = set()
    for t in templates:
        if t.name in seen:
            raise ContextSetError(f"template {t.name!r} is defined twice")
        seen.add(t.name)
    facets = [facet_from_json(f, i) for i, f in enumerate(raw_facets)]
    search = _keys(data.get("value_search") or {}, {"fuzzy_threshold", "kinds"}, "value_search")
    threshold = search.get("fuzzy_threshold", 85)
    kinds = search.get("kinds", list(VALUE_KINDS))
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 100:
        raise ContextSetError("value_search.fuzzy_threshold must be a number from 0 to 100")
    if not isinstance(kinds, list) or any(k not in VALUE_KINDS for k in kinds):
        raise ContextSetError(f"value_search.kinds must be a list of {', '.join(VALUE_KINDS)}")
    match_threshold = data.get("match_threshold", 85)
    if (
        isinstance(match_threshold, bool)
        or not isinstance(match_threshold, (int, float))
        or not 0 < match_threshold <= 100
    ):
        raise ContextSetError("match_threshold must be a number above 0 and at most 100")
    return ContextSet(templates, facets, {"fuzzy_threshold": threshold, "kinds": list(kinds)}, float(match_threshold))


def template_errors(
    template: Template, schemas: dict[str, CollectionSchema], policy: ValidationPolicy = ValidationPolicy()
) -> list[str]:
    """Why the template cannot run on this tenant's data (empty: it can), with sample values bound."""
    schema = schemas.get(template.collection)
    if schema is None:
        return [
            f"collection {template.collection!r} has no records here (known: {', '.join(sorted(schemas)) or 'none'})"
        ]
    pipeline = template.instantiate({name: _sample(kind) for name, kind in template.params.items()})
    return validate_pipeline(pipeline, schema, policy)


def facet_errors(
    facet: Facet, schemas: dict[str, CollectionSchema], policy: ValidationPolicy = ValidationPolicy()
) -> list[str]:
    schema = schemas.get(facet.collection)
    if schema is None:
        return [f"collection {facet.collection!r} has no records here"]
    return validate_pipeline([{"$match": from_extended_json(facet.match)}], schema, policy)


def checked(
    cs: ContextSet,
    schemas: dict[str, CollectionSchema],
    *,
    shipped: bool,
    policy: ValidationPolicy = ValidationPolicy(),
) -> ContextSet:
    """The context set with every template and facet validated against the tenant's schemas.
    The tenant's own file: the first invalid one is a ContextSetError. Shipped defaults: those that do
    not fit this tenant's data are set aside (named in `inactive`)."""
    keep_t, keep_f, inactive = [], [], []
    for template in cs.templates:
        errors = template_errors(template, schemas, policy)
        if errors and not shipped:
            raise ContextSetError(f"template {template.name!r}: {errors[0]}")
        (inactive.append(f"template {template.name}") if errors else keep_t.append(template))
    for facet in cs.facets:
        errors = facet_errors(facet, schemas, policy)
        if errors and not shipped:
            raise ContextSetError(f"facet {facet.name!r}: {errors[0]}")
        (inactive.append(f"facet {facet.name}") if errors else keep_f.append(facet))
    return ContextSet(keep_t, keep_f, cs.value_search, cs.match_threshold, inactive)


def parse_text(text: str, suffix: str) -> ContextSet:
    """A context set from the text of a `.json` or `.yaml` file, weighed before it is built."""
    if len(text.encode("utf-8", "replace")) > MAX_FILE_BYTES:
        raise ContextSetError(f"the context set is over {MAX_FILE_BYTES:,} bytes")
    try:
        if suffix == ".json":
            data = json.loads(text)
        else:
            import yaml

            try:
                data = parse_yaml(text)
            except yaml.YAMLError as exc:
                raise ContextSetError(f"not valid YAML: {str(exc).splitlines()[0]}") from None
    except json.JSONDecodeError as exc:
        raise ContextSetError(f"not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise ContextSetError("nested too deeply") from None
    return context_set_from_json(data)


def shipped() -> ContextSet:
    return context_set_from_json(
        json.loads(resources.files("context_engine.query").joinpath("context_sets.json").read_text(encoding="utf-8"))
    )


def tenant_file(data_dir: Path, tenant: str) -> Path | None:
    """The tenant's own context set file, when it has one (JSON first)."""
    folder = Path(data_dir) / "context_sets"
    for suffix in (".json", ".yaml", ".yml"):
        path = folder / f"{check_tenant(tenant)}{suffix}"
        if path.exists() or path.is_symlink():
            return path
    return None


def read_file(path: Path) -> ContextSet:
    """The tenant's context set file in the data dir: its own regular file, never one a link points to
    (whoever can write the data dir could otherwise make the planner read any file the engine can)."""
    if path.is_symlink():
        raise ContextSetError(
            f"{path.name}: a symbolic link; a tenant's context set is a file of its own in the data dir"
        )
    try:
        if path.lstat().st_size > MAX_FILE_BYTES:
            raise ContextSetError(f"{path.name}: over {MAX_FILE_BYTES:,} bytes")
        text = read_regular_text(path)
    except UnicodeDecodeError:
        raise ContextSetError(f"{path.name}: not UTF-8 text") from None
    except OSError as exc:
        raise ContextSetError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    try:
        return parse_text(text, path.suffix)
    except ContextSetError as exc:
        raise ContextSetError(f"{path.name}: {exc}") from None


def load(
    data_dir: Path, tenant: str, schemas: dict[str, CollectionSchema], policy: ValidationPolicy = ValidationPolicy()
) -> ContextSet:
    """The tenant's context set, validated against its schemas: its own file, else the shipped defaults."""
    path = tenant_file(data_dir, tenant)
    if path is None:
        return checked(shipped(), schemas, shipped=True, policy=policy)
    try:
        return checked(read_file(path), schemas, shipped=False, policy=policy)
    except ContextSetError as exc:
        raise ContextSetError(str(exc) if str(exc).startswith(path.name) else f"{path.name}: {exc}") from None


# -- editing ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def _editing(data_dir: Path, tenant: str, schemas: dict[str, CollectionSchema]) -> Iterator[tuple[ContextSet, Path]]:
    """The tenant's set (its file, else a copy of the shipped defaults that fit its data) under an
    exclusive lock; what the block leaves in it is written atomically. Two editors at once take
    turns: none loses the other's edit."""
    folder = Path(data_dir) / "context_sets"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{check_tenant(tenant)}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = tenant_file(data_dir, tenant)
        cs = read_file(path) if path is not None else checked(shipped(), schemas, shipped=True)
        target = path if path is not None else folder / f"{tenant}.json"
        yield cs, target
        if target.suffix == ".json":
            text = json.dumps(cs.to_json(), ensure_ascii=False, indent=2) + "\n"
        else:
            import yaml

            text = yaml.safe_dump(cs.to_json(), allow_unicode=True, sort_keys=False)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)


def add_template(
    data_dir: Path,
    tenant: str,
    template: Template,
    schemas: dict[str, CollectionSchema],
    policy: ValidationPolicy = ValidationPolicy(),
    replace: bool = False,
) -> None:
    """Add (or with `replace`, replace) a template after validating it against the tenant's schemas."""
    errors = template_errors(template, schemas, policy)
    if errors:
        raise ContextSetError(f"template {template.name!r}: {errors[0]}")
    with _editing(data_dir, tenant, schemas) as (cs, _):
        held = cs.template(template.name)
        if held is not None and not replace:
            raise ContextSetError(f"template {template.name!r} already exists; remove it first")
        if len(cs.templates) >= MAX_TEMPLATES and held is None:
            raise ContextSetError(f"the context set already holds {MAX_TEMPLATES} templates")
        cs.templates = [t for t in cs.templates if t.name != template.name] + [template]


def remove_template(data_dir: Path, tenant: str, name: str, schemas: dict[str, CollectionSchema]) -> None:
    with _editing(data_dir, tenant, schemas) as (cs, _):
        if cs.template(name) is None:
            raise ContextSetError(f"no template {name!r} (see `context-engine context-set list`)")
        cs.templates = [t for t in cs.templates if t.name != name]


def unique_name(cs: ContextSet, base: str) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", base).strip("-.")[:48] or "template"
    if not base[0].isalnum():
        base = "t" + base
    name, n = base, 2
    while cs.template(name) is not None:
        name, n = f"{base}-{n}", n + 1
    return name


def templatize(
    name: str, question: str, collection: str, pipeline: list[dict[str, Any]], slots: list[Slot], source: str
) -> Template:
    """A template from a solved question: each person, time and number of the question that the plan
    uses becomes a parameter (its span in the question `{pN}`, its value in the plan a placeholder);
    a value the plan does not use stays literal text."""
    plan = to_extended_json(pipeline)
    params: dict[str, str] = {}
    values: dict[str, Any] = {}
    replacements: dict[Any, str] = {}
    spans: list[tuple[Slot, str]] = []
    for slot in sorted(slots, key=lambda s: s.start):
        param = f"{slot.kind[0]}{len(params) + 1}"
        found: dict[Any, str] = {}
        if slot.kind == "person":
            for kind in PARAM_PARTS["person"]:
                handle = slot.value.handle(kind) if hasattr(slot.value, "handle") else None
                if handle:
                    found.setdefault(handle, f"{{{{{param}.{kind}}}}}")
            value = {k: slot.value.handle(k) for k in PARAM_PARTS["person"] if slot.value.handle(k)}
        elif slot.kind == "time":
            for part in ("start", "end"):
                bound = getattr(slot.value, part)
                if bound is not None:
                    found[json.dumps(to_extended_json(bound), sort_keys=True)] = f"{{{{{param}.{part}}}}}"
            value = {
                p: to_extended_json(getattr(slot.value, p))["$date"]
                for p in ("start", "end")
                if getattr(slot.value, p) is not None
            }
        else:
            found[slot.value] = f"{{{{{param}}}}}"
            value = slot.value
        if not _uses(plan, found):
            continue
        params[param], values[param] = slot.kind, value
        replacements.update(found)
        spans.append((slot, param))
    text, at = [], 0
    for slot, param in spans:
        text += [question[at : slot.start], f"{{{param}}}"]
        at = slot.end
    text.append(question[at:])
    return Template(
        name,
        "".join(text),
        params,
        collection,
        _replace(plan, replacements),
        {"question": question, "values": values},
        source,
    )


def _key_of(node: Any) -> Any:
    if isinstance(node, dict) and set(node) == {"$date"}:
        return json.dumps(node, sort_keys=True)
    return node if isinstance(node, (str, int)) and not isinstance(node, bool) else None


def _uses(node: Any, found: dict[Any, str]) -> bool:
    if _key_of(node) is not None and _key_of(node) in found:
        return True
    if isinstance(node, dict):
        return any(_uses(v, found) for v in node.values())
    if isinstance(node, list):
        return any(_uses(v, found) for v in node)
    return False


def _replace(node: Any, replacements: dict[Any, str]) -> Any:
    key = _key_of(node)
    if key is not None and key in replacements:
        return replacements[key]
    if isinstance(node, dict):
        return {k: _replace(v, replacements) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace(v, replacements) for v in node]
    return node

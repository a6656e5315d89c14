"""The tenant's context set in the offline planner (`query/context_sets.py`).

- **Facets** (step 3b, after the conditions): a facet of the question's collection whose phrase the
  question says, in words no other step explained, becomes the facet's filters ("good first issues",
  "closed as not planned", "客户反馈"), negated after "not"/"isn't"/"非" ("not stale"); understood
  how="facet". A facet conflicting with a condition the question already says is not applied.
- **Templates** (after the plan is built): when the question with its values masked is close to a
  template's question (`ContextSet.match_template`) and says nothing the template does not, the
  template's plan, bound to the question's people, times, numbers and stored values, answers it;
  understood how="template". A template is a solved question (shipped, or taught by a 👍): it wins
  over the step-by-step reading of the same words.

`Settings.use_context_set` (env `CONTEXT_ENGINE_CONTEXT_SET`) turns both off: `context_set_for` gives None.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path
from typing import Any

from rapidfuzz import utils

from context_engine.config import Settings
from context_engine.query import context_sets
from context_engine.query.context_sets import ContextSet, ContextSetError, Facet, Slot
from context_engine.query.fields import field_for
from context_engine.query.ir import Filter
from context_engine.query.plan import Plan, PlanningContext
from context_engine.query.planner.draft import Draft
from context_engine.query.planner.spans import IMPLIED
from context_engine.query.schema import CollectionSchema
from context_engine.query.validate import ValidationPolicy

log = logging.getLogger(__name__)

# A facet's `$match` operators the IR says as filters; a facet using any other is not applied.
_FACET_OPS = {"$ne": "ne", "$in": "in", "$nin": "nin", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
# Words just before a facet's phrase that deny it ("not stale", "isn't a good first issue", "非客户反馈").
NEGATED = re.compile(
    r"(?:\b(?:not|no|never|without|non)\b|n't\b|n’t\b)(?:\s+(?:a|an|the|been|being|as|labell?ed|marked))*\s*$|(?:不是|非|没有)\s*$",
    re.I,
)
# Words a question may say that a template need not: articles, auxiliaries, pronouns, "show me".
# Deliberately not the planner's whole FILLER list: "how many", "any", "each", "than" change the answer.
EMPTY_WORDS = frozenset(
    """
a an the of to is are was were be been do does did have has had i me my we our us you your it its
this that these those there here which what who show list give find tell get see let please can could would
""".split()
)
# Stored values the linking step finds that a template parameter of the same type may bind.
VALUE_ROLES = ("label", "repo", "channel", "milestone", "project", "component")

_lock = threading.Lock()
_loaded: dict[tuple[str, str], tuple[Any, dict[str, CollectionSchema], ContextSet | None]] = {}


def context_set_for(settings: Settings, schemas: dict[str, CollectionSchema]) -> ContextSet | None:
    """The tenant's context set for planning, validated against these schemas; None when turned off
    or when the tenant's file is broken (logged: `context-engine context-set list` names the error).
    Loaded again when the file changes (a 👍 adds a template) or the schemas do (an ingest)."""
    if not settings.use_context_set:
        return None
    path = context_sets.tenant_file(settings.data_dir, settings.tenant)
    stamp = _stamp(path)
    key = (str(Path(settings.data_dir).resolve()), settings.tenant)
    with _lock:
        held = _loaded.get(key)
    if held is not None and held[0] == stamp and held[1] is schemas:
        return held[2]
    try:
        loaded: ContextSet | None = context_sets.load(
            settings.data_dir,
            settings.tenant,
            schemas,
            ValidationPolicy(allow_regex=settings.allow_regex, max_limit=settings.max_rows),
        )
    except ContextSetError as exc:
        log.warning("context set not used: %s", exc)
        loaded = None
    with _lock:
        _loaded[key] = (stamp, schemas, loaded)
    return loaded


def _stamp(path: Path | None) -> Any:
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return str(path)
    return str(path), st.st_mtime_ns, st.st_size


def facet_filters(facet: Facet, span: tuple[int, int]) -> list[Filter] | None:
    """The facet's `$match` as IR filters, or None when it says something the IR cannot."""
    out = []
    for path, cond in facet.match.items():
        if path.startswith("$"):
            return None
        if isinstance(cond, dict):
            if cond == {"$size": 0}:
                out.append(Filter(path, "empty", span=span))
            elif len(cond) == 1 and next(iter(cond)) in _FACET_OPS:
                op = next(iter(cond))
                try:
                    out.append(Filter(path, _FACET_OPS[op], cond[op], span=span))
                except ValueError:
                    return None
            else:
                return None
        else:
            out.append(Filter(path, "eq", cond, span=span))
    return out


class FacetStep(Draft):
    """Facets the question names, as filters."""

    def _facets(self) -> None:
        cs: ContextSet | None = self.ctx.context_set
        if cs is None:
            return
        for facet in cs.facets:
            if facet.collection != self.collection:
                continue
            # A verb whose date or state the conditions read ("open" in "did Jonas open", "merged") is
            # theirs to read or to leave: a facet naming the same word would undo their decision.
            span = next(
                (s for s in facet.spans(self.q) if not self._is_used(s) and not IMPLIED.fullmatch(self.q[s[0] : s[1]])),
                None,
            )
            filters = facet_filters(facet, span) if span else None
            if not filters:
                continue
            negated = NEGATED.search(self.q[: span[0]])
            if negated:
                if len(filters) > 1:
                    continue  # "not (closed and not planned)" is no list of filters: left not understood
                span = (negated.start(), span[1])
                filters[0].negate, filters[0].span = True, span
            new = []
            for f in filters:
                held = [g for g in self.filters if g.field == f.field]
                if any(g.op != f.op or g.value != f.value or g.negate for g in held) or any(
                    t.field == f.field for t in self.times
                ):
                    break  # the question already says otherwise of this field: the facet does not apply
                if not held:
                    new.append(f)
            else:
                self.use(span, "facet")
                self.filters.extend(new)
                self.notes.append(f"facet {facet.name!r}")


def templated(ctx: PlanningContext, built: Plan) -> Plan | None:
    """The plan of the context set's template this question matches, or None. The question's values
    are the people and times resolution found, its bare numbers, and the stored values (labels,
    repos, channels ...) the built plan linked; a question saying words the template does not is no
    match (the template would silently drop them)."""
    cs: ContextSet | None = ctx.context_set
    if cs is None or not cs.templates:
        return None
    schema = ctx.schemas.get(built.collection)
    values = []
    if built.ir is not None and schema is not None:
        kinds = {field_for(schema, role): role for role in VALUE_ROLES if field_for(schema, role)}
        values = [
            Slot(kinds[f.field], f.span[0], f.span[1], f.value)
            for f in built.ir.filters
            if f.field in kinds and f.op == "eq" and not f.negate and isinstance(f.value, str) and f.span
        ]
    slots = context_sets.slots_for(ctx.question, ctx.mentions, ctx.times, values)
    for template, bindings, score in cs.matching_templates(ctx.question, slots):
        spans = _template_spans(ctx.question, template, slots)
        if spans is not None:
            return Plan(
                template.collection,
                template.instantiate(bindings),
                confidence=round(min(score, 100.0) / 100, 2),
                planner="offline",
                notes=[f"template {template.name} (score {score:.0f})"],
                understood=spans,
            )
    return None


def _template_spans(question: str, template: context_sets.Template, slots: list[Slot]) -> list[dict] | None:
    """The question's spans the template explains: each value by its kind, every other word
    how="template"; None when a word is neither a word of the template's question nor one of the few
    that carry nothing ("the", "did", "show me"). Shape words count: "how many" is not in "threads in
    #{channel} with more than {replies} replies", so that template does not answer it."""
    wanted = utils.default_process(template.masked()).split()
    taken = [(s.start, s.end) for s in slots]
    spans = [{"text": question[s.start : s.end], "start": s.start, "end": s.end, "how": s.kind} for s in slots]
    for m in re.finditer(r"[A-Za-z][A-Za-z0-9_'’\-]*|\d+|[\u4e00-\u9fff]+", question):
        start, end = m.span()
        if any(a <= start and end <= b for a, b in taken):
            continue
        word = utils.default_process(m.group(0))
        if word in EMPTY_WORDS:
            continue
        if not any(context_sets.same_word(part, other) for part in word.split() for other in wanted):
            return None
        spans.append({"text": m.group(0), "start": start, "end": end, "how": "template"})
    return sorted(spans, key=lambda s: s["start"])

"""The offline planner: a deterministic question -> pipeline translator, no model needed.

It reads the question in steps (`query/planner/`): the collection, values and people linked to
fields, conditions (states, times, thresholds, the context set's facets), the shape (list, count, top-N, group-by, time
buckets), and leaves the remaining topic words to full-text search. It builds the plan IR
(`query/ir.py`), compiled once (`query/compile.py`), and says which words it understood. Each step
that had to guess, and a content word it could not read, lowers the plan's confidence; the engine
asks the LLM planner (when one is configured) for plans below `CONFIDENT`. A question close to a
template of the tenant's context set is answered by the template (`query/planner/templates.py`).
"""

from __future__ import annotations

import re

from context_engine.query.compile import compile_plan
from context_engine.query.consistency import contradictions
from context_engine.query.fields import field_for
from context_engine.query.ir import Filter, PlanIR, Shape, SortKey
from context_engine.query.plan import Plan, PlanningContext
from context_engine.query.planner.collection import CollectionStep, detect_collection
from context_engine.query.planner.conditions import ConditionStep
from context_engine.query.planner.durations import DurationStep
from context_engine.query.planner.lengths import LengthStep
from context_engine.query.planner.linking import LinkStep
from context_engine.query.planner.nested import nested_plan
from context_engine.query.planner.own_joins import OwnJoinStep
from context_engine.query.planner.shape import COUNT, DEFAULT_LIMIT, TEXT_LIMIT, TOP, WHO_ROLE, ShapeIntent, ShapeStep
from context_engine.query.planner.spans import TITLE, SpanStep
from context_engine.query.planner.templates import FacetStep, templated
from context_engine.query.planner.weekdays import WeekdayStep

CONFIDENT = 0.7


class OfflinePlanner:
    name = "offline"

    def plan(self, ctx: PlanningContext) -> Plan:
        built = nested_plan(ctx, lambda part: _Builder(part).build()) or _Builder(ctx).build()
        return templated(ctx, built) or built


class _Builder(
    CollectionStep,
    LinkStep,
    DurationStep,
    LengthStep,
    WeekdayStep,
    ConditionStep,
    FacetStep,
    ShapeStep,
    OwnJoinStep,
    SpanStep,
):
    def build(self) -> Plan:
        ctx = self.ctx
        collection, spans = detect_collection(self.q, ctx.schemas)
        self.collection_spans = spans
        if not ctx.schemas:
            self.notes.append("the tenant has no data")
            return Plan("?", [], confidence=0.0, planner="offline", notes=self.notes)
        refs = self._refs()
        if collection is None and refs:
            collection = "issues" if all("#" not in r for r in refs) and "issues" in ctx.schemas else "pull_requests"
            collection = collection if collection in ctx.schemas else next(iter(ctx.schemas))
        self.collection_named = collection is not None
        if collection is None and ctx.collection in ctx.schemas:
            collection = ctx.collection  # a follow-up's words: the records of the answer before
        elif collection is None:
            collection = self._guess_collection()
            self.confidence = min(self.confidence, 0.4)
            self.notes.append(f"no collection named; guessed {collection}")
        schema = ctx.schemas[collection]
        self.schema = schema
        self.collection = collection

        if refs:
            self.add_filter("ref", refs[0]) if len(refs) == 1 else self.add_filter("ref", refs, "in")
            self.notes.append(f"the record{'s' if len(refs) > 1 else ''} named: {', '.join(refs)}")
        duration = self._duration()  # before the states and times: "sat open", "more than 30 days" are its words
        self._lengths()  # before the times and people: "over 1000 chars" is no year, "chars" no one's name
        self._weekdays()  # before the times: "saturday or sunday" spells out a weekend, not the latest Saturday
        state_verb = self._states() or self.duration_verb
        self._review_states()
        self._values()
        person_roles = self._people()
        self._negations()
        intent = ShapeIntent("own", shape=duration) if duration else self._shape_intent()
        group_role, bucket = self._grouping() if intent is None else (None, None)
        if refs and not (group_role or bucket) and re.search(r"\bwho\b|\bwhom\b|谁", self.q, re.I):
            group_role = next((role for pattern, role in WHO_ROLE if re.search(pattern, self.q, re.I)), None)
        is_count = bool(COUNT.search(self.q))
        if is_count:
            self.mark(COUNT.pattern, "shape")
        top = TOP.search(self.q) if not (bucket or intent) else None
        ranked = self._ranked_by_count() if not (bucket or intent) else None
        if top:
            self.use(top.span(), "shape")
            if ranked is None:
                group_role = group_role or self._top_role(person_roles)
        if intent is None and not bucket and not ranked:
            # "who has closed more, A or B": the named people, grouped in the verb's role, the winner
            people_compared = self._people_compared(group_role, person_roles)
            if people_compared:
                intent, group_role = people_compared, people_compared.role
        # Review activity is dated by the review, not by the PR ("who reviewed the most last month").
        review_time = "reviewer" in person_roles or group_role == "reviewer" or self.has_filter("reviews.state")
        # "the top closer during 2023": the closing is what is dated, as the reviews are for reviewers
        counted = intent.role if intent and intent.kind == "distinct" else None  # "distinct closers in 2022"
        verb = "reviewed" if review_time else {"closer": "closed", "merger": "merged"}.get(group_role or counted or "")
        time_field = self._times(verb if state_verb is None else state_verb)
        self._dated_weekdays(time_field, verb if state_verb is None else state_verb)
        # "how many more … than", "percent change from 2023 to 2024": two people or periods set against each other
        two_sides = self.two_sides()
        if two_sides:
            intent, group_role, bucket, top, ranked, is_count = None, None, None, None, None, False
        compared = None if two_sides else self._compared_periods()
        if compared:  # "2021 or 2022, which had more": counted per year, not both years at once
            bucket, extreme = compared
            intent = ShapeIntent("bucket_extreme", extreme=extreme, bucket=bucket) if extreme else None
            group_role, top, ranked, is_count = None, None, None, False
        self._thresholds()
        self._list_sizes()
        self._facets()
        # The fields a list shows; a count or a grouping shows none, so their words are not read that way.
        shown = (
            [] if (group_role or bucket or is_count or top or ranked or intent or two_sides) else self._shown_fields()
        )
        structured = bool(
            two_sides
            or self.filters
            or self.times
            or group_role
            or bucket
            or is_count
            or top
            or ranked
            or intent
            or shown
            or self.ctx.mentions
            or TITLE.search(self.q)  # "PRs with streaming in the title": a field condition
            or self._list_limit(peek=True) != DEFAULT_LIMIT
        )
        if "assignee" in (group_role, intent and intent.role):
            # "which assignee has the most open issues on their plate": assigned to them, said again
            self.mark(r"\bon (?:their|his|her|my|our|your) (?:own )?plates?\b", "shape")
        text = self._leftover_text(structured)
        if text and not schema.text_index:
            # Nothing to search these records' text with: the words stay unread and the answer says so.
            self.notes.append(f"no full-text search over {collection}: {text!r} not read")
            text = ""
        if text:
            self.notes.append(f"full-text search for {text!r}")
            if not structured or len(text.split()) > 3:
                self.confidence = min(self.confidence, 0.4)  # mostly topic: a semantic question
        elif not structured:
            self.notes.append("nothing in the question maps to a query")
            return Plan(self.collection, [], confidence=0.0, planner="offline", notes=self.notes)

        person_field = None
        group_path = None
        if group_role and not bucket:
            group_path, person_field = self._group_path(group_role)
            self._others_threads_only(group_role)
            if group_path is None:
                # Grouping by some other field would answer a different question (every record its own
                # group): plan nothing, so a content question about "the most ..." goes to search.
                self.notes.append(f"{collection} has no field for {group_role}")
                return Plan(self.collection, [], confidence=0.0, planner="offline", notes=self.notes)

        # newest first, else by key; a collection without either (a hand-made schema) keeps its order
        sort_field = time_field or field_for(schema, "created") or ("ref" if schema.has_path("ref") else None)
        by_sort_field = [SortKey(sort_field, -1)] if sort_field else []
        intent_shape = self._intent_shape(intent, time_field, state_verb) if intent else None
        if intent_shape:
            shape = intent_shape
            measured = shape.field or (shape.sort[0].field if shape.sort else ", ".join(m.name for m in shape.measures))
            self.notes.append(f"{intent.kind}: {shape.kind} of {measured}")
        elif bucket:
            date_field = time_field or field_for(schema, state_verb or "created") or field_for(schema, "created")
            shape = Shape("group", field=date_field, bucket=bucket)
            self.notes.append(f"counted per {bucket} bucket of {date_field}")
        elif group_path:
            shape = Shape("group", field=group_path, limit=self._top_limit(top) if top else None)
            self.notes.append(f"grouped by {group_path}")
        elif ranked:
            path, limit, direction = ranked
            if direction == -1:
                shape = Shape("top", field=path, limit=limit, sort=by_sort_field)
            elif limit == 1:
                shape = Shape("argmin", field=path)  # the record with the fewest: one with the measure
            else:
                self.filters.append(Filter(path, "exists", True))  # a missing measure is not the fewest
                shape = Shape("list", sort=[SortKey(path, 1), *by_sort_field], limit=limit)
            self.notes.append(f"the {limit} with the {'highest' if direction == -1 else 'lowest'} {path}")
        elif is_count:
            shape = Shape("count")
        elif text and not structured:
            # Relevance order for a topic search: BM25 (or MongoDB's textScore) ranks the matches.
            shape = Shape("list", sort=[SortKey("relevance", -1)], limit=min(self._list_limit(), TEXT_LIMIT))
        else:
            order = [SortKey(k.field, 1) for k in by_sort_field] if self._oldest_first() else by_sort_field
            shape = Shape("list", sort=order, limit=self._list_limit(), fields=shown)
        if two_sides:
            shape = two_sides
            self.notes.append(f"{shape.kind} of the {shape.field} groups {shape.sides[0]} and {shape.sides[1]}")
        if not (self.filters or self.times or text) and not (bucket or group_role or is_count or intent_shape):
            self.confidence = min(self.confidence, 0.5)
        shape = self.ranked_place(self.share_of(shape))  # "the second most active", "what share of them"
        join = self.own_join(shape)
        understood, not_understood = self._spans(text, structured=structured, shape=shape)
        if not_understood:
            # The plan answers a narrower question than the one asked: let a model try, and say so.
            self.confidence = min(self.confidence, 0.6)
            self.notes.append("not understood: " + ", ".join(repr(s["text"]) for s in not_understood))
        # The words that said the shape ("how many", "per week", "top 3") and the topic.
        shape.span = next((span for span, how in zip(self.used, self.how) if how == "shape"), None)
        topic = [(s["start"], s["end"]) for s in understood if s["how"] == "topic"]
        ir = PlanIR(
            collection,
            filters=self.filters,
            times=self.times,
            times_any=self.times_any,
            text=text.split(),
            shape=shape,
            text_span=(topic[0][0], topic[-1][1]) if topic else None,
            unwind=self.own_unwind(shape),
            join=join,
            durations=self.durations,
            lengths=self.lengths,
        )
        if contradictions(ir, schema):
            # Conditions no record meets together: some words were read the wrong way (a model may do better).
            self.confidence = min(self.confidence, 0.3)
            self.notes.append("conditions that cannot hold together")
        return Plan(
            collection,
            compile_plan(ir, schema, ctx.schemas),
            confidence=round(self.confidence, 2),
            planner="offline",
            notes=self.notes,
            person_field=person_field,
            collection_named=self.collection_named,
            ir=ir,
            understood=understood,
            not_understood=not_understood,
        )

"""Typed graph state: what goes in, what flows between nodes, what comes out.

Everything but `messages` and `documents` is plain JSON (dates as ISO strings, pipelines in MongoDB
Extended JSON), so a checkpointer, LangServe and `json.dumps` all take the state as it is. Every
field but those in `KEPT_ACROSS_TURNS` is one question's working state (resolution, attempts, hits,
plan, answer ...), reset when a turn starts (`turn_reset`, derived from `State`, so a new field is
reset without being listed): on a thread, one question's trace never leaks into the next.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from langchain_core.documents import Document
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict, is_typeddict


class PersonMention(TypedDict):
    text: str  # the words of the question
    start: int
    end: int
    key: str  # the directory person
    name: str
    asker: bool  # "I", "me", "我"


class TimeSpan(TypedDict):
    text: str
    start: str  # ISO 8601, "" = open
    end: str  # ISO 8601, exclusive, "" = open
    verb: str  # "merged", "created" ... when the phrase names one


class Resolution(TypedDict, total=False):
    """People and times found in the question (once per question), or why they could not be."""

    people: list[PersonMention]
    times: list[TimeSpan]
    error: str
    candidates: list[dict[str, Any]]


class Turn(TypedDict):
    """What a finished turn leaves for follow-up questions."""

    question: str  # as asked
    standalone: str  # as answered, follow-up references resolved
    people: list[str]  # names of the people the question was about
    times: list[str]  # its time expressions
    refs: list[str]  # the records of the answer, in order
    titles: list[str]  # each listed record's subject (title, text), as `refs` ([] = none): "the ArrayXD one"
    people_text: list[str]  # the words naming them in the question
    answer_people: list[str]  # people the answer's records name (authors, reviewers ...), for "him"/"她"
    time_ranges: list[dict[str, str]]  # its time ranges ({text, start, end}, ISO): what "the month before" shifts
    answer_periods: list[str]  # the periods the answer's groups are ("2019-01"), in order: what "that month" is
    answer_groups: dict[str, Any]  # {field, keys}: what the answer's groups are by ("labels.name") and their keys
    unresolved: str  # the words naming people it could not tell apart ("" = none)
    candidates: list[dict[str, Any]]  # the people it offered for them, in order: what "the first one" picks
    answer: str  # the first 1,000 characters of the answer
    scope: str  # "<tenant>/<asker>": follow-ups resolve only against the same asker's turns
    route: str  # structured | semantic | hybrid: a follow-up on a topic keeps its passages
    collection: str  # the collection its structured query read ("" = none): what "those" narrows
    narrowed: str  # the words it added to the question before it ("how many were bugs"; "" = none)
    plan: dict[str, Any]  # {"ir": the IR its answer ran} ({} = none): what a follow-up changes
    base: dict[str, Any]  # the IR a follow-up builds on: `plan`'s, or the list it picked one record of
    unread: list[str]  # words of its question its plan did not read: a follow-up on that plan has not read them
    # after an answer about one record of a list (the record picked, its person, a field of it), or a follow-up
    # declined: the list's question as the turn before said it ({standalone, times, people, people_text,
    # time_ranges, collection}; {} = none), what "those", "his 2022 ones" and "and Huong?" are said of, and its
    # records (refs, titles): what "the graph one" and "#5948" name
    listed: dict[str, Any]


class InputState(TypedDict, total=False):
    question: str  # or the last human message
    now: str  # ISO 8601; the clock when absent
    messages: Annotated[list[AnyMessage], add_messages]


class StructuredState(TypedDict, total=False):
    question: str
    now: str
    resolution: Resolution
    plan: dict[str, Any]  # the current attempt's Plan.to_json()
    draft: dict[str, Any]  # the offline plan the router built (Plan.to_json): the first attempt reuses it
    attempts: list[dict[str, Any]]  # every Attempt.to_json() of this question, in order
    error: str  # the current attempt's validation or database error ("" = none)
    rows: list[dict[str, Any]]  # JSON rows (ISO dates)
    total: int  # the records a list matched when its rows stop at the row cap (`engine.total_of`; 0: whole)
    outcome: str  # success | no_results | max_attempts | resolution_failed
    # The current plan's reading of the question: spans {"text", "start", "end", "how"} it understood
    # and did not, and its confidence (Plan.understood, Plan.not_understood, Plan.confidence).
    understood: list[dict[str, Any]]
    not_understood: list[dict[str, Any]]
    confidence: float
    # The run's first chat-model failure as one sentence ("" = none), and the models it found
    # unreachable, which no later node of the run calls (`models.ModelWatch`).
    model_error: str
    models_down: list[str]


class State(InputState, StructuredState, total=False):
    asked: str  # the question as the user wrote it this turn
    followup: str  # how a follow-up was resolved ("" = a standalone question)
    narrowed: str  # the words a narrowing follow-up added ("" = none)
    followup_plan: dict[str, Any]  # the last turn's plan changed by the follow-up (Plan.to_json; {} = none)
    followup_base: dict[str, Any]  # the IR the next follow-up builds on, when not followup_plan's own
    followup_refused: dict[str, Any]  # a follow-up nothing can answer, as a failed resolution ({} = none)
    followup_unread: str  # words pointing at the conversation no rule resolved ("it"; "" = none)
    turns: list[Turn]  # earlier turns of the thread
    route: str  # structured | semantic | hybrid
    route_reasons: list[str]
    topic: str  # hybrid: the topic words the structured rows are matched to
    topic_match: dict[str, Any]  # answering.topic.TopicMatch.to_json() of this turn's rows
    search_query: str  # what the semantic half searches (rewritten on retry)
    semantic: dict[str, list[dict[str, Any]]]  # {"bm25": hits, "dense": hits} of the last retrieval
    fused: list[dict[str, Any]]  # structured rows + BM25 + dense, fused
    reranked: list[dict[str, Any]]
    contexts: list[dict[str, Any]]  # compressed, what the answer may use
    answer: str
    claims: str  # the part of the answer drawn from passages: what reflect checks
    citations: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    records: list[dict[str, Any]]
    documents: list[Document]  # the contexts the answer was built from, with source metadata
    declined: bool  # nothing found answers the question
    reflection: dict[str, Any]  # the reflect node's last verdict
    reflections: int  # retries the reflect node has asked for


class OutputState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]  # the answer as an AIMessage, appended
    question: str
    answer: str
    citations: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    records: list[dict[str, Any]]
    documents: list[Document]
    route: str
    outcome: str
    declined: bool
    followup: str
    reflection: dict[str, Any]
    understood: list[dict[str, Any]]
    not_understood: list[dict[str, Any]]
    confidence: float
    model_error: str  # a configured chat model failed ("" = none)


KEPT_ACROSS_TURNS: frozenset[str] = frozenset({"messages", "turns", "now"})
"""The fields a turn does not reset: the conversation, what earlier turns left for follow-ups, and the
clock (input: a thread's follow-up without `now` keeps the conversation's). Every other State field
is reset when a turn starts; `start_turn` then sets this turn's question."""


def _empty(hint: Any) -> Callable[[], Any]:
    """A factory of the empty value of a field's type ("" / 0 / False / [] / {})."""
    hint = get_args(hint)[0] if get_origin(hint) is Annotated else hint
    origin = get_origin(hint) or hint
    if origin in (list, dict, str, int, float, bool):
        return origin
    if is_typeddict(origin):
        return dict
    raise TypeError(
        f"a State field of type {hint!r} has no empty value: declare it in KEPT_ACROSS_TURNS or give it a plain type"
    )


def turn_resetters(schema: type = State) -> dict[str, Callable[[], Any]]:
    """Each per-turn field of `schema` and the factory of its empty value."""
    hints = get_type_hints(schema, include_extras=True)
    return {name: _empty(hint) for name, hint in hints.items() if name not in KEPT_ACROSS_TURNS}


_RESETTERS = turn_resetters()  # at import: a field of a type with no empty value fails here, not mid-run


def turn_reset() -> dict[str, Any]:
    """The update that clears one question's working state: every per-turn field, fresh and empty."""
    return {name: empty() for name, empty in _RESETTERS.items()}

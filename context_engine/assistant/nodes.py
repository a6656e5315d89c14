"""The main graph's nodes. Each reads the state, calls plain-Python libraries, returns an update.

    start_turn -> route -> (structured_query | retrieve | both) -> fuse -> rerank -> compress
               -> generate -> reflect -> (respond | retry: retrieve again, wider)

Chat models are the run's, per role (`Context`), and named after the node that calls them, so a
trace shows which node asked what.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime

from context_engine.answering.followup import resolve_followup, thanks_left_out, those_said_plainly
from context_engine.answering.generate import (
    compose_answer,
    generate_answer,
    is_ownership_question,
    ownership_statements,
)
from context_engine.answering.grounding import answerability, bm25_idf
from context_engine.answering.links import follow_links
from context_engine.answering.plan_ops import operate, without
from context_engine.answering.reflect import reflect as check_answer
from context_engine.answering.result_ops import operate_on_result
from context_engine.answering.route import route_question
from context_engine.answering.topic import TopicMatch, match_topic, names_a_subject, order_rows
from context_engine.assistant.context import Context, context_of
from context_engine.assistant.retriever import make_retriever
from context_engine.assistant.state import State, Turn, turn_reset
from context_engine.assistant.structured_query import planning_context, resolve_once, run_result
from context_engine.chat_models import watched
from context_engine.config import Settings, check_question
from context_engine.query.answer import compose, ignored
from context_engine.query.engine import NOTHING_TO_QUERY
from context_engine.query.fields import registry_of
from context_engine.query.ir import WORD_OPERATORS
from context_engine.resources import (
    asker_for,
    catalog_for,
    chat_model_for,
    principals_for,
    semantic_index_for,
    store_for,
    value_index_for,
)
from context_engine.retrievers.compress import compress as compress_passages
from context_engine.retrievers.fusion import fuse_hits
from context_engine.retrievers.hits import hit_to_dict, hit_to_document, rows_to_hits
from context_engine.retrievers.rerank import make_reranker
from context_engine.text import as_asked, parse_now, simplified

CHAIN_FROM = 3  # the top contexts whose cross-links an answer follows
KEEP_BEST = 3  # the reranker's top hits keep their best matching sentence even below the relevance floor
TURNS_KEPT = 10  # earlier turns a thread remembers for follow-ups
TOPIC_LINKS = 50  # records linked to the topic's evidence hits that a hybrid answer's rows are checked against


def _llm(settings: Settings, role: str, node: str):
    """The run's chat model for `role`, its runs named after `node`; None offline."""
    model = chat_model_for(settings, role)
    if model is None:
        return None
    try:
        return model.model_copy(update={"name": node})
    except (AttributeError, TypeError):  # not a pydantic chat model: keep its own name
        return model


def _text(content: Any) -> str:
    """A message's text, whether a string or content blocks."""
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content or [])


@watched(fresh=True)
def start_turn(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """This turn's question: the input `question`, else the last human message; follow-ups resolved
    against the turn before; the last turn's working state cleared."""
    messages = state.get("messages") or []
    update: dict[str, Any] = turn_reset()
    if messages and isinstance(messages[-1], HumanMessage):
        asked = _text(messages[-1].content)
    else:
        asked = state.get("question")
        if isinstance(asked, str):
            update["messages"] = [HumanMessage(asked)]
    asked = check_question(asked.strip() if isinstance(asked, str) else asked)  # before any work
    settings = context_of(runtime).settings()
    # Only this asker's own turns: a thread id reused by another tenant or person resolves nothing
    # against records that were never theirs to see.
    turns = [t for t in state.get("turns") or [] if t.get("scope") == _scope(settings)]
    # Traditional characters read as simplified, at the same offsets (`respond` quotes the asker's own)
    question = read = simplified(asked)
    if turns:
        read = those_said_plainly(thanks_left_out(read))
        catalog = catalog_for(settings)
        followup = resolve_followup(
            read,
            turns,
            catalog.directory,
            parse_now(state.get("now")),
            llm=_llm(settings, "router", "start_turn"),
            kinds=registry_of(catalog.schemas),
        )
        question, update["followup"], update["narrowed"] = followup.standalone, followup.how, followup.added
        update["followup_unread"] = followup.unread
        # A change to the last plan is made to that plan; the rewritten question says it in words.
        now = parse_now(state.get("now"))
        # "back to X — ...": the words said, of the thread as it was when X was asked about
        kept, said = followup.resumed or (len(turns), read)
        asker, values = asker_for(settings, catalog), value_index_for(settings)
        operation = (
            operate_on_result(said, turns[:kept], catalog, asker, now, values)
            or operate(said, followup, turns[:kept], catalog, asker, now, values)
            if said
            else None
        )
        if followup.dropped:  # "drop that — which are still open?": the rest's plan without that condition
            without_it = without(followup.dropped, operation, turns[:kept], catalog, asker, now, values, rest=said)
            if without_it is None:
                update["followup_unread"] = followup.dropped
            operation = without_it or operation
        if operation is not None:
            update["followup"] = "; ".join(h for h in (followup.how, operation.how) if h)
            if operation.declined is not None:  # a value or person nobody has: declined with the candidates
                update["followup_refused"] = {
                    "error": operation.declined.message,
                    "unresolved": operation.declined.unresolved,
                    "candidates": [p.to_json() for p in operation.declined.candidates],
                }
            elif operation.plan is None:  # a field of one record its kind does not have: declined
                update["followup_refused"] = {
                    "error": operation.refusal
                    or f"The records here have no {operation.unanswerable!r}: nothing I can query says it.",
                    "unresolved": operation.unanswerable,
                    "candidates": [],
                }
            else:
                # the plan built on did not read some words of its question: neither does this one
                inherited = [
                    {"text": t, "start": 0, "end": 0, "how": "earlier question"}
                    for t in turns[kept - 1].get("unread") or []
                ]
                if inherited:
                    operation.plan.not_understood = [*operation.plan.not_understood, *inherited]
                update["followup_plan"] = operation.plan.to_json()
                update["followup_base"] = operation.base.to_json()
    update.update(asked=asked, question=question, search_query=question)
    return update


@watched
def route(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Structured half, semantic half or both; people and times are resolved here, once per question."""
    settings = context_of(runtime).settings()
    catalog = catalog_for(settings)
    if state.get("followup_refused"):
        return {
            "route": "structured",
            "route_reasons": ["a follow-up asking for what its records do not hold"],
            "resolution": state["followup_refused"],
            "topic": "",
            "draft": {},
        }
    resolution = resolve_once(state["question"], parse_now(state.get("now")), settings)
    operation = state.get("followup_plan") or {}
    if operation and resolution.get("error"):
        resolution = {"people": [], "times": []}  # the last plan, changed: its people were resolved when planned
    # after an answer drawn from passages, a changed window or narrowing keeps the thread's topic, and a topic
    # added is routed as a question naming it is: routed as ever, the changed plan its structured half; a
    # record's person or date is the plan's alone
    last = (state.get("turns") or [{}])[-1]
    topical = (last.get("route") in ("hybrid", "semantic") and not _drops_the_topic(operation, last)) or _adds_a_topic(
        operation, last
    )
    if operation and not (topical and not (operation.get("ir") or {}).get("pipeline")):
        return {
            "route": "structured",
            "route_reasons": ["a follow-up applied to the last plan"],
            "resolution": resolution,
            "topic": "",
            "draft": state["followup_plan"],
        }
    resolved = None
    if not resolution.get("error"):
        resolved = planning_context(
            {"question": state["question"], "now": state.get("now", ""), "resolution": resolution}, settings
        )
    unread = _unread_reference(state)
    decision = route_question(
        state["question"],
        settings=settings,
        catalog=catalog,
        resolved=resolved,
        unresolved=resolution.get("error"),
        llm=_llm(settings, "router", "route"),
    )
    if is_ownership_question(state["question"]) and decision.route != "semantic":
        decision.route = "semantic"
        decision.reasons.append("who owns something is what the documents say, not a query's guess")
    draft = decision.draft.to_json() if decision.draft else {}
    if operation and decision.route != "semantic":
        draft = operation
    if unread and draft:
        draft["not_understood"] = [*draft.get("not_understood", []), unread]
    return {
        "route": decision.route,
        "route_reasons": decision.reasons,
        "resolution": resolution,
        "topic": decision.topic or "",
        "draft": draft,
        **({"not_understood": [unread]} if unread else {}),
    }


def _adds_a_topic(operation: dict[str, Any], last: dict[str, Any]) -> bool:
    """Whether a follow-up's plan searches for words the plan it changed did not ("any of those about X?")."""
    if not operation:
        return False

    said = _topic_of(operation.get("ir") or {})
    return any(said) and said != _topic_of(last.get("base") or (last.get("plan") or {}).get("ir") or {})


def _drops_the_topic(operation: dict[str, Any], last: dict[str, Any]) -> bool:
    """Whether a follow-up's plan takes away the words the plan it changed searched for ("drop the macro part")."""
    return (
        bool(operation)
        and not any(_topic_of(operation.get("ir") or {}))
        and any(_topic_of(last.get("base") or (last.get("plan") or {}).get("ir") or {}))
    )


def _topic_of(ir: dict[str, Any]) -> list[Any]:
    return [ir.get("text") or [], [f for f in ir.get("filters") or [] if f.get("op") in WORD_OPERATORS]]


def _unread_reference(state: State) -> dict[str, Any] | None:
    """The words of a follow-up that point into the conversation ("it", 其中) when no rule resolved them,
    as a span not understood: the answer is the question's as if they were not there, and says so."""
    said = state.get("followup_unread")
    if not said:
        return None
    start = max(state["question"].find(said), 0)
    return {"text": said, "start": start, "end": start + len(said), "how": "followup"}


def branches(state: State) -> list[str]:
    """Where the question goes next; "hybrid" runs both halves in parallel."""
    return {"structured": ["structured_query"], "semantic": ["retrieve"]}.get(
        state["route"], ["structured_query", "retrieve"]
    )


def retrieve(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """BM25 and dense hits the asker may read, through the retriever's Runnable interface (so traces
    show the retriever run and its documents); a retry after reflection widens k."""
    settings = context_of(runtime).settings()
    k = settings.retrieve_k * 2 ** state.get("reflections", 0)
    docs = make_retriever(settings, fused=False).invoke(state.get("search_query") or state["question"], k=k)
    lists: dict[str, list[dict[str, Any]]] = {"bm25": [], "dense": []}
    for doc in docs:
        lists.setdefault(doc.metadata.get("retriever", "bm25"), []).append(hit_to_dict(doc))
    return {"semantic": lists}


def _topic_match(state: State, settings: Settings) -> TopicMatch | None:
    """Which structured rows of a hybrid question are about its topic (None: no topic or no records)."""
    rows = state.get("rows", [])
    if state.get("route") != "hybrid" or not state.get("topic") or not any(r.get("ref") for r in rows):
        return None
    if not names_a_subject(state["question"], state["plan"]["pipeline"]):
        return None
    collection = state["plan"]["collection"]
    schema = catalog_for(settings).schemas.get(collection)
    semantic = state.get("semantic", {})
    hits = [h for name in ("bm25", "dense") for h in semantic.get(name, [])]

    def linked(refs: list[str]) -> list[tuple[str, str]]:
        chain = follow_links(
            store_for(settings), settings.tenant, principals_for(settings), refs, max_hops=1, limit=TOPIC_LINKS
        )
        return [(link.source, link.target) for link in chain.links]

    return match_topic(
        state["topic"], rows, schema.text_fields if schema else [], state["plan"]["pipeline"], hits, linked
    )


def fuse(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Structured rows, BM25 hits and dense hits become one list of records. A hybrid question's
    rows are first narrowed to those about its topic (`answering.topic`)."""
    settings = context_of(runtime).settings()
    update: dict[str, Any] = {}
    rows = state.get("rows", [])
    # A retry after reflection fuses again: the rows were narrowed to the topic the first time.
    topic = None if state.get("topic_match") else _topic_match(state, settings)
    if topic is not None:
        rows = order_rows(rows, topic)
        update.update(rows=rows, topic_match=topic.to_json())
    lists: dict[str, list[dict[str, Any]]] = {}
    if state.get("outcome") == "success" and state.get("plan"):
        lists["structured"] = rows_to_hits(rows, state["plan"]["collection"], settings.tenant)
    if state.get("route") != "structured":
        lists.update(state.get("semantic", {}))
    weights = {"structured": settings.structured_weight, "bm25": settings.bm25_weight, "dense": settings.dense_weight}
    return {**update, "fused": fuse_hits(lists, settings.fusion, weights, settings.rrf_k)}


@watched
def rerank(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """A second-stage scorer over the fused top-k (structured-only answers keep query order)."""
    settings = context_of(runtime).settings()
    fused = state.get("fused", [])
    if state.get("route") == "structured":
        return {"reranked": fused}
    reranker = make_reranker(settings, llm=_llm(settings, "judge", "rerank"))
    docs = reranker.rerank(
        state.get("search_query") or state["question"],
        [hit_to_document(h) for h in fused[: settings.rerank_k]],
        top_n=settings.context_k,
    )
    return {"reranked": [hit_to_dict(d) for d in docs]}


@watched
def compress(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Only the sentences that bear on the question, within the token budget."""
    settings = context_of(runtime).settings()
    reranked = state.get("reranked", [])
    if state.get("route") == "structured":
        return {"contexts": reranked}
    docs = compress_passages(
        state["question"],
        [hit_to_document(h) for h in reranked],
        settings.context_tokens,
        llm=_llm(settings, "generator", "compress"),
        keep_best=KEEP_BEST,
    )
    return {"contexts": [hit_to_dict(d) for d in docs]}


def structured_answer(state: State, settings: Settings) -> dict[str, Any]:
    """The structured half's answer, citations, query trace and records, worded by `query.answer`."""
    result = run_result(state)
    attempts = result.attempts
    collection = attempts[-1].plan.collection if attempts else None
    schema = catalog_for(settings).schemas.get(collection or "")
    kind = schema.kind if schema is not None else None
    answer, citations = compose(result, collection, kind)
    queries = []
    if attempts:
        final = state["attempts"][-1]["plan"]
        nested = (final.get("ir") or {}).get("nested") or {}
        queries.append(
            {
                "collection": final["collection"],
                "pipeline": final["pipeline"],
                "attempts": [{"pipeline": a["plan"]["pipeline"], "error": a["error"]} for a in state["attempts"]],
                "row_count": len(result.rows),
                # a nested plan's first step, whose top result the query above was bound by
                **(
                    {"first_step": {"collection": nested["inner"]["collection"], "pipeline": nested["pipeline"]}}
                    if nested.get("pipeline") is not None
                    else {}
                ),
            }
        )
    records, outcome = result.rows, result.kind
    topic = state.get("topic_match")
    spans: dict[str, Any] = {}
    if topic and state.get("not_understood"):
        # The words the plan could not read are what the hybrid half searched the sources for and
        # narrowed the records by: read as the topic, not ignored.
        answer = answer.replace(ignored(result), "")
        spans = {
            "understood": [*state.get("understood", []), *({**s, "how": "topic"} for s in state["not_understood"])],
            "not_understood": [],
        }
    if topic and outcome in ("success", "no_results"):  # no_results: a retry's, after none was about it
        noun = kind.plural if kind is not None else collection.replace("_", " ")  # "pull requests", "incidents"
        if not topic["matched"]:  # the rest is not the answer: say what the conditions found, and that none fit
            found = (
                f"The {kind.noun if kind is not None else 'record'} the query found is not"
                if topic["of"] == 1
                else f"None of the {topic['of']} {noun} the query found is"
            )
            answer, citations, records, outcome = f"{found} about “{topic['topic']}”.", [], [], "no_results"
        elif len(topic["matched"]) < topic["of"]:
            other = topic["of"] - len(topic["matched"])
            answer = (
                f"About “{topic['topic']}”: {len(topic['matched'])} of the {topic['of']} {noun} the query "
                f"found (the other {other} {'does' if other == 1 else 'do'} not mention it).\n{answer}"
            )
    return {
        "answer": answer,
        "citations": citations,
        "queries": queries,
        "records": records,
        "outcome": outcome,
        **spans,
    }


def _exact_rows(structured: dict[str, Any] | None, plan: dict[str, Any] | None) -> bool:
    """Whether the structured half's records answer by themselves: found by a condition of their own
    (people, time, state ...), or by full text in the kind of record the question named ("what did
    the plinkerton ledger PR change?"). Rows a full-text search found in a collection the planner had
    to guess are one more search result: whether they answer is the answerability judge's call."""
    if not structured or not structured["records"]:
        return False
    if (plan or {}).get("collection_named", True):
        return True
    pipeline = structured["queries"][-1]["pipeline"] if structured["queries"] else []
    return any(key != "$text" for stage in pipeline for key in stage.get("$match", {}))


@watched
def generate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """The answer with citations. Structured answers keep the structured half's exact wording and
    numbers; semantic and hybrid answers are grounded in the compressed context, follow cross-links,
    and decline when nothing found answers the question."""
    settings = context_of(runtime).settings()
    route_ = state.get("route", "structured")
    structured = structured_answer(state, settings) if route_ != "semantic" else None
    if route_ == "structured":
        return {**structured, "declined": False}
    question = state["question"]
    contexts = [hit_to_document(h) for h in state.get("contexts", [])]
    # Term weights from the tenant's whole corpus (rarer question terms missing from the context weigh
    # more) and the index's embedding model (does the best evidence sentence mean what was asked?).
    index = semantic_index_for(settings)
    owners = (
        ownership_statements(question, [hit_to_document(h) for h in state.get("fused", [])])
        if is_ownership_question(question)
        else []
    )
    if owners:  # the documents that say who owns it are the answer, in their own words
        contexts, declined = owners, False
    else:
        found = answerability(question, contexts, idf=bm25_idf(index.bm25), embeddings=index.query_embeddings())
        declined = not found.answerable and not _exact_rows(structured, state.get("plan"))
    chain = None
    if contexts and not declined:
        refs = list(dict.fromkeys(d.metadata["doc_ref"] for d in contexts[:CHAIN_FROM]))
        chain = follow_links(store_for(settings), settings.tenant, principals_for(settings), refs)
    llm = _llm(settings, "generator", "generate")
    if llm is not None and not declined:
        answer = generate_answer(llm, question, structured=structured, contexts=contexts, chain=chain)
    else:
        answer = compose_answer(question, structured=structured, contexts=contexts, chain=chain, declined=declined)
    if not answer.text.strip() and not declined:  # nothing in the contexts could be said: that is a decline
        declined = True
        answer = compose_answer(question, structured=structured, contexts=contexts, chain=None, declined=True)
    semantic = state.get("semantic", {})
    queries = (structured["queries"] if structured else []) + [
        {
            "collection": "semantic index",
            "search": state.get("search_query") or question,
            "retrievers": {name: len(hits) for name, hits in semantic.items()},
            "fusion": settings.fusion,
            "reranker": settings.reranker,
            "dense_pending": index.pending,
        }
    ]
    text = answer.text
    if index.pending:  # an ingest is still embedding: say what this answer could not see
        text += (
            f"\n\n(Indexing in progress: {index.pending:,} of {len(index):,} passages are searchable by "
            "keywords only until their embeddings are ready.)"
        )
    return {
        "answer": text,
        "claims": answer.claims,
        "citations": answer.citations,
        "queries": queries,
        "records": structured["records"] if structured else [],
        "declined": declined,
        "outcome": structured["outcome"] if structured else ("no_results" if declined else "success"),
        **{k: structured[k] for k in ("understood", "not_understood") if structured and k in structured},
    }


def _cited_texts(state: State) -> list[str]:
    """The text behind each citation, in citation order: `[n]` in the answer is checked against the nth."""
    texts: dict[str, str] = {}
    for hit in [*state.get("fused", []), *state.get("contexts", [])]:  # a source is its whole chunk
        texts.setdefault(hit["doc_ref"], hit.get("text", ""))
    return [texts.get(c.get("id"), c.get("title") or "") for c in state.get("citations", [])]


def _question_without_resolved_times(state: State) -> str:
    """Time expressions were applied as filters by the structured half; no passage has to repeat them."""
    question = state["question"]
    for when in (state.get("resolution") or {}).get("times", []):
        question = question.replace(when.get("text", ""), " ")
    return question


@watched
def reflect(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Is the answer grounded? If not, retry retrieval with a rewritten, wider query (bounded)."""
    settings = context_of(runtime).settings()
    rounds = state.get("reflections", 0)
    if state.get("route", "structured") == "structured":
        nothing_to_query = (state.get("resolution") or {}).get("error") == NOTHING_TO_QUERY
        if nothing_to_query and rounds < settings.max_reflections:
            # The question named no records, people or times: it is about content, so search for it.
            return {
                "reflection": {
                    "grounded": False,
                    "action": "retry",
                    "retry": True,
                    "reasons": ["nothing structured to query: searching the content instead"],
                },
                "route": "semantic",
                "reflections": rounds + 1,
            }
        return {
            "reflection": {
                "grounded": True,
                "action": "accept",
                "retry": False,
                "reasons": ["structured numbers exactly as queried"],
            }
        }
    if state.get("declined"):
        return {
            "reflection": {
                "grounded": True,
                "action": "decline",
                "retry": False,
                "reasons": ["nothing retrieved answers the question"],
            }
        }
    verdict = check_answer(
        _question_without_resolved_times(state),
        state.get("claims", ""),
        state.get("citations", []),
        _cited_texts(state),
        llm=_llm(settings, "judge", "reflect"),
        attempts_left=settings.max_reflections - rounds,
    )
    retry = verdict.action == "retry" and rounds < settings.max_reflections
    update: dict[str, Any] = {"reflection": {**asdict(verdict), "retry": retry}}
    if retry:
        update.update(reflections=rounds + 1, search_query=verdict.rewritten_query or state["question"])
    elif verdict.action == "decline":  # no round left and the passages still not backed
        update.update(_without_passages(state, settings, update["reflection"]))
    return update


def _without_passages(state: State, settings: Settings, reflection: dict[str, Any]) -> dict[str, Any]:
    """The turn's answer once reflection found its passages unsupported: the structured records alone
    when they answer by themselves (as `generate` decides), else the decline `generate` gives when
    nothing found answers — the structured half's exact answer, if any, and what was searched."""
    structured = structured_answer(state, settings) if state.get("route") != "semantic" else None
    if structured is not None and _exact_rows(structured, state.get("plan")):
        answer = compose_answer(state["question"], structured=structured, contexts=[], chain=None)
        return {
            "answer": answer.text,
            "claims": "",
            "citations": answer.citations,
            "declined": False,
            "outcome": structured["outcome"],
            "reflection": {
                **reflection,
                "action": "accept",
                "reasons": [
                    *reflection["reasons"],
                    "the passages are left out: the structured records answer by themselves",
                ],
            },
        }
    contexts = [hit_to_document(h) for h in state.get("contexts", [])]
    answer = compose_answer(state["question"], structured=structured, contexts=contexts, chain=None, declined=True)
    return {
        "answer": answer.text,
        "claims": "",
        "citations": answer.citations,
        "declined": True,
        "outcome": structured["outcome"] if structured else "no_results",
    }


def after_reflect(state: State) -> str:
    return "retry" if state.get("reflection", {}).get("retry") else "done"


# How much of a record's subject a turn keeps: enough for the words a follow-up names it by ("the ArrayXD one")
TITLE_KEPT = 200


def _titles(state: State, settings: Settings) -> list[str]:
    """The subject (a title, a message's text) of each of the first 20 records the answer listed, in order: as
    the turn's `refs` are (none when they are passages' ids)."""
    from context_engine.query.schema import values_at

    collection = (state.get("plan") or {}).get("collection") or ""
    schema = catalog_for(settings).schemas.get(collection)
    subject = schema.kind.text[0] if schema is not None and schema.kind.text else ""
    titles = []
    for row in [r for r in state.get("records", []) if r.get("ref")][:20]:
        said = next((v for v in values_at(row, subject) if isinstance(v, str)), "") if subject else ""
        titles.append(" ".join(said.split())[:TITLE_KEPT])
    return titles


def _record_people(records: list[dict[str, Any]], settings: Settings) -> list[str]:
    """The people the answer's records name (author, reviewers, assignee, a group's person), in order:
    what "him" or "她" in a follow-up may refer to. By display name, or by handle where others share
    the name (two Berthas: "U9A4FC55E", so the follow-up names one person)."""
    from collections import Counter

    from context_engine.kinds import BUILTIN
    from context_engine.query.schema import values_at

    catalog = catalog_for(settings)
    people = catalog.directory.people
    specs = [*BUILTIN.values(), *(s.own_kind for s in catalog.schemas.values() if s.own_kind is not None)]
    shared = {name for name, n in Counter(p.name for p in people).items() if n > 1}
    names: list[str] = []

    def add(name: str, handle: str) -> None:
        said = handle if name in shared else name
        if said not in names:
            names.append(said)

    for row in records[:5]:
        if isinstance(row.get("name"), str):  # a group per person: that person, in the ranking's order
            add(row["name"], str(row.get("_id") or row["name"]))
            continue
        for spec in specs:
            for options in spec.people_roles().values():
                for path, kind in options:
                    for value in values_at(row, path):
                        person = next((p for p in people if p.handle(kind) == value), None)
                        if person is not None:
                            add(person.name, str(value))
    return names


# A group's key that is a period ("2019", "2019-01", "2019-01-15"), as time buckets are written.
PERIOD = re.compile(r"\d{4}(?:-\d{2}(?:-\d{2})?)?")


def _answer_groups(state: State) -> dict[str, Any]:
    """What the answer's groups were by and their keys ({"field": "labels.name", "keys": ["bug"]}): what
    "those" is after "which label is the biggest". Empty unless the query grouped by one stored field
    whose keys are not periods (those are `answer_periods`)."""
    if state.get("outcome") != "success":
        return {}
    stages = (state.get("plan") or {}).get("pipeline") or []
    by = next((s["$group"].get("_id") for s in stages if isinstance(s, dict) and "$group" in s), None)
    keys = [r["_id"] for r in state.get("records", [])[:5] if isinstance(r.get("_id"), str)]
    if not (isinstance(by, str) and by.startswith("$")) or not keys or any(PERIOD.fullmatch(k) for k in keys):
        return {}
    return {"field": by[1:], "keys": keys}


def _plans_left(state: State) -> dict[str, Any]:
    """The IR the turn's answer ran (`plan`) and the one a follow-up builds on (`base`: the records a
    turn that picked one of them came from), for `answering.plan_ops`."""
    if state.get("followup_refused"):  # declined for a field its records lack: the thread's plan stands
        last = (state.get("turns") or [{}])[-1]
        return {"plan": last.get("plan") or {}, "base": last.get("base") or {}}
    if state.get("outcome") not in ("success", "no_results"):
        return {"plan": {}, "base": {}}
    ran = (state.get("plan") or {}).get("ir") or {}
    return {"plan": {"ir": ran} if ran else {}, "base": state.get("followup_base") or ran}


LISTED = ("standalone", "times", "people", "people_text", "time_ranges", "collection", "refs", "titles")


def _listed(state: State) -> dict[str, Any]:
    """The question of the records a follow-up answered something about one of (`Turn.listed`): the turn before's,
    when this turn's plan is not the one the next follow-up builds on (a record picked, its person or a field), or
    when the follow-up was declined (its records and plan stand)."""
    base, ran = state.get("followup_base"), ((state.get("plan") or {}).get("ir") or {})
    turns = state.get("turns") or []
    refused = bool(state.get("followup_refused"))  # declined: what comes next is said of the records before it
    if not turns or not (refused or (base and base != ran and state.get("outcome") in ("success", "no_results"))):
        return {}
    before = turns[-1]
    return before.get("listed") or {k: before.get(k) for k in LISTED if k in before}


def _base_times(state: State) -> list[dict[str, str]]:
    """The time window of a plan changed by a follow-up, whose rewritten words may not say it: what the
    next "the month before" moves."""
    times = (state.get("followup_base") or {}).get("times") or []
    return [
        {"text": "", "start": (t.get("start") or {}).get("$date", ""), "end": (t.get("end") or {}).get("$date", "")}
        for t in times[:1]
    ]


def _unread_words(state: State) -> list[str]:
    """The words of the turn's question its answer did not stand on: those its plan did not read, and the topic
    of an answer that declined (nothing about it was found), which a follow-up on its plan does not read either;
    after a declined follow-up, the plan that stands is the turn before's, and so are its unread words."""
    if state.get("followup_refused") and state.get("turns"):
        return list(state["turns"][-1].get("unread") or [])
    words = [s["text"] for s in state.get("not_understood") or [] if s.get("text")]
    if state.get("declined") and state.get("topic"):
        words.append(state["topic"])
    return words


def _scope(settings: Settings) -> str:
    """Whose turn it was: the tenant and the asker."""
    return f"{settings.tenant}/{settings.asker or ''}"


def respond(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """The answer as a chat message (citations and queries in its structured fields), the contexts as
    LangChain Documents, and what this turn leaves for follow-ups."""
    settings = context_of(runtime).settings()
    asked = state.get("asked") or state["question"]
    answer = said = as_asked(state.get("answer", ""), asked)
    if state.get("model_error"):  # the answer may be the offline fallback's: it says why
        answer += (
            f"\n\n(The configured chat model failed: {state['model_error']}. "
            "What needed it was done by the offline rules.)"
        )
    message = AIMessage(
        answer,
        additional_kwargs={
            "citations": state.get("citations", []),
            "queries": state.get("queries", []),
            "route": state.get("route", ""),
            "declined": state.get("declined", False),
            "model_error": state.get("model_error", ""),
        },
    )
    documents = [
        Document(
            page_content=h.get("text", ""),
            id=h.get("id"),
            metadata={k: v for k, v in h.items() if k not in ("id", "text")},
        )
        for h in state.get("contexts", [])
    ]
    resolution = state.get("resolution") or {}
    refs = [r["ref"] for r in state.get("records", []) if r.get("ref")] or [
        c["id"] for c in state.get("citations", []) if c.get("id")
    ]
    titles = _titles(state, settings)
    if state.get("followup_refused") and state.get("turns"):  # declined: the thread's records stand, as its plan
        refs, titles = state["turns"][-1].get("refs") or [], state["turns"][-1].get("titles") or []
    turn: Turn = {
        "question": asked,
        "standalone": state["question"],
        "people": [p["name"] for p in resolution.get("people", [])],
        "people_text": [p["text"] for p in resolution.get("people", [])],
        "times": [t["text"] for t in resolution.get("times", [])],
        "refs": refs[:20],
        "titles": titles,
        "answer_people": _record_people(state.get("records", []), settings),
        "time_ranges": [{k: t.get(k, "") for k in ("text", "start", "end")} for t in resolution.get("times", [])]
        or _base_times(state),
        "answer_periods": [
            r["_id"]
            for r in state.get("records", [])[:5]
            if isinstance(r.get("_id"), str) and PERIOD.fullmatch(r["_id"])
        ],
        "answer_groups": _answer_groups(state),
        # a decline keeps the words it could not resolve, with or without candidates: "I meant stas00"
        # after "Stas Bekman" (no one close enough to offer) re-asks the declined question
        "unresolved": as_asked(resolution.get("unresolved", ""), asked) if resolution.get("error") else "",
        "narrowed": state.get("narrowed", ""),
        "candidates": resolution.get("candidates", []),
        "unread": _unread_words(state),
        "listed": _listed(state),
        "answer": said[:1000],
        "scope": _scope(settings),
        "route": state.get("route", ""),
        "collection": next(
            (q["collection"] for q in reversed(state.get("queries", [])) if q.get("pipeline") is not None), ""
        ),
        **_plans_left(state),
    }
    return {
        "answer": answer,
        "messages": [message],
        "documents": documents,
        "turns": [*(state.get("turns") or [])[-(TURNS_KEPT - 1) :], turn],
    }

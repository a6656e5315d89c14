"""The generate node: the answer with citations, from the structured result and the compressed context.

Structured answers keep the structured half's exact wording and numbers; semantic and hybrid answers
are grounded in the compressed context (a chat model when configured, composed offline otherwise),
follow cross-links for the connected story, and decline when nothing found answers the question.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from context_engine.answering.generate import compose_answer, generate_answer
from context_engine.answering.grounding import answerability, bm25_idf
from context_engine.answering.links import follow_links
from context_engine.graph.context import Context, context_settings
from context_engine.graph.state import State
from context_engine.query.answer import compose
from context_engine.query.engine import MaxAttempts, NoResults, ResolutionFailed, Success, describe_attempts
from context_engine.query.plan import Attempt, Plan
from context_engine.retrievers.hits import hit_to_document
from context_engine.runtime import chat_model_for, principals_for, semantic_index_for, store_for

CHAIN_FROM = 3  # the top contexts whose cross-links an answer follows


def _attempts(state: State) -> list[Attempt]:
    return [Attempt(Plan(a["plan"]["collection"], a["plan"]["pipeline"], planner=a["plan"].get("planner", "offline")),
                    a["error"]) for a in state.get("attempts", [])]


def structured_result(state: State) -> dict[str, Any]:
    """The structured half's answer, citations, query trace and records, worded by `query.answer`."""
    attempts = _attempts(state)
    outcome = state.get("outcome", "max_attempts")
    collection = attempts[-1].plan.collection if attempts else None
    if outcome == "resolution_failed":
        result = ResolutionFailed(state.get("resolution", {}).get("error", "could not resolve the question"))
    elif outcome == "success":
        result = Success(attempts[-1].plan, state.get("rows", []), attempts)
    elif outcome == "no_results":
        result = NoResults(attempts[-1].plan, attempts, tried=describe_attempts(attempts))
    else:
        result = MaxAttempts(attempts)
    answer, citations = compose(result, collection)
    queries = []
    if attempts:
        final = attempts[-1]
        queries.append({"collection": final.plan.collection, "pipeline": final.plan.pipeline,
                        "attempts": [{"pipeline": a.plan.pipeline, "error": a.error} for a in attempts],
                        "row_count": len(state.get("rows", [])) if outcome == "success" else 0})
    records = state.get("rows", []) if outcome == "success" else []
    return {"answer": answer, "citations": citations, "queries": queries, "records": records, "outcome": outcome}


def _semantic_queries(state: State, settings, pending: int) -> list[dict[str, Any]]:
    semantic = state.get("semantic", {})
    return [{"collection": "semantic index", "search": state.get("search_query") or state["question"],
             "retrievers": {name: len(hits) for name, hits in semantic.items()}, "fusion": settings.fusion,
             "reranker": settings.reranker, "dense_pending": pending}]


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


def generate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    settings = context_settings(runtime)
    route = state.get("route", "structured")
    structured = structured_result(state) if route != "semantic" else None
    if route == "structured":
        return {**structured, "declined": False}
    question = state["question"]
    contexts = [hit_to_document(h) for h in state.get("contexts", [])]
    # Term weights from the tenant's whole corpus (rarer question terms missing from the context weigh
    # more) and the index's embedding model (does the best evidence sentence mean what was asked?).
    index = semantic_index_for(settings)
    found = answerability(question, contexts, idf=bm25_idf(index.bm25), embeddings=index.query_embeddings())
    declined = not found.answerable and not _exact_rows(structured, state.get("plan"))
    chain = None
    if contexts and not declined:
        refs = list(dict.fromkeys(d.metadata["doc_ref"] for d in contexts[:CHAIN_FROM]))
        chain = follow_links(store_for(settings), settings.tenant, principals_for(settings), refs)
    llm = chat_model_for(settings)
    if llm is not None and not declined:
        answer = generate_answer(llm, question, structured=structured, contexts=contexts, chain=chain)
    else:
        answer = compose_answer(question, structured=structured, contexts=contexts, chain=chain, declined=declined)
    queries = (structured["queries"] if structured else []) + _semantic_queries(state, settings, index.pending)
    text = answer.text
    if index.pending:  # an ingest is still embedding: say what this answer could not see
        text += (f"\n\n(Indexing in progress: {index.pending:,} of {len(index):,} passages are searchable by "
                 "keywords only until their embeddings are ready.)")
    return {"answer": text, "claims": answer.claims,
            "citations": answer.citations, "queries": queries,
            "records": structured["records"] if structured else [], "declined": declined,
            "outcome": structured["outcome"] if structured else ("no_results" if declined else "success")}

"""Hybrid retrieval over a tenant's `SemanticIndex`: BM25 and dense lists fused into one (LangChain retriever).

`HybridRetriever.invoke(query)` returns the fused list; `search_lists(query)` returns the BM25 and
dense lists, so the graph can show what each retriever found and fuse them with structured rows.
Both lists are asked for k chunks and fused per record by reciprocal rank fusion or a convex score
combination (`retrievers/fusion.fuse_hits`, the one fusion of the engine); the fused list is cut to k.

The access filter (`principals`) is a field set by code — the graph's retriever factory,
`assistant.retriever.make_retriever(settings)` — never by the model or the query: every list only
ever holds chunks those principals may read.

The index is derived from the store and may lag it (a write commits before its chunks are re-indexed;
an ingest with `--no-index` does not re-index at all). So the index's access mask is a first cut only:
with `live` set (as `make_retriever` always sets it), each list's candidates are checked against the
records as they are stored now, in one batched read scoped by tenant and the asker's principals, and
a chunk whose record is gone or no longer readable is dropped; the list is fetched deeper until k
chunks remain or the index has no more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from context_engine.query.execute import scope_filter
from context_engine.retrievers.fusion import RRF_K, fuse_hits
from context_engine.retrievers.hits import hit_to_dict, hit_to_document
from context_engine.retrievers.index import SemanticIndex

__all__ = ["HybridRetriever", "LiveAccess"]


class LiveAccess:
    """Which records the asker may read in the store now: the check every semantic hit passes.

    One `find_refs` per collection among the hits (by record id: an indexed read, on the embedded
    store straight from SQLite when the collection is not loaded), through the same tenant and access
    filter as every structured query. Verdicts are kept for the retriever's life (one question), so a
    deeper fetch reads only records it has not seen.
    """

    def __init__(
        self,
        store: Any,
        tenant: str,
        principals: Iterable[str],
        thread_refs: Callable[[str, str], list[str]] | None = None,
    ):
        """`thread_refs(channel_id, thread_ts)`: the refs of a thread's stored messages, from a derived
        index kept in step with the store (the link index); without it the store is queried."""
        self.store = store
        self.tenant = tenant
        self.thread_refs = thread_refs
        self.scope = scope_filter(tenant, list(principals))
        self._readable: dict[tuple[str, str], bool] = {}

    def readable(self, docs: list[Document]) -> list[Document]:
        """`docs` whose record exists in the store and is readable within the scope, in order."""
        unseen: dict[str, list[str]] = {}
        for doc in docs:
            key = (doc.metadata["collection"], doc.metadata["doc_ref"])
            if key not in self._readable:
                self._readable[key] = False  # until the store shows it
                unseen.setdefault(key[0], []).append(key[1])
        for collection, refs in unseen.items():
            if collection == "messages":
                continue  # a thread is a unit of several records: `_threads_readable`
            for record in self.store.find_refs(collection, self.scope, refs):
                self._readable[(collection, str(record["ref"]))] = True
        if unseen.get("messages"):
            for ref, verdict in self._threads_readable(unseen["messages"]).items():
                self._readable[("messages", ref)] = verdict
        return [doc for doc in docs if self._readable[(doc.metadata["collection"], doc.metadata["doc_ref"])]]

    def _threads_readable(self, refs: list[str]) -> dict[str, bool]:
        """A Slack hit is a whole thread (`chunking.chunk_threads`: the parent's text and every
        reply's, indexed under the parent's ref, or `channel_id:thread_ts` when no parent is stored).
        It is readable when at least one of its messages is stored and the asker may read every
        stored message of it now: the parent (by ref) and each reply (`channel_id`, `thread_ts`).
        Never the parent's list alone: a reply narrowed below it (a webhook, an export, an ingest
        with `--no-index`) must not ride on the parent's text into someone else's answer."""
        from mongomock.filtering import filter_applies

        threads = {ref: tuple(ref.partition(":")[::2]) for ref in refs}
        wanted = set(threads.values())
        if self.thread_refs is not None:  # the link index's threads: one read by id, nothing loaded
            member_refs = {r for key in wanted for r in self.thread_refs(*key)}
            docs = self.store.find_refs("messages", {"tenant_id": self.tenant}, sorted(member_refs | set(refs)))
        else:
            docs = self.store.find_refs("messages", {"tenant_id": self.tenant}, refs)
            docs += self._replies(sorted({ts for _, ts in wanted}))
        members: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for doc in docs:
            for key in {threads.get(str(doc.get("ref"))), (doc.get("channel_id"), doc.get("thread_ts"))}:
                if key in wanted:
                    members.setdefault(key, []).append(doc)
        return {
            ref: bool(members.get(key)) and all(filter_applies(self.scope, doc) for doc in members[key])
            for ref, key in threads.items()
        }

    def _replies(self, thread_ts: list[str]) -> list[dict[str, Any]]:
        """The tenant's stored messages whose `thread_ts` is one of these, from the store itself
        (through the embedded store's secondary indexes: no scan of every message per question)."""
        query = {"tenant_id": self.tenant, "thread_ts": {"$in": thread_ts}}
        collection = self.store.collection("messages")
        if getattr(self.store, "embedded", False):
            from mongomock.filtering import filter_applies

            from context_engine.store.match_index import candidates

            found = candidates(collection, query, self.store.revision)
            docs, rest = found if found is not None else (list(collection._store._documents.values()), query)
            return [doc for doc in docs if not rest or filter_applies(rest, doc)]
        return list(collection.find(query, {"ref": 1, "channel_id": 1, "thread_ts": 1, "tenant_id": 1, "acl": 1}))


class HybridRetriever(BaseRetriever):
    """BM25 + dense retrieval over one tenant's index, restricted to what `principals` may read."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: SemanticIndex
    principals: tuple[str, ...] = ()
    k: int = Field(default=50, ge=1, description="chunks asked of each list, and returned fused")
    fusion: Literal["rrf", "convex"] = "rrf"
    weights: tuple[float, float] = (1.0, 1.0)  # (bm25, dense)
    rrf_k: int = RRF_K
    fused: bool = Field(
        default=True,
        description="False: return both lists as found, each document's "
        "metadata naming its retriever (the graph fuses them itself)",
    )
    live: LiveAccess | None = Field(
        default=None,
        description="the store's current access, checked for every "
        "hit; None only over a corpus with no store "
        "(evaluations), where the index is the truth",
    )

    def search_lists(self, query: str, k: int | None = None) -> dict[str, list[Document]]:
        """{"bm25": [...], "dense": [...]}: what each retriever found, best first, at most k chunks each.

        With `live`, only hits whose records the store still lets the asker read, ranked again from 1:
        both lists' candidates are checked in one batched read; a list left short of k by dropped hits
        is fetched twice as deep (its new candidates checked likewise) until k remain or the index has
        no more, so a stale index costs recall only while the store says otherwise."""
        k = self.k if k is None else k
        searches = {"bm25": self.index.search_bm25, "dense": self.index.search_dense}
        found = {name: search(query, k, self.principals) for name, search in searches.items()}
        if self.live is None:
            return found
        fetch = dict.fromkeys(searches, k)
        while True:
            self.live.readable([doc for docs in found.values() for doc in docs])  # one read for all lists
            kept = {name: self.live.readable(docs) for name, docs in found.items()}  # verdicts known: no read
            short = [
                name
                for name, docs in kept.items()
                if len(docs) < k and len(found[name]) == fetch[name] and fetch[name] < len(self.index)
            ]
            if not short:
                break
            for name in short:
                fetch[name] *= 2
                found[name] = searches[name](query, fetch[name], self.principals)
        for docs in kept.values():
            del docs[k:]
            for rank, doc in enumerate(docs, start=1):
                doc.metadata["ranks"] = {doc.metadata["retriever"]: rank}
        return kept

    def fuse(self, lists: dict[str, list[Document]]) -> list[Document]:
        """The lists fused per record by `fusion.fuse_hits` (the graph's fuse node does the same with
        structured rows as a third list): each record once, with its best chunk and its rank in each list."""
        hits = fuse_hits(
            {name: [hit_to_dict(doc) for doc in docs] for name, docs in lists.items()},
            self.fusion,
            {"bm25": self.weights[0], "dense": self.weights[1]},
            self.rrf_k,
        )
        return [hit_to_document(hit) for hit in hits]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self.k if k is None else k
        lists = self.search_lists(query, k)
        if not self.fused:
            return [doc for docs in lists.values() for doc in docs]
        return self.fuse(lists)[:k]

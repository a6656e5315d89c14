"""Fusing ranked lists: reciprocal rank fusion and a convex combination of normalised scores.

Both take several ranked lists of `(id, score)` (best first) and return one fused list of
`(id, fused_score)`, best first, ties broken by first appearance. Lists may come from anything that
ranks ids: BM25 chunks, dense chunks, structured rows.

- `rrf`: sum over lists of `weight / (k + rank)` (rank from 1; Cormack et al. 2009, k = 60). It
  ignores score scales, so it fuses lists whose scores mean different things (a structured row has
  none).
- `convex`: sum over lists of `weight * normalised score`, each list min-max normalised over its own
  returned items (an id a list did not return scores 0 there); Bruch et al. 2023 found a tuned
  convex combination at least as good as RRF when both lists carry scores.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

__all__ = ["FUSIONS", "RRF_K", "convex", "fuse_hits", "rrf"]

RRF_K = 60

Ranked = Sequence[tuple[Hashable, float]]


def _weights(lists: Sequence[Ranked], weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0] * len(lists)
    if len(weights) != len(lists):
        raise ValueError(f"{len(weights)} weights for {len(lists)} ranked lists")
    return [float(w) for w in weights]


def _sorted(scores: dict[Hashable, float], order: dict[Hashable, int]) -> list[tuple[Hashable, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


def rrf(
    lists: Sequence[Ranked], weights: Sequence[float] | None = None, k: int = RRF_K
) -> list[tuple[Hashable, float]]:
    """Reciprocal rank fusion of ranked lists (an id repeated within one list counts at its best rank)."""
    scores: dict[Hashable, float] = {}
    order: dict[Hashable, int] = {}
    for ranked, weight in zip(lists, _weights(lists, weights)):
        seen: set[Hashable] = set()
        for rank, (item, _score) in enumerate(ranked, start=1):
            if item in seen:
                continue
            seen.add(item)
            order.setdefault(item, len(order))
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return _sorted(scores, order)


def convex(lists: Sequence[Ranked], weights: Sequence[float] | None = None) -> list[tuple[Hashable, float]]:
    """Weighted sum of per-list min-max normalised scores (a list of equal scores normalises to 1)."""
    scores: dict[Hashable, float] = {}
    order: dict[Hashable, int] = {}
    for ranked, weight in zip(lists, _weights(lists, weights)):
        best: dict[Hashable, float] = {}
        for item, score in ranked:
            best[item] = max(float(score), best.get(item, float("-inf")))
        if not best:
            continue
        low, high = min(best.values()), max(best.values())
        span = high - low
        for item, score in best.items():
            order.setdefault(item, len(order))
            norm = (score - low) / span if span > 0 else 1.0
            scores[item] = scores.get(item, 0.0) + weight * norm
    return _sorted(scores, order)


FUSIONS = {"rrf": rrf, "convex": convex}


def fuse_hits(
    lists: dict[str, list[dict]], method: str = "rrf", weights: dict[str, float] | None = None, k: int = RRF_K
) -> list[dict]:
    """Hit lists (`retrievers.hits` dicts, best first) fused per record (`doc_ref`).

    A record found by several lists appears once, carrying its best-scoring chunk's text and its
    rank in every list (`ranks`); `score` becomes the fused score, `retriever` "hybrid" when more
    than one list found it.
    """
    if method not in FUSIONS:
        raise ValueError(f"unknown fusion {method!r}: choose one of {', '.join(FUSIONS)}")
    names = [name for name, hits in lists.items() if hits]
    best: dict[str, dict] = {}
    ranks: dict[str, dict[str, int]] = {}
    ranked_lists = []
    for name in names:
        per_record: list[tuple[str, float]] = []
        for hit in lists[name]:
            ref = hit["doc_ref"]
            if name in ranks.setdefault(ref, {}):
                continue  # a later chunk of a record this list already ranked
            ranks[ref][name] = len(per_record) + 1
            per_record.append((ref, float(hit.get("score") or 0.0)))
            if ref not in best or (name != "structured" and best[ref].get("retriever") == "structured"):
                best[ref] = hit  # prefer a matching chunk's text over a structured row's summary
        ranked_lists.append(per_record)
    weight_list = [float((weights or {}).get(name, 1.0)) for name in names]
    fused = rrf(ranked_lists, weight_list, k) if method == "rrf" else convex(ranked_lists, weight_list)
    out = []
    for ref, score in fused:
        hit = dict(best[ref])
        hit.update(score=score, ranks=ranks[ref], retriever="hybrid" if len(ranks[ref]) > 1 else next(iter(ranks[ref])))
        out.append(hit)
    return out

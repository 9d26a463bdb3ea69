"""One fusion: scores from different rankers put on one 0–1 scale and combined.

BM25 is unbounded, cosines cluster differently per embedder, a reranker's
log-probabilities are negative: none can be added to another as they come. Each
list is min-max scaled within the query's own candidates (its best 1, its worst 0)
and the scaled lists are averaged with weights (CombSUM). Knowledge search fuses
its BM25 and cosine lists this way (and then pools a file's evidence, its own
step); the analysis finder fuses its lexical and dense scores of a document's units
the same way.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def minmax(scored: Sequence[tuple[K, float]] | Mapping[K, float]) -> dict[K, float]:
    """Each score as its place between the list's worst (0) and best (1); a list whose
    scores are all equal scores 1 throughout (every candidate is as good as the best)."""
    items = list(scored.items()) if isinstance(scored, Mapping) else list(scored)
    if not items:
        return {}
    hi = max(s for _k, s in items)
    lo = min(s for _k, s in items)
    return {k: (s - lo) / (hi - lo) if hi > lo else 1.0 for k, s in items}


def combine(
    lists: Sequence[Sequence[tuple[K, float]] | Mapping[K, float]],
    weights: Sequence[float] | None = None,
) -> dict[K, float]:
    """The weighted mean of each list's min-max scaled scores (a key missing from a list
    scores 0 there). Weights default to equal; a list that is empty carries no weight,
    so a ranker that found nothing does not halve every other's score."""
    weights = list(weights) if weights is not None else [1.0] * len(lists)
    scaled = [minmax(scores) for scores in lists]
    total = sum(w for w, s in zip(weights, scaled, strict=True) if s)
    if total <= 0:
        return {}
    keys: dict[K, None] = {}
    for s in scaled:
        keys.update(dict.fromkeys(s))
    return {
        k: sum(w * s.get(k, 0.0) for w, s in zip(weights, scaled, strict=True) if s) / total
        for k in keys
    }


__all__ = ["combine", "minmax"]

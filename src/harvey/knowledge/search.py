"""Query a store: FTS5 BM25, cosine over vectors, reciprocal-rank fusion, 0–1 scores.

Scores are on one 0–1 scale so ``rag.min_score`` means the same for every store:

* BM25-only: FTS5's ``bm25()`` is unbounded (more negative is better), so a
  chunk with BM25 ``b`` (as a positive number) scores ``b / (b + 5)`` — a
  chunk matching several rare query words scores above 0.7, one matching a
  single common word well under 0.3.
* Hybrid: each list's ranks are fused by reciprocal rank (``1 / (60 + rank)``,
  rank from 1, k = 60) and divided by the best possible sum (first in both
  lists, ``2 / 61``), so a chunk first by BM25 and by cosine scores 1.0 and
  one found by only one of them at most 0.5.
* Embedding-only (the benchmark's row): the cosine itself, floored at 0.

The query text goes into ``MATCH`` only as double-quoted words joined by
``OR`` ("how", "the" and other stopwords left out), so no user text (hyphens,
quotes, colons, ``AND``, a lone ``*``) can be an FTS syntax error or change
the query's meaning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from harvey.knowledge.embedders import Embedder
from harvey.knowledge.store import ChunkRow, KnowledgeStore

RRF_K = 60
BM25_HALF = 5.0  # the BM25 at which a BM25-only score is 0.5
_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_TERMS = 32
# Words that carry no topic: dropped from the FTS query (unless nothing else is left), since
# OR-ing "how do I" into it scans nearly every posting list for no ranking gain.
STOPWORDS = frozenset(
    _WORD.findall(
        """a an and are as at be but by can could do does doing did for from how i if in into is
        it its me my of on or so than that the their them then there these this those to was we
        were what when where which who why will with would you your should shall may might must
        get got make want need use using"""
    )
)


@dataclass(frozen=True)
class Hit:
    chunk: ChunkRow
    score: float


def fts_query(text: str) -> str:
    """``text`` as a safe FTS5 query: each word quoted, joined by OR ("" when none)."""
    words: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word not in words:
            words.append(word)
    topical = [w for w in words if w not in STOPWORDS]
    return " OR ".join(f'"{w}"' for w in (topical or words)[:_MAX_TERMS])


def bm25_score(bm25: float) -> float:
    b = max(0.0, -bm25)
    return b / (b + BM25_HALF)


class VectorIndex:
    """A store's vectors as one matrix, loaded once and reused until the store changes."""

    def __init__(self, store: KnowledgeStore, dims: int) -> None:
        ids, blobs = store.chunk_vectors()
        self.ids = np.asarray(ids, dtype=np.int64)
        if blobs:
            self.matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
        else:
            self.matrix = np.zeros((0, dims), dtype=np.float32)

    def nearest(self, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        if not len(self.ids):
            return []
        # einsum, not @: a matrix-vector product is memory-bound, and BLAS's threads only
        # add contention on a small machine (measured 2-3x slower at 100k x 256 here)
        sims = np.einsum("ij,j->i", self.matrix, query.astype(np.float32))
        limit = min(limit, len(sims))
        top = np.argpartition(-sims, limit - 1)[:limit]
        top = top[np.argsort(-sims[top])]
        return [(int(self.ids[i]), float(sims[i])) for i in top]


class Searcher:
    """Search one open store with its bound embedder (``None``: FTS only)."""

    def __init__(self, store: KnowledgeStore, embedder: Embedder | None) -> None:
        self.store = store
        self.embedder = embedder
        self._index: VectorIndex | None = None

    def invalidate(self) -> None:
        """The store changed (an ingest): reload the vectors on the next query."""
        self._index = None

    def _vectors(self) -> VectorIndex:
        if self._index is None:
            dims = self.embedder.dims if self.embedder else 0
            self._index = VectorIndex(self.store, dims)
        return self._index

    def search(self, text: str, k: int = 5, mode: str = "auto") -> list[Hit]:
        """The ``k`` best chunks, best first; ``mode`` is auto, fts or vector."""
        pool = max(k * 4, 20)
        use_vectors = self.embedder is not None and mode in ("auto", "vector")
        bm25 = [] if mode == "vector" else self._fts(text, pool)
        if not use_vectors:
            ranked = [(cid, bm25_score(b)) for cid, b in bm25[:k]]
        else:
            assert self.embedder is not None
            # a prompt longer than the embedder takes is searched by its opening (stored
            # chunks are never cut: an over-long one is an error at ingest)
            query = self.embedder.embed([text[: self.embedder.max_chars]])[0]
            dense = self._vectors().nearest(query, pool)
            if mode == "vector":
                ranked = [(cid, max(0.0, s)) for cid, s in dense[:k]]
            else:
                ranked = fuse([c for c, _ in bm25], [c for c, _ in dense])[:k]
        rows = self.store.chunks_by_id([cid for cid, _ in ranked])
        return [Hit(rows[cid], round(score, 4)) for cid, score in ranked if cid in rows]

    def _fts(self, text: str, limit: int) -> list[tuple[int, float]]:
        match = fts_query(text)
        return self.store.fts(match, limit) if match else []


def fuse(*rankings: list[int]) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion (k = 60) of ranked id lists, scaled so first-in-all is 1.0."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, cid in enumerate(ranking, start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (RRF_K + rank)
    best = len(rankings) / (RRF_K + 1)
    return sorted(((c, s / best) for c, s in scores.items()), key=lambda cs: -cs[1])

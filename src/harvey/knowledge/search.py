"""Query a store: FTS5 BM25, cosine over vectors, score fusion per file, 0–1 scores.

Scores are on one 0–1 scale, so one ``floor.MIN_SCORE`` serves every store:

* BM25-only: FTS5's ``bm25()`` is unbounded (more negative is better), so a
  chunk with BM25 ``b`` (as a positive number) scores ``b / (b + 5)`` — a
  chunk matching several rare query words scores above 0.7, one matching a
  single common word well under 0.3. In a small store BM25's IDF is near zero
  for every word (a word in one of two chunks has IDF log 1 = 0), so the score
  is at least ``COVERAGE_WEIGHT`` times the share of the query's words the
  chunk contains (see ``coverage``): a clear match in a store of two notes is
  not scored 0.00 and dropped by ``MIN_SCORE``. The order stays BM25's.
* Hybrid: the best ``POOL`` (50) chunks by BM25 and by cosine have each
  list's scores min-max normalised (the list's best 1, its worst 0) and
  averaged, with a file's best chunk carrying the file's pooled evidence
  (see ``fuse``): first in both lists scores 1.0, found by one list only at
  most 0.5. The score is relative to the query's candidates (``MIN_SCORE``
  drops the weakest of them); whether any candidate is relevant at all is the
  absolute floor's call (``harvey.knowledge.floor``), applied after fusion, so
  fusion only orders what passed. Measured on the benchmark's questions, this
  beat reciprocal-rank fusion (k = 60) at chunk level, which lost to the
  embedding alone.
* Embedding-only (the benchmark's row): the cosine itself, floored at 0.

The query text goes into ``MATCH`` only as double-quoted words joined by
``OR`` ("how", "the" and other stopwords left out), so no user text (hyphens,
quotes, colons, ``AND``, a lone ``*``) can be an FTS syntax error or change
the query's meaning. In a large store the commonest query words are left out
once the rarer ones already match ``ROW_BUDGET`` rows (``prune_terms``); when
every word is past it, the chunks holding the two rarest together are ranked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harvey.knowledge.floor import (
    CALIBRATED_EMBEDDER,
    MIN_BACKGROUND_CHUNKS,
    Floor,
    bm25_ceiling,
    bm25_share,
    floored,
    pooled,
    relative,
    unknown_share,
)
from harvey.knowledge.store import ChunkRow, KnowledgeStore
from harvey.retrieval.embedders import Embedder
from harvey.retrieval.fusion import minmax
from harvey.retrieval.words import coverage, fts_terms

POOL = 50  # candidates taken from each list before fusing
# Rows FTS5 may score per query (see prune_terms): a few ms on the benchmark's 2 cores.
# Measured on its questions: FTS-only hit@5 0.656 unpruned, 0.656 at 8,000, 0.623 at 6,000,
# 0.639 at 4,000 with the two-rarest intersection (see Searcher._fts); all above
# rank_bm25's 0.557; hybrid unchanged (0.803). At 6,000 alone p95 at 100k chunks was
# 10.4 ms against the 10 ms target; at 4,000 with the intersection, 8.1 ms.
ROW_BUDGET = 4_000
BM25_HALF = 5.0  # the BM25 at which a BM25-only score is 0.5
COVERAGE_WEIGHT = 0.5  # a BM25-only chunk holding every query word scores at least this
# Words that carry no topic (harvey.retrieval.words) are dropped from the FTS query (unless
# nothing else is left), since OR-ing "how do I" into it scans nearly every posting list
# for no ranking gain.


@dataclass(frozen=True)
class Hit:
    chunk: ChunkRow
    score: float


def prune_terms(terms: list[str], counts: list[int], budget: int) -> list[str]:
    """The rarest terms whose matches add up to at most ``budget`` rows (at least one).

    FTS5 scores every row that matches any term (about a microsecond each), so
    one common word in a 100,000-chunk store costs tens of milliseconds. The
    words dropped are the commonest, whose IDF adds least to BM25; a store
    small enough that all the query's words fit in the budget is ranked
    exactly as before."""
    kept: list[str] = []
    total = 0
    for count, term in sorted(zip(counts, terms, strict=True)):
        if kept and total + count > budget:
            break
        kept.append(term)
        total += count
    return kept


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
        self._background: tuple[np.ndarray, np.ndarray] | None = None

    def background(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The store's background (the unit direction of its mean chunk vector) and each
        chunk's cosine with it; ``None`` under ``MIN_BACKGROUND_CHUNKS`` chunks. Worked
        out from the matrix already in memory on first use (two passes over it, a few ms
        at 100,000 chunks), so it is never stale and needs nothing stored."""
        if self._background is None and len(self.ids) >= MIN_BACKGROUND_CHUNKS:
            mean = self.matrix.mean(axis=0, dtype=np.float64)
            norm = float(np.linalg.norm(mean))
            if norm > 1e-6:
                unit = (mean / norm).astype(np.float32)
                self._background = (unit, self.cosines(unit))
        return self._background

    def cosines(self, query: np.ndarray) -> np.ndarray:
        """The query's cosine with every chunk, in ``ids`` order."""
        # einsum, not @: a matrix-vector product is memory-bound, and BLAS's threads only
        # add contention on a small machine (measured 2-3x slower at 100k x 256 here)
        return np.einsum("ij,j->i", self.matrix, query.astype(np.float32))

    def nearest(self, sims: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` chunks of highest cosine (``sims`` from ``cosines``), best first."""
        if not len(self.ids):
            return []
        limit = min(limit, len(sims))
        top = np.argpartition(-sims, limit - 1)[:limit]
        top = top[np.argsort(-sims[top])]
        return [(int(self.ids[i]), float(sims[i])) for i in top]

    def cosine_of(self, sims: np.ndarray, ids: list[int]) -> dict[int, float]:
        """The cosines of chunks ``ids`` (those with a vector; ``ids`` are sorted)."""
        if not len(self.ids) or not ids:
            return {}
        wanted = np.asarray(ids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.ids, wanted), len(self.ids) - 1)
        return {int(c): float(sims[i]) for c, i in zip(wanted, at, strict=True) if self.ids[i] == c}


@dataclass(frozen=True)
class Ranked:
    """A search's hits, best first, and how many candidates the floor kept out."""

    hits: list[Hit]
    below_floor: int


class Searcher:
    """Search one open store with its bound embedder (``None``: FTS only); ``floor``
    (``None``: none) decides which candidates are sent at all (``harvey.knowledge.floor``)."""

    def __init__(
        self, store: KnowledgeStore, embedder: Embedder | None, floor: Floor | None = None
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.floor = floor if floor is not None else Floor(0.0, 0.0, 0.0)
        self._index: VectorIndex | None = None
        self._chunks: int | None = None

    def invalidate(self) -> None:
        """The store changed (an ingest): reload the vectors on the next query."""
        self._index = None
        self._chunks = None

    def _vectors(self) -> VectorIndex:
        if self._index is None:
            dims = self.embedder.dims if self.embedder else 0
            self._index = VectorIndex(self.store, dims)
        return self._index

    def _chunk_count(self) -> int:
        if self._chunks is None:
            self._chunks = self.store.counts()[1]
        return self._chunks

    def search(self, text: str, k: int = 5, mode: str = "auto") -> list[Hit]:
        """The ``k`` best chunks above the floor, best first; ``mode`` is auto, fts or vector."""
        return self.ranked(text, k, mode).hits

    def ranked(self, text: str, k: int = 5, mode: str = "auto") -> Ranked:
        """``search``, saying how many candidates the floor kept out."""
        pool = max(k, POOL)
        use_vectors = self.embedder is not None and mode in ("auto", "vector")
        gate = not self.floor.off
        terms = fts_terms(text)
        counts = (
            self.store.match_counts(terms, ROW_BUDGET + 1) if terms and mode != "vector" else []
        )
        bm25 = (
            [] if mode == "vector" else self._fts(terms, counts, pool if use_vectors or gate else k)
        )
        ceiling = bm25_ceiling(self._chunk_count(), counts) if gate else 0.0
        shares = {cid: bm25_share(b, ceiling) for cid, b in bm25}
        if not use_vectors:
            files = self.store.paths_of([c for c, _ in bm25]) if gate else {}
            evidence = pooled(None, shares, files)
            scored = self._bm25_hits(text, bm25)
            kept = floored(scored, evidence, self.floor)
            return self._hits(kept[:k], len(scored) - len(kept))
        assert self.embedder is not None
        # a prompt longer than the embedder takes is searched by its opening (stored
        # chunks are never cut: an over-long one is an error at ingest)
        query = self.embedder.embed([text[: self.embedder.max_chars]])[0]
        index = self._vectors()
        if len(index.ids) and index.matrix.shape[1] != query.shape[0]:
            raise self.store.dimension_error(
                index.matrix.shape[1], self.embedder.spec, query.shape[0]
            )
        sims = index.cosines(query) if len(index.ids) else np.zeros(0, dtype=np.float32)
        dense = index.nearest(sims, pool)
        lexical = [(cid, -b) for cid, b in bm25]
        files = self.store.paths_of([c for c, _ in lexical] + [c for c, _ in dense])
        if mode == "vector":
            ranked = [(cid, max(0.0, s)) for cid, s in dense]
        else:
            ranked = fuse(lexical, dense, files)
        kept = ranked
        if gate:
            # the cosine levels are wordllama's (calibrated); another model's cosines are on
            # another scale, so its store is floored on the BM25 share alone
            calibrated = self.embedder.spec == CALIBRATED_EMBEDDER
            cosines = index.cosine_of(sims, sorted({c for c, _ in ranked})) if calibrated else None
            background = index.background() if calibrated and self.floor.uses_background else None
            if cosines is not None and background is not None:
                unit, along = background
                q_along = float(unit @ query)
                chunk_along = index.cosine_of(along, sorted(cosines))
                cosines = {c: relative(s, q_along, chunk_along[c]) for c, s in cosines.items()}
            large = self._chunk_count() >= self.floor.vocabulary_chunks
            evidence = pooled(
                cosines,
                shares,
                files,
                background=background is not None,
                # only a calibrated cosine is judged on the words (``Floor.off_subject``)
                unknown_share=(
                    self._unknown_share(terms, counts, large, background is not None)
                    if cosines is not None
                    else 0.0
                ),
                vocabulary=large,
            )
            kept = floored(ranked, evidence, self.floor)
        return self._hits(kept[:k], len(ranked) - len(kept))

    def _unknown_share(
        self, terms: list[str], counts: list[int], large: bool, background: bool
    ) -> float:
        """The share of the query's words no chunk holds, a misspelling of a word the
        store holds counted as known (``vocabulary``): asked only when the floor would
        judge the words (a large store with enough of them missing, or the background
        floor, which judges any missing word)."""
        share = unknown_share(counts)
        judged = background or (large and share >= self.floor.unknown_share)
        if share == 0 or self.floor.unknown_share <= 0 or not judged:
            return share
        missing = [t for t, n in zip(terms, counts, strict=True) if n == 0]
        misspelt = sum(1 for t in missing if self.store.near_term(t))
        return (len(missing) - misspelt) / len(counts)

    def _hits(self, ranked: list[tuple[int, float]], below: int) -> Ranked:
        rows = self.store.chunks_by_id([cid for cid, _ in ranked])
        hits = [Hit(rows[cid], round(score, 4)) for cid, score in ranked if cid in rows]
        return Ranked(hits, below)

    def _bm25_hits(self, text: str, bm25: list[tuple[int, float]]) -> list[tuple[int, float]]:
        rows = self.store.chunks_by_id([cid for cid, _ in bm25])
        words = [t.strip('"') for t in fts_terms(text)]
        return [
            (cid, max(bm25_score(b), COVERAGE_WEIGHT * coverage(words, rows[cid].text)))
            for cid, b in bm25
            if cid in rows
        ]

    def _fts(self, terms: list[str], counts: list[int], limit: int) -> list[tuple[int, float]]:
        """BM25's best ``limit`` for ``terms``, each matching ``counts`` chunks (capped)."""
        if len(terms) > 1:
            kept = prune_terms(terms, counts, ROW_BUDGET)
            if len(kept) == 1 and min(counts) > ROW_BUDGET:
                # Every word is common: even the rarest alone is past the budget. Chunks
                # holding the two rarest together are the ones BM25 would put first, and
                # FTS5 scores only that intersection; fewer than ``limit`` of them, and
                # the rarest word alone decides, as before.
                rarest = [t for _c, t in sorted(zip(counts, terms, strict=True))[:2]]
                both = self.store.fts(" AND ".join(rarest), limit)
                if len(both) >= limit:
                    return both
            terms = kept
        return self.store.fts(" OR ".join(terms), limit) if terms else []


def fuse(
    lexical: list[tuple[int, float]], dense: list[tuple[int, float]], files: dict[int, str]
) -> list[tuple[int, float]]:
    """Fuse BM25 and cosine candidates by score, with each file's evidence pooled.

    Each list's scores are min-max normalised and averaged (CombSUM, equal
    weights). A file's best chunk then carries the file's evidence: the
    average of the file's best normalised BM25 and its best normalised cosine,
    wherever in the file each was found. One retriever often finds the right
    file by one passage and the other by another; at chunk level each gets
    half the credit and neither makes the top five. The file's other chunks
    keep their own score, so the list stays sorted by score, best first."""
    lex, vec = minmax(lexical), minmax(dense)
    chunk = {c: (lex.get(c, 0.0) + vec.get(c, 0.0)) / 2 for c in {*lex, *vec}}
    best_lex: dict[str, float] = {}
    best_vec: dict[str, float] = {}
    best_chunk: dict[str, int] = {}
    for c, score in chunk.items():
        f = files.get(c, f"#{c}")
        best_lex[f] = max(best_lex.get(f, 0.0), lex.get(c, 0.0))
        best_vec[f] = max(best_vec.get(f, 0.0), vec.get(c, 0.0))
        if f not in best_chunk or (score, -c) > (chunk[best_chunk[f]], -best_chunk[f]):
            best_chunk[f] = c
    for f, c in best_chunk.items():
        chunk[c] = (best_lex[f] + best_vec[f]) / 2
    return sorted(chunk.items(), key=lambda cs: (-cs[1], cs[0]))

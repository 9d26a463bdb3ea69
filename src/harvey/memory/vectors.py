"""Memory vectors: when ``memory.embedder`` names an embedder, memories are found by meaning too.

"Configured" means one setting, ``memory.embedder`` (``none`` by default;
``local``, ``ollama:MODEL`` or ``openai:MODEL``, the specs of ``harvey rag
new --embedder``). With ``none`` nothing here is imported or run, and memory
works on FTS alone exactly as before.

Vectors live in memory.db (``memory_vectors``, one unit-length float32 blob
per memory, tagged with the embedder that made it, because vectors of two
models cannot be compared); a search scans them packed (``vector_pack``: one
rows per scope, a bucket rebuilt after any write that could make it stale). They are
made lazily, before a search that finds its pack out of date: whatever
active memory has no vector from *this* embedder (new, edited, or made
under another one) is embedded then, so every write path — mining, the
profile, ``add_memory``, ``harvey memory edit`` — is covered without each
one knowing about embedders.

Two uses: near-duplicate candidates for mining are FTS hits ∪ the nearest
vectors, and recall ranks FTS ∪ vector candidates by ``fused`` relevance
(word coverage and cosine, each on 0–1, averaged).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from harvey.errors import KnowledgeError
from harvey.memory.records import PACK_BUCKETS
from harvey.memory.store import Memory, MemoryStore
from harvey.memory.vector_pack import PackCache
from harvey.retrieval.words import coverage, query_words

if TYPE_CHECKING:
    from harvey.config.settings import Settings
    from harvey.retrieval.embedders import Embedder

log = logging.getLogger(__name__)

COS_FLOOR = 0.2  # a cosine at or below this says nothing (unrelated texts score 0.0-0.15)
COS_FULL = 0.8  # and from this one on a text says the same (paraphrases score ~0.8)
VECTOR_ONLY_MIN = 0.35  # a memory no word of the query matches must be this close to count
NEAR_COSINE = 0.6  # from here a proposal may repeat a memory in other words: the model decides
BATCH = 256


def vector_score(cosine: float) -> float:
    """A cosine on the 0–1 scale of ``coverage``: 0 up to ``COS_FLOOR``, 1 from ``COS_FULL``."""
    return max(0.0, min(1.0, (cosine - COS_FLOOR) / (COS_FULL - COS_FLOOR)))


def fused(word_coverage: float, cosine: float) -> float:
    """One relevance from both searches: the mean of word coverage and vector score."""
    return (word_coverage + vector_score(cosine)) / 2


class MemoryVectors:
    """The vectors of one store under one embedder; ``nearest`` embeds what is missing first."""

    def __init__(self, store: MemoryStore, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self._packs = PackCache()

    @property
    def spec(self) -> str:
        return self.embedder.spec

    def sync(self, buckets: list[int] | None = None) -> int:
        """Embed every active memory (of the pack ``buckets``, when given) without a vector
        from this embedder; how many were."""
        rows = self.store.unvectored(self.spec, buckets)
        for start in range(0, len(rows), BATCH):
            batch = rows[start : start + BATCH]
            cap = self.embedder.max_chars
            vectors = self.embedder.embed([text[:cap] for _, text in batch])
            ids = [mid for mid, _ in batch]
            self.store.put_vectors(
                [(mid, self.spec, vec.tobytes()) for mid, vec in zip(ids, vectors, strict=True)]
            )
        return len(rows)

    def nearest(
        self, text: str, *, workspace: str | None, limit: int
    ) -> list[tuple[Memory, float]]:
        """The active memories of ``workspace`` (and every workspace) closest to ``text``,
        best first, each with its cosine."""
        return self.load(self.ranked(text, workspace=workspace, limit=limit))

    def load(self, ranked: list[tuple[str, float]]) -> list[tuple[Memory, float]]:
        """The memories of ``ranked`` ids, in order, without those another process
        archived, superseded or forgot since the packs were read."""
        found = self.store.by_ids([mid for mid, _ in ranked]) if ranked else {}
        return [(found[mid], cos) for mid, cos in ranked if mid in found and found[mid].active]

    def ranked(self, text: str, *, workspace: str | None, limit: int) -> list[tuple[str, float]]:
        """The ids (and cosines) of the ``limit`` memories closest to ``text``, best first,
        from the packs: current ones, or rebuilt after the missing vectors are made."""
        import numpy as np

        if not text.strip():
            return []
        query = self.embedder.embed([text[: self.embedder.max_chars]])[0].astype(np.float32)
        dims = query.size
        packs = self._packs.read(self.store, self.spec, workspace, dims)
        if len(packs) < PACK_BUCKETS:  # written since some were built: embed, repack those
            self.sync([b for b in range(PACK_BUCKETS) if b not in packs])
            packs = self._packs.build(self.store, self.spec, workspace, dims)
        held = [pack for pack in packs.values() if len(pack.matrix)]
        if not held:
            return []
        # memory-bound: no BLAS threads (see knowledge search)
        sims = np.concatenate([np.einsum("ij,j->i", pack.matrix, query) for pack in held])
        limit = min(limit, len(sims))
        top = np.argpartition(-sims, limit - 1)[:limit]
        top = top[np.argsort(-sims[top])]
        starts = np.cumsum([0] + [len(pack.matrix) for pack in held])
        which = np.searchsorted(starts, top, side="right") - 1
        return [
            (held[w].id_at(int(i - starts[w])), float(sims[i]))
            for i, w in zip(top, which, strict=True)
        ]


def hybrid_search(
    store: MemoryStore,
    vectors: MemoryVectors | None,
    text: str,
    *,
    workspace: str | None,
    limit: int = 50,
    warn: Callable[[str], None] | None = None,
) -> list[tuple[Memory, float]]:
    """FTS hits, and with vectors FTS ∪ nearest, each with its relevance, best first.

    Without vectors this is ``store.search``. With them, every candidate gets
    both its word coverage and its cosine, so a memory found one way is still
    scored the other; a memory sharing no word with ``text`` must be close
    (``VECTOR_ONLY_MIN``) to be a candidate at all. An embedder that fails (a
    server down) is one warning, and the words alone decide.
    """
    hits = store.search(text, workspace=workspace, limit=limit)
    if vectors is None:
        return hits
    try:
        near = vectors.ranked(text, workspace=workspace, limit=max(limit, 200))
    except KnowledgeError as exc:
        (warn or log.warning)(f"memory vectors skipped: {exc}")
        return hits
    cosines = dict(near)
    words = query_words(text, min_len=3)
    found: dict[str, tuple[Memory, float]] = {}
    for m, cov in hits:
        found[m.id] = (m, fused(cov, cosines.get(m.id, 0.0)))
    # only the close ones found by meaning alone are read from the store
    close = [(mid, cos) for mid, cos in near[:limit] if mid not in found and cos >= VECTOR_ONLY_MIN]
    for m, cos in vectors.load(close):
        found[m.id] = (m, fused(coverage(words, m.text), cos))
    return sorted(found.values(), key=lambda hit: -hit[1])[:limit]


def open_vectors(
    store: MemoryStore, settings: Settings, warn: Callable[[str], None] | None = None
) -> MemoryVectors | None:
    """The store's vectors under ``memory.embedder``; None when it is ``none``, or (with a
    warning) when the embedder cannot be built: memory then works on FTS alone."""
    spec = settings.memory.embedder
    if spec == "none":
        return None
    from harvey.errors import HarveyError
    from harvey.knowledge.service import build_embedder  # numpy, the embedder: only now

    try:
        embedder = build_embedder(spec, settings)
    except HarveyError as exc:
        if warn is not None:
            warn(f"memory.embedder {spec}: {exc}; memories are searched by words only")
        return None
    return MemoryVectors(store, embedder) if embedder is not None else None

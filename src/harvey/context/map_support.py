"""What the map phase asks of stored results and of an endpoint pool.

Kept apart from ``analysis.py`` (the engine) so the engine reads as map, then
reduce: the key a stored result is found by, the cache protocol sessions.db
implements (``harvey.session.map_results.StoredResults``), and the two
questions put to a client that may be a ``PooledClient`` — how many calls to
keep in flight, how many endpoints it has (the ``[[chunk:]]`` note) and how many
of them completed calls during the map phase (the ``[[chunk-served:]]`` note).
Clients are asked by attribute, so this module never imports the pool.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harvey.context.analysis import ChunkAnalysisParams
    from harvey.llm.base import LLMClient


class ResultCache(Protocol):
    """Where map results are kept between runs (``harvey.session.map_results.StoredResults``)."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, model: str, text: str) -> None: ...


def result_key(model: str, params: ChunkAnalysisParams, index: int, total: int, text: str) -> str:
    """The stored-result key of one map call: a hash of everything its prompt is made of
    (and the chunking that produced the chunk), so a changed file, instruction, model or
    chunk size never reuses a result made for another prompt."""
    cfg = params.config
    parts = [
        model,
        params.instruction,
        hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        index,
        total,
        params.boundary,
        cfg.chunk_size_bytes,
        cfg.overlap,
    ]
    return hashlib.sha256(json.dumps(parts).encode("utf-8", "surrogatepass")).hexdigest()


def pool_size(client: LLMClient) -> int | None:
    """How many endpoints serve ``client`` when it is an endpoint pool, else ``None``."""
    stats = getattr(client, "stats", None)
    return len(stats()) if callable(stats) else None


def served_counts(client: LLMClient) -> list[int] | None:
    """Calls each endpoint of a pool has completed so far (``None``: not a pool), taken
    before a map phase so ``endpoints_served`` can tell which endpoints took part."""
    stats = getattr(client, "stats", None)
    return [s.served for s in stats()] if callable(stats) else None


def endpoints_served(client: LLMClient, before: list[int] | None) -> int | None:
    """How many endpoints completed at least one call since ``served_counts`` gave
    ``before``: the number the ``[[chunk-served:]]`` note records (not the pool's size,
    since a dead or refused endpoint serves nothing)."""
    after = served_counts(client)
    if before is None or after is None or len(after) != len(before):
        return None
    return sum(1 for old, new in zip(before, after, strict=True) if new > old)


def map_concurrency(client: LLMClient, configured: int) -> int:
    """Calls to keep in flight: a pool's total capacity when larger than ``configured``,
    so every slot of every endpoint has work (the pool queues what exceeds a slot)."""
    capacity = getattr(client, "total_capacity", None)
    return max(configured, capacity) if isinstance(capacity, int) else configured

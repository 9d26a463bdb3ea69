"""What the map phase asks of stored results, of an endpoint pool and of an executor.

Kept apart from ``engine.py`` so the engine reads as map, then reduce: the
cache protocol sessions.db implements (``harvey.session.map_results.StoredResults``), and the two
questions put to a client that may be a ``PooledClient`` — how many calls to
keep in flight, how many endpoints it has (the ``[[chunk:]]`` note) and how many
of them completed calls during the map phase (the ``[[chunk-served:]]`` note).
Clients are asked by attribute, so this module never imports the pool.

``MapExecutor`` is the seam where the map calls may leave this process: by
default the engine runs them in its own threads; ``harvey analyze --executor
ray`` passes ``harvey.analysis.cluster.executor.RayExecutor``, which runs them on a Ray
cluster. Each call travels as a ``MapTask`` with its stored-result key, so an
executor that retries a call can tell a second answer for the same key from a
new one and hand over only the first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harvey.analysis.chunking import ChunkConfig
    from harvey.llm.base import LLMClient
    from harvey.llm.capacity import Ramp

OnStart = Callable[[int], None]  # call j (0-based, in the order the tasks were yielded) began
OnDone = Callable[[int, "str | None", "BaseException | None"], None]  # call j: its text or error


class ResultCache(Protocol):
    """Where map results are kept between runs (``harvey.session.map_results.StoredResults``)."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, model: str, text: str) -> None: ...


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


def map_limit(client: LLMClient, config: ChunkConfig) -> int | Ramp:
    """Calls to keep in flight for a map phase: ``chunking.concurrency`` when it was set
    (raised to a pool's capacity), a pool's capacity, a server's known capacity
    (``harvey.llm.capacity``), else a ``Ramp`` that starts at one and learns."""
    from harvey.llm.capacity import Ramp, discover

    if config.concurrency_given:
        return map_concurrency(client, config.concurrency)
    capacity = getattr(client, "total_capacity", None)
    if isinstance(capacity, int):
        return capacity
    found = discover(client)
    return found.limit if found.fixed else Ramp()


def calls_at_once(client: LLMClient, config: ChunkConfig) -> int:
    """Synthesis calls side by side: like ``map_limit``, but one where it would ramp."""
    limit = map_limit(client, config)
    return limit if isinstance(limit, int) else 1


@dataclass(frozen=True)
class MapTask:
    """One map call: its prompt, and the key its result is stored under (``result_key``)."""

    key: str
    prompt: str


class MapExecutor(Protocol):
    """Runs the map calls of one analysis somewhere (``analysis.cluster.executor.RayExecutor``).

    ``run_map`` takes tasks from ``tasks`` only as it has room for them (the
    iterable may be lazy), keeps at most ``concurrency`` in flight unless it
    knows its workers better, calls ``on_start(j)`` when task j is sent and
    ``on_done(j, text, error)`` exactly once per task, in the calling thread;
    it raises ``Cancelled`` soon after ``cancel`` is set.
    """

    def run_map(
        self,
        client: LLMClient,
        tasks: Iterable[MapTask],
        concurrency: int,
        cancel: threading.Event,
        on_start: OnStart,
        on_done: OnDone,
    ) -> None: ...

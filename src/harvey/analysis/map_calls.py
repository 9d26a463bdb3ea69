"""How an analysis's model calls run: how many at once, over which endpoints, where.

**Bounded calls**: many chat calls, at most N in flight, reported back to one
coordinating thread. Both halves of an analysis are this: the map phase (one call per chunk) and
every level of the reduce (one call per group of partial results); memory
mining uses it for its own calls (``map_calls.map_calls``). Calls run in daemon threads
so a server that never answers cannot hold the process; their results come
back through a queue polled every ``POLL_SECONDS``, so setting ``cancel``
stops the run within a poll interval — queued calls never start, running
streams stop at their next event — and ``Cancelled`` is raised. Prompts are
pulled from a lazy iterable only as call slots free up, so only the calls in
flight are in memory.

**What the map phase asks** of stored results, of an endpoint pool and of an
executor, kept apart from ``engine.py`` so the engine reads as map, then
reduce: the cache protocol sessions.db implements
(``harvey.session.map_results.StoredResults``), and the two questions put to a
client that may be a ``PooledClient`` — how many calls to keep in flight, how
many endpoints it has (the ``[[chunk:]]`` note) and how many of them completed
calls during the map phase (the ``[[chunk-served:]]`` note).
Clients are asked by attribute, so this module never imports the pool.

``MapExecutor`` is the seam where the map calls may leave this process: by
default the engine runs them in its own threads; ``harvey analyze --executor
ray`` passes ``harvey.analysis.cluster.executor.RayExecutor``, which runs them on a Ray
cluster. Each call travels as a ``MapTask`` with its stored-result key, so an
executor that retries a call can tell a second answer for the same key from a
new one and hand over only the first.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from harvey.errors import Cancelled
from harvey.llm.base import chat
from harvey.messages import Message
from harvey.protocols import LLMClient, Usage

if TYPE_CHECKING:
    from harvey.chunks.chunking import ChunkConfig
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
    """One map call: its prompt, the JSON schema its answer must follow (``None``: free
    text), and the key its result is stored under (``result_key``)."""

    key: str
    prompt: str
    schema: dict[str, Any] | None = None


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


POLL_SECONDS = 0.1

# A map prompt as sent and the server's usage for it: a calibration sample (PromptBudget).
UsageSink = Callable[[str, Usage], None]
_Done = tuple[int, str | None, BaseException | None, str, Usage | None, float]


def first_line(exc: BaseException) -> str:
    """An error's first line (its type name when it has no message): what a note records."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def run_bounded(
    client: LLMClient,
    prompts: Iterable[str | MapTask],
    concurrency: int | Ramp,
    cancel: threading.Event,
    on_start: Callable[[int], None],
    on_done: Callable[[int, str | None, BaseException | None], None],
    call: Callable[[str], str] | None = None,
    on_usage: UsageSink | None = None,
    *,
    notes: bool = False,
) -> None:
    """Run one chat call per prompt, at most ``concurrency`` at once; report as they finish.

    A prompt (or a ``MapTask``, whose schema the call then sends) is taken from
    ``prompts`` only when a call slot is free, and a
    call drops it when it ends: a lazy iterable keeps memory to the calls in
    flight. ``call`` replaces the plain chat call (``map_calls``); ``on_usage`` gets each
    answered prompt with the server's usage report, in this (the coordinating) thread.
    A reply is the model's text as the loop guard left it (``ChatResult.answer``); with
    ``notes`` (a synthesis, which a person reads) its loop or cap notice too.
    ``concurrency`` may be a ``Ramp`` (a server of unknown capacity): it is told how
    long each call took, whether it answered, and how many were in flight when it began.
    """
    results: queue.Queue[_Done] = queue.Queue()

    def work(i: int, item: str | MapTask) -> None:
        began = time.monotonic()
        prompt, schema = (item, None) if isinstance(item, str) else (item.prompt, item.schema)
        try:
            if call is not None:
                results.put((i, call(prompt), None, "", None, time.monotonic() - began))
                return
            messages = [Message(role="user", content=prompt)]
            if schema is None:
                reply = chat(client, messages, cancel=cancel)
            else:
                reply = chat(client, messages, cancel=cancel, response_schema=schema)
            text = reply.text if notes else reply.answer
            sent = prompt if on_usage else ""
            results.put((i, text, None, sent, reply.usage, time.monotonic() - began))
        except BaseException as exc:  # reported to the coordinator, never lost
            results.put((i, None, exc, "", None, time.monotonic() - began))

    def limit() -> int:
        return concurrency if isinstance(concurrency, int) else concurrency.limit

    levels: dict[int, int] = {}  # call → calls in flight when it began, itself included
    pending: Iterator[str | MapTask] | None = iter(prompts)
    next_i = in_flight = 0
    while pending is not None or in_flight:
        while in_flight < limit() and pending is not None:
            if cancel.is_set():
                raise Cancelled("chunk analysis cancelled")
            prompt = next(pending, None)
            if prompt is None:
                pending = None
                break
            on_start(next_i)
            levels[next_i] = in_flight + 1
            threading.Thread(target=work, args=(next_i, prompt), daemon=True).start()
            next_i += 1
            in_flight += 1
        try:
            i, text, err, sent, usage, seconds = results.get(timeout=POLL_SECONDS)
        except queue.Empty:
            if cancel.is_set():
                raise Cancelled("chunk analysis cancelled") from None
            continue
        in_flight -= 1
        if cancel.is_set() or isinstance(err, Cancelled):
            raise Cancelled("chunk analysis cancelled")
        if not isinstance(concurrency, int):
            concurrency.record(seconds, err is None, levels.pop(i))
        if on_usage is not None and usage is not None and usage.prompt_tokens:
            on_usage(sent, usage)
        on_done(i, text, err)


def map_calls(
    client: LLMClient,
    inputs: Sequence[str],
    call: Callable[[str], str],
    *,
    concurrency: int = 1,
    cancel: threading.Event | None = None,
) -> list[tuple[str | None, BaseException | None]]:
    """The map phase alone, for callers with their own call (a system prompt, structured
    output, a retry — memory mining): ``call`` per input, at most ``concurrency`` (or an
    endpoint pool's capacity) at once; each input's ``(answer, error)``, in input order."""
    out: list[tuple[str | None, BaseException | None]] = [(None, None)] * len(inputs)

    def done(i: int, text: str | None, err: BaseException | None) -> None:
        out[i] = (text, err)

    run_bounded(
        client,
        inputs,
        map_concurrency(client, concurrency),
        cancel if cancel is not None else threading.Event(),
        lambda _i: None,
        done,
        call,
    )
    return out

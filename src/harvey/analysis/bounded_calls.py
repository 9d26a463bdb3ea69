"""Many chat calls, at most N in flight, reported back to one coordinating thread.

Both halves of an analysis are this: the map phase (one call per chunk) and
every level of the reduce (one call per group of partial results); memory
mining uses it for its own calls (``map_calls``). Calls run in daemon threads
so a server that never answers cannot hold the process; their results come
back through a queue polled every ``POLL_SECONDS``, so setting ``cancel``
stops the run within a poll interval — queued calls never start, running
streams stop at their next event — and ``Cancelled`` is raised. Prompts are
pulled from a lazy iterable only as call slots free up, so only the calls in
flight are in memory.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from harvey.analysis.map_support import map_concurrency
from harvey.errors import Cancelled
from harvey.llm.base import LLMClient, Usage, chat
from harvey.messages import Message

if TYPE_CHECKING:
    from harvey.llm.capacity import Ramp

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
    prompts: Iterable[str],
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

    A prompt is taken from ``prompts`` only when a call slot is free, and a
    call drops it when it ends: a lazy iterable keeps memory to the calls in
    flight. ``call`` replaces the plain chat call (``map_calls``); ``on_usage`` gets each
    answered prompt with the server's usage report, in this (the coordinating) thread.
    A reply is the model's text as the loop guard left it (``ChatResult.answer``); with
    ``notes`` (a synthesis, which a person reads) its loop or cap notice too.
    ``concurrency`` may be a ``Ramp`` (a server of unknown capacity): it is told how
    long each call took, whether it answered, and how many were in flight when it began.
    """
    results: queue.Queue[_Done] = queue.Queue()

    def work(i: int, prompt: str) -> None:
        began = time.monotonic()
        try:
            if call is not None:
                results.put((i, call(prompt), None, "", None, time.monotonic() - began))
                return
            reply = chat(client, [Message(role="user", content=prompt)], cancel=cancel)
            text = reply.text if notes else reply.answer
            sent = prompt if on_usage else ""
            results.put((i, text, None, sent, reply.usage, time.monotonic() - began))
        except BaseException as exc:  # reported to the coordinator, never lost
            results.put((i, None, exc, "", None, time.monotonic() - began))

    def limit() -> int:
        return concurrency if isinstance(concurrency, int) else concurrency.limit

    levels: dict[int, int] = {}  # call → calls in flight when it began, itself included
    pending: Iterator[str] | None = iter(prompts)
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

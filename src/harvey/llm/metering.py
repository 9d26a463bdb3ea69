"""Count the tokens of every model call a command makes, as the server reported them or estimated.

``harvey run --output-format json`` reports what a run cost: the prompt and
completion tokens of every call it made (tool rounds, map calls, syntheses),
summed. Every call goes through ``llm.base.chat``, which hands each finished
call to :func:`observe`; a :func:`metered` block collects them. A server that
sends no usage report (some llama.cpp builds, a truncated stream) gets an
estimate from the text's size, and the total says whether it is exact,
estimated or mixed. Calls a Ray cluster makes on its own nodes are not seen.

Nothing is collected outside a ``metered`` block: ``chat`` checks ``meters`` and
calls nothing here when it is empty.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from harvey.messages import Message, ToolCall


class _Usage(Protocol):
    @property
    def prompt_tokens(self) -> int | None: ...

    @property
    def completion_tokens(self) -> int | None: ...


class ChatResult(Protocol):
    """What ``protocols.ChatResult`` holds that is counted (named here, not imported: base
    calls this module)."""

    @property
    def text(self) -> str: ...

    @property
    def tool_calls(self) -> list[ToolCall]: ...

    @property
    def usage(self) -> _Usage: ...


#: Bytes per token of an estimate: the estimator's default ratio (``context.budget``).
ESTIMATE_BYTES_PER_TOKEN = 4.0


def _estimate(size: int) -> int:
    return -(-size // int(ESTIMATE_BYTES_PER_TOKEN)) if size > 0 else 0


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class UsageTotal:
    """What the calls cost: ``source`` is ``server`` (every call reported its usage),
    ``estimated`` (none did), ``mixed``, or ``none`` (no call was made)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    estimated_calls: int = 0

    @property
    def source(self) -> str:
        if not self.calls:
            return "none"
        if not self.estimated_calls:
            return "server"
        return "estimated" if self.estimated_calls == self.calls else "mixed"

    def as_dict(self) -> dict[str, object]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "source": self.source,
            "calls": self.calls,
        }


class Meter:
    """The running total of one ``metered`` block; calls may come from map threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = UsageTotal()

    def add(self, messages: Sequence[Message], result: ChatResult) -> None:
        usage = result.usage
        prompt = usage.prompt_tokens
        completion = usage.completion_tokens
        estimated = prompt is None or completion is None
        if prompt is None:
            prompt = _estimate(sum(_size(m.content) + _calls_size(m) for m in messages))
        if completion is None:
            calls = sum(_size(c.arguments_json()) + _size(c.name) for c in result.tool_calls)
            completion = _estimate(_size(result.text) + calls)
        with self._lock:
            t = self._total
            self._total = UsageTotal(
                t.prompt_tokens + prompt,
                t.completion_tokens + completion,
                t.calls + 1,
                t.estimated_calls + (1 if estimated else 0),
            )

    @property
    def total(self) -> UsageTotal:
        with self._lock:
            return self._total


def _calls_size(message: Message) -> int:
    return sum(_size(c.arguments_json()) for c in message.tool_calls or ())


meters: list[Meter] = []  # the open blocks (read by ``chat`` before it calls ``observe``)
_meters_lock = threading.Lock()


@contextmanager
def metered() -> Iterator[Meter]:
    """Count every model call made while the block runs (in any thread of this process)."""
    meter = Meter()
    with _meters_lock:
        meters.append(meter)
    try:
        yield meter
    finally:
        with _meters_lock:
            meters.remove(meter)


def observe(messages: Sequence[Message], result: ChatResult) -> None:
    """One finished call (``llm.base.chat``): counted by every open ``metered`` block."""
    with _meters_lock:
        open_blocks = list(meters)
    for meter in open_blocks:
        meter.add(messages, result)

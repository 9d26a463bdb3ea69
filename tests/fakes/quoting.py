"""Fake model servers that answer an analysis as a model following the prompts would.

A map call (either evidence style) is answered from the chunk it carries: a
``model``-style call quotes the chunk's first sentence, a ``choose`` call picks
the first candidate; any other request gets ``answer`` (by default a synthesis
that cites record 1 and states nothing a record must hold, so Harvey's check
keeps it). Scripted steps given to the server still come first, in order, so a
test can put a failure or a cut-off stream exactly where it wants one.
"""

from __future__ import annotations

import threading
from typing import Any

from harvey.llm.scripted import Reply
from tests.fakes.base import Step, _Handler
from tests.fakes.evidence import chosen, part_of, quote_first_sentence
from tests.fakes.llamacpp import FakeLlamaCpp
from tests.fakes.openai import FakeOpenAI

#: What a quoting server answers anything that is not a map call.
ANSWER = "The text says what its first sentence says [1]."


class _Quoting:
    """Mixin for a fake server: map calls answered from their chunk (module docstring)."""

    answer = ANSWER
    _body: threading.local
    _lock: Any
    _steps: list[Step]

    def _chat(self, h: _Handler, body: Any) -> None:
        self._body.value = body
        super()._chat(h, body)  # type: ignore[misc]

    def _next_step(self) -> Step | None:
        with self._lock:
            if self._steps:
                return self._steps.pop(0)
        body = getattr(self._body, "value", None)
        content = str(((body or {}).get("messages") or [{}])[-1].get("content", ""))
        if not part_of(content):
            return Reply(self.answer)
        if content.startswith("Numbered sentences from "):
            return Reply(chosen(1))
        return Reply(quote_first_sentence(content))


class QuotingOpenAI(_Quoting, FakeOpenAI):
    def __init__(self, *args: Any, answer: str = ANSWER, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._body = threading.local()
        self.answer = answer


class QuotingLlamaCpp(_Quoting, FakeLlamaCpp):
    def __init__(self, *args: Any, answer: str = ANSWER, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._body = threading.local()
        self.answer = answer


def map_requests(server: FakeOpenAI) -> list[str]:
    """The map prompts a server received, in arrival order."""
    prompts = [str((b.get("messages") or [{}])[-1].get("content", "")) for b in server.chat_requests
               if isinstance(b, dict)]  # fmt: skip
    return [p for p in prompts if part_of(p)]


__all__ = ["ANSWER", "QuotingLlamaCpp", "QuotingOpenAI", "map_requests"]

"""Turn context providers: the one interface through which a step adds context to a turn.

Every provider — knowledge-store retrieval, long-term memory recall — is in
the agent's one list and asked once per turn with the user's prompt and the
room it may use. What it returns says what to add and what to record:

* ``text`` is sent ahead of the prompt in that turn's user message, with
  ``rag`` / ``rag_sources`` for the turn's scene. The history keeps the
  message as sent, so every later request begins with the earlier ones byte
  for byte and a server's prompt cache (llama.cpp, Ollama, the embedded model)
  serves them instead of evaluating them again; the recording keeps the
  user's own words. The plan and the resume handover come this way too
  (``chat/plan_context.py``);
* ``session_text`` is injected from this turn on, for the rest of the session
  (recalled memories), counted in remaining-context like the plan, and
  ``recall`` becomes the INT. CONTEXT RECALL scene, written before the
  turn's own scene.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from harvey.session.records import RagInfo, RagSource, RecallItem


@dataclass(frozen=True)
class TurnContext:
    """What one provider adds to one turn: the text sent, and its provenance notes."""

    text: str = ""
    rag: RagInfo | None = None
    rag_sources: tuple[RagSource, ...] = field(default_factory=tuple)
    session_text: str | None = None  # injected from now on (recalled memories)
    recall: tuple[RecallItem, ...] = field(default_factory=tuple)  # INT. CONTEXT RECALL notes


class TurnContextProvider(Protocol):
    def for_turn(
        self, prompt: str, window_tokens: int, bytes_per_token: float
    ) -> TurnContext | None:
        """Context for ``prompt`` within the provider's share of ``window_tokens``, or None."""
        ...

    def close(self) -> None: ...

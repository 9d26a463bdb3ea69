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
* ``after`` is sent after the prompt, in the same message: the files a prompt
  names, attached for a model that cannot call ``read_file``
  (``chat/mentioned_files.py``); ``answer``, when set, is the turn's reply and
  no model is asked (a named file too big for the window was chunk-analysed);
* ``session_text`` is injected from this turn on, for the rest of the session
  (recalled memories), counted in remaining-context like the plan, and
  ``recall`` becomes the INT. CONTEXT RECALL scene, written before the
  turn's own scene.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from harvey.session.records import RagInfo, RagSource, RecallItem

if TYPE_CHECKING:
    from harvey.llm.base import LLMClient


@dataclass(frozen=True)
class TurnQuery:
    """One turn as a provider sees it: a value, so a provider reads nothing back from the
    agent. ``prompt`` is the person's words (an ``@model`` mention taken off), ``ahead``
    what the providers asked before this one put ahead of it (it counts against the
    window), ``on_analysis`` what to call with HARVEY's alert before a chunk analysis."""

    prompt: str
    window_tokens: int
    bytes_per_token: float
    client: LLMClient | None = None
    ahead: tuple[str, ...] = ()
    user_text: str = ""
    on_analysis: Callable[[str | None], None] | None = None


@dataclass(frozen=True)
class TurnContext:
    """What one provider adds to one turn: the text sent, and its provenance notes."""

    text: str = ""
    rag: RagInfo | None = None
    rag_sources: tuple[RagSource, ...] = field(default_factory=tuple)
    session_text: str | None = None  # injected from now on (recalled memories)
    recall: tuple[RecallItem, ...] = field(default_factory=tuple)  # INT. CONTEXT RECALL notes
    after: str = ""  # sent after the prompt (files it names, for a tool-less model)
    answer: str | None = None  # the turn's reply: no model call
    answer_by_harvey: bool = False  # that reply is an analysis's evidence itself


class TurnContextProvider(Protocol):
    # asked only in turns whose model has no tools to call (``tools.mode`` off or
    # constrained), where what it adds stands in for a tool
    tool_less_only: bool

    def for_turn(self, query: TurnQuery) -> TurnContext | None:
        """Context for ``query`` within the provider's share of its window, or None."""
        ...

    def close(self) -> None: ...

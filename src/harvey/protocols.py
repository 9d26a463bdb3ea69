"""The interfaces packages meet at, kept at the bottom of the ladder.

A package that needs another's *shape* — a model client and its stream events, a
turn-context provider and what it returns, an exact tokenizer, a progress reporter —
imports it from here, not from the package that implements it, so no package climbs
to a higher one to name a type (``tests/test_import_graph.py`` keeps the ladder).
The implementations stay where they live: the backends in ``llm/``, the providers in
``knowledge/``, ``memory/`` and ``chat/``, the counters in ``llm/counting.py``, the
progress displays in the front ends.

Turn context providers — knowledge-store retrieval, long-term memory recall, the
plan, the files a prompt names — are in the agent's one list and asked once per turn
with the user's prompt and the room they may use. What one returns says what to add
and what to record:

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

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harvey.messages import Message, ToolCall

#: The most tokens one request can count: past any window, and within SQLite's INTEGER.
MAX_TOKEN_COUNT = 1 << 31


def token_count(value: object) -> int | None:
    """A server's token count as Harvey keeps it: a whole number from 0 to
    ``MAX_TOKEN_COUNT``, else ``None`` ("it did not say"). A hostile server's 10**30 would
    not fit the store's INTEGER, and a string or a negative one would skew the budget."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value) if 0 <= value <= MAX_TOKEN_COUNT else None


# --- a model client and its stream ---------------------------------------------------


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    call: ToolCall


@dataclass(frozen=True)
class Usage:
    """Token counts as reported by the server; ``None`` when it did not say (or said
    something no request can count: ``token_count``)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "prompt_tokens", token_count(self.prompt_tokens))
        object.__setattr__(self, "completion_tokens", token_count(self.completion_tokens))


@dataclass(frozen=True)
class Finish:
    """Why the model stopped, as the server said: ``stop``, ``length`` (the token cap),
    ``tool_calls``; ``None`` when the stream closed properly without saying (a
    llama-cpp-python server interrupted by the next request does that). A backend
    that cannot tell does not send one."""

    reason: str | None


StreamEvent = TextDelta | ToolCallEvent | Usage | Finish


@dataclass(frozen=True)
class ModelCapabilities:
    context_window: int
    supports_tools: bool
    context_source: str = "default"  # where context_window came from, for /status
    # where supports_tools came from: "template" (the server's chat template or its
    # capabilities), "embedded model", "scripted"... or "assumed" when the server did not
    # say, which ``harvey.chat.calls.tool_support`` then finds out with one probe call
    tools_source: str = "assumed"


@dataclass
class ChatResult:
    """A drained reply. ``text`` is what was shown, a loop or cap notice included;
    ``answer`` is the model's text without it and ``note`` the notice alone."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    answer: str = ""
    note: str = ""


@runtime_checkable
class LLMClient(Protocol):
    """One model on one backend."""

    backend: str  # "ollama" | "openai" | "local" | "scripted"
    model: str
    endpoint: str  # base URL, or "embedded"

    def stream_chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        response_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]: ...

    def capabilities(self) -> ModelCapabilities: ...

    def list_models(self) -> list[str]: ...

    def with_model(self, model: str) -> LLMClient: ...

    def close(self) -> None: ...


# --- what a turn-context provider is asked and returns --------------------------------


@dataclass(frozen=True)
class RagInfo:
    """A ``[[rag: …]]`` note: how many chunks were retrieved, from where, best score.

    The same type is written and read back (the score as the note rounds it, to 0.01).
    """

    chunks: int
    store: str
    top_score: float


@dataclass(frozen=True)
class RagSource:
    """A ``[[rag-source: PATH:Lstart-Lend — score S.SS]]`` note: one passage a turn was sent;
    a passage of a paged document (a PDF) is ``PATH:p3`` or ``PATH:p3-p4`` instead."""

    path: str
    start_line: int
    end_line: int
    score: float
    page_start: int = 0
    page_end: int = 0


@dataclass(frozen=True)
class RecallItem:
    """A ``[[recall: …]]`` note: one remembered item, its source and score (both ways)."""

    id: str
    source: str
    score: float


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
    tool_mode: str = ""  # how the model gets its tools this turn: native, text, constrained, off


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


# --- an exact token counter, and a progress reporter -----------------------------------


class Tokenizer(Protocol):
    """What a backend that can count offers (``harvey.llm.counting`` has the real ones)."""

    method: str  # for /status: "embedded tokenizer", "llama.cpp /tokenize", ...

    def count(self, text: str) -> int:
        """The exact number of tokens ``text`` is, without special tokens."""
        ...

    def framing(self, roles: Sequence[str]) -> int:
        """The tokens the chat template adds around messages with these roles."""
        ...


class ProgressReporter(Protocol):
    def start(self, total: int) -> None: ...

    def chunk_started(self, index: int, total: int) -> None: ...

    def chunk_finished(self, index: int, total: int, error: str | None) -> None: ...

    def synthesis_started(self, level: int, inputs: int, groups: int) -> None: ...

    def close(self) -> None: ...

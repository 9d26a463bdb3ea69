"""What a turn gives back, what its context providers added, and what ``/status`` shows:
the values the agent hands its callers, apart from the loop that makes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harvey.context.budget import BYTES_PER_TOKEN
from harvey.messages import ToolResult
from harvey.protocols import LLMClient, Usage

if TYPE_CHECKING:
    from harvey.chat.prompt_budget import PromptBudget


def title_of(text: str, limit: int = 60) -> str:
    """A session's title: its first prompt on one line, shortened."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class TurnOutcome:
    reply: str
    tool_results: list[ToolResult] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    chunk_analysis: bool = False
    by_harvey: bool = False  # the reply is an analysis's evidence itself: no model wrote it


@dataclass
class Gathered:
    """What the turn context providers added around a turn's prompt, besides its context."""

    after: list[str] = field(default_factory=list)  # sent after the prompt
    answer: str | None = None  # the turn's reply, no model asked
    answer_by_harvey: bool = False


@dataclass(frozen=True)
class AgentStatus:
    """What ``/status`` shows: the model, its window, the budget and the session."""

    backend: str
    endpoint: str
    model: str
    context_window: int
    context_source: str
    used_tokens: int
    plan_tokens: int
    remaining_tokens: int
    bytes_per_token: float
    calibrated: bool
    tools: bool
    session_id: str
    messages: int
    omitted_messages: int


def status_of(
    client: LLMClient, budget: PromptBudget, session_id: str, messages: int
) -> AgentStatus:
    """``/status`` of a session: its client, its budget's report, its history's size."""
    caps = budget.capabilities()
    report = budget.report()
    return AgentStatus(
        backend=client.backend,
        endpoint=client.endpoint,
        model=client.model,
        context_window=caps.context_window,
        context_source=caps.context_source,
        used_tokens=report.used,
        plan_tokens=report.injected,
        remaining_tokens=report.remaining,
        bytes_per_token=report.bytes_per_token,
        calibrated=report.bytes_per_token != BYTES_PER_TOKEN,
        tools=budget.tools_enabled(),
        session_id=session_id,
        messages=messages,
        omitted_messages=budget.fitted_history().omitted_messages,
    )


__all__ = ["AgentStatus", "Gathered", "TurnOutcome", "status_of", "title_of"]

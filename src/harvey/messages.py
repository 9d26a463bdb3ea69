"""The conversation vocabulary shared by the agent, backends, tools and store."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """A model's request to run one tool. ``id`` may be empty (Ollama sends none)."""

    id: str
    name: str
    arguments: dict[str, Any]

    def arguments_json(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Message:
    role: Role
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None  # tool name on tool messages


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned. Failures are results whose content starts ``error:``."""

    call_id: str
    name: str
    content: str

    @property
    def is_error(self) -> bool:
        return self.content.startswith("error:")

    def to_message(self) -> Message:
        return Message(role="tool", content=self.content, tool_call_id=self.call_id, name=self.name)


def split_turns(history: Sequence[Message]) -> list[list[Message]]:
    """Group messages into turns, each starting at a user message.

    Messages before the first user message (a history that starts with the
    model) form a turn of their own.
    """
    turns: list[list[Message]] = []
    for message in history:
        if message.role == "user" or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns

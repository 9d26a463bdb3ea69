"""A deterministic in-process backend for demos and tests.

Like mini-swe-agent's deterministic model: it plays back a list of replies in
order — each one text and/or tool calls — and records every conversation it
was shown, so a test can assert what the model actually saw. The same
``Reply`` type scripts the loopback fake servers in ``tests/fakes``.

A script can also come from a JSON file (``HARVEY_SCRIPT``), a list whose items
are either a string (the reply text) or an object
``{"text": "...", "tool_calls": [{"name": "read_file", "arguments": {...}}]}``.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvey.context.budget import estimate_tokens
from harvey.errors import BackendError, ConfigError
from harvey.messages import Message, ToolCall
from harvey.protocols import (
    LLMClient,
    ModelCapabilities,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    Usage,
)

CallSpec = ToolCall | tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Reply:
    """One scripted model reply: text, tool calls, or both.

    ``tool_calls`` accepts ``ToolCall`` objects or ``(name, arguments)`` pairs;
    pairs get ids ``call_<n>`` in script order. Token counts default to
    ``harvey.context.budget.estimate_tokens`` of what was sent and received:
    the one estimate Harvey has, so the budget and the backend agree on counts.
    """

    text: str = ""
    tool_calls: Sequence[CallSpec] = ()
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def calls(self, first_id: int = 0) -> list[ToolCall]:
        out: list[ToolCall] = []
        for offset, spec in enumerate(self.tool_calls):
            if isinstance(spec, ToolCall):
                out.append(spec)
            else:
                name, arguments = spec
                out.append(ToolCall(f"call_{first_id + offset}", name, dict(arguments)))
        return out

    def chunks(self) -> list[str]:
        """The text split the way a server streams it: word by word."""
        return re.findall(r"\S+\s*|\s+", self.text)


def as_reply(item: Reply | str) -> Reply:
    return Reply(text=item) if isinstance(item, str) else item


def reply_from_json(item: Any) -> Reply:
    if isinstance(item, str):
        return Reply(text=item)
    if not isinstance(item, dict):
        raise ValueError(f"a reply must be a string or an object, not {type(item).__name__}")
    calls: list[CallSpec] = []
    for call in item.get("tool_calls") or []:
        calls.append((str(call["name"]), dict(call.get("arguments") or {})))
    return Reply(
        text=str(item.get("text", "")),
        tool_calls=tuple(calls),
        prompt_tokens=item.get("prompt_tokens"),
        completion_tokens=item.get("completion_tokens"),
    )


def load_script(path: str | Path) -> list[Reply]:
    """Read a JSON script file (see the module docstring)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise ValueError("the top level must be a list of replies")
        return [reply_from_json(item) for item in data]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"scripted backend: cannot load script {path}: {exc}") from exc


@dataclass
class _Script:
    """The state shared by a client and its ``with_model`` views."""

    replies: list[Reply]
    seen: list[Seen] = field(default_factory=list)
    next: int = 0
    call_ids: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Seen:
    """One request the scripted model received."""

    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)


class ScriptedClient:
    """Plays back ``replies`` in order; raises ``BackendError`` when they run out."""

    backend = "scripted"
    endpoint = "scripted"

    def __init__(
        self,
        replies: Iterable[Reply | str],
        *,
        model: str = "scripted",
        context_window: int = 8192,
        supports_tools: bool = True,
    ) -> None:
        self.model = model
        self._script = _Script([as_reply(r) for r in replies])
        self._caps = ModelCapabilities(context_window, supports_tools, "scripted", "scripted")

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> ScriptedClient:
        return cls(load_script(path), **kwargs)

    @property
    def replies(self) -> list[Reply]:
        return self._script.replies

    @property
    def seen(self) -> list[Seen]:
        """Every request received, oldest first (deep copies of the messages)."""
        return self._script.seen

    @property
    def remaining(self) -> int:
        return len(self._script.replies) - self._script.next

    def add(self, *replies: Reply | str) -> None:
        """Append more replies to the script."""
        with self._script.lock:
            self._script.replies.extend(as_reply(r) for r in replies)

    def stream_chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        response_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        # The script's replies stand for any output, structured or not.
        # Take the reply now, not lazily, so concurrent callers get distinct ones.
        script = self._script
        with script.lock:
            seen = Seen(copy.deepcopy(list(messages)), copy.deepcopy(list(tools or [])))
            script.seen.append(seen)
            if script.next >= len(script.replies):
                raise BackendError(
                    f"scripted backend: the script has only {len(script.replies)} replies "
                    f"and request {script.next + 1} asked for another"
                )
            reply = script.replies[script.next]
            script.next += 1
            calls = reply.calls(script.call_ids)
            script.call_ids += len(reply.tool_calls)
        prompt = reply.prompt_tokens
        if prompt is None:
            prompt = sum(estimate_tokens(m.content) for m in messages)
        completion = reply.completion_tokens
        if completion is None:
            completion = estimate_tokens(reply.text) + sum(
                estimate_tokens(c.arguments_json()) for c in calls
            )
        return self._events(reply, calls, Usage(prompt, completion))

    @staticmethod
    def _events(reply: Reply, calls: list[ToolCall], usage: Usage) -> Iterator[StreamEvent]:
        for chunk in reply.chunks():
            yield TextDelta(chunk)
        for call in calls:
            yield ToolCallEvent(call)
        yield usage

    @property
    def last_messages(self) -> list[Message]:
        """What the model was shown on the most recent request."""
        if not self.seen:
            raise AssertionError("the scripted model has not been called")
        return self.seen[-1].messages

    def capabilities(self) -> ModelCapabilities:
        return self._caps

    def list_models(self) -> list[str]:
        return [self.model]

    def with_model(self, model: str) -> LLMClient:
        """A view on the same script under another name (shares replies and records)."""
        other = copy.copy(self)
        other.model = model
        return other

    def close(self) -> None:
        pass

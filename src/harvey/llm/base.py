"""The small protocol every model backend implements.

A backend turns ``messages + tool schemas`` into a stream of events: text
deltas, complete tool calls, and a final usage report. Everything else
(retries, history, tools) lives above it. The few helpers every backend's
stream parser needs (tool-call ids, tolerant argument parsing) live here too,
so no backend imports another.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlparse

from harvey.messages import Message, ToolCall

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    call: ToolCall


@dataclass(frozen=True)
class Usage:
    """Token counts as reported by the server; ``None`` when it did not say."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None


StreamEvent = TextDelta | ToolCallEvent | Usage


@dataclass(frozen=True)
class ModelCapabilities:
    context_window: int
    supports_tools: bool
    context_source: str = "default"  # where context_window came from, for /status


@dataclass
class ChatResult:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


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


def token_counter_of(client: LLMClient) -> Any:
    """The client's exact token counter (a ``harvey.context.tokens.Tokenizer``) when its
    backend can count, else ``None``.

    An optional capability, not part of the protocol: a backend offers it by
    defining ``token_counter()`` (the embedded model, llama.cpp-family servers).
    """
    method = getattr(client, "token_counter", None)
    return method() if callable(method) else None


def map_client_of(client: LLMClient) -> LLMClient:
    """The client a chunked analysis makes its map calls with: ``client`` itself, or
    the variant its backend offers for them.

    An optional capability, like ``token_counter``: a backend defines
    ``for_map_calls()`` when a map reply should differ from a chat reply (the
    embedded model caps it, ``harvey.llm.local.MAP_REPLY_TOKENS``).
    """
    method = getattr(client, "for_map_calls", None)
    variant = method() if callable(method) else None
    return variant if isinstance(variant, LLMClient) else client


def parse_arguments(raw: Any, name: str) -> dict[str, Any]:
    """Tool arguments as a dict. Some servers send a JSON string instead of an
    object; text that is not a JSON object becomes ``{}`` (logged) so the tool
    answers with a missing-argument error the model can correct, rather than
    the whole turn failing."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    log.warning("tool call %s: arguments are not a JSON object, passing {}: %r", name, raw)
    return {}


def new_call_id() -> str:
    """A tool call id for servers that send none (Ollama): Harvey needs one to pair results."""
    return f"call_{uuid.uuid4().hex[:12]}"


def chat(
    client: LLMClient,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] | None = None,
    on_text: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
    *,
    response_schema: dict[str, Any] | None = None,
) -> ChatResult:
    """Drain a stream into a ChatResult, calling ``on_text`` for each delta.

    ``response_schema`` (a JSON schema) asks for structured output, which each
    backend maps to its own wire format; it is passed only when given, so a
    client written before it existed still works for ordinary chat.

    Setting ``cancel`` stops reading at the next event; the caller decides what
    a cancelled turn means (usually: raise ``Cancelled``).
    """
    from harvey.errors import Cancelled
    from harvey.llm import metering

    result = ChatResult()
    parts: list[str] = []
    if response_schema is None:
        stream = client.stream_chat(messages, tools)
    else:
        stream = client.stream_chat(messages, tools, response_schema=response_schema)
    try:
        for event in stream:
            if cancel is not None and cancel.is_set():
                raise Cancelled("cancelled")
            if isinstance(event, TextDelta):
                parts.append(event.text)
                if on_text is not None:
                    on_text(event.text)
            elif isinstance(event, ToolCallEvent):
                result.tool_calls.append(event.call)
            elif isinstance(event, Usage):
                result.usage = event
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    result.text = "".join(parts)
    if metering.meters:  # harvey run --output-format json: what the run cost
        metering.observe(messages, result)
    return result


def is_remote_endpoint(endpoint: str) -> bool:
    """True when computation happens on another machine (EXT. scenes).

    The embedded model and loopback hosts are local; anything else is remote.
    """
    if endpoint in ("", "embedded", "scripted"):
        return False
    host = urlparse(endpoint if "://" in endpoint else f"http://{endpoint}").hostname or ""
    if host in ("localhost", "localhost.localdomain"):
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True

"""The Ollama backend: ``/api/chat`` (NDJSON streaming), ``/api/show``, ``/api/tags``.

Wire-format notes that shaped this module:

* ``/api/chat`` streams one JSON object per line. Text arrives in
  ``message.content``; tool calls arrive whole in ``message.tool_calls`` with
  ``arguments`` as a JSON *object*; the last line has ``"done": true`` and the
  token counts ``prompt_eval_count`` / ``eval_count``. A stream that ends
  without that line was cut off.
* Errors mid-stream come as a line ``{"error": "..."}``.
* The context window is ``num_ctx`` when configured (it is then sent as
  ``options.num_ctx``); otherwise the model's trained length, read from the
  ``model_info`` key ending in ``.context_length`` of ``/api/show``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from harvey.errors import StreamError
from harvey.llm.base import (
    LLMClient,
    ModelCapabilities,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from harvey.llm.http import Endpoint, HttpTransport, Sleep, malformed, truncated
from harvey.messages import Message, ToolCall
from harvey.redact import active

log = logging.getLogger(__name__)

FALLBACK_CONTEXT = 4096  # when /api/show reports no context length at all


def to_wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Harvey messages → Ollama chat messages (tool arguments stay objects), redacted
    of secrets like the OpenAI ``to_wire``."""
    wire: list[dict[str, Any]] = []
    scrub = active()
    for msg in messages:
        item: dict[str, Any] = {"role": msg.role, "content": scrub.redact(msg.content)}
        if msg.tool_calls:
            item["tool_calls"] = [
                {"function": {"name": c.name, "arguments": scrub.redact_data(c.arguments)}}
                for c in msg.tool_calls
            ]
        if msg.role == "tool" and msg.name:
            item["tool_name"] = msg.name
        wire.append(item)
    return wire


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
    """Ollama sends no tool call ids; Harvey needs one to pair results."""
    return f"call_{uuid.uuid4().hex[:12]}"


class OllamaClient:
    """One model on one Ollama server."""

    backend = "ollama"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        num_ctx: int | None = None,
        timeout: float = 120.0,
        connect_timeout: float = 5.0,
        retries: int = 3,
        sleep: Sleep = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.endpoint = base_url.rstrip("/")
        self.model = model
        self.num_ctx = num_ctx
        self._timeout, self._connect_timeout = timeout, connect_timeout
        self._retries, self._sleep, self._transport_arg = retries, sleep, transport
        self.http = HttpTransport(
            Endpoint(
                "Ollama",
                self.endpoint,
                "is `ollama serve` running? Set OLLAMA_HOST or --base-url",
                f"run `harvey models` to list the models it has, or `ollama pull {model}`",
            ),
            transport=transport,
            timeout=timeout,
            connect_timeout=connect_timeout,
            retries=retries,
            sleep=sleep,
        )
        self._caps: ModelCapabilities | None = None
        self._caps_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OllamaClient({self.endpoint!r}, {self.model!r})"

    def stream_chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> Iterator[StreamEvent]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire(messages),
            "stream": True,
        }
        if tools:
            payload["tools"] = list(tools)
        if self.num_ctx is not None:
            payload["options"] = {"num_ctx": self.num_ctx}
        return self._events(payload)

    def _events(self, payload: dict[str, Any]) -> Iterator[StreamEvent]:
        where = self.http.endpoint
        watch = self.http.progress_watch()  # blank keep-alive lines are not progress
        for line in self.http.stream_lines("/api/chat", payload, model=self.model):
            if not line.strip():
                watch.check()
                continue
            try:
                data = json.loads(line)
            except ValueError as exc:
                raise malformed(where, line) from exc
            if not isinstance(data, dict):
                raise malformed(where, line)
            if "error" in data:
                raise StreamError(f"{where.where} reported an error mid-stream: {data['error']}")
            try:  # a JSON line of the wrong shape is a malformed stream, not a crash
                message = data.get("message") or {}
                content = message.get("content")
                if content:
                    yield TextDelta(str(content))
                for call in message.get("tool_calls") or []:
                    function = call.get("function") or {}
                    name = str(function.get("name", ""))
                    yield ToolCallEvent(
                        ToolCall(
                            id=str(call.get("id") or new_call_id()),
                            name=name,
                            arguments=parse_arguments(function.get("arguments"), name),
                        )
                    )
                if data.get("done"):
                    yield Usage(data.get("prompt_eval_count"), data.get("eval_count"))
                    return
                moved = content or message.get("tool_calls") or message.get("thinking")
            except (AttributeError, TypeError) as exc:
                raise malformed(where, line) from exc
            if moved:
                watch.progress()
            else:
                watch.check()  # a line with nothing new in it is not progress
        raise truncated(where, 'the final "done" line')

    def capabilities(self) -> ModelCapabilities:
        """Computed once per client from ``/api/show`` (and ``num_ctx``)."""
        with self._caps_lock:
            if self._caps is None:
                self._caps = self._probe_capabilities()
            return self._caps

    def _probe_capabilities(self) -> ModelCapabilities:
        info = self.http.request_json("POST", "/api/show", {"model": self.model}, model=self.model)
        if not isinstance(info, dict):
            info = {}
        trained: int | None = None
        for key, value in (info.get("model_info") or {}).items():
            if key.endswith(".context_length") and isinstance(value, int):
                trained = value
                break
        caps = info.get("capabilities")
        if isinstance(caps, list):
            tools = "tools" in caps
        else:  # older servers: the chat template mentions .Tools when tools work
            tools = ".Tools" in str(info.get("template", ""))
        if self.num_ctx is not None:
            return ModelCapabilities(self.num_ctx, tools, "num_ctx (config)")
        if trained is not None:
            return ModelCapabilities(trained, tools, "model (/api/show)")
        return ModelCapabilities(FALLBACK_CONTEXT, tools, "default (server did not say)")

    def list_models(self) -> list[str]:
        data = self.http.request_json("GET", "/api/tags")
        models = data.get("models") if isinstance(data, dict) else None
        return [str(m.get("name") or m.get("model")) for m in models or [] if isinstance(m, dict)]

    def with_model(self, model: str) -> LLMClient:
        return OllamaClient(
            self.endpoint,
            model,
            num_ctx=self.num_ctx,
            timeout=self._timeout,
            connect_timeout=self._connect_timeout,
            retries=self._retries,
            sleep=self._sleep,
            transport=self._transport_arg,
        )

    def close(self) -> None:
        self.http.close()

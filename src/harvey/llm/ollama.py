"""The Ollama backend: ``/api/chat`` (NDJSON streaming), ``/api/show``, ``/api/tags``.

Wire-format notes that shaped this module:

* ``/api/chat`` streams one JSON object per line. Text arrives in
  ``message.content``; tool calls arrive whole in ``message.tool_calls`` with
  ``arguments`` as a JSON *object*; the last line has ``"done": true`` and the
  token counts ``prompt_eval_count`` / ``eval_count``. A stream that ends
  without that line was cut off.
* Errors mid-stream come as a line ``{"error": "..."}``.
* The context window is ``num_ctx`` when configured; otherwise the model's
  trained length, read from the ``model_info`` key ending in
  ``.context_length`` of ``/api/show``, capped at ``MAX_DEFAULT_CTX``. It is
  always sent as ``options.num_ctx``: Ollama's own default is smaller than
  most models' training and it *truncates* a longer prompt silently, so the
  window Harvey budgets for must be the one the server uses.
* After each answer ``prompt_eval_count`` is compared with the prompt sent: a
  prompt estimated over the window that the server counted well under is a
  silent truncation, and is logged as a warning (``truncation_warning``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any, Unpack

from harvey.context.budget import estimate_tokens
from harvey.errors import StreamError
from harvey.llm import wire
from harvey.llm.base import new_call_id, parse_arguments
from harvey.llm.http import Endpoint, malformed
from harvey.llm.http_client import HttpClient, HttpOptions
from harvey.llm.reply_bounds import MAX_REPLY_CHARS, reply_too_long
from harvey.messages import Message, ToolCall
from harvey.protocols import (
    Finish,
    ModelCapabilities,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    Usage,
    token_count,
)
from harvey.redact import active

FALLBACK_CONTEXT = 4096  # when /api/show reports no context length at all
# Without num_ctx configured, a model trained on 128k tokens is run at this (the KV
# cache of the whole trained length would not fit most machines); set num_ctx for more.
MAX_DEFAULT_CTX = 32768
# A prompt estimated over the window that the server counted below this share of: truncated.
TRUNCATED_SHARE = 0.9

log = logging.getLogger(__name__)


def truncation_warning(sent_tokens: int, counted: int | None, num_ctx: int) -> str | None:
    """The warning when Ollama evaluated fewer tokens than the prompt held, else ``None``.

    Only a prompt estimated over ``num_ctx`` counts: a prompt that fits may
    legitimately report fewer (Ollama does not re-evaluate a cached prefix).
    """
    if counted is None or sent_tokens <= num_ctx or counted >= sent_tokens * TRUNCATED_SHARE:
        return None
    return (
        f"Ollama evaluated {counted:,} prompt tokens of about {sent_tokens:,} sent: it truncated "
        f"the prompt to its {num_ctx:,}-token context (num_ctx); the model did not see all of it"
    )


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


class OllamaClient(HttpClient):
    """One model on one Ollama server."""

    backend = "ollama"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        num_ctx: int | None = None,
        **options: Unpack[HttpOptions],
    ) -> None:
        self.num_ctx = num_ctx
        super().__init__(base_url, model, **options)

    def _endpoint(self) -> Endpoint:
        return Endpoint(
            "Ollama",
            self.endpoint,
            "is `ollama serve` running? Set OLLAMA_HOST or --base-url",
            f"run `harvey models` to list the models it has, or `ollama pull {self.model}`",
        )

    def _own_settings(self) -> dict[str, Any]:
        return {"num_ctx": self.num_ctx}

    def stream_chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        response_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        payload = self._payload(messages, tools)
        if response_schema is not None:
            payload["format"] = response_schema  # Ollama: the schema itself
        return self._events(payload)

    def _payload(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire(messages),
            "stream": True,
        }
        if tools:
            payload["tools"] = list(tools)
        payload["options"] = {"num_ctx": self.capabilities().context_window}
        return payload

    def _events(self, payload: dict[str, Any]) -> Iterator[StreamEvent]:
        where = self.http.endpoint
        watch = self.http.progress_watch()  # blank keep-alive lines are not progress
        thought = 0  # characters of thinking, which no TextDelta counts
        for line in self.http.stream_lines("/api/chat", payload, model=self.model):
            if not line.strip():
                watch.check()
                continue
            try:
                data = wire.loads(line)
            except ValueError as exc:
                raise malformed(where, line) from exc
            if not isinstance(data, dict):
                raise malformed(where, line)
            if "error" in data:
                from harvey.llm.too_long import too_long_error  # compiled on an error only

                too_long = too_long_error(where.where, str(data["error"]))
                if too_long is not None:
                    raise too_long
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
                    self._check_truncation(payload, data.get("prompt_eval_count"))
                    yield Finish(str(data.get("done_reason") or "stop"))
                    yield Usage(data.get("prompt_eval_count"), data.get("eval_count"))
                    return
                moved = content or message.get("tool_calls") or message.get("thinking")
                thought += len(str(message.get("thinking") or ""))
                if thought > MAX_REPLY_CHARS:  # thinking that never ends is a reply too
                    raise reply_too_long()
            except (AttributeError, TypeError) as exc:
                raise malformed(where, line) from exc
            if moved:
                watch.progress()
            else:
                watch.check()  # a line with nothing new in it is not progress
        # The connection closed before the ``done`` line: a stream that ended early, which
        # ``chat()`` asks for once more or reports.
        yield Finish(None)

    def _check_truncation(self, payload: dict[str, Any], counted: Any) -> None:
        sent = sum(estimate_tokens(str(m.get("content") or "")) for m in payload["messages"])
        num_ctx = int(payload["options"]["num_ctx"])
        warning = truncation_warning(sent, counted if isinstance(counted, int) else None, num_ctx)
        if warning is not None:
            log.warning("%s", warning)

    def _probe_capabilities(self) -> ModelCapabilities:
        """From ``/api/show``, with a configured ``num_ctx`` taking precedence."""
        info = self.http.request_json("POST", "/api/show", {"model": self.model}, model=self.model)
        if not isinstance(info, dict):
            info = {}
        trained: int | None = None
        model_info = info.get("model_info")
        for key, value in (model_info if isinstance(model_info, dict) else {}).items():
            if str(key).endswith(".context_length"):
                trained = token_count(value) or None  # a server's number, whole and positive
                break
        caps = info.get("capabilities")
        found = "template"  # Ollama's capabilities come from the model's template too
        if isinstance(caps, list):
            tools = "tools" in caps
        elif str(info.get("template", "")).strip():  # older servers: the template says
            tools = ".Tools" in str(info.get("template", ""))
        else:
            tools, found = True, "assumed"
        if self.num_ctx is not None:
            return ModelCapabilities(self.num_ctx, tools, "num_ctx (config)", found)
        if trained is not None and trained > MAX_DEFAULT_CTX:
            source = (
                f"model (/api/show: trained {trained:,}; sent as num_ctx, set num_ctx for more)"
            )
            return ModelCapabilities(MAX_DEFAULT_CTX, tools, source, found)
        if trained is not None:
            return ModelCapabilities(trained, tools, "model (/api/show; sent as num_ctx)", found)
        return ModelCapabilities(FALLBACK_CONTEXT, tools, "default (server did not say)", found)

    def list_models(self) -> list[str]:
        data = self.http.request_json("GET", "/api/tags")
        models = data.get("models") if isinstance(data, dict) else None
        return [str(m.get("name") or m.get("model")) for m in models or [] if isinstance(m, dict)]

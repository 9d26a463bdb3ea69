"""The OpenAI-compatible backend: ``/chat/completions`` (SSE), ``/models``, ``/props``.

One class serves OpenAI itself, llama.cpp's server, llama-cpp-python's server,
vLLM and LM Studio: they differ only in configuration (base URL, key, model).

Wire-format notes:

* The base URL includes the version prefix (``http://host:8080/v1``), the
  convention of ``OPENAI_BASE_URL``.
* Streaming is Server-Sent Events: ``data: {chunk}`` lines and a final
  ``data: [DONE]``. Without ``[DONE]`` the stream was cut off.
* Tool calls arrive in fragments keyed by ``index``: the first fragment
  carries ``id`` and ``function.name``, later ones append to
  ``function.arguments`` (a JSON *string*). A call is complete when the choice
  reports a ``finish_reason`` or the stream ends. Arguments that do not parse
  as a JSON object become ``{}`` (and a log warning) — the tool then answers
  with a missing-argument error the model can correct, instead of the whole
  turn failing on a small model's sloppy JSON.
* Usage comes in a last chunk with empty ``choices`` when the request asks for
  ``stream_options: {"include_usage": true}``.
* The context window is configuration when given, else llama.cpp's ``/props``
  ``n_ctx`` (at the server root, not under ``/v1``), else ``DEFAULT_CONTEXT``.
  ``/props`` is asked once either way: its chat template says whether the model
  calls tools, and its answering says the server is llama.cpp's, which then gets
  ``cache_prompt`` and a session's ``id_slot`` (``harvey.llm.prompt_cache``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

from harvey.errors import BackendError, StreamError
from harvey.llm import prompt_cache, wire
from harvey.llm.base import MAX_SLOTS, STREAM_DROPPED_HINT, new_call_id, parse_arguments
from harvey.llm.http import Endpoint, malformed, server_root
from harvey.llm.http_client import HttpClient, HttpOptions
from harvey.llm.reply_bounds import (
    MAX_ARGUMENT_CHARS,
    MAX_NAME_CHARS,
    MAX_REPLY_CHARS,
    MAX_TOOL_CALLS,
    arguments_too_long,
    name_too_long,
    reply_too_long,
    too_many_calls,
)
from harvey.messages import Message, ToolCall
from harvey.protocols import (
    Finish,
    ModelCapabilities,
    StreamEvent,
    TextDelta,
    Tokenizer,
    ToolCallEvent,
    Usage,
    token_count,
)
from harvey.redact import redact

log = logging.getLogger(__name__)

DEFAULT_CONTEXT = 8192  # stated in /status as "default" when the server does not say
DUMMY_API_KEY = "sk-no-key-required"  # local servers ignore it; the header must exist


def to_wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Harvey messages → OpenAI chat messages (tool arguments as JSON strings).

    The last line of defence for secrets: everything sent to a model is redacted
    here, whatever path (tool, /read, chunked analysis) put it in the history."""
    wire: list[dict[str, Any]] = []
    for msg in messages:
        item: dict[str, Any] = {"role": msg.role, "content": redact(msg.content)}
        if msg.tool_calls:
            item["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": redact(c.arguments_json())},
                }
                for c in msg.tool_calls
            ]
        if msg.role == "tool":
            item["tool_call_id"] = msg.tool_call_id or ""
            if msg.name:
                item["name"] = msg.name
        wire.append(item)
    return wire


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""

    def finish(self) -> ToolCall:
        return ToolCall(
            self.id or new_call_id(), self.name, parse_arguments(self.arguments, self.name)
        )


class _Assembler:
    """Collects tool-call fragments by index and releases complete calls."""

    def __init__(self) -> None:
        self.pending: dict[int, _PartialCall] = {}
        self._last_index = -1

    def add(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        if not isinstance(index, int):
            # A server that omits index: a new id starts a new call.
            new_id = fragment.get("id")
            current = self.pending.get(self._last_index)
            same = current is not None and (not new_id or new_id == current.id)
            index = self._last_index if same else self._last_index + 1
        self._last_index = index
        call = self.pending.setdefault(index, _PartialCall())
        if fragment.get("id"):
            call.id = str(fragment["id"])
        function = fragment.get("function") or {}
        name = str(function.get("name") or "")
        if name and name != call.name:  # most servers send it once; a few repeat or split it
            call.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # some servers send the object itself
            arguments = json.dumps(arguments)
        if arguments:
            call.arguments += str(arguments)
        if len(call.arguments) > MAX_ARGUMENT_CHARS:  # before it is ever parsed or held more
            raise arguments_too_long(call.name)
        if len(call.name) > MAX_NAME_CHARS:  # a name sent again and again is appended
            raise name_too_long()
        if len(self.pending) > MAX_TOOL_CALLS:
            raise too_many_calls()

    def drain(self) -> list[ToolCall]:
        calls = [self.pending[i].finish() for i in sorted(self.pending)]
        self.pending.clear()
        return calls


PROPS_TIMEOUT = 5.0  # seconds for llama.cpp's /props probe


def _refused_then(
    events: Iterator[StreamEvent],
    refused: Callable[[BackendError], bool],
    again: Callable[[BackendError], Iterator[StreamEvent]],
) -> Iterator[StreamEvent]:
    """A request's events; when the server ``refused`` it before the first event, the
    events of ``again`` instead (a form or a field it does not take, asked once more
    without it)."""
    started = False
    try:
        for event in events:
            started = True
            yield event
    except BackendError as exc:
        if started or not refused(exc):
            raise
        yield from again(exc)


# Delta fields whose arrival is progress (text, and the reasoning some servers stream first).
_REASONING_FIELDS = ("reasoning_content", "reasoning")
_PROGRESS_FIELDS = ("content", *_REASONING_FIELDS)


class OpenAIClient(HttpClient):
    """One model on one OpenAI-compatible server."""

    backend = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        context_window: int | None = None,
        **options: Unpack[HttpOptions],
    ) -> None:
        self.context_window = context_window
        self._props_answered: bool | None = None  # llama.cpp's /props, once it was asked
        self._template_tools = True  # False once /props shows a chat template without tools
        self._tools_source = "assumed"  # "template" once /props showed one
        self._props_slots: int | None = None  # /props total_slots
        self._props_n_ctx: int | None = None
        self._pins = prompt_cache.SlotPins()  # a chat session's llama.cpp slot
        self._schema_form: str | None = None  # the response_format a schema went through
        super().__init__(base_url, model, **options)

    def _endpoint(self) -> Endpoint:
        return Endpoint(
            "the OpenAI-compatible server",
            self.endpoint,
            "is the server running? Set OPENAI_BASE_URL or --base-url",
            dropped_hint=STREAM_DROPPED_HINT,
        )

    def _headers(self) -> dict[str, str]:
        """Always a Bearer header: local servers ignore it, but some insist it exists."""
        key = self.api_key.get_secret_value() if self.api_key else DUMMY_API_KEY
        return {"Authorization": f"Bearer {key}"}

    def _own_settings(self) -> dict[str, Any]:
        return {"context_window": self.context_window}

    def stream_chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        response_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        payload = self._payload(messages, tools)
        if response_schema is not None:
            return self._schema_events(payload, response_schema)
        return self._send(payload)

    def _send(self, payload: dict[str, Any]) -> Iterator[StreamEvent]:
        if "id_slot" in payload:
            return self._pinned_events(payload)
        return self._events(payload)

    def _schema_events(
        self, payload: dict[str, Any], schema: dict[str, Any]
    ) -> Iterator[StreamEvent]:
        """A reply held to ``schema``: OpenAI's ``json_schema`` form (llama.cpp's server and
        Ollama take it too), or llama-cpp-python's ``json_object`` with a ``schema`` for a
        server that refused the first with an HTTP error before any reply (its validation
        knows only ``text`` and ``json_object``). The form that worked is kept."""
        if self._schema_form == "json_object":
            payload["response_format"] = {"type": "json_object", "schema": schema}
            yield from self._send(payload)
            return
        payload["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema},
        }

        def refused(exc: BackendError) -> bool:
            status = getattr(exc, "status", None)
            return self._schema_form != "json_schema" and status in (400, 422, 500)

        def as_json_object(exc: BackendError) -> Iterator[StreamEvent]:
            log.info("%s refused response_format json_schema (%s); asking with json_object",
                     self.endpoint, exc)  # fmt: skip
            payload["response_format"] = {"type": "json_object", "schema": schema}
            for event in self._send(payload):
                self._schema_form = "json_object"
                yield event

        yield from _refused_then(self._send(payload), refused, as_json_object)
        if self._schema_form is None:
            self._schema_form = "json_schema"

    def _llama_cpp_slots(self) -> tuple[bool, int | None]:
        """Whether the server is llama.cpp's, and its slots, from what was already asked
        (``/props`` here, ``/slots`` by capacity discovery or the pool): never a probe."""
        if self._props_answered:  # its /props: total_slots, else what its /slots listed
            if self._props_slots is not None:
                return True, self._props_slots
            return True, prompt_cache.known_slots(self.endpoint)
        slots = prompt_cache.known_slots(self.endpoint)  # /slots told capacity or the pool
        return slots is not None, slots

    def _pinned_events(self, payload: dict[str, Any]) -> Iterator[StreamEvent]:
        """The stream of a request naming a slot; a server that refuses the slot is asked
        once more without it, and this client names none again."""

        def without_slot(exc: BackendError) -> Iterator[StreamEvent]:
            log.info("%s refused slot %s (%s); asking without one", self.endpoint,
                     payload["id_slot"], exc)  # fmt: skip
            self._pins.refused = True
            yield from self._events(prompt_cache.without_slot(payload))

        yield from _refused_then(self._events(payload), prompt_cache.slot_refused, without_slot)

    def _payload(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            payload["tools"] = list(tools)
        llama_cpp, slots = self._llama_cpp_slots()
        if llama_cpp:
            payload["cache_prompt"] = True
            if slots is not None and slots >= 2:  # one slot: no choice to make
                payload.update(self._pins.slot_field(slots))
        return payload

    def _events(self, payload: dict[str, Any]) -> Iterator[StreamEvent]:
        where = self.http.endpoint
        assembler = _Assembler()
        usage = Usage()
        finish: str | None = None  # llama-cpp-python ends an interrupted stream without one
        watch = self.http.progress_watch()  # keep-alives are not progress
        thought = 0  # characters of reasoning, which no TextDelta counts
        for line in self.http.stream_lines("chat/completions", payload, model=self.model):
            if not line.strip() or line.startswith(":"):
                watch.check()
                continue  # keep-alive blank lines and SSE comments
            if not line.startswith("data:"):
                if line.split(":", 1)[0] in ("event", "id", "retry"):
                    watch.check()
                    continue
                raise malformed(where, line)
            data_text = line[len("data:") :].strip()
            if data_text == "[DONE]":
                yield from (ToolCallEvent(c) for c in assembler.drain())
                yield Finish(finish)
                yield usage
                return
            try:
                chunk = wire.loads(data_text)
            except ValueError as exc:
                raise malformed(where, line) from exc
            if not isinstance(chunk, dict):
                raise malformed(where, line)
            try:  # a JSON chunk of the wrong shape is a malformed stream, not a crash
                if chunk.get("error"):
                    err = chunk["error"]
                    text = err.get("message", err) if isinstance(err, dict) else err
                    raise StreamError(f"{where.where} reported an error mid-stream: {text}")
                if isinstance(chunk.get("usage"), dict):
                    usage = Usage(
                        chunk["usage"].get("prompt_tokens"), chunk["usage"].get("completion_tokens")
                    )
                moved = False
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or choice.get("message") or {}
                    if delta.get("content"):
                        yield TextDelta(str(delta["content"]))
                    for fragment in delta.get("tool_calls") or []:
                        if isinstance(fragment, dict):
                            assembler.add(fragment)
                            moved = True
                    if choice.get("finish_reason"):
                        finish = str(choice["finish_reason"])
                        yield from (ToolCallEvent(c) for c in assembler.drain())
                    moved = moved or any(delta.get(k) for k in _PROGRESS_FIELDS)
                    thought += sum(len(str(delta.get(k) or "")) for k in _REASONING_FIELDS)
                    if thought > MAX_REPLY_CHARS:  # reasoning that never ends is a reply too
                        raise reply_too_long()
                    moved = moved or bool(choice.get("finish_reason"))
            except (AttributeError, TypeError) as exc:
                raise malformed(where, line) from exc
            if moved:
                watch.progress()
            else:
                watch.check()  # an empty delta, a role, usage alone: not a token
        # The connection closed before ``[DONE]``: a stream that ended early, which
        # ``chat()`` asks for once more or reports, like one that ended without a reason.
        yield from (ToolCallEvent(c) for c in assembler.drain())
        yield Finish(None)
        yield usage

    def _probe_capabilities(self) -> ModelCapabilities:
        """Configuration, else llama.cpp's ``/props``, else ``DEFAULT_CONTEXT``; tool support
        from the chat template ``/props`` shows (asked in every case), else assumed."""
        self._read_props()
        tools, found = self._template_tools, self._tools_source
        if self.context_window is not None:
            return ModelCapabilities(self.context_window, tools, "context_window (config)", found)
        if self._props_n_ctx is not None:
            return ModelCapabilities(self._props_n_ctx, tools, "server (/props n_ctx)", found)
        return ModelCapabilities(
            DEFAULT_CONTEXT,
            tools,
            f"default {DEFAULT_CONTEXT} (set context_window in harvey.yaml)",
            found,
        )

    def _read_props(self) -> None:
        """llama.cpp's ``/props``; other servers 404, which just means "unknown"."""
        try:
            # a probe: a hung server must not hold start-up for the whole read timeout
            props = self.http.request_json(
                "GET", server_root(self.endpoint) + "/props", retries=0, timeout=PROPS_TIMEOUT
            )
        except BackendError:
            self._props_answered = False
            return
        self._props_answered = isinstance(props, dict)
        if not isinstance(props, dict):
            return
        caps = props.get("chat_template_caps")
        template = props.get("chat_template")
        if isinstance(caps, dict) and isinstance(caps.get("supports_tools"), bool):
            self._template_tools, self._tools_source = caps["supports_tools"], "template"
        elif isinstance(template, str) and template.strip():
            # a template that never mentions tools renders none: the model was not
            # trained to call them natively (found out, not assumed)
            self._template_tools, self._tools_source = "tool" in template, "template"
        slots = token_count(props.get("total_slots"))
        if slots:  # a server's claim, bounded: it sizes how many requests Harvey sends at once
            self._props_slots = min(slots, MAX_SLOTS)
        settings = props.get("default_generation_settings")
        for source in (settings if isinstance(settings, dict) else {}, props):
            value = token_count(source.get("n_ctx"))
            if value:
                self._props_n_ctx = value
                return

    def token_counter(self) -> Tokenizer | None:
        """llama.cpp's ``/tokenize`` or llama-cpp-python's ``/extras/tokenize/count``,
        probed once per client, when first needed; ``None`` (estimate) for servers with
        neither. Only what the server can be is asked (``counting_kinds``): nothing of a
        hosted API, one probe of a server ``/props`` told apart."""
        with self._caps_lock:
            if not hasattr(self, "_tokenizer"):
                from harvey.llm.counting import counting_kinds, probe_server

                kinds = counting_kinds(self.endpoint, self._props_answered)
                root = server_root(self.endpoint)
                found = probe_server(self.http, root, self.model, kinds) if kinds else None
                self._tokenizer = found
            return self._tokenizer

    def list_models(self) -> list[str]:
        data = self.http.request_json("GET", "models")
        items = data.get("data") if isinstance(data, dict) else None
        return [str(m["id"]) for m in items or [] if isinstance(m, dict) and "id" in m]

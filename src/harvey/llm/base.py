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
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlparse

from harvey.llm import wire
from harvey.messages import Message, ToolCall
from harvey.protocols import ChatResult, Finish, LLMClient, TextDelta, ToolCallEvent, Usage

log = logging.getLogger(__name__)


#: The most parallel slots Harvey believes a server has (it sends that many requests at once).
MAX_SLOTS = 64
# What a server that takes a request and ends it unanswered most often means, locally.
STREAM_DROPPED_HINT = (
    "check the server's log; llama-cpp-python's server does this when a prompt is longer "
    "than its window (--n_ctx, 2048 unless started with more): set context_window in "
    "harvey.yaml to that"
)
NOTHING_STREAMED = "stream ended early, before any reply"


def token_counter_of(client: LLMClient) -> Any:
    """The client's exact token counter (a ``harvey.protocols.Tokenizer``) when its
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
            value = wire.loads(raw)
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
    """Drain a stream into a ChatResult, calling ``on_text`` with what may be shown.

    ``response_schema`` (a JSON schema) asks for structured output, which each
    backend maps to its own wire format; it is passed only when given, so a
    client written before it existed still works for ordinary chat.

    A free-text reply goes through the loop guard (``harvey.llm.repetition``):
    shown a sentence or line at a time, cut — the stream closed, so the server
    stops — when it starts repeating itself, and ended at its last whole
    sentence when the token cap cut it. An empty reply, or one whose stream
    closed without a finish reason, is asked for once more when nothing of it
    was shown, and is otherwise a ``StreamError`` (``empty reply``, ``stream
    ended early``): never a result.

    Setting ``cancel`` stops reading at the next event; the caller decides what
    a cancelled turn means (usually: raise ``Cancelled``).
    """
    from harvey.errors import StreamError

    problem = ""
    for attempt in range(2):
        result, problem, shown = _drain(client, messages, tools, on_text, cancel, response_schema)
        if not problem:
            return result
        if shown or attempt:
            break
        log.info("%s from %s (%s); asking once more", problem, client.model, client.endpoint)
    where = f"{client.model} at {client.endpoint}"
    hint = f" — {STREAM_DROPPED_HINT}" if problem == NOTHING_STREAMED else ""
    raise StreamError(f"{problem} from {where}" + ("" if shown else " (asked twice)") + hint)


def _drain(
    client: LLMClient,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] | None,
    on_text: Callable[[str], None] | None,
    cancel: threading.Event | None,
    response_schema: dict[str, Any] | None,
) -> tuple[ChatResult, str, bool]:
    """One request: its result, what was wrong with it ("" if nothing) and whether
    any of it was shown."""
    from harvey.errors import Cancelled
    from harvey.llm import metering, reply_bounds
    from harvey.llm.repetition import ReplyGuard, note_separator

    result = ChatResult()
    guard = ReplyGuard() if response_schema is None else None
    parts: list[str] = []
    finish: Finish | None = None
    deltas = 0
    received = 0  # characters of text, against ``reply_bounds.MAX_REPLY_CHARS``
    cut = ""  # the line that ends a reply that passed a bound
    batch = reply_bounds.Batched()

    def feed(text: str) -> None:
        show(guard.feed(text) if guard is not None else text)

    def show(text: str) -> None:
        if text:
            parts.append(text)
            if on_text is not None:
                on_text(text)

    if response_schema is None:
        stream = client.stream_chat(messages, tools)
    else:
        stream = client.stream_chat(messages, tools, response_schema=response_schema)
    try:
        for event in stream:
            if cancel is not None and cancel.is_set():
                raise Cancelled("cancelled")
            if isinstance(event, TextDelta):
                deltas += 1
                received += len(event.text)
                if received > reply_bounds.MAX_REPLY_CHARS:
                    raise reply_bounds.reply_too_long()
                feed(batch.add(event.text))
                if guard is not None and guard.looping:
                    break  # closing the stream below stops the server generating
            elif isinstance(event, ToolCallEvent):
                _check_call(event.call, len(result.tool_calls))
                result.tool_calls.append(event.call)
            elif isinstance(event, Usage):
                result.usage = event
            elif isinstance(event, Finish):
                finish = event
    except reply_bounds.ReplyCut as exc:  # closed below: the server stops; no call runs
        cut, finish = exc.note, Finish("cut")
        result.tool_calls = []
    except Cancelled:
        raise
    except Exception:  # a broken stream: what came before it is shown, as it would have been
        if guard is None or not guard.looping:
            feed(batch.rest())
        raise
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    if guard is None or not guard.looping:
        feed(batch.rest())
    answer = "".join(parts)
    ended_early = finish is not None and finish.reason is None
    if guard is not None and not ended_early:  # a cut-off reply is an error: no more of it
        capped = finish is not None and finish.reason == "length"
        rest, note = guard.close(capped=capped, tokens=result.usage.completion_tokens or deltas)
        show(rest)
        answer = "".join(parts)
        if note:
            show(note_separator(answer) + note)
            answer = answer.rstrip()
        result.note = note
    if cut:
        show(note_separator(answer) + cut)
        result.note = cut
    result.text = "".join(parts)
    result.answer = answer
    if metering.meters:  # harvey run --output-format json: what the run cost, every request
        metering.observe(messages, result)
    shown = bool(result.text) and on_text is not None
    if finish is None:  # a backend that cannot tell (the scripted one): taken as it came
        return result, "", shown
    if finish.reason is None:
        early = "stream ended early" if deltas or result.tool_calls else NOTHING_STREAMED
        return result, early, shown
    if cut:  # ended by Harvey, with its line: never asked again
        return result, "", shown
    if not result.answer.strip() and not result.tool_calls:
        return result, "empty reply", shown
    return result, "", shown


def _check_call(call: ToolCall, before: int) -> None:
    """A reply's next whole call within the reply's bounds (every backend's calls,
    Ollama's and the embedded model's whole ones as much as OpenAI's fragments)."""
    from harvey.llm import reply_bounds

    if before >= reply_bounds.MAX_TOOL_CALLS:
        raise reply_bounds.too_many_calls()
    if max(len(call.name), len(call.id)) > reply_bounds.MAX_NAME_CHARS:
        raise reply_bounds.name_too_long()
    if len(json.dumps(call.arguments)) > reply_bounds.MAX_ARGUMENT_CHARS:
        raise reply_bounds.arguments_too_long(call.name)


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


# The chat session a request belongs to: a llama.cpp server keeps a session on one slot
# (``llm.prompt_cache``) and the endpoint pool keeps it on one endpoint; requests made
# outside one (an analysis's map calls, compaction, probes) belong to none.
_SESSION: ContextVar[str | None] = ContextVar("harvey_llm_session", default=None)


@contextmanager
def session_scope(session_id: str | None) -> Iterator[None]:
    """Requests made inside belong to chat session ``session_id`` (None: to none)."""
    token = _SESSION.set(session_id)
    try:
        yield
    finally:
        _SESSION.reset(token)


def current_session() -> str | None:
    """The chat session the request being built belongs to, if any."""
    return _SESSION.get()

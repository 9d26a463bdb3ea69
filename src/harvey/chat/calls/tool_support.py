"""Whether a model calls tools, and how: found out, not assumed.

``tools.mode: auto`` (the default) needs to know whether the model behind a
server calls tools natively. Where the server says, its answer is taken: the
chat template llama.cpp's ``/props`` shows (or its ``chat_template_caps``),
Ollama's ``capabilities`` (``ModelCapabilities.tools_source`` is then
``template``). Where it does not — llama-cpp-python's server, vLLM, LM Studio, a
hosted API — one small probe call finds out: a chat request offering one
harmless tool (``get_weather``, never run) with a prompt that needs it, read as

* a native tool call: ``native`` (schemas sent, calls written as text rescued too);
* the call written as text (``chat/calls/text_tool_calls.py``): ``text`` (the tools described
  in the system prompt, calls read from the reply);
* neither: ``off`` — the model gets no tools, and the files its prompt names are
  attached instead, as for the embedded model without a grammar.

The answer is cached per backend, endpoint and model in
``HARVEY_HOME/cache/tool-support.json`` (0600, written through ``ownfiles``,
never in a workspace, so a cloned repository cannot seed it) for ``MAX_AGE``; a
probe that failed (a timeout, an error) is remembered for ``FAILED_AGE`` as
"assumed native", today's behaviour. A file that cannot be read or parsed is
treated as absent. An explicit ``tools.mode`` (or ``tools.models`` entry), the
embedded model and the scripted backend are never probed; nor is anything while
``HARVEY_TOOL_PROBE=0`` (the test suite sets it; tests that want a probe unset it).
``harvey.chat.calls.tool_choice.resolve_tool_mode`` decides when to ask this module.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvey.chat.calls.text_tool_calls import find_calls, without_thinking
from harvey.errors import HarveyError
from harvey.messages import Message
from harvey.protocols import LLMClient, TextDelta, ToolCallEvent

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 20.0  # seconds without a byte, and in all: a slow CPU model gets this long
PROBE_TEXT_LIMIT = 2000  # characters of a reply read before deciding
# Prose this long (outside a <think> block) that does not begin like a call is an answer
# without the tool: decided there, not after the whole ramble (a slow model's minutes).
PROSE_DECIDES = 600
CALL_STARTS = ("{", "[", "<", "```")
MAX_AGE = 7 * 86_400  # seconds a probe's answer is trusted
FAILED_AGE = 86_400  # seconds a failed probe is not repeated
CACHE_FOLDER = "cache"
CACHE_FILE = "tool-support.json"
MAX_CACHE_BYTES = 1 << 20
MAX_ENTRIES = 200
PROBED_BACKENDS = ("openai", "ollama")

PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Today's weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city's name"}},
            "required": ["city"],
        },
    },
}
PROBE_PROMPT = (
    Message("system", "You are a helpful assistant. Use the tools you are given."),
    Message("user", "What is the weather in Paris today? Call the get_weather tool to find out."),
)


@dataclass(frozen=True)
class ToolSupport:
    """How a model gets tools (``native``, ``text``, ``constrained``, ``off``) and where
    that was found: ``tools.mode (config)``, ``template``, ``probe``, ``assumed``..."""

    mode: str
    source: str


_MEMO: dict[tuple[str, str, str], ToolSupport] = {}
_LOCK = threading.Lock()


def found_out(client: LLMClient, home: Path | None = None) -> ToolSupport | None:
    """What a probe of ``client``'s model found (cached in ``home``, default
    ``HARVEY_HOME``), or None when this backend cannot be probed. At most one probe per
    backend, endpoint and model in a process, and then one per ``MAX_AGE``."""
    if client.backend not in PROBED_BACKENDS or _shortener(client) is None:
        return None
    key = (client.backend, client.endpoint, client.model)
    with _LOCK:  # one probe per model, however many threads ask
        if key not in _MEMO:
            _MEMO[key] = _found(client, home)
        return _MEMO[key]


def forget() -> None:
    """Drop what this process found (tests)."""
    with _LOCK:
        _MEMO.clear()


def _found(client: LLMClient, home: Path | None) -> ToolSupport:
    from harvey.config.settings import default_harvey_home

    home = home if home is not None else default_harvey_home()
    name = f"{client.backend} {client.endpoint} {client.model}"
    entries = read_cache(home)
    now = time.time()
    entry = entries.get(name)
    if entry is not None:
        age = now - entry["checked"]
        limit = MAX_AGE if entry["mode"] != "failed" else FAILED_AGE
        if 0 <= age <= limit:
            return _support(entry, cached=True)
    mode, note = probe(client)
    entry = {"mode": mode, "checked": now, "note": note}
    entries[name] = entry
    write_cache(home, entries, now)
    return _support(entry, cached=False)


def _support(entry: dict[str, Any], *, cached: bool) -> ToolSupport:
    when = " (cached)" if cached else ""
    if entry["mode"] == "failed":
        return ToolSupport("native", f"assumed (the probe failed: {entry['note']}){when}")
    return ToolSupport(entry["mode"], f"probe{when}")


def _shortener(client: LLMClient) -> Any:
    """``with_timeout`` of ``client`` (of a pool's first endpoint's client), if it has one."""
    inner: Any = client
    endpoints = getattr(client, "endpoints", None)
    if endpoints:
        inner = getattr(endpoints[0], "client", None)
    shorten = getattr(inner, "with_timeout", None)
    return shorten if callable(shorten) else None


def _probe_client(client: LLMClient) -> LLMClient | None:
    """A copy of ``client`` with a short timeout and no retries, or None."""
    shorten = _shortener(client)
    copy = shorten(PROBE_TIMEOUT) if shorten is not None else None
    return copy if isinstance(copy, LLMClient) else None


def probe(client: LLMClient) -> tuple[str, str]:
    """One small request offering ``PROBE_TOOL``: ``("native" | "text" | "off", "")``, or
    ``("failed", why)`` when the server did not answer in time or answered an error."""
    short = _probe_client(client)
    if short is None:
        return "failed", "no way to probe this backend"
    text: list[str] = []
    calls: list[str] = []
    deadline = time.monotonic() + PROBE_TIMEOUT
    timed_out = False
    log.info("asking %s at %s whether it calls tools (one probe)", client.model, client.endpoint)
    try:
        stream = short.stream_chat(list(PROBE_PROMPT), [PROBE_TOOL])
        try:
            for event in stream:
                if isinstance(event, ToolCallEvent):
                    calls.append(event.call.name)
                    break
                if isinstance(event, TextDelta):
                    text.append(event.text)
                    if sum(map(len, text)) > PROBE_TEXT_LIMIT or _prose("".join(text)):
                        break
                if time.monotonic() > deadline:
                    timed_out = not _prose("".join(text), PROSE_DECIDES // 4)
                    break
        finally:
            close = getattr(stream, "close", None)
            if callable(close):
                close()  # the server stops generating
    except HarveyError as exc:
        return "failed", str(exc)[:200]
    finally:
        short.close()
    if calls:
        return "native", ""
    found = find_calls("".join(text))
    if found is not None and any(c.name == "get_weather" for c in found.calls):
        return "text", ""
    if timed_out:
        return "failed", f"no answer within {PROBE_TIMEOUT:g} s"
    return "off", ""


def _prose(text: str, enough: int = PROSE_DECIDES) -> bool:
    """Whether ``text`` is already an answer in words: ``enough`` characters outside any
    ``<think>`` block that do not begin the way a call written as text does."""
    visible = without_thinking(text).lstrip()
    return len(visible) >= enough and not visible.startswith(CALL_STARTS)


def read_cache(home: Path) -> dict[str, dict[str, Any]]:
    """The cached answers by ``"backend endpoint model"``; absent, unreadable or malformed
    (or any entry of the wrong shape): treated as absent."""
    from harvey.ownfiles.nofollow import Location

    try:
        with Location(home, (CACHE_FOLDER,), home=True).open(create=False) as folder:
            raw = folder.read_bytes(CACHE_FILE)
    except (OSError, HarveyError) as exc:
        log.debug("tool-support cache unreadable: %s", exc)
        return {}
    if raw is None or len(raw) > MAX_CACHE_BYTES:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return {}
    return {k: v for k, v in entries.items() if isinstance(k, str) and _valid(v)}


def _valid(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("mode") in ("native", "text", "off", "failed")
        and isinstance(entry.get("checked"), int | float)
        and isinstance(entry.get("note", ""), str)
    )


def write_cache(home: Path, entries: dict[str, dict[str, Any]], now: float) -> None:
    """Rewrite the cache whole (0600), without entries past ``MAX_AGE``; a failure to
    write only means the next session probes again."""
    from harvey.ownfiles.nofollow import Location

    fresh = {k: v for k, v in entries.items() if now - v["checked"] <= MAX_AGE}
    newest = sorted(fresh.items(), key=lambda kv: kv[1]["checked"])[-MAX_ENTRIES:]
    payload = json.dumps({"version": 1, "entries": dict(newest)}, indent=1) + "\n"
    try:
        with Location(home, (CACHE_FOLDER,), home=True).open(create=True) as folder:
            folder.replace(CACHE_FILE, payload.encode(), mode=0o600)
    except (OSError, HarveyError) as exc:
        log.warning("could not remember the tool-support probe's answer: %s", exc)

"""Tool calls a model wrote as text, in the syntaxes model families actually use.

Ollama and llama.cpp turn a model's tool call into a native one only when the
chat template and the model agree; small and quantised models often write the
call as plain text in their family's own form. :func:`find_calls` recognises
those forms in a finished reply:

* Hermes/Qwen ``<tool_call>{"name": …, "arguments": …}</tool_call>`` (one or more),
* Mistral ``[TOOL_CALLS] [{…}, …]`` and its newer ``[TOOL_CALLS]name[ARGS]{…}``,
* Llama 3 ``<|python_tag|>{"name": …, "parameters": …}`` (several joined by ``;``),
* Phi ``<|tool_call|>[{…}]<|/tool_call|>``,
* a reply that is only such a JSON object (or a list of them), bare or in a
  fenced ``json`` block, alone or after a sentence of preamble ("I will read it.").

What is not a call matters as much: a ``<think>`` block is thinking, so a call
written only there is not made; a tag form or a fence counts only where a line
begins and when nothing but the calls follows it, so prose that quotes a call
(inline, in a code example, or with explanation after it) stays prose. When the
markup is plainly a call but its JSON cannot be read, the result says so
(``error``), so the loop can tell the model instead of showing the user the markup.

Shape is only half the rule: a call whose text the model was shown this turn (a
file it read, a tool result) is a quotation whatever its shape, and never runs
(``harvey.chat.calls.quoted``, applied by ``tool_rounds``).

This module only reads text; whether a name is a registered tool and its
arguments fit the tool's schema is decided by ``harvey.chat.calls.tool_choice``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from harvey.llm import wire

#: The tag forms, by the marker that opens them.
MARKERS = {
    "<tool_call>": "hermes",
    "[TOOL_CALLS]": "mistral",
    "<|python_tag|>": "llama3",
    "<|tool_call|>": "phi",
}
#: What may end a Llama 3 call after its JSON (the template's end-of-message tokens).
_LLAMA_ENDS = ("<|eom_id|>", "<|eot_id|>")
_THINK = re.compile(r"<think>.*?</think>", re.S)
_FENCE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\n(.*?)\n?[ \t]*```\Z", re.S | re.I)
#: Where a fenced block may open after preamble: a fence at a line start.
_FENCE_OPEN = re.compile(r"\n[ \t]*```[ \t]*(?:json)?[ \t]*\n", re.I)
_LINE_START = re.compile(r"(?:\A|\n)[ \t]*")


@dataclass(frozen=True)
class TextCall:
    """One call as written: the name, and the arguments as given (not yet checked)."""

    name: str
    arguments: Any


@dataclass(frozen=True)
class Found:
    """A reply recognised as tool calls.

    ``prose`` is what the reply says outside the markup and any ``<think>`` block
    (the assistant message's text); ``error`` is set, and ``calls`` empty, when the
    markup is a call whose content cannot be read.
    """

    form: str
    calls: tuple[TextCall, ...] = ()
    prose: str = ""
    error: str | None = None


def without_thinking(text: str) -> str:
    """``text`` without its ``<think>`` blocks; an unclosed one runs to the end."""
    text = _THINK.sub("", text)
    start = text.find("<think>")
    return text if start < 0 else text[:start]


def find_calls(text: str) -> Found | None:
    """The tool calls ``text`` makes, or None when it is an ordinary reply."""
    body = without_thinking(text).strip()
    if not body:
        return None
    whole = _whole_reply_calls(body)
    if whole is not None:
        return whole
    fenced = _fenced_after_preamble(body)
    if fenced is not None:
        return fenced
    start, marker = _first_marker(body)
    if marker is None:
        return None
    prose = body[:start].strip()
    if prose.count("```") % 2:  # inside an open code fence: an example, not a call
        return None
    form = MARKERS[marker]
    rest = body[start:]
    try:
        calls = _READERS[form](rest)
    except _NotACall:
        return None
    except _Unreadable as exc:
        return Found(form, (), prose, f"the {form} tool call could not be read: {exc}")
    return Found(form, tuple(calls), prose)


def _whole_reply_calls(body: str) -> Found | None:
    """A reply that is only a call object (or list of them), bare or fenced."""
    fenced = _FENCE.match(body)
    inner, form = (fenced.group(1).strip(), "fenced-json") if fenced else (body, "json")
    if not inner.startswith(("{", "[")):
        return None
    try:
        value = wire.loads(inner)
    except ValueError:
        return None  # JSON-looking text that is not JSON is just text
    try:
        calls = _call_objects(value, strict=True)
    except (_NotACall, _Unreadable):
        return None
    return Found(form, tuple(calls))


def _fenced_after_preamble(body: str) -> Found | None:
    """Prose, then a fenced block holding only a call object, ending the reply."""
    if not body.endswith("```"):
        return None
    openings = list(_FENCE_OPEN.finditer(body))  # the last fence opening at a line start
    opening = openings[-1] if openings else None
    if opening is None or opening.end() > len(body) - 3:
        return None
    prose = body[: opening.start()].strip()
    if not prose or prose.count("```") % 2:  # inside an open fence: an example, not a call
        return None
    found = _whole_reply_calls(body[opening.start() :].strip())
    if found is None or found.form != "fenced-json":
        return None
    return replace(found, prose=prose)


def _first_marker(body: str) -> tuple[int, str | None]:
    """The first tag marker that begins a line, and where; quotes mid-line do not count."""
    best: tuple[int, str | None] = (len(body), None)
    for match in _LINE_START.finditer(body):
        at = match.end()
        for marker in MARKERS:
            if body.startswith(marker, at) and at < best[0]:
                best = (at, marker)
        if best[1] is not None:
            break
    return best


class _NotACall(Exception):
    """The text only resembles a call (prose follows it, or it is not a call's shape)."""


class _Unreadable(Exception):
    """The markup is a call, but its content cannot be read (broken JSON, no name)."""


def _decode(text: str, at: int = 0) -> tuple[Any, int]:
    """One JSON value at ``at`` (after blanks), and the index after it."""
    decoder = json.JSONDecoder()
    while at < len(text) and text[at].isspace():
        at += 1
    try:
        return decoder.raw_decode(text, at)
    except ValueError as exc:
        raise _Unreadable(f"broken JSON ({exc.args[0].split(':')[0]})") from None


def _call_objects(value: Any, *, strict: bool) -> list[TextCall]:
    """A call object, or a non-empty list of them, as ``TextCall``s.

    ``strict`` (a whole reply that is only JSON): anything but exactly the call's
    shape is not a call, since an answer may well be a JSON object.
    """
    items = value if isinstance(value, list) else [value]
    if not items:
        raise _NotACall
    calls = []
    for item in items:
        if not isinstance(item, dict):
            raise _NotACall if strict else _Unreadable("a call is not a JSON object")
        item = item.get("function", item) if isinstance(item.get("function"), dict) else item
        name = item.get("name")
        keys = [k for k in ("arguments", "parameters") if k in item]
        if strict and (len(keys) != 1 or set(item) - {"name", "id", "type", *keys}):
            raise _NotACall
        if not isinstance(name, str) or not name.strip():
            raise _NotACall if strict else _Unreadable("the call has no tool name")
        calls.append(TextCall(name.strip(), item.get(keys[0]) if keys else {}))
    return calls


def _only_blank(text: str) -> None:
    if text.strip():
        raise _NotACall  # words after the markup: it was quoted, not made


def _read_hermes(rest: str) -> list[TextCall]:
    return _read_tagged(rest, "<tool_call>", "</tool_call>")


def _read_phi(rest: str) -> list[TextCall]:
    return _read_tagged(rest, "<|tool_call|>", "<|/tool_call|>")


def _read_tagged(rest: str, opening: str, closing: str) -> list[TextCall]:
    """One or more ``OPEN json CLOSE`` blocks with only blanks between and after (a
    reply cut off before the last closing tag still counts)."""
    calls: list[TextCall] = []
    at = 0
    while True:
        at = len(rest) - len(rest[at:].lstrip())
        if at >= len(rest):
            return calls
        if not rest.startswith(opening, at):
            raise _NotACall
        value, at = _decode(rest, at + len(opening))
        calls.extend(_call_objects(value, strict=False))
        after = rest[at:].lstrip()
        if after.startswith(closing):
            at = len(rest) - len(after) + len(closing)
        else:
            _only_blank(after)
            return calls


def _read_mistral(rest: str) -> list[TextCall]:
    body = rest[len("[TOOL_CALLS]") :].lstrip()
    if body.startswith(("[", "{")):
        value, end = _decode(body)
        _only_blank(body[end:])
        return _call_objects(value, strict=False)
    calls = []  # the v11 form: NAME[ARGS]{json}, repeated
    while body:
        name, sep, after = body.partition("[ARGS]")
        if not sep or not re.fullmatch(r"[\w.-]+", name.strip()):
            raise _NotACall
        value, end = _decode(after)
        calls.append(TextCall(name.strip(), value))
        body = after[end:].lstrip()
        if body.startswith("[TOOL_CALLS]"):
            body = body[len("[TOOL_CALLS]") :].lstrip()
    if not calls:
        raise _Unreadable("no call after [TOOL_CALLS]")
    return calls


def _read_llama3(rest: str) -> list[TextCall]:
    body = rest[len("<|python_tag|>") :]
    for end in _LLAMA_ENDS:
        body = body.replace(end, "")
    body = body.strip()
    if not body.startswith("{"):
        raise _NotACall  # the code-interpreter form: Python, not a call Harvey can make
    calls: list[TextCall] = []
    at = 0
    while True:
        value, at = _decode(body, at)
        calls.extend(_call_objects(value, strict=False))
        after = body[at:].lstrip()
        if not after:
            return calls
        if not after.startswith(";"):
            raise _NotACall
        at = len(body) - len(after) + 1


_READERS = {
    "hermes": _read_hermes,
    "mistral": _read_mistral,
    "llama3": _read_llama3,
    "phi": _read_phi,
}

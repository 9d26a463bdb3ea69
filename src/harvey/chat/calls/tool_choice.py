"""Checking a call against the tools offered, the constrained "answer or call" turn, and
which way a model gets its tools (``resolve_tool_mode``).

A call rescued from text, or read from a grammar-constrained reply, runs only
when it names a tool that was offered and its arguments fit that tool's
schema. :func:`check_call` decides that with a small validator for the subset of
JSON Schema Harvey's tool schemas use (object, string, integer, number, boolean,
array; ``required``, ``enum``, ``minimum``/``maximum``, ``additionalProperties``).

In constrained mode each model turn must be one JSON object, valid for
:func:`choice_schema`: ``{"tool": "answer", "text": …}`` or ``{"tool": NAME,
"arguments": {…}}`` for one of the offered tools. Backends that can constrain
output (llama.cpp grammars for the embedded model, a llama.cpp server's
``json_schema``, Ollama's ``format``) turn that schema into a grammar, so even a
135M model can only write a valid choice.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvey.chat.calls.tool_support import ToolSupport
from harvey.llm import wire

if TYPE_CHECKING:
    from harvey.config.settings import ToolsSettings
    from harvey.protocols import LLMClient, ModelCapabilities

ANSWER = "answer"
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
}


def function_of(schema: dict[str, Any]) -> dict[str, Any]:
    """The ``function`` part of an OpenAI-style tool schema (or the schema itself)."""
    inner = schema.get("function")
    return inner if isinstance(inner, dict) else schema


def tool_names(schemas: Sequence[dict[str, Any]]) -> list[str]:
    return [str(function_of(s).get("name", "")) for s in schemas]


def check_call(
    schemas: Sequence[dict[str, Any]], name: str, arguments: Any
) -> tuple[dict[str, Any], str | None]:
    """``(arguments as a dict, None)`` for a call that may run, else ``({}, why not)``."""
    for schema in schemas:
        function = function_of(schema)
        if function.get("name") != name:
            continue
        if isinstance(arguments, str):  # some models send the arguments as a JSON string
            try:
                arguments = wire.loads(arguments) if arguments.strip() else {}
            except ValueError:
                return {}, f"the arguments of {name} are not valid JSON"
        if arguments is None:
            arguments = {}
        problem = check_value(function.get("parameters") or {"type": "object"}, arguments, "")
        if problem is not None:
            return {}, f"invalid arguments for {name}: {problem}"
        return arguments, None
    known = ", ".join(sorted(tool_names(schemas))) or "none"
    return {}, f"unknown tool {name!r} (known: {known})"


def check_value(schema: dict[str, Any], value: Any, where: str) -> str | None:
    """Why ``value`` does not fit ``schema`` (a path and a reason), or None."""
    label = where or "arguments"
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _TYPES:
        wanted = _TYPES[kind]
        wrong_bool = isinstance(value, bool) and kind in ("integer", "number")
        if not isinstance(value, wanted) or wrong_bool:
            return f"{label} must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{label} must be one of {', '.join(map(str, schema['enum']))}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{label} must be at least {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{label} must be at most {schema['maximum']}"
    if isinstance(value, dict):
        return _check_object(schema, value, where)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problem = check_value(schema["items"], item, f"{label}[{index}]")
            if problem is not None:
                return problem
    return None


def _check_object(schema: dict[str, Any], value: dict[str, Any], where: str) -> str | None:
    properties = schema.get("properties") or {}
    for key in schema.get("required") or []:
        if key not in value:
            return f"missing {_join(where, key)}"
    for key, item in value.items():
        if key in properties:
            problem = check_value(properties[key], item, _join(where, key))
            if problem is not None:
                return problem
        elif schema.get("additionalProperties") is False:
            return f"unknown argument {_join(where, key)}"
    return None


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


# -- the constrained turn -----------------------------------------------------------


def choice_schema(
    schemas: Sequence[dict[str, Any]],
    named_paths: Sequence[str] = (),
    words: Sequence[str] = (),
    folders: Sequence[str] = (),
) -> dict[str, Any]:
    """One JSON object: the answer, or a call of one offered tool with valid arguments.

    A tool's optional arguments are left out when it has required ones (a small model
    fills every field it is offered: ``read_file`` with ``limit: 2`` reads two bytes),
    and what it names comes from what the turn named (``harvey.chat.calls.turn_names``): a
    required ``path`` is one of ``named_paths`` (the prompt's, then those its tool
    results showed), a required ``pattern`` one of ``words`` (the prompt's names and
    topical words), and the folder of a tool whose only argument is an optional
    ``path`` (``list_files``) the workspace (``.``) or one of ``folders`` (the words
    that name one). A 135M model
    copies names well and invents them badly. A tool that requires a path is not
    offered before any file is named: asked to find a definition, SmolLM2 read the
    example's ``plan.txt`` three times in three (BENCHMARKS.md); it must search or
    list first.
    """
    choices: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": ANSWER}, "text": {"type": "string", "minLength": 1}},
            "required": ["tool", "text"],
            "additionalProperties": False,
        }
    ]
    for schema in schemas:
        function = function_of(schema)
        parameters = _narrowed(
            dict(function.get("parameters") or {"type": "object"}), named_paths, words, folders
        )
        if not named_paths and _needs_path(parameters):
            continue
        choices.append(
            {
                "type": "object",
                "properties": {"tool": {"const": function["name"]}, "arguments": parameters},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    return {"oneOf": choices}


def _narrowed(
    parameters: dict[str, Any],
    named_paths: Sequence[str],
    words: Sequence[str],
    folders: Sequence[str],
) -> dict[str, Any]:
    properties = dict(parameters.get("properties") or {})
    required = list(parameters.get("required") or [])
    if required:
        properties = {k: v for k, v in properties.items() if k in required}
    elif _is_string(properties.get("path")):  # list_files: which folder, nothing else
        listed = list(dict.fromkeys([".", *(f.strip("/") for f in folders)]))
        properties = {"path": {**properties["path"], "enum": listed}}
    if named_paths and "path" in required and _is_string(properties.get("path")):
        properties["path"] = {**properties["path"], "enum": list(dict.fromkeys(named_paths))}
    if words and "pattern" in required and _is_string(properties.get("pattern")):
        properties["pattern"] = {**properties["pattern"], "enum": list(dict.fromkeys(words))}
    return {**parameters, "properties": properties, "additionalProperties": False}


def _is_string(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "string"


def _needs_path(parameters: dict[str, Any]) -> bool:
    path = (parameters.get("properties") or {}).get("path") or {}
    return "path" in (parameters.get("required") or []) and path.get("type") == "string"


@dataclass(frozen=True)
class Choice:
    """A constrained turn read back: an answer (``name`` is None) or one call."""

    text: str = ""
    name: str | None = None
    arguments: Any = None


def read_choice(reply: str) -> Choice | None:
    """The choice ``reply`` makes, or None when it is not a choice object (a server
    that ignored the schema, or a reply cut at the token cap)."""
    try:
        # strict=False: a grammar's string may hold a raw newline, which JSON proper forbids
        value = wire.loads(reply, strict=False)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("tool"), str):
        return None
    if value["tool"] == ANSWER:
        text = value.get("text")
        return Choice(text=text) if isinstance(text, str) else None
    return Choice(name=value["tool"], arguments=value.get("arguments", {}))


_ANSWER_OPENING = re.compile(r'\s*\{\s*"tool"\s*:\s*"answer"\s*,\s*"text"\s*:\s*"')
_STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*')


def unfinished_answer(reply: str) -> str | None:
    """The text of an "answer" choice whose JSON was cut short (the token cap ends the
    reply mid-string), decoded as far as it got; None for anything else. A person gets
    the answer's words, never the raw JSON around them."""
    opening = _ANSWER_OPENING.match(reply)
    if opening is None:
        return None
    body = _STRING_BODY.match(reply, opening.end())
    raw = body.group() if body is not None else ""
    for trim in range(min(len(raw), 6) + 1):  # a cut may split an escape (\u00e9, \n)
        try:
            text = json.loads('"' + raw[: len(raw) - trim] + '"', strict=False)
        except ValueError:
            continue
        if text and "\ud800" <= text[-1] <= "\udbff":  # half a surrogate pair
            text = text[:-1]
        return text
    return None


#: A small model learns the reply's shape from examples far better than from a rule. No
#: example answer: the grammar already gives the shape, and SmolLM2 copied any text
#: shown there ("(the answer, from the tool result)") into 7 of 20 answers (BENCHMARKS.md).
CONSTRAINED_EXAMPLES = """\
Reply with one JSON object: a tool call to look first, or the tool "answer" with your \
answer as its text once a tool result or the conversation has what you need.
User: Where is parse_date defined?
{"tool": "search_files", "arguments": {"pattern": "parse_date"}}
User: What does plan.txt say about the budget?
{"tool": "read_file", "arguments": {"path": "plan.txt"}}"""


def describe_tools(schemas: Sequence[dict[str, Any]], *, constrained: bool) -> str:
    """The tools as the system prompt tells a model that gets no native tool schemas."""
    lines = ["Tools you can use:"]
    for schema in schemas:
        function = function_of(schema)
        params = (function.get("parameters") or {}).get("properties") or {}
        required = set((function.get("parameters") or {}).get("required") or [])
        if constrained and required:  # as choice_schema offers them
            params = {k: v for k, v in params.items() if k in required}
        args = ", ".join(
            f"{k}{'' if k in required else '?'}: {v.get('type', 'any')}" for k, v in params.items()
        )
        lines.append(f"- {function['name']}({args}): {function.get('description', '')}")
    if constrained:
        lines.append(CONSTRAINED_EXAMPLES)
    else:
        lines.append(
            "To use a tool, reply with only this, and nothing after it:\n"
            '<tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>\n'
            "The result comes back in the next message."
        )
    return "\n".join(lines)


def tool_mode(tools: ToolsSettings, client: LLMClient, supports_tools: bool) -> str:
    """How this model gets its tools: ``native``, ``text``, ``constrained`` or ``off``.

    ``tools.models`` (per model) overrides ``tools.mode``; ``auto`` sends native
    schemas to a model whose server says it calls tools (reading calls written as
    text too), constrains the embedded model's every turn with a grammar, and
    offers no tools to the rest (they get the files their prompt names instead).
    """
    if not tools.enabled:
        return "off"
    mode = tools.models.get(client.model, tools.mode)
    if mode != "auto":
        return mode
    if supports_tools:
        return "native"
    return "constrained" if client.backend == "local" else "off"


PROBE_ENV = "HARVEY_TOOL_PROBE"  # "0": never probe a server for tool support


def resolve_tool_mode(
    tools: ToolsSettings,
    client: LLMClient,
    capabilities: Callable[[], ModelCapabilities],
    *,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> ToolSupport:
    """``tool_mode`` with tool support found out: an explicit ``tools.mode`` (or
    ``tools.models`` entry) as it says, asking nothing; else what the server said (its
    chat template, Ollama's capabilities); else one probe call, cached in ``home``
    (``harvey.chat.calls.tool_support``), unless ``HARVEY_TOOL_PROBE=0``: then assumed."""
    if not tools.enabled:
        return ToolSupport("off", "tools.enabled (config)")
    own = tools.models.get(client.model)  # a model's own entry, "auto" included, wins
    if own is not None and own != "auto":
        return ToolSupport(own, "tools.models (config)")
    if own is None and tools.mode != "auto":
        return ToolSupport(tools.mode, "tools.mode (config)")
    caps = capabilities()
    env = os.environ if env is None else env
    off = env.get(PROBE_ENV, "").strip().lower() in ("0", "no", "off", "false")
    if caps.tools_source == "assumed" and not off:
        from harvey.chat.calls.tool_support import found_out

        found = found_out(client, home)
        if found is not None:
            return found
    return ToolSupport(tool_mode(tools, client, caps.supports_tools), caps.tools_source)

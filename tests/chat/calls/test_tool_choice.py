"""harvey.chat.calls.tool_choice: a call checked against the offered schemas, and the constrained
turn's schema and reading."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.chat.calls.tool_choice import (
    Choice,
    check_call,
    choice_schema,
    describe_tools,
    read_choice,
    tool_mode,
    unfinished_answer,
)
from harvey.chat.calls.turn_names import turn_paths
from harvey.config.settings import ToolsSettings
from harvey.llm.scripted import ScriptedClient
from harvey.messages import Message, ToolCall
from harvey.workspace.mentions import named_paths


def tool_schema(name: str, description: str, parameters: dict) -> dict:  # type: ignore[type-arg]
    """The OpenAI-style schema ``ToolRegistry.schemas`` gives."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


SCHEMAS = [
    tool_schema(
        "read_file",
        "Read a file",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 0},
                "mode": {"type": "string", "enum": ["text", "bytes"]},
            },
            "required": ["path"],
        },
    ),
    tool_schema("list_files", "List", {"type": "object", "properties": {}}),
]


@pytest.mark.parametrize(
    ("name", "arguments", "problem"),
    [
        ("read_file", {"path": "a"}, None),
        ("read_file", '{"path": "a"}', None),
        ("list_files", None, None),
        ("open", {"path": "a"}, "unknown tool 'open' (known: list_files, read_file)"),
        ("read_file", {}, "invalid arguments for read_file: missing path"),
        ("read_file", {"path": 3}, "invalid arguments for read_file: path must be a string"),
        ("read_file", {"path": "a", "offset": -1}, "offset must be at least 0"),
        ("read_file", {"path": "a", "offset": True}, "offset must be an integer"),
        ("read_file", {"path": "a", "mode": "x"}, "mode must be one of text, bytes"),
        ("read_file", "{not json", "the arguments of read_file are not valid JSON"),
        ("read_file", ["a"], "arguments must be an object"),
    ],
)
def test_check_call(name: str, arguments: object, problem: str | None) -> None:
    checked, why = check_call(SCHEMAS, name, arguments)
    if problem is None:
        assert why is None and isinstance(checked, dict)
    else:
        assert why is not None and problem in why and checked == {}


def test_choice_schema_offers_the_answer_and_each_tool() -> None:
    schema = choice_schema(SCHEMAS, ["notes.md"])
    consts = [c["properties"]["tool"]["const"] for c in schema["oneOf"]]
    assert consts == ["answer", "read_file", "list_files"]
    assert schema["oneOf"][1]["properties"]["arguments"]["required"] == ["path"]


def test_a_tool_that_needs_a_path_waits_until_a_file_is_named() -> None:
    """Nothing named: the model cannot invent a path (it would copy the example's)."""
    consts = [c["properties"]["tool"]["const"] for c in choice_schema(SCHEMAS)["oneOf"]]
    assert consts == ["answer", "list_files"]


def test_the_turns_paths_come_from_its_prompt_and_its_tool_results() -> None:
    messages = [
        Message("system", "Example: read plan.txt"),
        Message("user", "What is in old.md?"),
        Message("tool", "old.md:1: stale", name="search_files"),
        Message("user", "Find where parse_date is defined, not in notes.md."),
        Message("assistant", "", tool_calls=[ToolCall("c", "search_files", {"pattern": "x"})]),
        Message("tool", "src/dates.py:1: def parse_date(text):", name="search_files"),
    ]
    assert turn_paths(messages) == ["notes.md", "src/dates.py"]
    assert turn_paths([Message("system", "read plan.txt")]) == []


@pytest.mark.parametrize(
    ("reply", "choice"),
    [
        ('{"tool": "answer", "text": "4"}', Choice(text="4")),
        (
            '{"tool": "read_file", "arguments": {"path": "a"}}',
            Choice("", "read_file", {"path": "a"}),
        ),
        ("The answer is 4.", None),
        ('{"tool": "answer"}', None),
        ('{"tool": "answer", "text": "cut', None),
        # a grammar's string may hold a raw newline (llama-cpp-python's does)
        ('{ "tool": "answer","text":"200 g\nof flour"}', Choice(text="200 g\nof flour")),
    ],
)
def test_read_choice(reply: str, choice: Choice | None) -> None:
    assert read_choice(reply) == choice


def test_a_cut_answer_with_a_raw_newline_is_shown_as_its_words() -> None:
    reply = '{ "tool": "answer","text":"The pancakes need\n200 g of flour. Rest'
    assert unfinished_answer(reply) == "The pancakes need\n200 g of flour. Rest"


def test_descriptions_name_each_tool_and_the_form() -> None:
    text = describe_tools(SCHEMAS, constrained=False)
    assert "- read_file(path: string, offset?: integer, mode?: string)" in text
    assert "<tool_call>" in text
    constrained = describe_tools(SCHEMAS, constrained=True)
    assert "- read_file(path: string): Read a file" in constrained
    assert json.dumps({"tool": "read_file", "arguments": {"path": "plan.txt"}}) in constrained
    assert constrained.rstrip().endswith("}")


def test_named_paths_narrow_a_required_path_and_optional_arguments_go() -> None:
    assert named_paths("Read notes.md, e.g. src/app.py (v1.2) or README.md.") == [
        "notes.md",
        "src/app.py",
        "README.md",
    ]
    schema = choice_schema(SCHEMAS, ["notes.md"])
    arguments = schema["oneOf"][1]["properties"]["arguments"]
    assert arguments["properties"] == {"path": {"type": "string", "enum": ["notes.md"]}}
    assert arguments["additionalProperties"] is False
    assert schema["oneOf"][0]["properties"]["text"]["minLength"] == 1


@pytest.mark.parametrize(
    ("settings", "backend", "native", "mode"),
    [
        ({}, "openai", True, "native"),
        ({}, "openai", False, "off"),
        ({}, "local", False, "constrained"),
        ({"mode": "text"}, "openai", False, "text"),
        ({"models": {"m": "off"}}, "openai", True, "off"),
        ({"mode": "text", "models": {"other": "off"}}, "openai", True, "text"),
        ({"enabled": False, "mode": "text"}, "local", False, "off"),
    ],
)
def test_tool_mode(settings: dict, backend: str, native: bool, mode: str) -> None:  # type: ignore[type-arg]
    client = ScriptedClient([], model="m")
    client.backend = backend
    assert tool_mode(ToolsSettings(**settings), client, native) == mode


@pytest.mark.parametrize(
    ("reply", "text"),
    [
        ('{"tool": "answer", "text": "On 3 March. The key is und', "On 3 March. The key is und"),
        ('{ "tool" : "answer" , "text" : "caf\\u00', "caf"),  # an escape cut in half
        ('{"tool": "answer", "text": "line one\\nline two\\', "line one\nline two"),
        ('{"tool": "answer", "text": "', ""),
        ('{"tool": "read_file", "arguments": {"path": "a', None),  # a call is never an answer
        ('{"text": "no tool", "tool": "answer"', None),
        ("plain prose", None),
    ],
)
def test_an_answer_cut_at_the_cap_is_its_words(reply: str, text: str | None) -> None:
    assert unfinished_answer(reply) == text


@given(st.text(max_size=60), st.integers(0, 200))
def test_any_cut_of_an_answer_gives_a_prefix_of_its_text(text: str, cut: int) -> None:
    whole = json.dumps({"tool": "answer", "text": text})
    opening = len('{"tool": "answer", "text": "')
    got = unfinished_answer(whole[: opening + cut])
    assert got is not None and text.startswith(got)


def test_a_models_own_auto_entry_is_found_out_not_taken_as_a_mode() -> None:
    """``tools.models: {m: auto}`` over ``tools.mode: off`` means "find out" for m."""
    from harvey.chat.calls.tool_choice import resolve_tool_mode
    from harvey.protocols import ModelCapabilities

    client = ScriptedClient([], model="m")
    tools = ToolsSettings(mode="off", models={"m": "auto"})
    caps = ModelCapabilities(8192, True, "server", tools_source="template")
    found = resolve_tool_mode(tools, client, lambda: caps, env={})
    assert (found.mode, found.source) == ("native", "template")
    other = ScriptedClient([], model="n")
    assert resolve_tool_mode(tools, other, lambda: caps, env={}).mode == "off"

"""harvey.chat.calls.text_tool_calls: each family's written form, and what only looks like one."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.chat.calls.text_tool_calls import TextCall, find_calls, without_thinking

READ = TextCall("read_file", {"path": "a.md"})
CALL = '{"name": "read_file", "arguments": {"path": "a.md"}}'


@pytest.mark.parametrize(
    ("text", "form", "calls", "prose"),
    [
        (f"<tool_call>{CALL}</tool_call>", "hermes", [READ], ""),
        (f"<tool_call>\n{CALL}", "hermes", [READ], ""),  # cut before the closing tag
        (f"<think>x</think>\n<tool_call>{CALL}</tool_call>", "hermes", [READ], ""),
        (
            f"Reading both.\n<tool_call>{CALL}</tool_call>\n"
            '<tool_call>{"name": "list_files", "arguments": {}}</tool_call>',
            "hermes",
            [READ, TextCall("list_files", {})],
            "Reading both.",
        ),
        (f"[TOOL_CALLS] [{CALL}]", "mistral", [READ], ""),
        ('[TOOL_CALLS]read_file[ARGS]{"path": "a.md"}', "mistral", [READ], ""),
        (
            '<|python_tag|>{"name": "read_file", "parameters": {"path": "a.md"}}; '
            '{"name": "list_files", "parameters": {}}<|eot_id|>',
            "llama3",
            [READ, TextCall("list_files", {})],
            "",
        ),
        (f"<|tool_call|>[{CALL}]<|/tool_call|>", "phi", [READ], ""),
        (CALL, "json", [READ], ""),
        (f"[{CALL}]", "json", [READ], ""),
        (
            '{"type": "function", "function": {"name": "read_file", "arguments": {"path": "a.md"}}}',
            "json",
            [READ],
            "",
        ),
        (f"```json\n{CALL}\n```", "fenced-json", [READ], ""),
        (
            '{"name": "read_file", "arguments": "{\\"path\\": \\"a.md\\"}"}',
            "json",
            [TextCall("read_file", '{"path": "a.md"}')],
            "",
        ),
    ],
)
def test_forms(text: str, form: str, calls: list[TextCall], prose: str) -> None:
    found = find_calls(text)
    assert found is not None and found.error is None
    assert (found.form, list(found.calls), found.prose) == (form, calls, prose)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "The answer is 4.",
        f"Call it like `<tool_call>{CALL}</tool_call>` yourself.",
        f"For example:\n<tool_call>{CALL}</tool_call>\nreads the file.",
        f"```\n<tool_call>{CALL}</tool_call>\n```",
        f"<think><tool_call>{CALL}</tool_call></think>The answer is 4.",
        f"<think>still thinking <tool_call>{CALL}</tool_call>",
        '{"name": "Alice", "age": 30}',
        '{"name": "read_file", "arguments": {}, "note": "extra"}',
        '{"name": "read_file", "arguments": {',
        f"Here it is: {CALL}",
        f"```json\n{CALL}\n```\nThat is how you call it.",
        "<|python_tag|>print(open('a.md').read())",
        "[TOOL_CALLS] is what Mistral writes.",
    ],
)
def test_not_calls(text: str) -> None:
    assert find_calls(text) is None


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>',
        "<tool_call>{}</tool_call>",
        '<|tool_call|>[{"arguments": {}}]<|/tool_call|>',
        "[TOOL_CALLS] [{broken",
    ],
)
def test_markup_that_cannot_be_read_is_an_error_not_text(text: str) -> None:
    found = find_calls(text)
    assert found is not None and not found.calls and found.error


def test_thinking_is_removed_even_unclosed() -> None:
    assert without_thinking("<think>a</think>b<think>c") == "b"


names = st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
args = st.dictionaries(names, st.one_of(st.text(max_size=20), st.integers()), max_size=3)


@given(name=names, arguments=args, form=st.sampled_from(["hermes", "mistral", "phi", "json"]))
def test_any_call_round_trips(name: str, arguments: dict, form: str) -> None:  # type: ignore[type-arg]
    obj = json.dumps({"name": name, "arguments": arguments})
    text = {
        "hermes": f"<tool_call>\n{obj}\n</tool_call>",
        "mistral": f"[TOOL_CALLS] [{obj}]",
        "phi": f"<|tool_call|>{obj}<|/tool_call|>",
        "json": obj,
    }[form]
    found = find_calls(text)
    assert found is not None and list(found.calls) == [TextCall(name, arguments)]


@given(st.text(max_size=200))
def test_prose_without_markup_is_never_a_call(text: str) -> None:
    if not any(
        m in text for m in ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<|tool_call|>", "{")
    ):
        assert find_calls(text) is None

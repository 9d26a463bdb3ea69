"""harvey.chat.calls.stream_holdback: the streamed display never flashes a call's markup, and
shows every character of a reply that was not a call, in order."""

from __future__ import annotations

import threading

from hypothesis import given
from hypothesis import strategies as st

from harvey.chat.calls.stream_holdback import HoldBack
from harvey.chat.calls.text_tool_calls import find_calls
from harvey.chat.calls.tool_rounds import ToolRounds
from harvey.llm.openai import OpenAIClient
from harvey.llm.scripted import Reply
from harvey.messages import Message
from tests.fakes.servers import FakeOpenAI

CALL = '{"name": "read_file", "arguments": {"path": "a.md"}}'


def tool_schema(name: str, description: str, parameters: dict) -> dict:  # type: ignore[type-arg]
    """The OpenAI-style schema ``ToolRegistry.schemas`` gives."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


SCHEMAS = [
    tool_schema(
        "read_file",
        "Read",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
]
MARKUP = ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<|tool_call|>", '"arguments"')


def shown(text: str, cuts: list[int]) -> str:
    out: list[str] = []
    hold = HoldBack(out.append)
    at = 0
    for cut in sorted(set(cuts)):
        hold.feed(text[at:cut])
        at = cut
    hold.feed(text[at:])
    hold.finish(is_call=find_calls(text) is not None)
    return "".join(out)


pieces = st.sampled_from(
    [
        "Hello",
        " world",
        "\n",
        "<tool_call>",
        CALL,
        "</tool_call>",
        "<think>",
        "</think>",
        "[TOOL_CALLS] ",
        "[",
        "{",
        "```json\n",
        "```",
        "<|tool_call|>",
        "  ",
        "x",
        "<t",
    ]
)


@given(st.lists(pieces, max_size=12), st.lists(st.integers(0, 300), max_size=8))
def test_a_reply_is_shown_whole_unless_it_is_a_call(parts: list[str], cuts: list[int]) -> None:
    text = "".join(parts)
    cuts = [c for c in cuts if c <= len(text)]
    out = shown(text, cuts)
    found = find_calls(text)
    if found is None:
        assert out == text
    else:
        assert text.startswith(out)  # only what came before the call, never after
        assert find_calls(out) is None  # no call markup (not even a broken call) was shown


def test_prose_before_a_call_is_shown_as_it_streams() -> None:
    out: list[str] = []
    hold = HoldBack(out.append)
    hold.feed("Let me look.\n")
    assert out == ["Let me look.\n"]
    hold.feed("<tool")
    hold.feed("_call>{")
    assert "".join(out) == "Let me look.\n"
    hold.finish(is_call=True)
    assert "".join(out) == "Let me look.\n"


def test_a_line_that_only_starts_like_a_marker_is_released() -> None:
    out: list[str] = []
    hold = HoldBack(out.append)
    hold.feed("[")
    assert out == []
    hold.feed("Note] read it")
    assert "".join(out) == "[Note] read it"


def test_streamed_from_a_server_the_markup_never_reaches_the_display() -> None:
    reply = f"I will read it.\n<tool_call>\n{CALL}\n</tool_call>"
    with FakeOpenAI([Reply(reply)]) as srv:
        client = OpenAIClient(srv.url, "m")
        out: list[str] = []
        rounds = ToolRounds("native", SCHEMAS)
        prompt = [Message("system", "s"), Message("user", "read a.md")]
        result = rounds.ask(client, prompt, True, out.append, threading.Event())
        client.close()
    assert "".join(out) == "I will read it.\n"
    assert [c.name for c in result.tool_calls] == ["read_file"]
    assert result.text == "I will read it."

"""The deterministic in-process backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.context.budget import estimate_tokens
from harvey.errors import BackendError, ConfigError
from harvey.llm.base import chat
from harvey.llm.scripted import Reply, ScriptedClient
from harvey.messages import Message, ToolCall
from harvey.protocols import LLMClient


def test_replies_in_order_and_records_what_the_model_saw() -> None:
    model = ScriptedClient(["first", Reply(tool_calls=[("read_file", {"path": "a"})])])
    assert isinstance(model, LLMClient)
    history = [Message("user", "hello")]
    assert chat(model, history).text == "first"
    history.append(Message("assistant", "first"))
    second = chat(model, history, [{"type": "function", "function": {"name": "read_file"}}])
    assert second.tool_calls == [ToolCall("call_0", "read_file", {"path": "a"})]
    assert [m.content for m in model.seen[0].messages] == ["hello"]
    assert [m.content for m in model.last_messages] == ["hello", "first"]
    assert model.seen[1].tools[0]["function"]["name"] == "read_file"
    history[0].content = "changed later"
    assert model.seen[0].messages[0].content == "hello"  # a copy, not a reference


def test_running_out_of_replies_is_a_backend_error() -> None:
    model = ScriptedClient(["only"])
    chat(model, [Message("user", "1")])
    with pytest.raises(BackendError, match="only 1 replies"):
        chat(model, [Message("user", "2")])


def test_with_model_shares_the_script() -> None:
    model = ScriptedClient(["a", "b"])
    other = model.with_model("other")
    assert chat(other, [Message("user", "x")]).text == "a"
    assert chat(model, [Message("user", "y")]).text == "b"
    assert other.model == "other" and model.model == "scripted"
    assert len(model.seen) == 2 and model.remaining == 0


def test_usage_defaults_to_the_four_bytes_per_token_estimate() -> None:
    model = ScriptedClient([Reply("x" * 40), Reply("y", prompt_tokens=5, completion_tokens=9)])
    first = chat(model, [Message("user", "z" * 400)])
    expected = (estimate_tokens("z" * 400), estimate_tokens("x" * 40))
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == expected
    second = chat(model, [Message("user", "z")])
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (5, 9)


@given(st.text(max_size=200))
def test_streamed_chunks_reassemble_the_text(text: str) -> None:
    assert "".join(Reply(text).chunks()) == text
    result = chat(ScriptedClient([text]), [Message("user", "q")])
    if result.note:  # the loop guard cut it: what is left is how it began
        assert text.startswith(result.answer) and result.text.endswith(result.note)
    else:
        assert result.text == result.answer == text


def test_script_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    items = ["hi", {"text": "", "tool_calls": [{"name": "ls", "arguments": {"path": "."}}]}]
    path.write_text(json.dumps(items))
    model = ScriptedClient.from_file(path)
    assert chat(model, [Message("user", "q")]).text == "hi"
    calls = chat(model, [Message("user", "q")]).tool_calls
    assert calls == [ToolCall("call_0", "ls", {"path": "."})]


@pytest.mark.parametrize("content", ["{not json", '{"a": 1}', "[42]"])
def test_bad_script_files_are_config_errors(tmp_path: Path, content: str) -> None:
    path = tmp_path / "script.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=r"script\.json"):
        ScriptedClient.from_file(path)

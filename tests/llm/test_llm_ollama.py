"""OllamaClient against the loopback fake Ollama (real HTTP, real NDJSON)."""

from __future__ import annotations

import pytest

from harvey.errors import BackendHTTPError, BackendUnavailable, ModelNotFound, StreamError
from harvey.llm.base import chat, parse_arguments
from harvey.llm.ollama import OllamaClient, to_wire
from harvey.messages import Message, ToolCall
from harvey.protocols import TextDelta, Usage
from tests.fakes.servers import FakeOllama, HTTPFailure, Malformed, Reply, Slow, Truncated
from tests.llm.conftest import SleepRecorder, free_port

MODEL = "fake-llama:1b"
HI = [Message("user", "hi")]


def client(url: str, sleeps: SleepRecorder | None = None, **kwargs: object) -> OllamaClient:
    return OllamaClient(url, MODEL, sleep=sleeps or SleepRecorder(), **kwargs)  # type: ignore[arg-type]


def test_streams_text_in_order_then_usage() -> None:
    with FakeOllama([Reply("one two three", prompt_tokens=11, completion_tokens=3)]) as srv:
        events = list(client(srv.url).stream_chat(HI))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["one ", "two ", "three"]
    assert events[-1] == Usage(11, 3)
    body = srv.chat_requests[0]
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["options"] == {"num_ctx": 4096}  # always sent: Ollama truncates silently
    assert "tools" not in body


def test_num_ctx_is_sent_and_is_the_context_window() -> None:
    with FakeOllama(["ok"], context_window=131072) as srv:
        c = client(srv.url, num_ctx=8192)
        chat(c, HI)
        caps = c.capabilities()
    assert srv.chat_requests[0]["options"] == {"num_ctx": 8192}
    assert (caps.context_window, caps.context_source) == (8192, "num_ctx (config)")


def test_capabilities_from_api_show_are_cached() -> None:
    with FakeOllama(context_window=32768, tools=False) as srv:
        c = client(srv.url)
        first, second = c.capabilities(), c.capabilities()
    assert first is second
    assert first.context_window == 32768
    assert first.supports_tools is False
    assert "api/show" in first.context_source
    assert [r.path for r in srv.requests] == ["/api/show"]


def test_tool_calls_arrive_whole_with_ids_and_tools_are_sent() -> None:
    schema = {"type": "function", "function": {"name": "read_file", "parameters": {}}}
    script = [Reply("let me look", tool_calls=[("read_file", {"path": "a.txt", "limit": 3})])]
    with FakeOllama(script) as srv:
        result = chat(client(srv.url), HI, [schema])
    assert result.text == "let me look"
    [call] = result.tool_calls
    assert (call.name, call.arguments) == ("read_file", {"path": "a.txt", "limit": 3})
    assert call.id
    assert srv.chat_requests[0]["tools"] == [schema]


def test_history_is_converted_to_ollama_wire_format() -> None:
    history = [
        Message("user", "read it"),
        Message("assistant", "", tool_calls=[ToolCall("c1", "read_file", {"path": "a"})]),
        Message("tool", "contents", tool_call_id="c1", name="read_file"),
    ]
    wire = to_wire(history)
    function = {"name": "read_file", "arguments": {"path": "a"}}
    assert wire[1]["tool_calls"] == [{"function": function}]
    assert wire[2] == {"role": "tool", "content": "contents", "tool_name": "read_file"}


def test_list_models() -> None:
    with FakeOllama(models=["a:1b", "b:7b"]) as srv:
        assert client(srv.url).list_models() == ["a:1b", "b:7b"]


def test_unknown_model_is_model_not_found_with_advice() -> None:
    with FakeOllama(["never"]) as srv:
        c = OllamaClient(srv.url, "nope:1b")
        with pytest.raises(ModelNotFound) as info:
            chat(c, HI)
        with pytest.raises(ModelNotFound):
            c.capabilities()
    message = str(info.value)
    assert srv.url in message and "nope:1b" in message and "harvey models" in message
    assert "\n" not in message


def test_connection_refused_is_retried_then_explained(sleeps: SleepRecorder) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(BackendUnavailable) as info:
        chat(client(url, sleeps, retries=2), HI)
    assert sleeps.calls == [0.5, 1.0]
    message = str(info.value)
    assert url in message and "ollama serve" in message and "OLLAMA_HOST" in message


def test_server_error_then_success_is_retried(sleeps: SleepRecorder) -> None:
    with FakeOllama([HTTPFailure(500), HTTPFailure(503), Reply("fine")]) as srv:
        result = chat(client(srv.url, sleeps), HI)
    assert result.text == "fine"
    assert sleeps.calls == [0.5, 1.0]
    assert len(srv.chat_requests) == 3


def test_429_honours_small_retry_after(sleeps: SleepRecorder) -> None:
    with FakeOllama([HTTPFailure(429, "slow down", retry_after=2), Reply("ok")]) as srv:
        assert chat(client(srv.url, sleeps), HI).text == "ok"
    assert sleeps.calls == [2.0]


def test_persistent_5xx_gives_up_after_retries(sleeps: SleepRecorder) -> None:
    srv = FakeOllama([HTTPFailure(500, "boom")] * 5)
    with srv, pytest.raises(BackendHTTPError) as info:
        chat(client(srv.url, sleeps, retries=3), HI)
    assert info.value.status == 500
    assert "boom" in str(info.value)
    assert len(srv.chat_requests) == 4
    assert sleeps.calls == [0.5, 1.0, 2.0]


def test_client_errors_are_not_retried(sleeps: SleepRecorder) -> None:
    srv = FakeOllama([HTTPFailure(400, "bad request"), Reply("unused")])
    with srv, pytest.raises(BackendHTTPError) as info:
        chat(client(srv.url, sleeps), HI)
    assert info.value.status == 400 and not info.value.transient
    assert sleeps.calls == []


@pytest.mark.parametrize(
    "step",
    [
        Malformed("A partial line.\n"),
        Truncated("A partial line.\n"),
        Truncated("A partial line.\n", abrupt=True),
    ],
)
def test_broken_streams_raise_stream_error(step: object) -> None:
    with FakeOllama([step]) as srv:  # type: ignore[list-item]
        seen: list[str] = []
        with pytest.raises(StreamError) as info:
            chat(client(srv.url), HI, on_text=seen.append)
    assert seen == ["A partial line.\n"]  # whole lines are shown as they come
    assert srv.url in str(info.value)


def test_timeout_is_reported_and_not_retried(sleeps: SleepRecorder) -> None:
    with FakeOllama([Slow(3.0, "late")]) as srv, pytest.raises(BackendUnavailable) as info:
        chat(client(srv.url, sleeps, timeout=0.2), HI)
    assert "did not answer" in str(info.value) and "timeout" in str(info.value)
    assert sleeps.calls == []


def test_parse_arguments_accepts_objects_and_json_strings() -> None:
    assert parse_arguments({"a": 1}, "t") == {"a": 1}
    assert parse_arguments('{"a": 1}', "t") == {"a": 1}
    assert parse_arguments("{broken", "t") == {}
    assert parse_arguments("[1, 2]", "t") == {}
    assert parse_arguments(None, "t") == {}

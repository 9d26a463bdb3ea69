"""OpenAIClient against the loopback fake OpenAI-compatible server (real SSE)."""

from __future__ import annotations

import itertools
import json
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.errors import (
    BackendHTTPError,
    BackendUnavailable,
    Cancelled,
    ModelNotFound,
    StreamError,
)
from harvey.llm.base import chat
from harvey.llm.openai import DEFAULT_CONTEXT, OpenAIClient, _Assembler, server_root, to_wire
from harvey.messages import Message, ToolCall
from harvey.protocols import TextDelta, Usage
from tests.fakes.servers import FakeOpenAI, HTTPFailure, Malformed, Reply, Truncated
from tests.llm.conftest import SleepRecorder, free_port

HI = [Message("user", "hi")]


def client(url: str, sleeps: SleepRecorder | None = None, **kwargs: object) -> OpenAIClient:
    return OpenAIClient(url, "fake-model", sleep=sleeps or SleepRecorder(), **kwargs)  # type: ignore[arg-type]


def test_streams_text_and_requests_usage() -> None:
    with FakeOpenAI([Reply("hello there", prompt_tokens=7, completion_tokens=2)]) as srv:
        events = list(client(srv.url).stream_chat(HI))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hello ", "there"]
    assert events[-1] == Usage(7, 2)
    body = srv.chat_requests[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert srv.requests[0].headers["Authorization"] == "Bearer sk-no-key-required"


def test_api_key_is_sent_and_a_wrong_one_is_explained() -> None:
    with FakeOpenAI(["ok"], api_key="secret") as srv:
        assert chat(client(srv.url, api_key="secret"), HI).text == "ok"
        with pytest.raises(BackendHTTPError) as info:
            chat(client(srv.url, api_key="wrong"), HI)
    assert info.value.status == 401
    assert "API key" in str(info.value)


def test_tool_call_fragments_are_assembled() -> None:
    calls = [("read_file", {"path": "docs/a.txt", "offset": 10}), ("list_dir", {})]
    with FakeOpenAI([Reply("checking", tool_calls=calls)]) as srv:
        result = chat(client(srv.url), HI, [{"type": "function", "function": {"name": "x"}}])
    assert result.text == "checking"
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("call_0", "read_file", {"path": "docs/a.txt", "offset": 10}),
        ("call_1", "list_dir", {}),
    ]
    assert srv.chat_requests[0]["tools"][0]["function"]["name"] == "x"


@given(
    st.dictionaries(st.text(min_size=1, max_size=8), st.integers() | st.text(max_size=20)),
    st.lists(st.integers(min_value=1, max_value=40), max_size=10),
)
def test_any_fragmentation_of_arguments_yields_the_same_call(
    arguments: dict[str, object], cuts: list[int]
) -> None:
    text = json.dumps(arguments)
    positions = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    assembler = _Assembler()
    assembler.add({"index": 0, "id": "c9", "function": {"name": "tool", "arguments": ""}})
    for start, end in itertools.pairwise(positions):
        assembler.add({"index": 0, "function": {"arguments": text[start:end]}})
    assert assembler.drain() == [ToolCall("c9", "tool", arguments)]


def test_interleaved_indexes_and_invalid_json_arguments() -> None:
    assembler = _Assembler()
    assembler.add({"index": 1, "id": "b", "function": {"name": "two", "arguments": '{"x"'}})
    assembler.add({"index": 0, "id": "a", "function": {"name": "one", "arguments": "{not json"}})
    assembler.add({"index": 1, "function": {"arguments": ": 2}"}})
    assert assembler.drain() == [ToolCall("a", "one", {}), ToolCall("b", "two", {"x": 2})]


def test_history_is_converted_to_openai_wire_format() -> None:
    history = [
        Message("assistant", "", tool_calls=[ToolCall("c1", "read_file", {"path": "a"})]),
        Message("tool", "contents", tool_call_id="c1", name="read_file"),
    ]
    wire = to_wire(history)
    assert wire[0]["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path":"a"}'},
        }
    ]
    assert wire[1]["tool_call_id"] == "c1" and wire[1]["role"] == "tool"


def test_context_window_config_then_props_then_default() -> None:
    with FakeOpenAI(context_window=2048) as srv:
        assert client(srv.url, context_window=999).capabilities().context_window == 999
        caps = client(srv.url).capabilities()
        assert (caps.context_window, caps.context_source) == (2048, "server (/props n_ctx)")
    with FakeOpenAI(props=False) as srv:
        caps = client(srv.url).capabilities()
    assert caps.context_window == DEFAULT_CONTEXT
    assert "default" in caps.context_source and "context_window" in caps.context_source


def test_server_root_strips_version_prefix() -> None:
    assert server_root("http://h:8080/v1/") == "http://h:8080"
    assert server_root("http://h:8080") == "http://h:8080"


def test_list_models_and_paths_without_v1() -> None:
    with FakeOpenAI(["ok"], models=["m1", "m2"]) as srv:
        assert client(srv.url).list_models() == ["m1", "m2"]
        assert chat(client(srv.root_url), HI).text == "ok"


def test_unknown_model_and_wrong_path_are_told_apart() -> None:
    with FakeOpenAI(["never"], strict_models=True) as srv:
        with pytest.raises(ModelNotFound) as missing:
            chat(OpenAIClient(srv.url, "ghost"), HI)
        with pytest.raises(BackendHTTPError) as wrong:
            OpenAIClient(srv.root_url + "/wrong", "fake-model").list_models()
    assert "ghost" in str(missing.value) and "harvey models" in str(missing.value)
    assert wrong.value.status == 404 and "/v1" in str(wrong.value)


def test_transient_failures_are_retried_with_backoff(sleeps: SleepRecorder) -> None:
    script = [HTTPFailure(502), HTTPFailure(429, retry_after=30), Reply("done")]
    with FakeOpenAI(script) as srv:
        assert chat(client(srv.url, sleeps), HI).text == "done"
    assert sleeps.calls == [0.5, 8.0]  # a large Retry-After is clamped to the cap


def test_connection_refused_names_the_endpoint(sleeps: SleepRecorder) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(BackendUnavailable) as info:
        client(url, sleeps, retries=1).list_models()
    assert url in str(info.value) and "OPENAI_BASE_URL" in str(info.value)
    assert sleeps.calls == [0.5]


@pytest.mark.parametrize("step", [Malformed("a "), Truncated("a "), Truncated("a ", abrupt=True)])
def test_broken_streams_raise_stream_error(step: object) -> None:
    srv = FakeOpenAI([step, step])  # type: ignore[list-item]
    with srv, pytest.raises(StreamError):
        chat(client(srv.url), HI)


def test_a_stream_cut_before_its_end_marker_is_asked_for_once_more() -> None:
    """A connection closed before ``[DONE]`` ended early, like a stream without a finish
    reason: nothing was shown, so the reply is asked for again, and never kept half."""
    with FakeOpenAI([Truncated("The main"), Reply("Three events.")]) as srv:
        assert chat(client(srv.url), HI).text == "Three events."
    srv = FakeOpenAI([Truncated("The main"), Truncated("The")])
    with srv, pytest.raises(StreamError, match=r"^stream ended early .*\(asked twice\)") as cut:
        chat(client(srv.url), HI)
    assert "--n_ctx" not in str(cut.value)  # words came: no guess at the cause
    srv = FakeOpenAI([Truncated(""), Truncated("")])
    with (
        srv,
        pytest.raises(StreamError, match=r"before any reply .*\(asked twice\) — check") as none,
    ):
        chat(client(srv.url), HI)
    assert "--n_ctx" in str(none.value) and "context_window" in str(none.value)


def test_concurrent_requests_are_served_in_parallel() -> None:
    replies = [Reply(f"r{i}") for i in range(6)]
    with FakeOpenAI(replies, delay_per_call=0.05) as srv:
        c = client(srv.url)
        texts: list[str] = []
        lock = threading.Lock()

        def ask() -> None:
            text = chat(c, HI).text
            with lock:
                texts.append(text)

        threads = [threading.Thread(target=ask) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(texts) == sorted(f"r{i}" for i in range(6))


def test_cancel_during_streaming_stops_reading() -> None:
    cancel = threading.Event()
    seen: list[str] = []

    def on_text(text: str) -> None:
        seen.append(text)
        cancel.set()

    lines = "".join(f"Line {i}.\n" for i in range(50))
    with FakeOpenAI([Reply(lines)], chunk_delay=0.01) as srv, pytest.raises(Cancelled):
        chat(client(srv.url), HI, on_text=on_text, cancel=cancel)
    assert seen == ["Line 0.\n"]


def test_a_server_refusing_the_json_schema_form_gets_json_object_and_keeps_it() -> None:
    """llama-cpp-python's server validates ``response_format.type`` against ``text`` and
    ``json_object``: the schema goes again in that form, and later requests start there."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    refused = HTTPFailure(422, "1 validation error:")
    with FakeOpenAI([refused, Reply('{"a": 1}'), Reply('{"a": 2}')]) as srv:
        llm = client(srv.url)
        first = "".join(
            e.text
            for e in llm.stream_chat([Message("user", "x")], response_schema=schema)
            if isinstance(e, TextDelta)
        )
        list(llm.stream_chat([Message("user", "y")], response_schema=schema))
        forms = [r["response_format"] for r in srv.chat_requests]
    assert first == '{"a": 1}'
    assert forms[0]["type"] == "json_schema" and forms[0]["json_schema"]["schema"] == schema
    assert forms[1] == forms[2] == {"type": "json_object", "schema": schema}


def test_a_schema_the_server_took_once_is_never_sent_in_another_form() -> None:
    schema = {"type": "object"}
    with FakeOpenAI([Reply("{}"), HTTPFailure(422, "bad request")]) as srv:
        llm = client(srv.url)
        list(llm.stream_chat([Message("user", "x")], response_schema=schema))
        with pytest.raises(BackendHTTPError):
            list(llm.stream_chat([Message("user", "y")], response_schema=schema))
        assert len(srv.chat_requests) == 2

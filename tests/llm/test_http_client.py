"""The HTTP backends' shared base: ``with_model`` changes the model and nothing else,
and the capability probe runs once however many threads ask."""

from __future__ import annotations

import threading

import pytest

from harvey.errors import ModelNotFound
from harvey.llm.base import chat
from harvey.llm.http_client import HttpClient
from harvey.llm.ollama import OllamaClient
from harvey.llm.openai import OpenAIClient
from harvey.messages import Message
from tests.fakes.servers import FakeOllama, FakeOpenAI, HTTPFailure
from tests.llm.conftest import SleepRecorder

HI = [Message("user", "hi")]


def _same_but_model(before: HttpClient, after: HttpClient) -> None:
    assert type(after) is type(before)
    assert after is not before and after.http is not before.http
    assert after.endpoint == before.endpoint
    assert (after.timeout, after.connect_timeout, after.retries) == (
        before.timeout,
        before.connect_timeout,
        before.retries,
    )
    assert (after.http.timeout, after.http.retries) == (before.http.timeout, before.http.retries)
    assert after.api_key == before.api_key


def test_openai_with_model_keeps_endpoint_timeouts_and_key(sleeps: SleepRecorder) -> None:
    with FakeOpenAI([HTTPFailure(503), "ok"], models=["a", "b"], api_key="sekrit") as srv:
        first = OpenAIClient(
            srv.url,
            "a",
            api_key="sekrit",
            context_window=2048,
            timeout=7,
            connect_timeout=2,
            retries=2,
            sleep=sleeps,
        )
        second = first.with_model("b")
        assert isinstance(second, OpenAIClient)
        _same_but_model(first, second)
        assert (first.model, second.model) == ("a", "b")
        assert second.context_window == 2048
        assert second.capabilities().context_window == 2048
        # the key reaches the server and the injected sleep is the one retried with
        assert chat(second, HI).text == "ok"
        assert len(sleeps.calls) == 1
        chats = [r for r in srv.requests if r.path.endswith("/chat/completions")]
        assert [r.body["model"] for r in chats] == ["b", "b"]
        assert all(r.headers.get("Authorization") == "Bearer sekrit" for r in chats)
        first.close()
        second.close()


def test_ollama_with_model_keeps_endpoint_timeouts_and_num_ctx(sleeps: SleepRecorder) -> None:
    with FakeOllama([HTTPFailure(503), "ok"], models=["a", "b"]) as srv:
        first = OllamaClient(
            srv.url, "a", num_ctx=1024, timeout=9, connect_timeout=3, retries=1, sleep=sleeps
        )
        second = first.with_model("b")
        assert isinstance(second, OllamaClient)
        _same_but_model(first, second)
        assert (first.model, second.model, second.num_ctx) == ("a", "b", 1024)
        assert chat(second, HI).text == "ok"
        assert len(sleeps.calls) == 1
        chats = [r for r in srv.requests if r.path == "/api/chat"]
        assert [r.body["model"] for r in chats] == ["b", "b"]
        assert all(r.body["options"] == {"num_ctx": 1024} for r in chats)
        first.close()
        second.close()


def test_ollama_error_advice_names_the_new_model() -> None:
    with FakeOllama(["never"], models=["a"], strict_models=True) as srv:
        client = OllamaClient(srv.url, "a", retries=0).with_model("ghost")
        with pytest.raises(ModelNotFound, match="ollama pull ghost"):
            chat(client, HI)
        client.close()


def test_capabilities_are_probed_once_across_threads() -> None:
    with FakeOpenAI() as srv:
        client = OpenAIClient(srv.url, "m", retries=0)
        results: list[int] = []
        threads = [
            threading.Thread(target=lambda: results.append(client.capabilities().context_window))
            for _ in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        props = [r for r in srv.requests if r.path == "/props"]
    assert len(results) == 8 and len(set(results)) == 1
    assert len(props) == 1
    client.close()

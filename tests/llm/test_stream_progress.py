"""A read timeout means "no progress": keep-alive bytes alone do not hold a turn open."""

from __future__ import annotations

import itertools

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.errors import BackendUnavailable, StreamError
from harvey.llm import http
from harvey.llm.base import chat
from harvey.llm.http import Endpoint, ProgressWatch, bounded_lines
from harvey.llm.ollama import OllamaClient
from harvey.llm.openai import OpenAIClient
from harvey.messages import Message
from tests.fakes.servers import FakeOllama, FakeOpenAI, KeepAlive, Reply

HI = [Message("user", "hi")]


def test_sse_pings_without_tokens_time_out_naming_the_endpoint() -> None:
    # Pings every 0.2 s keep httpx's per-byte read timeout (1 s) from ever firing.
    with FakeOpenAI([KeepAlive(0.2, text="A whole line.\npartial ")]) as srv:
        client = OpenAIClient(srv.url, "fake-model", timeout=1.0, retries=0)
        seen: list[str] = []
        with pytest.raises(BackendUnavailable) as info:
            chat(client, HI, on_text=seen.append)
    message = str(info.value)
    assert message.startswith(f"the OpenAI-compatible server at {srv.url} did not answer within 1s")
    assert "\n" not in message
    assert seen == ["A whole line.\n"]  # what came before the pings was shown, line by line


def test_ollama_blank_keepalive_lines_time_out() -> None:
    with FakeOllama([KeepAlive(0.2)]) as srv:
        client = OllamaClient(srv.url, "fake-llama:1b", timeout=1.0, retries=0)
        with pytest.raises(BackendUnavailable) as info:
            chat(client, HI)
    assert f"Ollama at {srv.url} did not answer within 1s" in str(info.value)


def test_a_normal_stream_with_pings_between_tokens_still_completes() -> None:
    with FakeOpenAI([Reply("a reply in several pieces")], chunk_delay=0.05) as srv:
        client = OpenAIClient(srv.url, "fake-model", timeout=1.0, retries=0)
        assert chat(client, HI).text == "a reply in several pieces"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_restarts_the_wait_and_check_raises_after_timeout() -> None:
    clock = Clock()
    watch = ProgressWatch(Endpoint("Ollama", "http://h:1", "start it"), 5.0, clock)
    clock.now += 4.0
    watch.check()  # 4 s without progress: fine
    watch.progress()
    clock.now += 4.0
    watch.check()  # 4 s since the last progress, 8 s in all: still fine
    clock.now += 1.5
    with pytest.raises(BackendUnavailable, match=r"Ollama at http://h:1 did not answer within 5s"):
        watch.check()


def pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@given(
    st.lists(st.sampled_from(["a", "é", " ", "\n", "\r\n", "\r", "data: x"]), max_size=60).map(
        "".join
    ),
    st.lists(st.integers(0, 400), max_size=12),
)
def test_bounded_lines_split_like_sse_whatever_the_pieces(text: str, cuts: list[int]) -> None:
    expected = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if expected and expected[-1] == "":
        expected.pop()  # a final newline ends the last line; it does not start another
    assert list(bounded_lines(pieces(text, cuts), ENDPOINT)) == expected


ENDPOINT = Endpoint("Ollama", "http://h:1", "start it")


def test_a_line_that_never_ends_is_refused_not_buffered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "MAX_LINE_BYTES", 64)
    endless = ("x" * 10 for _ in range(1000))
    with pytest.raises(StreamError, match=r"^Ollama at http://h:1 sent a stream line longer than"):
        list(bounded_lines(endless, ENDPOINT))


def test_a_json_answer_over_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "MAX_JSON_BYTES", 100)
    body = b'{"models": [' + b'{"name": "m"},' * 50 + b'{"name": "m"}]}'
    mock = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
    transport = http.HttpTransport(ENDPOINT, transport=mock, retries=0)
    with pytest.raises(StreamError, match=r"answered /api/tags with more than 100 bytes"):
        transport.request_json("GET", "/api/tags")
    monkeypatch.setattr(http, "MAX_JSON_BYTES", len(body))
    assert len(transport.request_json("GET", "/api/tags")["models"]) == 51

"""JSON of the wrong shape mid-stream is a StreamError, never a raw crash."""

from __future__ import annotations

import httpx
import pytest

from harvey.errors import StreamError
from harvey.llm.base import chat
from harvey.llm.ollama import OllamaClient
from harvey.llm.openai import OpenAIClient
from harvey.messages import Message

HELLO = [Message("user", "hi")]


def serving(body: str) -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: httpx.Response(200, text=body))


@pytest.mark.parametrize(
    "line",
    ['{"message": "not an object"}', '{"message": {"tool_calls": ["nope"]}}'],
)
def test_ollama_wrong_shape(line: str) -> None:
    client = OllamaClient("http://ollama.test", "m", transport=serving(line + "\n"), retries=0)
    with pytest.raises(StreamError, match="malformed stream line"):
        chat(client, HELLO)


@pytest.mark.parametrize(
    "chunk",
    ['{"choices": ["x"]}', '{"choices": [{"delta": {"tool_calls": [{"function": "x"}]}}]}'],
)
def test_openai_wrong_shape(chunk: str) -> None:
    body = f"data: {chunk}\n\ndata: [DONE]\n\n"
    client = OpenAIClient("http://server.test/v1", "m", transport=serving(body), retries=0)
    with pytest.raises(StreamError, match="malformed stream line"):
        chat(client, HELLO)

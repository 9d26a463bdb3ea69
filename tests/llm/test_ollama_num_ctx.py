"""Ollama: num_ctx is always sent, and a silently truncated prompt is warned about."""

from __future__ import annotations

import logging

import pytest

from harvey.llm.base import chat
from harvey.llm.ollama import MAX_DEFAULT_CTX, OllamaClient, truncation_warning
from harvey.llm.scripted import Reply
from harvey.messages import Message
from tests.fakes.servers import FakeOllama

MODEL = "fake-llama:1b"


def test_a_long_trained_window_is_capped_and_sent() -> None:
    with FakeOllama(["ok"], context_window=131072) as srv:
        client = OllamaClient(srv.url, MODEL, retries=0)
        chat(client, [Message("user", "hi")])
        caps = client.capabilities()
        sent = srv.chat_requests[0]["options"]
    assert caps.context_window == MAX_DEFAULT_CTX == sent["num_ctx"]
    assert "trained 131,072" in caps.context_source


def test_a_truncated_prompt_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    big = "word " * 8000  # ~10,000 estimated tokens for a 4,096 window
    with FakeOllama([Reply("ok", prompt_tokens=4096)], context_window=4096) as srv:
        client = OllamaClient(srv.url, MODEL, retries=0)
        with caplog.at_level(logging.WARNING, logger="harvey.llm.ollama"):
            chat(client, [Message("user", big)])
    assert any("truncated the prompt" in r.getMessage() for r in caplog.records)


def test_a_prompt_that_fits_is_not_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with FakeOllama([Reply("ok", prompt_tokens=3)], context_window=4096) as srv:
        client = OllamaClient(srv.url, MODEL, retries=0)
        with caplog.at_level(logging.WARNING, logger="harvey.llm.ollama"):
            chat(client, [Message("user", "a cached prefix " * 50)])
    assert not caplog.records  # fewer counted (a cached prefix) but the prompt fits


def test_truncation_rule() -> None:
    assert truncation_warning(10_000, 4096, 4096) is not None
    assert truncation_warning(10_000, 9_500, 4096) is None  # the estimate was just high
    assert truncation_warning(3_000, 10, 4096) is None
    assert truncation_warning(10_000, None, 4096) is None

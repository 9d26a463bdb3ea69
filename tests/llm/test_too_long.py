"""Every server's "prompt too long" becomes ``ContextTooLong``; a chat turn shows one line."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from harvey.cli.status_line import PREFIX as STATUS_PREFIX
from harvey.errors import BackendHTTPError, ContextTooLong
from harvey.llm.base import chat
from harvey.llm.http import Endpoint, status_error
from harvey.llm.ollama import OllamaClient
from harvey.llm.openai import OpenAIClient
from harvey.llm.scripted import Reply
from harvey.llm.too_long import too_long_error
from harvey.messages import Message
from tests.fakes.servers import FakeOllama, FakeOpenAI
from tests.harvey_process import invoke_harvey

END = Endpoint("the server", "http://127.0.0.1:1", "start it")


@pytest.mark.parametrize(
    ("body", "prompt", "window"),
    [
        (  # llama.cpp's server
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 9000,
                    "n_ctx": 8192,
                }
            },
            9000,
            8192,
        ),
        (  # OpenAI
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens. However, "
                    "your messages resulted in 9001 tokens. Please reduce the length.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
            9001,
            8192,
        ),
        (  # llama-cpp-python's server
            {
                "error": {
                    "message": "This model's maximum context length is 2048 tokens. However, you "
                    "requested 2300 tokens (2044 in the messages, 256 in the completion).",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
            2044,
            2048,
        ),
        ({"error": "the input length exceeds the context length"}, None, None),  # Ollama
    ],
)
def test_status_error_maps_each_servers_words(
    body: dict[str, object], prompt: int | None, window: int | None
) -> None:
    err = status_error(END, 400, json.dumps(body).encode(), "m")
    assert isinstance(err, ContextTooLong)
    assert not err.transient
    assert (err.prompt_tokens, err.window) == (prompt, window)
    assert "too long" in str(err) and "\n" not in str(err)
    if prompt is not None:
        assert f"{prompt:,} tokens for a {window:,}-token context" in str(err)


def test_other_400s_stay_http_errors() -> None:
    err = status_error(END, 400, b'{"error": {"message": "bad temperature"}}', "m")
    assert type(err) is BackendHTTPError


def test_a_500_saying_too_long_is_not_retried() -> None:
    body = b'{"error": {"message": "the request exceeds the available context size"}}'
    assert isinstance(status_error(END, 500, body, "m"), ContextTooLong)


def test_the_embedded_models_value_error() -> None:
    err = too_long_error(
        "the embedded model", "Requested tokens (9000) exceed context window of 8192"
    )
    assert err is not None and (err.prompt_tokens, err.window) == (9000, 8192)


@pytest.mark.parametrize("style", ["llama.cpp", "openai", "llama-cpp-python"])
def test_openai_compatible_fakes_are_recognised(style: str) -> None:
    with FakeOpenAI(max_prompt_tokens=10, too_long_style=style) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=2, sleep=lambda s: None)
        with pytest.raises(ContextTooLong) as info:
            chat(client, [Message(role="user", content="x" * 400)])
        assert srv.rejected == 1  # not retried
    assert info.value.window == 10


def test_ollama_fake_is_recognised() -> None:
    with FakeOllama(max_prompt_tokens=10) as srv:
        client = OllamaClient(srv.url, "fake-llama:1b", retries=0)
        with pytest.raises(ContextTooLong):
            chat(client, [Message(role="user", content="x" * 400)])


def test_a_chat_turn_rejected_for_length_is_one_line_and_keeps_history(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeOpenAI([Reply("first answer")], max_prompt_tokens=1500) as srv:
        base = ["run", "--backend", "openai", "--base-url", srv.url]
        ok = invoke_harvey(*base, "short question", cwd=ws)
        assert ok.returncode == 0, ok.stderr
        proc = invoke_harvey(*base, "long " * 2000, cwd=ws)
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.strip().splitlines() if not ln.startswith(STATUS_PREFIX)]
    assert len(lines) == 1, proc.stderr
    assert "rejected the prompt as too long" in lines[0]
    assert "-token context" in lines[0] and "Traceback" not in proc.stderr
    # what to do, in the command the person is in: no REPL command in a one-shot run
    assert "/clear" not in lines[0] and "harvey run sends this prompt" in lines[0]
    db = sqlite3.connect(Path(os.environ["HARVEY_HOME"]) / "sessions.db")
    contents = [row[0] for row in db.execute("SELECT content FROM messages ORDER BY id")]
    assert contents == ["short question", "first answer"]


def test_the_repl_says_what_to_do_in_the_repl() -> None:
    from harvey.llm.too_long import with_advice
    from harvey.repl.loop import REPL_TOO_LONG

    said = str(
        with_advice(ContextTooLong("the model rejected the prompt as too long"), REPL_TOO_LONG)
    )
    assert "/compact or /clear the history" in said

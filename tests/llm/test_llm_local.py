"""The embedded backend. The fast tests check plumbing; the slow ones run
SmolLM2-135M for real, in-process and behind llama-cpp-python's own
OpenAI-compatible server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harvey.errors import BackendError
from harvey.llm import local
from harvey.llm.base import chat
from harvey.llm.local import LocalClient, find_model_file, to_wire
from harvey.llm.openai import OpenAIClient
from harvey.messages import Message, ToolCall
from tests.harvey_process import run_harvey

needs_model = pytest.mark.usefixtures("embedded_model")
PROMPT = [
    Message("system", "You are a helpful assistant. Answer briefly."),
    Message("user", "What is the capital of France?"),
]


def test_tool_turns_become_text_for_the_chat_template() -> None:
    wire = to_wire(
        [
            Message("assistant", "looking", tool_calls=[ToolCall("c", "read_file", {"p": 1})]),
            Message("tool", "data", tool_call_id="c", name="read_file"),
        ]
    )
    assert wire[0] == {
        "role": "assistant",
        "content": 'looking\n[called tool read_file with {"p":1}]',
    }
    assert wire[1] == {"role": "user", "content": "[tool read_file result]\ndata"}


def test_missing_llama_cpp_tells_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes the import fail
    monkeypatch.setattr(local, "_CACHE", {})
    with pytest.raises(BackendError, match=r"harvey-agent\[local\]"):
        local.load(Path("/nonexistent.gguf"), None, None)


def test_missing_model_package_tells_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BackendError, match=r"harvey-agent\[local\]"):
        find_model_file()


def test_other_models_are_refused() -> None:
    client = LocalClient()
    assert client.with_model("SmolLM2-135M-Instruct") is client
    with pytest.raises(BackendError):
        client.with_model("llama3")


@needs_model
def test_model_file_is_found_inside_the_package() -> None:
    path = find_model_file()
    assert path.suffix == ".gguf" and path.stat().st_size > 10_000_000


@pytest.mark.slow
@needs_model
def test_embedded_model_answers_for_real() -> None:
    client = LocalClient(n_ctx=2048, max_tokens=24)  # a short answer keeps the test quick
    caps = client.capabilities()
    assert caps.context_window == 2048 and caps.supports_tools is False
    result = chat(client, PROMPT)
    assert result.text.strip()
    assert result.usage.prompt_tokens and result.usage.prompt_tokens > 5
    assert result.usage.completion_tokens and result.usage.completion_tokens > 0
    # The second client shares the loaded instance.
    assert local.load(find_model_file(), 2048, None) is local.load(find_model_file(), 2048, None)


@pytest.mark.slow
@needs_model
def test_openai_client_streams_from_llama_cpp_server(llama_server: str) -> None:
    client = OpenAIClient(llama_server, "SmolLM2-135M-Instruct")
    assert client.list_models()
    result = chat(client, PROMPT)
    assert result.text.strip()
    assert result.usage.completion_tokens is None or result.usage.completion_tokens > 0


@pytest.mark.slow
@needs_model
def test_harvey_run_against_llama_cpp_server(llama_server: str, tmp_path: Path) -> None:
    env = {"HARVEY_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    proc = run_harvey(
        "run", "Say hello in one short sentence.",
        "--backend", "openai", "--base-url", llama_server, "--no-record",
        cwd=tmp_path, env=env, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip()


class _RecordingLlama:
    """Stands in for a loaded ``Llama``: records each call's sampling as the sampler
    would read it (the keyword arguments and the instance's window at call time)."""

    def __init__(self) -> None:
        self.last_n_tokens_size = 64
        self.n_tokens = 0
        self.calls: list[dict[str, object]] = []

    def create_chat_completion(self, **kwargs: object) -> object:
        self.calls.append({**kwargs, "window": self.last_n_tokens_size})

        def chunks() -> object:
            yield {"choices": [{"delta": {"content": "Paris."}, "finish_reason": None}]}
            yield {"choices": [{"delta": {}, "finish_reason": "stop"}]}

        return chunks()


def test_each_client_samples_with_its_own_window_and_seed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    llama = _RecordingLlama()
    shared = local._Loaded(llama, threading.Lock(), 2048, 2048)
    monkeypatch.setattr(LocalClient, "_loaded", lambda self: shared)
    wide = LocalClient(repeat_window=256, seed=5, repeat_penalty=1.1, temperature=0.4)
    default = LocalClient()
    assert chat(wide, PROMPT).text == "Paris."
    assert chat(default, PROMPT).text == "Paris."
    # the map phase's client keeps the sampling, only the reply cap changes
    assert chat(wide.for_map_calls(), PROMPT).text == "Paris."
    first, second, mapped = llama.calls
    assert (first["window"], first["seed"], first["repeat_penalty"]) == (256, 5, 1.1)
    assert first["temperature"] == 0.4
    # the shared instance does not keep the previous client's window
    assert second["window"] == local.REPEAT_WINDOW and "seed" not in second
    assert (second["repeat_penalty"], second["temperature"]) == (
        default.repeat_penalty,
        default.temperature,
    )
    assert (mapped["window"], mapped["seed"], mapped["max_tokens"]) == (
        256,
        5,
        local.MAP_REPLY_TOKENS,
    )


@pytest.mark.slow  # a child interpreter loads the tokenizer and the model
@needs_model
def test_llama_cpp_prints_nothing_on_the_terminal(tmp_path: Path) -> None:
    """llama-cpp-python prints native warnings as errors even with verbose=False (the
    tokenizer's "possible training context overflow" landed in the REPL's /status):
    Harvey sends them to logging instead."""
    import subprocess

    code = (
        "from harvey.llm.counting import embedded_tokenizer\n"
        "from harvey.llm.local import find_model_file, load\n"
        "embedded_tokenizer(find_model_file()).count('hello')\n"
        "load(find_model_file(), 512, 1)\n"
        "print('loaded')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "loaded\n" and done.stderr == "", done.stderr

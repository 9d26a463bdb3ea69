"""Counting endpoints are probed when a count is first needed, and only where they can be."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.chat.prompt_budget import PromptBudget
from harvey.config.settings import Settings
from harvey.llm.counting import LLAMA_CPP, LLAMA_CPP_PYTHON, counting_kinds
from harvey.llm.openai import OpenAIClient
from harvey.llm.scripted import Reply
from harvey.messages import Message
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import invoke_harvey

COUNTING = ("/tokenize", "/extras/tokenize/count", "/apply-template")


def url(srv: FakeOpenAI) -> list[str]:
    return ["--base-url", srv.url, "--no-record"]


def counting_requests(srv: FakeOpenAI) -> list[str]:
    return [r.path for r in srv.requests if r.path.endswith(COUNTING)]


@pytest.mark.parametrize("api", ["llama.cpp", "llama-cpp-python"])
def test_a_plain_run_that_fits_comfortably_makes_no_probe(tmp_path: Path, api: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeOpenAI([Reply("hello")], tokenize_api=api, context_window=8192) as srv:
        proc = invoke_harvey("run", "hi", "--backend", "openai", *url(srv), cwd=ws)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "hello"
        assert counting_requests(srv) == []
        assert any(r.path.endswith("/chat/completions") for r in srv.requests)


def test_a_prompt_near_the_window_is_counted_exactly(tmp_path: Path) -> None:
    with FakeOpenAI(tokenize_api="llama.cpp", context_window=2048) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        budget = PromptBudget(
            settings=Settings(), workspace=tmp_path, main_client=lambda: client, history=[]
        )
        budget.remaining(pending=[Message("user", "hi")])
        assert counting_requests(srv) == []  # far from the window: estimated
        budget.remaining(pending=[Message("user", "a long question " * 300)])
        assert "/tokenize" in counting_requests(srv)  # near it: counted
        probes = [p for p in counting_requests(srv) if p.endswith("/extras/tokenize/count")]
        assert probes == []  # /props answered: a llama.cpp server, nothing else asked
        assert budget.counting_method() == "exact: llama.cpp /tokenize"


def test_a_server_without_props_is_probed_for_llama_cpp_python_only(tmp_path: Path) -> None:
    with FakeOpenAI(tokenize_api="llama-cpp-python", props=False) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        client.capabilities()  # /props: not found
        assert client.token_counter() is not None
        assert client.token_counter() is not None  # cached: probed once
        assert counting_requests(srv) == ["/extras/tokenize/count"]


def test_a_hosted_api_is_never_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    client = OpenAIClient("https://api.openai.com/v1", "gpt-4o-mini", api_key="sk-test")

    def no_request(*args: object, **kwargs: object) -> object:
        raise AssertionError("no request may be made")  # not a BackendError: never swallowed

    monkeypatch.setattr(client.http, "request_json", no_request)
    assert client.token_counter() is None


def test_counting_kinds() -> None:
    assert counting_kinds("https://api.openai.com/v1", None) == ()
    assert counting_kinds("https://myres.openai.azure.com/openai", True) == ()
    assert counting_kinds("http://127.0.0.1:8080/v1", True) == (LLAMA_CPP,)
    assert counting_kinds("http://127.0.0.1:8000/v1", False) == (LLAMA_CPP_PYTHON,)
    assert counting_kinds("http://gpu-box:8080/v1", None) == (LLAMA_CPP, LLAMA_CPP_PYTHON)

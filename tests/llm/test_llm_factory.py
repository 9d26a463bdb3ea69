"""Backend resolution and default models, against the fake servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harvey.config.settings import RouteSettings, Settings
from harvey.errors import BackendError, BackendUnavailable, ConfigError
from harvey.llm.backends import LOCAL_MODEL
from harvey.llm.factory import make_client, make_route_client, probe_ollama
from harvey.llm.local import LocalClient
from harvey.llm.ollama import OllamaClient
from harvey.llm.openai import OpenAIClient
from harvey.llm.scripted import ScriptedClient
from tests.fakes.servers import FakeOllama, FakeOpenAI
from tests.llm.conftest import free_port


def test_auto_picks_ollama_and_its_first_model_when_it_answers() -> None:
    with FakeOllama(models=["first:1b", "second:7b"]) as srv:
        env = {"OLLAMA_HOST": srv.url.removeprefix("http://")}
        client = make_client(Settings(), env=env)
        assert isinstance(client, OllamaClient)
        assert (client.model, client.endpoint) == ("first:1b", srv.url)


def test_auto_falls_back_to_local_when_ollama_is_absent_or_empty() -> None:
    env = {"OLLAMA_HOST": f"127.0.0.1:{free_port()}"}
    client = make_client(Settings(), env=env)
    assert isinstance(client, LocalClient) and client.model == LOCAL_MODEL
    with FakeOllama(models=[]) as srv:
        assert isinstance(make_client(Settings(), env={"OLLAMA_HOST": srv.url}), LocalClient)


def test_auto_with_an_ollama_model_but_no_ollama_says_so() -> None:
    env = {"OLLAMA_HOST": f"127.0.0.1:{free_port()}"}
    with pytest.raises(BackendUnavailable, match="ollama serve"):
        make_client(Settings(model="llama3.2"), env=env)


def test_probe_returns_none_for_a_server_that_is_not_ollama() -> None:
    with FakeOpenAI() as srv:
        assert probe_ollama(srv.root_url) is None


def test_ollama_settings_are_passed_through() -> None:
    with FakeOllama(["ok"], models=["m:1b"]) as srv:
        settings = Settings(backend="ollama", model="m:1b", num_ctx=2048, timeout=7)
        client = make_client(settings, env={"OLLAMA_HOST": srv.url})
        assert isinstance(client, OllamaClient)
        assert client.capabilities().context_window == 2048
        assert client.http.timeout == 7


def test_ollama_without_models_is_an_error_with_advice() -> None:
    with FakeOllama(models=[]) as srv, pytest.raises(BackendError, match="ollama pull"):
        make_client(Settings(backend="ollama"), env={"OLLAMA_HOST": srv.url})


def test_openai_from_environment_with_first_listed_model_and_key() -> None:
    with FakeOpenAI(["ok"], models=["served"], api_key="k") as srv:
        env = {"OPENAI_BASE_URL": srv.url, "OPENAI_API_KEY": "k"}
        client = make_client(Settings(backend="openai", context_window=1024), env=env)
        assert isinstance(client, OpenAIClient)
        assert client.model == "served"
        assert client.api_key is not None and client.api_key.get_secret_value() == "k"
        assert client.capabilities().context_window == 1024


def test_flags_override_settings() -> None:
    with FakeOpenAI(["ok"]) as srv:
        client = make_client(
            Settings(backend="ollama"), backend="openai", base_url=srv.url, model="chosen", env={}
        )
    assert isinstance(client, OpenAIClient) and client.model == "chosen"
    assert client.endpoint == srv.url
    with pytest.raises(ConfigError):
        make_client(Settings(), backend="telepathy", env={})


def test_route_client_uses_its_own_endpoint_not_the_main_one() -> None:
    with FakeOpenAI(models=["big"]) as srv:
        settings = Settings(backend="ollama", base_url="http://main:1", timeout=9)
        route = RouteSettings(name="cloud", backend="openai", base_url=srv.url, api_key="r")
        client = make_route_client(settings, route, env={})
    assert isinstance(client, OpenAIClient)
    assert (client.endpoint, client.model) == (srv.url, "big")
    assert client.api_key is not None and client.api_key.get_secret_value() == "r"
    assert client.http.timeout == 9


def test_scripted_backend_reads_harvey_script(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps(["hello"]))
    client = make_client(Settings(backend="scripted"), env={"HARVEY_SCRIPT": str(script)})
    assert isinstance(client, ScriptedClient) and client.remaining == 1
    with pytest.raises(ConfigError, match="HARVEY_SCRIPT"):
        make_client(Settings(backend="scripted"), env={})


def test_local_backend_rejects_other_model_names() -> None:
    with pytest.raises(ConfigError, match="gguf"):
        make_client(Settings(backend="local", model="llama3"), env={})

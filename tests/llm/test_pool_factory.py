"""Settings with ``endpoints:`` build a ``PooledClient`` (main client and routes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.config.settings import RouteSettings, Settings
from harvey.errors import ConfigError
from harvey.llm.factory import make_client, make_route_client
from harvey.llm.openai import OpenAIClient
from harvey.llm.pool import PooledClient
from harvey.llm.pool_setup import endpoint_lines
from tests.fakes.llamacpp import FakeLlamaCpp


def test_top_level_endpoints_make_a_pool_without_per_endpoint_retries() -> None:
    with FakeLlamaCpp(slots=2) as a, FakeLlamaCpp(slots=3) as b:
        settings = Settings(
            backend="openai", endpoints=[a.url, {"url": b.url, "max_in_flight": 9}], retries=3
        )
        client = make_client(settings, env={})
        assert isinstance(client, PooledClient)
        assert [e.capacity for e in client.endpoints] == [2, 3]  # /slots wins
        assert all(isinstance(e.client, OpenAIClient) for e in client.endpoints)
        assert all(e.client.http.retries == 0 for e in client.endpoints)  # type: ignore[attr-defined]
        lines = endpoint_lines(client)
        assert lines[0].startswith(f"{a.url} — ok, capacity 2, 0 in flight")
        client.close()


def test_a_route_can_be_a_pool() -> None:
    with FakeLlamaCpp(models=["big"]) as a, FakeLlamaCpp(models=["big"]) as b:
        route = RouteSettings(name="farm", backend="openai", endpoints=[a.url, b.url])
        client = make_route_client(Settings(backend="ollama"), route, env={})
        assert isinstance(client, PooledClient)
        assert (client.backend, client.model) == ("openai", "big")
        assert endpoint_lines(client) and endpoint_lines(OpenAIClient(a.url, "big")) == []
        client.close()


def test_the_embedded_backend_cannot_be_a_pool() -> None:
    with pytest.raises(ConfigError, match="needs backend ollama or openai"):
        make_client(Settings(backend="local", endpoints=["http://127.0.0.1:9/v1"]), env={})


def test_endpoints_and_base_url_are_exclusive() -> None:
    with pytest.raises(ValueError, match="not both"):
        Settings(base_url="http://127.0.0.1:9", endpoints=["http://127.0.0.1:8"])
    with pytest.raises(ValueError, match="not both"):
        RouteSettings(name="r", base_url="http://127.0.0.1:9", endpoints=["http://127.0.0.1:8"])
    with pytest.raises(ValueError, match="http:// or https://"):
        Settings(endpoints=["ftp://x"])


def test_a_later_layer_replaces_the_other_way_to_the_server(tmp_path: Path) -> None:
    from harvey.config.settings import load_settings, resolve_paths

    (tmp_path / "harvey.yaml").write_text("endpoints: [http://127.0.0.1:8/v1]\n")
    paths = resolve_paths(tmp_path)
    trusted = {"decide": lambda _review: True}  # servers in a workspace file need trust
    by_env = load_settings(paths, env={"HARVEY_BASE_URL": "http://127.0.0.1:9/v1"}, **trusted)
    assert (by_env.base_url, by_env.endpoints) == ("http://127.0.0.1:9/v1", [])
    (tmp_path / "harvey.yaml").write_text("base_url: http://127.0.0.1:9/v1\n")
    by_flag = load_settings(paths, {"endpoints": ["http://127.0.0.1:7/v1"]}, env={}, **trusted)
    assert by_flag.base_url is None
    assert [e.url for e in by_flag.endpoints] == ["http://127.0.0.1:7/v1"]

"""Recipes, outcomes and addresses: what travels to a Ray node and back (no Ray started)."""

from __future__ import annotations

import os
import pickle
import socket

import pytest

from harvey.analysis.cluster import workers
from harvey.analysis.cluster.connect import check_reachable, host_port
from harvey.analysis.cluster.recipe import EmbeddedRecipe, HttpRecipe, PoolRecipe, recipe_for
from harvey.analysis.cluster.workers import Outcome, map_call
from harvey.analysis.map_calls import MapTask
from harvey.errors import (
    BackendError,
    BackendUnavailable,
    ClusterError,
    ContextTooLong,
    UsageError,
)
from harvey.llm.local import LocalClient
from harvey.llm.ollama import OllamaClient
from harvey.llm.openai import OpenAIClient
from harvey.llm.pool import Endpoint, PooledClient
from harvey.llm.scripted import ScriptedClient
from tests.fakes.servers import FakeOpenAI


def _travelled(recipe: object) -> object:
    """The recipe as a node receives it: pickled and unpickled (Ray uses cloudpickle,
    which pickles these plain dataclasses the same way)."""
    copy = pickle.loads(pickle.dumps(recipe))
    assert copy == recipe and hash(copy) == hash(recipe)
    return copy


def test_an_openai_client_is_rebuilt_with_its_key_timeouts_and_window() -> None:
    client = OpenAIClient(
        "http://10.0.0.5:8080/v1",
        "qwen",
        api_key="sk-secret-123",
        timeout=7.0,
        connect_timeout=2.0,
        retries=1,
        context_window=2048,
    )
    recipe = _travelled(recipe_for(client))
    assert isinstance(recipe, HttpRecipe) and not recipe.embedded
    assert "sk-secret-123" not in repr(recipe)  # the key stays a SecretStr
    built = recipe.build()
    assert isinstance(built, OpenAIClient)
    assert (built.endpoint, built.model, built.timeout) == (client.endpoint, "qwen", 7.0)
    assert (built.connect_timeout, built.retries, built.context_window) == (2.0, 1, 2048)
    assert built.api_key is not None and built.api_key.get_secret_value() == "sk-secret-123"


def test_an_ollama_client_keeps_num_ctx() -> None:
    built = _travelled(recipe_for(OllamaClient("http://h:11434", "llama3", num_ctx=8192)))
    rebuilt = built.build()  # type: ignore[attr-defined]
    assert isinstance(rebuilt, OllamaClient) and rebuilt.num_ctx == 8192


def test_a_pool_travels_without_its_refused_endpoint_and_is_not_probed_again() -> None:
    def endpoint(url: str, capacity: int, health: str = "ok") -> Endpoint:
        return Endpoint(url, OpenAIClient(url, "m"), capacity, 1024, health=health)

    pool = PooledClient(
        [
            endpoint("http://a:1", 2),
            endpoint("http://b:2", 3),
            endpoint("http://c:3", 1, "refused"),
        ],
        backend="openai",
        model="m",
        retries=1,
        policy="round-robin",
    )
    recipe = _travelled(recipe_for(pool))
    assert isinstance(recipe, PoolRecipe)
    built = recipe.build()
    assert isinstance(built, PooledClient)
    assert [(e.url, e.capacity, e.slot_context) for e in built.endpoints] == [
        ("http://a:1", 2, 1024),
        ("http://b:2", 3, 1024),
    ]
    assert (built.model, built.retries, built.policy, built.total_capacity) == (
        "m",
        1,
        "round-robin",
        5,
    )


def test_the_embedded_model_is_described_not_loaded() -> None:
    client = LocalClient(n_ctx=512, n_threads=1, max_tokens=24, repeat_window=200, seed=7)
    recipe = _travelled(recipe_for(client))
    assert isinstance(recipe, EmbeddedRecipe) and recipe.embedded
    built = recipe.build()
    assert isinstance(built, LocalClient)
    assert (built.model, built.n_ctx, built.n_threads, built.max_tokens) == (
        client.model,
        512,
        1,
        24,
    )
    # the node samples as this process does
    assert (built.temperature, built.repeat_penalty, built.repeat_window, built.seed) == (
        client.temperature,
        client.repeat_penalty,
        200,
        7,
    )


def test_the_scripted_player_cannot_go_to_a_cluster() -> None:
    with pytest.raises(UsageError, match="--executor local"):
        recipe_for(ScriptedClient(["a"]))


def test_outcomes_come_back_as_the_error_the_node_raised() -> None:
    assert Outcome("k", "text").result() == ("text", None)
    _, too_long = Outcome("k", None, error="too long", kind="ContextTooLong", window=512).result()
    assert isinstance(too_long, ContextTooLong) and too_long.window == 512
    _, down = Outcome("k", None, error="down", kind="BackendUnavailable").result()
    assert isinstance(down, BackendUnavailable) and down.transient
    _, other = Outcome("k", None, error="odd", kind="SomethingElse").result()
    assert type(other) is BackendError and str(other) == "odd"


def test_map_call_turns_a_refusal_into_an_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a node, a server's "too long" becomes an Outcome with its sizes, not a raise."""
    monkeypatch.setattr(workers, "node_id", lambda: "node-1")
    with FakeOpenAI(default_reply="fine", max_prompt_tokens=10, too_long_style="llama.cpp") as srv:
        recipe = recipe_for(OpenAIClient(srv.url, "fake-model", retries=0))
        short = map_call(recipe, MapTask("k1", "hi"))
        long = map_call(recipe, MapTask("k2", "word " * 400))
    assert short == Outcome("k1", "fine", "node-1", os.getpid())
    assert (long.key, long.text, long.kind, long.node) == ("k2", None, "ContextTooLong", "node-1")
    assert long.window == 10


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("10.1.2.3:6380", ("10.1.2.3", 6380)),
        ("ray://head.example:10001", ("head.example", 10001)),
        ("head.example", ("head.example", 6379)),
        ("[::1]:7000", ("::1", 7000)),
    ],
)
def test_addresses(address: str, expected: tuple[str, int]) -> None:
    assert host_port(address) == expected


@pytest.mark.parametrize("address", ["host:port", "host:0", ":6379", "host:99999"])
def test_bad_addresses_are_usage_errors(address: str) -> None:
    with pytest.raises(UsageError, match="HOST:PORT"):
        host_port(address)


def test_a_closed_port_is_one_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ClusterError, match=rf"cannot reach the Ray cluster at 127.0.0.1:{port}"):
        check_reachable(f"127.0.0.1:{port}", timeout=1.0)

"""The backend table is the one list of names: the CLI, the config and the factory
read it, and `auto` asks Ollama for its models once."""

from __future__ import annotations

import ast
from pathlib import Path

import click
import pytest

import harvey.llm.backends as backends
from harvey.cli import main
from harvey.config import choices as backend_names_module
from harvey.config.choices import AUTO, backend_names
from harvey.config.settings import RouteSettings, Settings, validate
from harvey.errors import ConfigError
from harvey.llm.backends import BACKENDS, Backend, BuildRequest, lookup
from harvey.llm.factory import make_client
from harvey.llm.ollama import OllamaClient
from harvey.llm.scripted import ScriptedClient
from tests.fakes.servers import FakeOllama


def _backend_choices(command: click.Command) -> list[list[str]]:
    """The choices of every ``--backend`` option under ``command``, found through click."""
    found: list[list[str]] = []
    for param in command.params:
        if param.name == "backend" and isinstance(param.type, click.Choice):
            found.append(list(param.type.choices))
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            found.extend(_backend_choices(sub))
    return found


def test_cli_backend_choices_are_the_table_and_auto() -> None:
    choices = _backend_choices(main)
    assert choices, "no --backend option found on any harvey command"
    expected = [AUTO, *BACKENDS]
    assert all(c == expected for c in choices), choices


def test_config_allows_exactly_the_table_names() -> None:
    for name in backend_names(include_auto=True):
        assert Settings(backend=name).backend == name
    with pytest.raises(ConfigError) as err:
        validate({"backend": "telepathy"}, "harvey.yaml")
    message = str(err.value)
    assert all(repr(name) in message for name in backend_names(include_auto=True)), message


def test_routes_allow_the_routable_names_only() -> None:
    routable = backend_names(routable_only=True)
    assert routable == [b.name for b in BACKENDS.values() if b.routable]
    for name in routable:
        assert RouteSettings(name="r", backend=name).backend == name
    for name in (AUTO, *(n for n in BACKENDS if n not in routable)):
        with pytest.raises(ConfigError, match="must be one of"):
            validate({"routes": [{"name": "r", "backend": name}]}, "harvey.yaml")


def test_a_backend_added_to_the_table_is_accepted_and_built_everywhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Config validation and the factory read the tables themselves, not copies of them: a
    new backend is one name (config/choices.py) and one builder (llm/backends.py)."""
    built: list[BuildRequest] = []

    def echo(request: BuildRequest) -> ScriptedClient:
        built.append(request)
        return ScriptedClient(["hi"], model=request.model or "echo")

    table = {**BACKENDS, "echo": Backend("echo", echo, routable=True)}
    monkeypatch.setattr(backends, "BACKENDS", table)
    monkeypatch.setattr(backend_names_module, "NAMES", {**backend_names_module.NAMES, "echo": True})
    assert "echo" in backend_names() and "echo" in backend_names(routable_only=True)
    client = make_client(Settings(backend="echo", model="m"), env={})
    assert isinstance(client, ScriptedClient) and client.model == "m"
    assert [r.model for r in built] == ["m"]
    assert RouteSettings(name="r", backend="echo").backend == "echo"


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as err:
        lookup("telepathy")
    assert all(name in str(err.value) for name in backend_names(include_auto=True))


def test_auto_asks_ollama_for_its_models_once() -> None:
    with FakeOllama(models=["first:1b", "second:7b"]) as srv:
        client = make_client(Settings(), env={"OLLAMA_HOST": srv.url})
        tags = [r for r in srv.requests if r.path == "/api/tags"]
    assert isinstance(client, OllamaClient) and client.model == "first:1b"
    assert len(tags) == 1


def test_the_table_imports_no_backend_module_eagerly() -> None:
    """Start-up cost: naming the backends (config, --help) must not load a client module;
    each builder imports its own when called."""
    tree = ast.parse(Path(backends.__file__).read_text(encoding="utf-8"))
    eager: list[str] = []
    for node in tree.body:  # module level only: function bodies and TYPE_CHECKING are lazy
        if isinstance(node, ast.ImportFrom) and node.module:
            eager.append(node.module)
        elif isinstance(node, ast.Import):
            eager.extend(alias.name for alias in node.names)
    assert "harvey.errors" in eager  # the walk sees the imports that are there
    clients = {f"harvey.llm.{m}" for m in ("local", "scripted", "ollama", "openai", "http_client")}
    assert clients.isdisjoint(eager), eager
    lazy = {
        n.module
        for f in tree.body
        if isinstance(f, ast.FunctionDef)
        for n in ast.walk(f)
        if isinstance(n, ast.ImportFrom) and n.module
    }
    assert clients - {"harvey.llm.http_client"} <= lazy


def test_every_name_has_a_builder_and_every_builder_a_name() -> None:
    assert list(BACKENDS) == list(backend_names_module.NAMES)
    assert [b.routable for b in BACKENDS.values()] == list(backend_names_module.NAMES.values())

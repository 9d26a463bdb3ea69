"""Settings → an ``LLMClient``: backend resolution and default models.

``backend: auto`` means: Ollama if a quick ``GET /api/tags`` at ``OLLAMA_HOST``
answers within half a second with at least one model, else the embedded model.
Default models: Ollama's first installed model (taken from the probe's answer
under ``auto``, so the server is asked once), the OpenAI-compatible server's
first listed model, or SmolLM2-135M-Instruct for the embedded backend. Which
class builds which backend is the table in ``harvey.llm.backends``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import httpx
from pydantic import SecretStr

from harvey.config.choices import AUTO
from harvey.config.settings import EndpointSetting, RouteSettings, Settings, base_url_for
from harvey.errors import BackendUnavailable, ConfigError
from harvey.llm.backends import BuildRequest, lookup, runs_locally
from harvey.llm.keys import key_for
from harvey.protocols import LLMClient

POOLABLE = ("ollama", "openai")  # the backends an `endpoints:` pool can be made of
PROBE_TIMEOUT = 0.5  # seconds: how long `auto` waits for Ollama before going local


def probe_ollama(base_url: str, timeout: float = PROBE_TIMEOUT) -> list[str] | None:
    """The models of an Ollama server that answers quickly, else ``None``."""
    from harvey.llm.wire import get_json

    try:
        with httpx.Client(timeout=timeout) as http:
            status, data = get_json(http, base_url.rstrip("/") + "/api/tags")
        if status != 200:
            return None
        models = data.get("models") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return [str(m.get("name") or m.get("model")) for m in models if isinstance(m, dict)]


def resolve_backend(settings: Settings, env: Mapping[str, str] | None = None) -> str:
    """The concrete backend for ``settings.backend`` (resolving ``auto``)."""
    return _resolve(settings, env)[0]


def _resolve(settings: Settings, env: Mapping[str, str] | None) -> tuple[str, list[str] | None]:
    """The concrete backend, and the models the ``auto`` probe saw (``None`` if none ran)."""
    if settings.backend != AUTO:
        return settings.backend, None
    models = probe_ollama(base_url_for("ollama", settings, env))
    if models:
        return "ollama", models
    return "local", None


def make_client(
    settings: Settings,
    *,
    backend: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    env: Mapping[str, str] | None = None,
) -> LLMClient:
    """Build the main client; arguments override ``settings`` (they are CLI flags)."""
    env = os.environ if env is None else env
    updates = {
        k: v for k, v in (("backend", backend), ("base_url", base_url), ("model", model)) if v
    }
    if updates:
        try:
            settings = Settings.model_validate({**settings.model_dump(), **updates})
        except ValueError as exc:
            raise ConfigError(f"invalid backend settings {updates}: {exc}") from exc
    if settings.endpoints:
        key = key_for(settings.api_key, settings.api_key_command, env)
        return _pool(settings, settings.endpoints, settings.model, env, key)
    chosen, seen = _resolve(settings, env)
    if settings.backend == AUTO and chosen == "local" and not runs_locally(settings.model):
        raise BackendUnavailable(
            f"no Ollama answered at {base_url_for('ollama', settings, env)}, and the embedded "
            f"backend cannot run model {settings.model!r} — start `ollama serve` (or set "
            "OLLAMA_HOST), or choose a backend with --backend"
        )
    return _build(
        chosen,
        settings,
        base_url=base_url_for(chosen, settings, env),
        model=settings.model,
        api_key=key_for(settings.api_key, settings.api_key_command, env),
        num_ctx=settings.num_ctx,
        context_window=settings.context_window,
        env=env,
        known_models=seen,
    )


def make_route_client(
    settings: Settings, route: RouteSettings, env: Mapping[str, str] | None = None
) -> LLMClient:
    """A client for an ``@route``: its own endpoint, model and key, shared timeouts."""
    env = os.environ if env is None else env
    if route.endpoints:
        routed = settings.model_copy(update={"backend": route.backend})
        key = key_for(route.api_key, route.api_key_command, env)
        return _pool(routed, route.endpoints, route.model, env, key)
    unrouted = settings.model_copy(update={"base_url": None})
    return _build(
        route.backend,
        settings,
        base_url=route.base_url or base_url_for(route.backend, unrouted, env),
        model=route.model,
        api_key=key_for(route.api_key, route.api_key_command, env),
        num_ctx=None,
        context_window=None,
        env=env,
    )


def _pool(
    settings: Settings,
    endpoints: Sequence[EndpointSetting],
    model: str | None,
    env: Mapping[str, str],
    api_key: SecretStr | None,
) -> LLMClient:
    """A ``PooledClient`` over ``endpoints``, all sharing ``api_key``; each endpoint's client
    comes from the table, without retries of its own (the pool retries a failed call on
    another endpoint)."""
    from harvey.llm.pool import EndpointSpec
    from harvey.llm.pool_setup import build_pool

    backend = settings.backend
    if backend == AUTO:
        backend = "ollama" if probe_ollama(endpoints[0].url) else "openai"
    if backend not in POOLABLE:
        raise ConfigError(f"endpoints: needs backend ollama or openai, not {backend!r}")
    single = settings.model_copy(update={"retries": 0, "endpoints": []})
    key = api_key

    def make(url: str, name: str | None) -> LLMClient:
        return _build(
            backend,
            single,
            base_url=url,
            model=name,
            api_key=key,
            num_ctx=settings.num_ctx,
            context_window=settings.context_window,
            env=env,
        )

    specs = [EndpointSpec(e.url, e.max_in_flight) for e in endpoints]
    return build_pool(specs, backend, model, make)


def _build(
    backend: str,
    settings: Settings,
    *,
    base_url: str,
    model: str | None,
    api_key: SecretStr | None,
    num_ctx: int | None,
    context_window: int | None,
    env: Mapping[str, str],
    known_models: list[str] | None = None,
) -> LLMClient:
    """The table's builder for ``backend``, given one request with the shared limits."""
    request = BuildRequest(
        base_url=base_url,
        model=model,
        api_key=api_key,
        num_ctx=num_ctx,
        context_window=context_window,
        timeout=settings.timeout,
        connect_timeout=settings.connect_timeout,
        retries=settings.retries,
        env=env,
        known_models=known_models,
    )
    client = lookup(backend).build(request)
    if settings.max_in_flight is not None and hasattr(client, "max_in_flight"):
        client.max_in_flight = settings.max_in_flight  # read by harvey.llm.capacity
    return client

"""Settings → an ``LLMClient``: backend resolution and default models.

``backend: auto`` means: Ollama if a quick ``GET /api/tags`` at ``OLLAMA_HOST``
answers within half a second with at least one model, else the embedded model.
Default models: Ollama's first installed model, the OpenAI-compatible server's
first listed model, or SmolLM2-135M-Instruct for the embedded backend.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import httpx
from pydantic import SecretStr

from harvey.config import RouteSettings, Settings, base_url_for
from harvey.errors import BackendError, BackendUnavailable, ConfigError
from harvey.llm.base import LLMClient
from harvey.llm.ollama import OllamaClient
from harvey.llm.openai import OpenAIClient

PROBE_TIMEOUT = 0.5  # seconds: how long `auto` waits for Ollama before going local
LOCAL_MODEL = "SmolLM2-135M-Instruct"


def probe_ollama(base_url: str, timeout: float = PROBE_TIMEOUT) -> list[str] | None:
    """The models of an Ollama server that answers quickly, else ``None``."""
    try:
        response = httpx.get(base_url.rstrip("/") + "/api/tags", timeout=timeout)
        response.raise_for_status()
        models = response.json().get("models") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return [str(m.get("name") or m.get("model")) for m in models if isinstance(m, dict)]


def resolve_backend(settings: Settings, env: Mapping[str, str] | None = None) -> str:
    """The concrete backend for ``settings.backend`` (resolving ``auto``)."""
    if settings.backend != "auto":
        return settings.backend
    if probe_ollama(base_url_for("ollama", settings, env)):
        return "ollama"
    return "local"


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
    chosen = resolve_backend(settings, env)
    if settings.backend == "auto" and chosen == "local" and not _local_model(settings.model):
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
        api_key=settings.api_key or _env_key(env),
        num_ctx=settings.num_ctx,
        context_window=settings.context_window,
        env=env,
    )


def make_route_client(
    settings: Settings, route: RouteSettings, env: Mapping[str, str] | None = None
) -> LLMClient:
    """A client for an ``@route``: its own endpoint, model and key, shared timeouts."""
    env = os.environ if env is None else env
    unrouted = settings.model_copy(update={"base_url": None})
    return _build(
        route.backend,
        settings,
        base_url=route.base_url or base_url_for(route.backend, unrouted, env),
        model=route.model,
        api_key=route.api_key or _env_key(env),
        num_ctx=None,
        context_window=None,
        env=env,
    )


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
) -> LLMClient:
    timeout, connect, retries = settings.timeout, settings.connect_timeout, settings.retries
    if backend == "ollama":
        client: LLMClient = OllamaClient(
            base_url,
            model or "",
            num_ctx=num_ctx,
            timeout=timeout,
            connect_timeout=connect,
            retries=retries,
        )
        if not model:
            client = _with_first_model(client, "Ollama", "pull one with `ollama pull llama3.2`")
        return client
    if backend == "openai":
        client = OpenAIClient(
            base_url,
            model or "",
            api_key=api_key,
            context_window=context_window,
            timeout=timeout,
            connect_timeout=connect,
            retries=retries,
        )
        if not model:
            client = _with_first_model(client, "the server", "set `model` in harvey.yaml")
        return client
    if backend == "local":
        from harvey.llm.local import LocalClient

        if not _local_model(model):
            raise ConfigError(
                f"backend 'local' runs {LOCAL_MODEL} or a .gguf file path, not {model!r}"
            )
        return LocalClient(model if model and model.endswith(".gguf") else None, n_ctx=num_ctx)
    if backend == "scripted":
        from harvey.llm.scripted import ScriptedClient

        script = env.get("HARVEY_SCRIPT")
        if not script:
            raise ConfigError(
                "backend 'scripted' plays back a JSON script: set HARVEY_SCRIPT to its path"
            )
        return ScriptedClient.from_file(script, model=model or "scripted")
    raise ConfigError(f"unknown backend {backend!r} (allowed: auto, ollama, openai, local)")


def _env_key(env: Mapping[str, str]) -> SecretStr | None:
    """OPENAI_API_KEY as a secret, so the key stays wrapped until the header is built."""
    value = env.get("OPENAI_API_KEY")
    return SecretStr(value) if value else None


def _local_model(model: str | None) -> bool:
    """Whether the embedded backend can run ``model`` (None means its default)."""
    return not model or model == LOCAL_MODEL or model.endswith(".gguf")


def _with_first_model(client: LLMClient, label: str, hint: str) -> LLMClient:
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

"""The one base of the HTTP backends (Ollama, OpenAI-compatible servers).

It owns what the two share so each backend module is only about its wire
format: construction (endpoint, model, timeouts, retries, an injectable sleep
and transport, the API key kept as a ``SecretStr`` until the header is built),
the once-per-client ``capabilities()`` cache behind a lock (routes and the
chunked reader ask from several threads), ``with_model`` and ``close``.

A backend supplies: ``backend`` (its name), ``_endpoint`` (how errors name the
server), ``_payload`` and ``_events`` (request body and stream parsing),
``_probe_capabilities``, ``list_models`` and, when it has settings of its own,
``_own_settings`` so ``with_model`` carries them over.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, TypedDict

import httpx
from pydantic import SecretStr

from harvey.llm.http import Endpoint, HttpTransport, Sleep
from harvey.messages import Message
from harvey.protocols import LLMClient, ModelCapabilities, StreamEvent


class HttpOptions(TypedDict, total=False):
    """The constructor keywords every HTTP backend takes (a subclass adds its own)."""

    api_key: SecretStr | str | None
    timeout: float
    connect_timeout: float
    retries: int
    sleep: Sleep
    transport: httpx.BaseTransport | None


class HttpClient(ABC):
    """One model on one HTTP server; subclasses speak the server's dialect."""

    backend: str  # set by each subclass: "ollama", "openai"
    max_in_flight: int | None = None  # harvey.yaml's, when set: calls the server takes at once

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: SecretStr | str | None = None,
        timeout: float = 120.0,
        connect_timeout: float = 5.0,
        retries: int = 3,
        sleep: Sleep = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.endpoint = base_url.rstrip("/")
        self.model = model
        self.api_key = SecretStr(api_key) if isinstance(api_key, str) else api_key
        self.timeout, self.connect_timeout, self.retries = timeout, connect_timeout, retries
        self._sleep, self._transport = sleep, transport
        self.http = HttpTransport(
            self._endpoint(),
            headers=self._headers(),
            transport=transport,
            timeout=timeout,
            connect_timeout=connect_timeout,
            retries=retries,
            sleep=sleep,
        )
        self._caps: ModelCapabilities | None = None
        self._caps_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.endpoint!r}, {self.model!r})"

    # -- what a backend supplies ------------------------------------------------

    @abstractmethod
    def _endpoint(self) -> Endpoint:
        """How error messages name this server and what they tell the user to do."""

    def _headers(self) -> dict[str, str] | None:
        """Extra request headers; the key is unwrapped here and nowhere else."""
        if self.api_key is None:
            return None
        return {"Authorization": f"Bearer {self.api_key.get_secret_value()}"}

    @abstractmethod
    def _payload(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None
    ) -> dict[str, Any]:
        """The chat request body in this server's wire format."""

    @abstractmethod
    def _events(self, payload: dict[str, Any]) -> Iterator[StreamEvent]:
        """POST ``payload`` and parse the streamed answer into events."""

    @abstractmethod
    def _probe_capabilities(self) -> ModelCapabilities:
        """Ask the server (or the configuration) once; ``capabilities`` caches it."""

    @abstractmethod
    def list_models(self) -> list[str]: ...

    def _own_settings(self) -> dict[str, Any]:
        """Constructor keywords only this backend has, for ``with_model`` to keep."""
        return {}

    # -- shared -----------------------------------------------------------------

    @abstractmethod
    def stream_chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        response_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        """Each backend's own (``self._events(self._payload(...))``), so a reader following
        a turn goes from ``chat()`` straight to the backend's wire format."""

    def capabilities(self) -> ModelCapabilities:
        """Computed once per client, however many threads ask at once."""
        with self._caps_lock:
            if self._caps is None:
                self._caps = self._probe_capabilities()
            return self._caps

    def with_model(self, model: str) -> LLMClient:
        """The same server, key, timeouts, retries and transport; another model."""
        return type(self)(
            self.endpoint,
            model,
            api_key=self.api_key,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            retries=self.retries,
            sleep=self._sleep,
            transport=self._transport,
            **self._own_settings(),
        )

    def with_timeout(self, timeout: float) -> LLMClient:
        """The same server, key and model, with a short read timeout and no retries: for a
        probe that must not hold a session up (``harvey.chat.calls.tool_support``)."""
        return type(self)(
            self.endpoint,
            self.model,
            api_key=self.api_key,
            timeout=timeout,
            connect_timeout=min(self.connect_timeout, timeout),
            retries=0,
            sleep=self._sleep,
            transport=self._transport,
            **self._own_settings(),
        )

    def close(self) -> None:
        self.http.close()

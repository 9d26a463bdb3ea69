"""The one cache of model clients a session holds: the current one, ``@route``s and ``@model``s.

A session talks to more than one client: the main one, a configured route
(``@reviewer``, its own endpoint and key), another model on the same backend
(``@qwen2.5:7b``, ``/model NAME``). Each client owns a connection pool, so
they are made once, reused for every later turn that names them, and closed
together when the session ends. Keeping them in one object (instead of one
cache in the agent and another in the runtime) means nothing is opened twice
and nothing is left open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from harvey.config.settings import RouteSettings, Settings
from harvey.protocols import LLMClient

log = logging.getLogger(__name__)

RouteFactory = Callable[[RouteSettings], LLMClient]
MENTION_PREFIX = "@"


def split_mention(text: str) -> tuple[str | None, str]:
    """``"@name rest"`` → ``("name", "rest")``; anything else → ``(None, text)``."""
    stripped = text.lstrip()
    if not stripped.startswith(MENTION_PREFIX) or len(stripped) < 2:
        return None, text
    head, _, rest = stripped[1:].partition(" ")
    if not head or not all(c.isalnum() or c in "-_.:/" for c in head):
        return None, text
    return head, rest.strip()


def find_mention(text: str) -> tuple[str | None, str]:
    """Find an ``@name`` anywhere in an instruction (chunk prompts put it last)."""
    words = text.split()
    for i, word in enumerate(words):
        if word.startswith(MENTION_PREFIX) and len(word) > 1:
            rest = " ".join(words[:i] + words[i + 1 :])
            return word[1:].rstrip(".,;:"), rest
    return None, text


def _key(client: LLMClient, model: str | None = None) -> str:
    return f"{client.backend}:{client.endpoint}:{model if model is not None else client.model}"


class Clients:
    """Resolve ``@name`` and ``/model NAME`` to a client, and close every client made."""

    def __init__(
        self,
        current: LLMClient,
        *,
        settings: Settings | None = None,
        make_route: RouteFactory | None = None,
    ) -> None:
        self.current = current
        self._settings = settings
        self._make_route = make_route
        self._routes: dict[str, LLMClient] = {}  # route name → client
        self._models: dict[str, LLMClient] = {}  # backend:endpoint:model → client

    def active(self) -> LLMClient:
        """The current client, for whoever must follow ``/model`` (the session's budget)."""
        return self.current

    def resolve(self, name: str) -> LLMClient:
        """``@name``: a configured route, else another model on the current backend."""
        route = self._settings.route(name) if self._settings is not None else None
        if route is not None and self._make_route is not None:
            if route.name not in self._routes:
                self._routes[route.name] = self._make_route(route)
            return self._routes[route.name]
        return self.model(name)

    def model(self, name: str) -> LLMClient:
        """``name`` on the current backend and endpoint, made once and then reused."""
        key = _key(self.current, name)
        if key not in self._models:
            self._models[key] = self.current.with_model(name)
        return self._models[key]

    def switch(self, name: str) -> LLMClient:
        """``/model NAME``: later turns go to NAME; the previous client stays cached."""
        previous = self.current
        self.current = self.model(name)
        self._models.setdefault(_key(previous), previous)
        return self.current

    def all(self) -> list[LLMClient]:
        """Every distinct client made so far, the current one first."""
        clients = [self.current, *self._routes.values(), *self._models.values()]
        return list({id(c): c for c in clients}.values())

    def close(self) -> None:
        """Close every client; one that fails to close does not keep the others open."""
        for client in self.all():
            try:
                client.close()
            except Exception as exc:  # any backend's close; the session is over either way
                log.debug(
                    "could not close the %s client (%s): %s", client.backend, client.model, exc
                )

"""How many calls a server takes at once: found out, not assumed.

A server sent more calls than it can serve does not always queue them:
llama-cpp-python's server runs one request at a time and by default
interrupts a running stream when the next request arrives, so four map calls
sent at once came back as three empty answers and one whole (issue 21). So:

* llama.cpp's ``/slots`` answers with one entry per parallel slot: that many;
* llama-cpp-python's server is recognised by its model list (each model
  ``owned_by: "me"``, and no ``/slots``): one at a time;
* the embedded model: one (one instance, one lock);
* ``max_in_flight`` in harvey.yaml: that many, whatever the server says;
* any other server: unknown — a ``Ramp`` starts at one call in flight and
  raises the number only while answers stay whole and more calls at once
  still finish more calls per second.

``discover`` asks once per endpoint and model in a process (the answers are
cached); its probes are short GETs that may fail, which only means "unknown".
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import httpx

PROBE_TIMEOUT = 2.0
RAMP_CEILING = 8  # the most calls a ramp ever keeps in flight
GAIN = 1.2  # a level is kept when it finishes this much more work per second than the last


@dataclass(frozen=True)
class Capacity:
    """Calls in flight for one server: ``limit``, and whether it is known (``fixed``)
    or only where a ramp starts; ``source`` says how it was found, for notes and logs."""

    limit: int
    fixed: bool
    source: str


_FOUND: dict[tuple[str, str, str], Capacity] = {}
_LOCK = threading.Lock()


def discover(client: object) -> Capacity:
    """The capacity of the server behind ``client`` (cached per backend, endpoint, model)."""
    backend = str(getattr(client, "backend", ""))
    endpoint = str(getattr(client, "endpoint", ""))
    configured = getattr(client, "max_in_flight", None)
    if isinstance(configured, int) and configured >= 1:
        return Capacity(configured, True, "max_in_flight (config)")
    if backend == "local":
        return Capacity(1, True, "the embedded model")
    if backend not in ("openai", "ollama") or not endpoint.startswith(("http://", "https://")):
        return Capacity(1, False, "unknown")
    key = (backend, endpoint, str(getattr(client, "model", "")))
    with _LOCK:
        if key not in _FOUND:
            _FOUND[key] = _probe(backend, endpoint)
        return _FOUND[key]


def _probe(backend: str, endpoint: str) -> Capacity:
    if backend == "ollama":
        return Capacity(1, False, "Ollama (no parallel-request report)")
    from harvey.llm.base import MAX_SLOTS
    from harvey.llm.http import server_root
    from harvey.llm.wire import get_json

    root = server_root(endpoint)
    try:
        with httpx.Client(timeout=PROBE_TIMEOUT) as http:
            _, data = get_json(http, root + "/slots")
            if isinstance(data, list) and data:
                from harvey.llm.prompt_cache import remember_slots

                slots = min(len(data), MAX_SLOTS)  # a server's claim, bounded
                remember_slots(endpoint, slots)  # llama.cpp's: a session gets a slot
                return Capacity(slots, True, "server (/slots)")
            _, models = get_json(http, endpoint.rstrip("/") + "/models")
            if is_llama_cpp_python(models):
                return Capacity(1, True, "llama-cpp-python's server (one request at a time)")
    except (httpx.HTTPError, ValueError):
        pass
    return Capacity(1, False, "unknown (found by a ramp)")


def is_llama_cpp_python(models: object) -> bool:
    """Whether a ``/v1/models`` answer is llama-cpp-python's: every model it lists is
    ``owned_by: "me"`` (its source writes exactly that; llama.cpp says ``llamacpp``)."""
    items = models.get("data") if isinstance(models, dict) else None
    if not isinstance(items, list) or not items:
        return False
    return all(isinstance(m, dict) and m.get("owned_by") == "me" for m in items)


@dataclass
class Ramp:
    """Calls in flight for a server of unknown capacity, learnt from its answers.

    It starts at one. Each call reports how long it took, whether its answer was
    whole, and how many calls were in flight when it started (its level). Once
    the current level has as many answers as calls, the level is compared with
    the one below: when calls per second rose by ``GAIN`` or more the limit goes
    up by one (to ``ceiling``), otherwise it goes back down and stays — the server
    was only queueing. An answer that was not whole (an error, an empty reply, a
    stream cut off) at a level above one lowers the limit below that level for good.
    """

    ceiling: int = RAMP_CEILING
    limit: int = 1
    settled: bool = False
    _times: dict[int, list[float]] = field(default_factory=dict)

    def record(self, seconds: float, whole: bool, level: int) -> None:
        if not whole:
            if level > 1:
                self.limit, self.settled = max(1, min(self.limit, level - 1)), True
            return
        self._times.setdefault(level, []).append(max(seconds, 1e-6))
        if self.settled or level != self.limit or len(self._times[level]) < level:
            return
        if level == 1:
            self._raise()
            return
        below = self._rate(level - 1)
        if below is not None and self._rate(level) >= below * GAIN:  # type: ignore[operator]
            self._raise()
        else:
            self.limit, self.settled = level - 1, True

    def _rate(self, level: int) -> float | None:
        """Calls finished per second at ``level`` in flight (``None``: not measured)."""
        times = self._times.get(level)
        return level * len(times) / sum(times) if times else None

    def _raise(self) -> None:
        if self.limit < self.ceiling:
            self.limit += 1
        else:
            self.settled = True

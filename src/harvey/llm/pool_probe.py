"""What an endpoint of a pool says about itself before the pool sends it work.

Three short GETs, none of them required: llama.cpp's ``/health`` (503 while
the model loads), its ``/slots`` (one entry per parallel slot, each with the
slot's ``n_ctx``), and the model list (``/v1/models`` or Ollama's
``/api/tags``), which is how an endpoint serving another model is caught.
Servers that lack an endpoint answer 404 or 501, which only means "unknown".
The probe is separate from ``pool.py`` so tests can replace it with a table.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from harvey.llm.base import MAX_SLOTS
from harvey.llm.http import server_root
from harvey.llm.prompt_cache import remember_slots
from harvey.llm.wire import get_json
from harvey.protocols import token_count

PROBE_TIMEOUT = 2.0


@dataclass(frozen=True)
class ProbeResult:
    health: str  # "ok" | "loading" | "down"
    slots: int | None = None
    slot_context: int | None = None
    models: tuple[str, ...] | None = None
    error: str = ""
    one_at_a_time: bool = False  # llama-cpp-python's server (``capacity.is_llama_cpp_python``)


def _slots(data: object) -> tuple[int | None, int | None]:
    """(how many slots, the smallest per-slot ``n_ctx``) from a ``/slots`` answer."""
    if not isinstance(data, list) or not data:
        return None, None
    contexts = [token_count(s.get("n_ctx")) for s in data if isinstance(s, dict)]
    sizes = [c for c in contexts if c]
    return min(len(data), MAX_SLOTS), (min(sizes) if sizes else None)


def _models(backend: str, url: str, http: httpx.Client) -> tuple[tuple[str, ...] | None, bool]:
    """The models an endpoint lists, and whether it is llama-cpp-python's server."""
    from harvey.llm.capacity import is_llama_cpp_python

    try:
        if backend == "ollama":
            _, data = get_json(http, url.rstrip("/") + "/api/tags")
            items = data.get("models") if isinstance(data, dict) else None
            return tuple(str(m.get("name") or m.get("model")) for m in items or []), False
        status, data = get_json(http, url.rstrip("/") + "/models")
        if status != 200:
            return None, False
        items = data.get("data") if isinstance(data, dict) else None
        ids = tuple(str(m["id"]) for m in items or [] if isinstance(m, dict) and "id" in m)
        return ids, is_llama_cpp_python(data)
    except (httpx.HTTPError, ValueError, AttributeError):
        return None, False


def probe_endpoint(url: str, backend: str, timeout: float = PROBE_TIMEOUT) -> ProbeResult:
    """Health, slots and models of one endpoint; ``down`` with the reason if unreachable."""
    root = url.rstrip("/") if backend == "ollama" else server_root(url)
    try:
        with httpx.Client(timeout=timeout) as http:
            health = http.get(root + "/health")
            if health.status_code == 503:
                return ProbeResult("loading")
            slots, slot_context = None, None
            if backend != "ollama":
                try:
                    status, data = get_json(http, root + "/slots")
                except ValueError:
                    status, data = 200, None
                if status == 200:
                    slots, slot_context = _slots(data)
                    remember_slots(url, slots)  # llama.cpp's: its sessions get a slot each
            models, one_at_a_time = _models(backend, url, http)
            return ProbeResult("ok", slots, slot_context, models, one_at_a_time=one_at_a_time)
    except httpx.HTTPError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ProbeResult("down", error=reason)

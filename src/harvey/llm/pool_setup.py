"""Building an endpoint pool from settings, and showing it.

``build_pool`` probes every endpoint once (``pool_probe``), refuses an endpoint
that serves another model than the rest — its answers would not be the pool
model's — and gives each endpoint its capacity: the llama.cpp slots when
``/slots`` answers, else ``max_in_flight``, else 1 for llama-cpp-python's server
(it interrupts a running stream for the next request), 1 for Ollama (no in-flight
metric, it queues and then answers 503) and 4 for other OpenAI-compatible
servers. ``endpoint_lines`` is what ``/status`` and ``harvey models`` print.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from harvey.errors import BackendError, BackendUnavailable, ConfigError
from harvey.llm.pool import COOLDOWN, Endpoint, EndpointSpec, PooledClient, Probe
from harvey.llm.pool_probe import ProbeResult, probe_endpoint
from harvey.protocols import LLMClient

log = logging.getLogger(__name__)

DEFAULT_IN_FLIGHT = {"ollama": 1}
OTHER_IN_FLIGHT = 4


def endpoint_lines(client: object) -> list[str]:
    """One line per endpoint of a pool (none for a single client), for ``/status`` and
    ``harvey models``: URL, health, capacity, calls in flight and calls served."""
    stats = client.stats() if isinstance(client, PooledClient) else []
    return [
        f"{s.url} — {s.health}, capacity {s.capacity}, {s.in_flight} in flight, "
        f"{s.served} served" + (f", {s.slot_context} tokens per slot" if s.slot_context else "")
        for s in stats
    ]


def build_pool(
    specs: Sequence[EndpointSpec],
    backend: str,
    model: str | None,
    make: Callable[[str, str | None], LLMClient],
    *,
    probe: Probe | None = None,
    **options: Any,
) -> PooledClient:
    """Probe every endpoint, check they serve one model, and build the pool.

    ``make(url, model)`` builds one endpoint's client through the backend table.
    An endpoint that does not answer is kept, cooling down (it may come back);
    one that serves another model than the others is refused with a
    ``ConfigError``, since its answers would not be the pool model's; when none
    answers the error says so in one line.
    """
    probe = probe or probe_endpoint
    results = [(spec, probe(spec.url, backend)) for spec in specs]
    answering = [(s, r) for s, r in results if r.health != "down"]
    if not answering:
        reasons = "; ".join(f"{s.url}: {r.error}" for s, r in results)
        raise BackendUnavailable(f"none of the {len(specs)} endpoints answered — {reasons}")
    chosen = model or _majority_model(answering)
    for spec, result in answering:
        if result.models and chosen not in result.models:
            raise ConfigError(
                f"endpoint {spec.url} serves {', '.join(result.models)}, not {chosen} like the "
                "rest of the pool; remove it from endpoints: or point it at the same model"
            )
    clock: Callable[[], float] = options.get("clock", time.monotonic)
    endpoints: list[Endpoint] = []
    for spec, result in results:
        default = DEFAULT_IN_FLIGHT.get(backend, OTHER_IN_FLIGHT)
        one = 1 if result.one_at_a_time else None  # llama-cpp-python interrupts a second call
        capacity = result.slots or spec.max_in_flight or one or default
        ep = Endpoint(spec.url, make(spec.url, chosen), capacity, result.slot_context)
        ep.health = "loading" if result.health == "loading" else "ok"
        ep.verified = result.health == "ok"  # the others' model is checked before use
        if result.health == "down":
            log.warning("endpoint %s does not answer (%s); it rests first", spec.url, result.error)
            ep.failures, ep.cooldown_until = 1, clock() + options.get("cooldown", COOLDOWN)
        endpoints.append(ep)
    return PooledClient(endpoints, backend=backend, model=chosen, probe=probe, **options)


def _majority_model(answering: Sequence[tuple[EndpointSpec, ProbeResult]]) -> str:
    counts: dict[str, int] = {}
    for _spec, result in answering:
        if result.models:
            counts[result.models[0]] = counts.get(result.models[0], 0) + 1
    if not counts:
        raise BackendError(
            "no endpoint of the pool lists a model (still loading?) — set `model` in harvey.yaml"
        )
    return max(counts, key=lambda m: counts[m])

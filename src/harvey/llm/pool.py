"""One model served by several endpoints: least-in-flight dispatch with failover.

A ``PooledClient`` presents the ``LLMClient`` protocol, so the agent and the
map phase use a pool like any client. Each call goes to the endpoint with the
fewest calls in flight that has a free slot; ties are rotated, because always
breaking them towards the first endpoint sends it nearly all the traffic when
calls are short. A chat session (``llm.base.session_scope``) stays on the
endpoint it used last while that endpoint has a free slot, so its prompt cache is
reused (there its own llama.cpp slot, ``prompt_cache``); other calls stay on the
endpoint their thread used last.

Capacity per endpoint comes from llama.cpp's ``/slots`` when it answers (one
call per slot, and the smallest per-slot ``n_ctx`` becomes the pool's context
window, since llama.cpp splits ``--ctx-size`` across its slots), otherwise the
configured ``max_in_flight`` (default 1 for Ollama, which has no in-flight
metric, 4 for other OpenAI-compatible servers).

Failures: a connection error, a 5xx or a 429 before the first streamed event
puts the endpoint in cooldown (5 s, doubling while it keeps failing) and the
call is retried on another endpoint, at most ``retries`` times; the call fails
only when every endpoint it could still try has failed it. An endpoint whose
``/health`` answers 503 is loading a model: calls wait for it instead of
failing. The clock and the sleep are injected so tests never wait.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from harvey.errors import BackendError, BackendUnavailable, ConfigError
from harvey.llm.base import current_session
from harvey.llm.pool_probe import ProbeResult, probe_endpoint
from harvey.messages import Message
from harvey.protocols import LLMClient, ModelCapabilities, StreamEvent

log = logging.getLogger(__name__)

COOLDOWN = 5.0  # seconds an endpoint rests after a failure, doubled per further failure
MAX_COOLDOWN = 120.0
RETRIES = 2  # further endpoints a failed call is tried on
LOADING_POLL = 1.0  # seconds between /health checks of an endpoint that is loading
BUSY_POLL = 0.05  # seconds between looks when every endpoint's slots are taken

Probe = Callable[[str, str], ProbeResult]


@dataclass(frozen=True)
class EndpointSpec:
    """One item of ``endpoints:``: a URL, and the in-flight limit when ``/slots`` is silent."""

    url: str
    max_in_flight: int | None = None


@dataclass
class Endpoint:
    """One endpoint's client and the pool's bookkeeping about it."""

    url: str
    client: LLMClient
    capacity: int
    slot_context: int | None = None
    health: str = "ok"  # "ok" | "loading" | "refused" (serves another model)
    verified: bool = True  # False: it did not answer at start, its model is still unchecked
    in_flight: int = 0
    served: int = 0
    failures: int = 0  # consecutive
    cooldown_until: float = 0.0
    next_health_check: float = 0.0


@dataclass(frozen=True)
class EndpointStats:
    """What ``/status``, ``harvey models`` and the map phase's note show of one endpoint."""

    url: str
    health: str
    capacity: int
    in_flight: int
    served: int
    slot_context: int | None


@dataclass
class _Picked:
    endpoint: Endpoint
    events: int = 0


@dataclass
class _Policy:
    """Dispatch: ``least-in-flight`` (default) or ``round-robin`` (the benchmarks' baseline)."""

    name: str = "least-in-flight"
    turn: int = 0
    sticky: threading.local = field(default_factory=threading.local)
    sessions: dict[str, Endpoint] = field(default_factory=dict)  # a chat session's endpoint

    def last(self) -> Endpoint | None:
        """The endpoint this chat session (else this thread) used last."""
        session = current_session()
        if session is not None:
            return self.sessions.get(session)
        return getattr(self.sticky, "endpoint", None)

    def remember(self, endpoint: Endpoint | None) -> None:
        session = current_session()
        if session is not None:
            if endpoint is None:
                self.sessions.pop(session, None)
            else:
                self.sessions[session] = endpoint
        else:
            self.sticky.endpoint = endpoint


class PooledClient:
    """Several endpoints of one model behind the ``LLMClient`` protocol."""

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        *,
        backend: str,
        model: str,
        retries: int = RETRIES,
        cooldown: float = COOLDOWN,
        policy: str = "least-in-flight",
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        probe: Probe | None = None,
    ) -> None:
        if not endpoints:
            raise ConfigError("an endpoint pool needs at least one endpoint")
        self.endpoints = list(endpoints)
        self.backend = backend
        self.model = model
        self.endpoint = self.endpoints[0].url
        self.retries = retries
        self.cooldown = cooldown
        self._policy = _Policy(policy)
        self._clock = clock
        self._sleep = sleep
        self._probe = probe or probe_endpoint
        self._cond = threading.Condition()

    # --- the LLMClient protocol ------------------------------------------------

    def stream_chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        response_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        extra = {} if response_schema is None else {"response_schema": response_schema}
        tried: list[Endpoint] = []
        errors: list[str] = []
        for _attempt in range(1 + max(0, self.retries)):
            picked = self._acquire(tried, errors)
            if not picked.endpoint.verified and not self._verify(picked.endpoint, errors):
                self._release(picked.endpoint, ok=False)
                tried.append(picked.endpoint)
                continue
            try:
                for event in picked.endpoint.client.stream_chat(messages, tools, **extra):
                    picked.events += 1
                    yield event
            except BackendError as exc:
                if picked.events or not exc.transient:
                    self._release(picked.endpoint, ok=not exc.transient)
                    raise
                self._release(picked.endpoint, ok=False)
                tried.append(picked.endpoint)
                errors.append(f"{picked.endpoint.url}: {exc}")
                log.info(
                    "endpoint %s failed a call, retrying elsewhere: %s", picked.endpoint.url, exc
                )
                continue
            except BaseException:  # cancelled or closed early: not the endpoint's fault
                self._release(picked.endpoint, ok=True)
                raise
            self._release(picked.endpoint, ok=True)
            return
        raise BackendUnavailable(all_failed(errors))

    def capabilities(self) -> ModelCapabilities:
        """The smallest window of the pool: a prompt must fit whichever endpoint gets it."""
        caps = [self._caps(e) for e in self.endpoints if e.health != "refused"]
        smallest = min(caps, key=lambda c: c.context_window)
        return smallest

    def list_models(self) -> list[str]:
        errors: list[str] = []
        for ep in self.endpoints:
            try:
                return ep.client.list_models()
            except BackendError as exc:
                errors.append(f"{ep.url}: {exc}")
        raise BackendUnavailable(all_failed(errors))

    def with_model(self, model: str) -> PooledClient:
        copies = [
            Endpoint(e.url, e.client.with_model(model), e.capacity, e.slot_context, e.health)
            for e in self.endpoints
        ]
        return PooledClient(
            copies,
            backend=self.backend,
            model=model,
            retries=self.retries,
            cooldown=self.cooldown,
            policy=self._policy.name,
            clock=self._clock,
            sleep=self._sleep,
            probe=self._probe,
        )

    def close(self) -> None:
        for ep in self.endpoints:
            try:
                ep.client.close()
            except Exception as exc:  # one endpoint's close never keeps the others open
                log.debug("could not close %s: %s", ep.url, exc)

    # --- the hook the map phase, /status and `harvey models` read ---------------

    @property
    def policy(self) -> str:
        """The dispatch policy's name (a Ray worker's copy of the pool keeps it)."""
        return self._policy.name

    @property
    def total_capacity(self) -> int:
        """Calls the pool can serve at once: the map phase keeps this many in flight."""
        return sum(e.capacity for e in self.endpoints if e.health != "refused")

    def stats(self) -> list[EndpointStats]:
        with self._cond:
            now = self._clock()
            return [
                EndpointStats(
                    e.url,
                    "cooling down" if e.cooldown_until > now and e.health == "ok" else e.health,
                    e.capacity,
                    e.in_flight,
                    e.served,
                    e.slot_context,
                )
                for e in self.endpoints
            ]

    # --- dispatch ---------------------------------------------------------------

    def _caps(self, ep: Endpoint) -> ModelCapabilities:
        if ep.slot_context is not None:  # the slot's window; tool support as the server says
            inner = ep.client.capabilities()
            source = f"server (/slots n_ctx, {ep.url})"
            return ModelCapabilities(
                ep.slot_context, inner.supports_tools, source, inner.tools_source
            )
        return ep.client.capabilities()

    def _acquire(self, tried: Sequence[Endpoint], errors: list[str]) -> _Picked:
        """Wait for an endpoint this call has not tried that is up, not cooling and not full."""
        while True:
            wait: float | None = None
            with self._cond:
                now = self._clock()
                candidates = [e for e in self.endpoints if e not in tried and e.health != "refused"]
                if not candidates:
                    raise BackendUnavailable(all_failed(errors))
                chosen = self._choose(candidates, now)
                if chosen is not None:
                    chosen.in_flight += 1
                    self._policy.remember(chosen)
                    return _Picked(chosen)
                resting = [e for e in candidates if e.cooldown_until > now or e.health == "loading"]
                if len(resting) < len(candidates):
                    self._cond.wait(BUSY_POLL)  # some endpoint is only full: a release wakes us
                    continue
                if self._looks_dead(resting):
                    raise BackendUnavailable(all_failed(errors or self._failing(resting)))
                wake = min(self._wake_time(e, now) for e in resting)
                wait = max(0.0, wake - now)
            self._sleep(wait)
            self._recheck_loading()

    @staticmethod
    def _looks_dead(resting: Sequence[Endpoint]) -> bool:
        """Whether waiting out the cooldowns is pointless: every endpoint left is resting
        after failing at least twice in a row (none loading). Then the call fails now,
        rather than each chunk waiting out doubled cooldowns while the whole pool is down."""
        return all(e.health != "loading" and e.failures >= 2 for e in resting)

    @staticmethod
    def _failing(resting: Sequence[Endpoint]) -> list[str]:
        return [f"{e.url}: failing ({e.failures} times in a row)" for e in resting]

    def _verify(self, ep: Endpoint, errors: list[str]) -> bool:
        """Check an endpoint that was down at start before its first call: it must serve
        the pool's model (else it is refused for good, with a warning) and its slots
        give its capacity."""
        result = self._probe(ep.url, self.backend)
        if result.health == "down":
            errors.append(f"{ep.url}: {result.error}")
            return False
        with self._cond:
            if result.models and self.model not in result.models:
                ep.health = "refused"
                log.warning(
                    "endpoint %s serves %s, not %s like the rest of the pool: not used",
                    ep.url,
                    ", ".join(result.models),
                    self.model,
                )
                errors.append(f"{ep.url}: serves another model")
                return False
            ep.verified = True
            if result.slots:
                ep.capacity, ep.slot_context = result.slots, result.slot_context
        return True

    def _wake_time(self, ep: Endpoint, now: float) -> float:
        if ep.health == "loading":
            return max(now, ep.next_health_check)
        return ep.cooldown_until

    def _choose(self, candidates: list[Endpoint], now: float) -> Endpoint | None:
        ready = [
            e
            for e in candidates
            if e.health == "ok" and e.cooldown_until <= now and e.in_flight < e.capacity
        ]
        policy = self._policy
        if policy.name == "round-robin":
            ordered = candidates
            pick = ordered[policy.turn % len(ordered)]
            if pick in ready:
                policy.turn += 1
                return pick
            if pick.cooldown_until > now or pick.health != "ok":
                policy.turn += 1  # skip a resting endpoint rather than wait for it
            return None
        if not ready:
            return None
        last = policy.last()
        if last in ready:
            return last
        fewest = min(e.in_flight for e in ready)
        tied = [e for e in ready if e.in_flight == fewest]
        pick = tied[policy.turn % len(tied)]
        policy.turn += 1
        return pick

    def _release(self, ep: Endpoint, *, ok: bool) -> None:
        with self._cond:
            ep.in_flight -= 1
            if ok:
                ep.served += 1
                ep.failures = 0
            else:
                delay = min(MAX_COOLDOWN, self.cooldown * (2**ep.failures))
                ep.failures += 1
                ep.cooldown_until = self._clock() + delay
                if self._policy.last() is ep:
                    self._policy.remember(None)
            self._cond.notify_all()

    def _recheck_loading(self) -> None:
        """Ask ``/health`` again of the endpoints that were loading and are due a look."""
        with self._cond:
            now = self._clock()
            due = [
                e for e in self.endpoints if e.health == "loading" and e.next_health_check <= now
            ]
        for ep in due:
            result = self._probe(ep.url, self.backend)
            with self._cond:
                if result.health == "loading":
                    ep.next_health_check = self._clock() + LOADING_POLL
                else:
                    ep.health = "ok"  # down or not, the next call finds out and cools it
                    if result.slots:
                        ep.capacity, ep.slot_context = result.slots, result.slot_context
                self._cond.notify_all()


def all_failed(errors: Sequence[str]) -> str:
    if not errors:
        return "no endpoint of the pool can take the call"
    return f"every endpoint failed the call ({len(errors)} tried): " + "; ".join(errors)

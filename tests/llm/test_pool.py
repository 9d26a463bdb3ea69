"""The endpoint pool against loopback llama.cpp-compatible servers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from harvey.analysis.engine import ChunkAnalysisParams, run_chunked_analysis
from harvey.analysis.progress import NullProgress
from harvey.chunks.chunking import ChunkConfig
from harvey.errors import BackendUnavailable, ConfigError, SynthesisError
from harvey.llm.base import chat
from harvey.llm.openai import OpenAIClient
from harvey.llm.pool import COOLDOWN, EndpointSpec, PooledClient
from harvey.llm.pool_setup import build_pool
from harvey.messages import Message
from harvey.protocols import LLMClient
from tests.fakes.base import HTTPFailure
from tests.fakes.llamacpp import FakeLlamaCpp
from tests.fakes.openai import FakeOpenAI


class FakeClock:
    """A clock the pool reads and a sleep that moves it, so cooldowns cost no time."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []
        self.on_sleep: list[object] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += max(seconds, 0.001)
        for hook in self.on_sleep:
            hook()  # type: ignore[operator]


def _make(url: str, model: str | None) -> LLMClient:
    return OpenAIClient(url, model or "", retries=0, timeout=10)


def _pool(servers: list[FakeOpenAI], clock: FakeClock | None = None, **kw: object) -> PooledClient:
    specs = [EndpointSpec(s.url) for s in servers]
    if clock is not None:
        kw.update(clock=clock, sleep=clock.sleep)
    return build_pool(specs, "openai", None, _make, **kw)  # type: ignore[arg-type]


@pytest.fixture
def servers() -> Iterator[list[FakeLlamaCpp]]:
    with ExitStack() as stack:
        yield [stack.enter_context(FakeLlamaCpp(slots=2, slot_context=2048)) for _ in range(3)]


def _ask(pool: LLMClient, text: str = "hi") -> str:
    return chat(pool, [Message(role="user", content=text)]).text


def _in_threads(pool: LLMClient, n: int) -> list[str | BaseException]:
    """``n`` calls, each from its own thread (as the map phase makes them)."""
    out: list[str | BaseException] = []
    lock = threading.Lock()

    def one() -> None:
        try:
            text: str | BaseException = _ask(pool)
        except BaseException as exc:
            text = exc
        with lock:
            out.append(text)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
        t.join()
    return out


def test_capacity_and_context_come_from_slots(servers: list[FakeLlamaCpp]) -> None:
    servers[1].slot_context = 1024
    pool = _pool(list(servers))
    assert [e.capacity for e in pool.endpoints] == [2, 2, 2]
    assert pool.total_capacity == 6
    assert pool.capabilities().context_window == 1024  # the smallest slot of the pool
    pool.close()


def test_without_slots_max_in_flight_or_the_default() -> None:
    with FakeOpenAI(default_reply="x") as a, FakeOpenAI(default_reply="y") as b:
        specs = [EndpointSpec(a.url), EndpointSpec(b.url, max_in_flight=2)]
        pool = build_pool(specs, "openai", "fake-model", _make)
        assert [e.capacity for e in pool.endpoints] == [4, 2]
        pool.close()


def test_llama_cpp_python_endpoints_take_one_call_at_a_time() -> None:
    with FakeOpenAI(owned_by="me") as lcp, FakeOpenAI() as other:
        specs = [EndpointSpec(lcp.url), EndpointSpec(other.url)]
        pool = build_pool(specs, "openai", "fake-model", _make)
        assert [e.capacity for e in pool.endpoints] == [1, 4]  # it interrupts a second call
        pool.close()


def test_ties_are_rotated_not_sent_to_the_first(servers: list[FakeLlamaCpp]) -> None:
    pool = _pool(list(servers))
    assert _in_threads(pool, 6) == ["partial"] * 6
    assert [s.calls for s in servers] == [2, 2, 2]
    pool.close()


def test_a_thread_keeps_its_endpoint_between_calls(servers: list[FakeLlamaCpp]) -> None:
    pool = _pool(list(servers))
    for _ in range(4):
        _ask(pool)
    assert sorted(s.calls for s in servers) == [0, 0, 4]  # one endpoint per conversation
    pool.close()


def test_a_failed_call_is_retried_elsewhere_and_the_endpoint_cools(
    servers: list[FakeLlamaCpp],
) -> None:
    clock = FakeClock()
    pool = _pool(list(servers), clock)
    for s in servers:
        s.script(HTTPFailure(503, "busy"))
    servers[2].default_reply = "from c"
    # every endpoint fails its first call: a call tries all three, then fails
    with pytest.raises(BackendUnavailable, match="every endpoint failed the call \\(3 tried\\)"):
        _ask(pool)
    assert all(e.cooldown_until == clock.now + COOLDOWN for e in pool.endpoints)
    clock.now += COOLDOWN
    servers[0].script(HTTPFailure(500, "again"))
    servers[1].script(HTTPFailure(429, "slow down"))
    assert _in_threads(pool, 1) in (["partial"], ["from c"])
    failing = [e for e in pool.endpoints if e.failures == 2]
    for e in failing:  # a second failure in a row doubles the rest
        assert e.cooldown_until == clock.now + 2 * COOLDOWN
    assert sum(s.calls for s in servers) >= 4
    pool.close()


def test_a_call_waits_for_a_cooling_endpoint_it_has_not_tried() -> None:
    clock = FakeClock()
    with FakeLlamaCpp() as a, FakeLlamaCpp() as b:
        pool = _pool([a, b], clock, retries=1)
        pool.endpoints[1].cooldown_until = clock.now + 3  # b rests; a fails once
        a.script(HTTPFailure(502, "bad gateway"))
        assert _in_threads(pool, 1) == ["partial"]
        assert clock.slept and sum(clock.slept) >= 3
        assert (a.calls, b.calls) == (1, 1)
        pool.close()


def test_an_endpoint_that_is_loading_is_waited_for() -> None:
    clock = FakeClock()
    with FakeLlamaCpp(loading=True, default_reply="loaded") as a:
        spec = [EndpointSpec(a.url)]
        pool = build_pool(spec, "openai", "fake-model", _make, clock=clock, sleep=clock.sleep)
        assert pool.stats()[0].health == "loading"

        def finish_loading() -> None:
            a.loading = False

        clock.on_sleep.append(finish_loading)
        assert _in_threads(pool, 1) == ["loaded"]
        assert pool.stats()[0].health == "ok"
        pool.close()


def test_another_model_in_the_pool_is_refused() -> None:
    with (
        FakeLlamaCpp(models=["qwen"]) as a,
        FakeLlamaCpp(models=["llama"]) as b,
        pytest.raises(ConfigError, match=f"endpoint {b.url} serves llama, not qwen"),
    ):
        build_pool([EndpointSpec(a.url), EndpointSpec(b.url)], "openai", "qwen", _make)


def test_no_endpoint_answering_is_one_line() -> None:
    a, b = FakeLlamaCpp().start(), FakeLlamaCpp().start()
    urls = [a.url, b.url]
    a.kill()
    b.kill()
    with pytest.raises(BackendUnavailable) as info:
        build_pool([EndpointSpec(u) for u in urls], "openai", None, _make)
    assert "none of the 2 endpoints answered" in str(info.value)
    assert "\n" not in str(info.value)


def test_an_unreachable_endpoint_rests_and_the_rest_serve(servers: list[FakeLlamaCpp]) -> None:
    dead = FakeLlamaCpp().start()
    url = dead.url
    dead.kill()
    specs = [EndpointSpec(url), *(EndpointSpec(s.url) for s in servers)]
    pool = build_pool(specs, "openai", None, _make)
    assert pool.stats()[0].health == "cooling down"
    assert _in_threads(pool, 6) == ["partial"] * 6
    pool.close()


def test_every_chunk_completes_when_an_endpoint_dies_mid_run(
    servers: list[FakeLlamaCpp],
) -> None:
    for s in servers:
        s.delay_per_call = 0.02
    pool = _pool(list(servers))
    victim = servers[0]

    def watch() -> None:
        while victim.calls < 3:
            threading.Event().wait(0.005)
        victim.kill()

    killer = threading.Thread(target=watch, daemon=True)
    killer.start()
    params = ChunkAnalysisParams(
        filename="doc.md",
        chunks=[f"chunk {i}" for i in range(40)],
        instruction="summarise",
        model=pool.model,
        config=ChunkConfig(concurrency=2),
        evidence="model",
    )
    result = run_chunked_analysis(pool, params, progress=NullProgress())
    killer.join(timeout=5)
    assert result.failures == []
    assert all(e is not None for e in result.evidence)  # every chunk's call answered
    assert victim.dead and sum(s.calls for s in servers[1:]) >= 40 - victim.calls
    assert max(s.max_seen_in_flight for s in servers) <= 2  # never more than the slots
    pool.close()


def test_an_endpoint_down_at_start_is_checked_before_its_first_call() -> None:
    from harvey.llm.pool_probe import ProbeResult, probe_endpoint

    clock = FakeClock()
    with FakeLlamaCpp(default_reply="good") as a, FakeLlamaCpp(models=["other"]) as b:
        first_look: set[str] = set()

        def probe(url: str, backend: str) -> ProbeResult:
            if url == b.url and url not in first_look:
                first_look.add(url)
                return ProbeResult("down", error="connection refused")
            return probe_endpoint(url, backend)

        specs = [EndpointSpec(a.url), EndpointSpec(b.url)]
        pool = build_pool(specs, "openai", None, _make, probe=probe, clock=clock, sleep=clock.sleep)
        assert pool.model == "fake-model"
        clock.now += 2 * COOLDOWN  # b's rest is over: the next calls may pick it
        assert _in_threads(pool, 4) == ["good"] * 4
        assert b.calls == 0  # it serves another model: refused, never sent a chat
        assert pool.stats()[1].health == "refused"
        assert pool.capabilities().context_window == 4096
        pool.close()


def test_a_dead_pool_fails_its_chunks_without_waiting_out_every_cooldown() -> None:
    clock = FakeClock()
    a, b = FakeLlamaCpp().start(), FakeLlamaCpp().start()
    pool = _pool([a, b], clock)
    a.kill()
    b.kill()
    params = ChunkAnalysisParams(
        filename="doc.md",
        chunks=[f"chunk {i}" for i in range(12)],
        instruction="summarise",
        model=pool.model,
        config=ChunkConfig(concurrency=1),
        evidence="model",
    )
    with pytest.raises(SynthesisError, match="every endpoint failed"):
        run_chunked_analysis(pool, params, progress=NullProgress())
    # at most one cooldown is waited out before the pool counts as down
    assert sum(clock.slept) <= 2 * COOLDOWN
    pool.close()

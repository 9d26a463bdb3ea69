"""Capacity found out, not assumed: ``/slots``, llama-cpp-python recognised, config, a ramp.

The map phase against a server that reports nothing starts with one call in
flight and raises it only after answers come back whole; against
llama-cpp-python's server (which interrupts a running stream for the next
request) it never sends two at once.
"""

from __future__ import annotations

import threading

from harvey.analysis.engine import ChunkAnalysisParams, run_chunked_analysis
from harvey.analysis.progress import NullProgress
from harvey.chunks.chunking import ChunkConfig
from harvey.llm.capacity import Capacity, Ramp, discover, is_llama_cpp_python
from harvey.llm.local import LocalClient
from harvey.llm.openai import OpenAIClient
from tests.fakes.llamacpp import FakeLlamaCpp
from tests.fakes.quoting import QuotingLlamaCpp
from tests.fakes.servers import FakeOpenAI


def test_a_ramp_rises_while_more_calls_finish_more_per_second() -> None:
    ramp = Ramp(ceiling=3)
    ramp.record(1.0, True, 1)
    assert ramp.limit == 2
    ramp.record(1.1, True, 2)
    ramp.record(1.0, True, 2)  # two at once, each about as fast: twice the work per second
    assert ramp.limit == 3
    for _ in range(3):
        ramp.record(1.0, True, 3)
    assert ramp.limit == 3 and ramp.settled  # the ceiling


def test_a_ramp_goes_back_when_the_server_only_queues() -> None:
    ramp = Ramp()
    ramp.record(1.0, True, 1)
    ramp.record(2.0, True, 2)
    ramp.record(2.0, True, 2)  # two at once take twice as long: no more work per second
    assert (ramp.limit, ramp.settled) == (1, True)
    ramp.record(0.1, True, 1)
    assert ramp.limit == 1  # settled: it stays


def test_an_answer_that_is_not_whole_lowers_the_ramp_for_good() -> None:
    ramp = Ramp()
    ramp.record(1.0, True, 1)
    ramp.record(1.0, False, 2)  # an empty reply with two in flight
    assert (ramp.limit, ramp.settled) == (1, True)
    fresh = Ramp()
    fresh.record(1.0, False, 1)  # one alone failing says nothing about capacity
    assert (fresh.limit, fresh.settled) == (1, False)


def test_discover_reads_slots_recognises_llama_cpp_python_and_honours_config() -> None:
    with FakeLlamaCpp(slots=3) as slots, FakeLlamaCpp(slots=0, owned_by="me") as lcp:
        assert discover(OpenAIClient(slots.url, "m")) == Capacity(3, True, "server (/slots)")
        found = discover(OpenAIClient(lcp.url, "m"))
        assert (found.limit, found.fixed) == (1, True) and "llama-cpp-python" in found.source
    with FakeOpenAI() as plain:
        assert discover(OpenAIClient(plain.url, "m")).fixed is False
        configured = OpenAIClient(plain.url, "m")
        configured.max_in_flight = 5
        assert discover(configured) == Capacity(5, True, "max_in_flight (config)")
    assert discover(LocalClient()) == Capacity(1, True, "the embedded model")
    assert not is_llama_cpp_python({"data": [{"id": "x", "owned_by": "llamacpp"}]})


def _params(n: int) -> ChunkAnalysisParams:
    config = ChunkConfig(concurrency=4, concurrency_given=False)  # nobody set it
    chunks = [f"Section {i}. Some words." for i in range(n)]
    return ChunkAnalysisParams(
        "doc.md", chunks, "Sum up.", "m", "paragraph", config, evidence="model", answer="synthesis"
    )


def test_a_server_without_slots_gets_one_call_first_then_more() -> None:
    with QuotingLlamaCpp(slots=0, delay_per_call=0.1) as srv:
        result = run_chunked_analysis(
            OpenAIClient(srv.url, "m"), _params(6), progress=NullProgress()
        )
        arrivals = list(srv.arrivals)
    assert result.failures == []
    assert arrivals[:2] == [1, 1]  # the second call waited for the first answer
    assert max(arrivals) >= 2  # whole answers, faster together: raised


def test_llama_cpp_python_is_sent_one_call_at_a_time() -> None:
    with QuotingLlamaCpp(slots=0, owned_by="me", delay_per_call=0.05) as srv:
        run_chunked_analysis(
            OpenAIClient(srv.url, "m"),
            _params(5),
            progress=NullProgress(),
            cancel=threading.Event(),
        )
        assert srv.max_seen_in_flight == 1 and srv.calls == 6  # five maps, one synthesis

"""llama.cpp's prompt cache: ``cache_prompt`` and one slot per chat session, only for llama.cpp.

Against loopback servers: a llama.cpp-flavoured fake (``/props``, ``/slots``) gets
both fields, a session keeps its slot across turns and two sessions get two slots;
servers that are not llama.cpp's get neither; map calls name no slot; a server that
refuses the slot is asked again without it instead of failing the turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harvey.llm.base import chat, session_scope
from harvey.llm.capacity import discover
from harvey.llm.openai import OpenAIClient
from harvey.llm.pool import EndpointSpec
from harvey.llm.pool_setup import build_pool
from harvey.llm.prompt_cache import SlotPins, forget_slots
from harvey.messages import Message
from tests.fakes.llamacpp import FakeLlamaCpp
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import invoke_harvey

HI = [Message("user", "hi")]


@pytest.fixture(autouse=True)
def _fresh_slot_counts() -> Iterator[None]:
    """Slot counts are remembered per server root: a port reused by a later test is
    another server."""
    forget_slots()
    yield
    forget_slots()


def _client(url: str) -> OpenAIClient:
    client = OpenAIClient(url, "fake-model", retries=0, timeout=10)
    client.capabilities()  # asks /props, as every session does before its first turn
    return client


def _turn(client: OpenAIClient, session: str | None) -> None:
    with session_scope(session):
        chat(client, HI)


def test_a_session_keeps_its_slot_and_two_sessions_get_two() -> None:
    with FakeLlamaCpp(slots=2) as srv:
        client = _client(srv.url)
        for session in ("first", "second", "first", "second", "first"):
            _turn(client, session)
        bodies = srv.chat_requests
    assert all(b["cache_prompt"] is True for b in bodies)
    first = {b["id_slot"] for b in bodies[0::2]}
    second = {b["id_slot"] for b in bodies[1::2]}
    assert len(first) == 1 and len(second) == 1  # stable across the session's turns
    assert first | second == {0, 1}  # and the two sessions do not share a slot


def test_slots_counted_by_capacity_discovery_are_used_without_props() -> None:
    """``/slots`` answered (capacity discovery asked it): llama.cpp's, even with no ``/props``."""
    with FakeLlamaCpp(slots=3, props=False) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0, timeout=10)
        assert discover(client).limit == 3
        _turn(client, "s")
        (body,) = srv.chat_requests
    assert body["cache_prompt"] is True and body["id_slot"] in (0, 1, 2)


def test_outside_a_session_no_slot_is_named() -> None:
    with FakeLlamaCpp(slots=2) as srv:
        _turn(_client(srv.url), None)
        (body,) = srv.chat_requests
    assert body["cache_prompt"] is True and "id_slot" not in body


def test_one_slot_is_not_named() -> None:
    with FakeLlamaCpp(slots=1) as srv:
        _turn(_client(srv.url), "s")
        (body,) = srv.chat_requests
    assert body["cache_prompt"] is True and "id_slot" not in body


def test_servers_that_are_not_llama_cpp_get_neither_field() -> None:
    """OpenAI and Ollama's OpenAI endpoint answer no /props or /slots; llama-cpp-python's
    server neither (its models are ``owned_by: "me"``)."""
    for fake in (FakeOpenAI(["a"], props=False), FakeOpenAI(["b"], props=False, owned_by="me")):
        with fake as srv:
            client = _client(srv.url)
            discover(client)  # /slots: 404
            _turn(client, "s")
            (body,) = srv.chat_requests
        assert "cache_prompt" not in body and "id_slot" not in body


def test_a_refused_slot_is_asked_again_without_it() -> None:
    with FakeLlamaCpp(slots=2, refuse_slot_ids=True, default_reply="fine") as srv:
        client = _client(srv.url)
        with session_scope("s"):
            first = chat(client, HI)
            second = chat(client, HI)
        slots = srv.slot_ids
    assert first.text == second.text == "fine"  # the turn did not fail
    assert slots[0] is not None and slots[1:] == [None, None]  # once refused, never again


def test_a_pooled_session_stays_on_its_endpoint_and_slot() -> None:
    with FakeLlamaCpp(slots=2) as one, FakeLlamaCpp(slots=2) as two:
        pool = build_pool(
            [EndpointSpec(one.url), EndpointSpec(two.url)],
            "openai",
            None,
            lambda url, model: OpenAIClient(url, model or "", retries=0, timeout=10),
        )
        for _ in range(3):
            with session_scope("s"):
                chat(pool, HI)
        used = [s for s in (one, two) if s.calls]
    assert len(used) == 1  # the session's endpoint
    (server,) = used
    assert len(set(server.slot_ids)) == 1 and server.slot_ids[0] is not None


def test_a_harvey_run_pins_its_chat_and_an_analysis_spreads_its_map_calls(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n\n" + "The boiler was serviced in May.\n" * 80)
    backend = ("--backend", "openai", "--base-url")
    with FakeLlamaCpp(slots=2, default_reply="Serviced in May.") as srv:
        proc = invoke_harvey("run", "When?", *backend, srv.url, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert srv.slot_ids[-1] is not None and srv.chat_requests[-1]["cache_prompt"] is True
        runs = srv.calls
        args = ("analyze", "notes.md", "-i", "Summarise", "--chunk-size", "600")
        proc = invoke_harvey(*args, *backend, srv.url, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        maps = srv.slot_ids[runs:]
    assert len(maps) > 2 and maps == [None] * len(maps)  # map calls run in parallel: unpinned


def test_pins_spread_sessions_over_the_slots_and_keep_them() -> None:
    pins = SlotPins()
    chosen = [pins.slot(f"session-{i}", 4) for i in range(4)]
    assert sorted(chosen) == [0, 1, 2, 3]
    assert [pins.slot(f"session-{i}", 4) for i in range(4)] == chosen
    assert pins.slot("session-5", 4) in range(4)  # more sessions than slots: they share

"""History beyond the window is left out of the prompt, whole turns at a time, and said so."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.chat.history_fit import OMITTED_NOTE, TRIMMED_HISTORY_SHARE, fit_history, turn_tokens
from harvey.context.budget import estimate_tokens, serialize_history
from harvey.errors import StoreError, TurnNotSaved
from harvey.llm.scripted import Reply
from harvey.messages import Message, ToolCall, split_turns
from harvey.session.fountain import parse_session
from harvey.ui import HeadlessUI

from .conftest import AgentFactory


def tool_turn(i: int, size: int) -> list[Message]:
    call = ToolCall(f"c{i}", "read_file", {"path": f"f{i}.txt"})
    return [
        Message("user", f"question {i} " + "q" * size),
        Message("assistant", "", [call]),
        Message("tool", "r" * size, tool_call_id=f"c{i}", name="read_file"),
        Message("assistant", f"answer {i}"),
    ]


def test_a_history_that_fits_is_kept_whole() -> None:
    history = tool_turn(0, 100) + tool_turn(1, 100)
    fitted = fit_history(history, 10_000)
    assert fitted.messages == history and fitted.omitted_messages == 0 and fitted.note is None


def test_the_oldest_whole_turns_are_left_out_with_a_note() -> None:
    history = [m for i in range(10) for m in tool_turn(i, 400)]
    budget = 1000
    fitted = fit_history(history, budget)
    assert 0 < fitted.omitted_messages < len(history)
    assert fitted.omitted_messages % 4 == 0  # whole turns only
    assert fitted.messages == history[fitted.omitted_messages :]
    assert fitted.messages[0].role == "user"
    assert fitted.omitted_turns == fitted.omitted_messages // 4
    assert fitted.note is not None and fitted.note.role == "system"
    assert fitted.note.content == OMITTED_NOTE.format(n=fitted.omitted_messages)
    cost = sum(turn_tokens(t) for t in split_turns(fitted.messages))
    assert cost + estimate_tokens(fitted.note.content) <= budget * TRIMMED_HISTORY_SHARE


def test_a_turn_too_big_for_the_budget_leaves_everything_out() -> None:
    history = tool_turn(0, 50_000)
    fitted = fit_history(history, 2000)
    assert fitted.messages == [] and fitted.omitted_messages == 4 and fitted.omitted_turns == 1


messages = st.lists(
    st.tuples(st.sampled_from(["user", "assistant", "tool"]), st.integers(0, 3000)),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(messages, st.integers(0, 6000))
def test_fitting_never_exceeds_the_budget_nor_splits_a_turn(
    spec: list[tuple[str, int]], budget: int
) -> None:
    history = [Message(role, "x" * size) for role, size in spec]  # type: ignore[arg-type]
    fitted = fit_history(history, budget)
    kept = fitted.messages
    assert kept == history[len(history) - len(kept) :]  # a suffix of the history
    if fitted.omitted_messages:
        assert not kept or kept[0].role == "user" or len(kept) == len(history)
        assert fitted.note is not None
        sent = [fitted.note, *kept]
        # the note is always sent (the reply margin holds its ~15 tokens)
        note = estimate_tokens(fitted.note.content)
        assert estimate_tokens(serialize_history(sent)) <= max(budget, note + 1)
    else:
        assert estimate_tokens(serialize_history(history)) <= budget


def test_a_resumed_history_over_the_window_is_cut_and_told(make_agent: AgentFactory) -> None:
    warnings: list[str] = []

    class UI(HeadlessUI):
        def warn(self, message: str) -> None:
            warnings.append(message)

    agent = make_agent(
        [Reply(tool_calls=[("list_files", {})]), "done", "again"],
        context_window=8192,
        ui=UI(),
    )
    history = [m for i in range(400) for m in tool_turn(i, 1000)]  # ~800k tokens
    agent.load_history(history)
    agent.turn("what did we say last?")
    prompts = agent.client.seen
    assert len(prompts) == 2
    for request in prompts:
        assert estimate_tokens(serialize_history(request.messages)) < 8192
        notes = [m for m in request.messages if m.role == "system" and "left out" in m.content]
        assert len(notes) == 1
        assert request.messages[-1].role in ("user", "tool")
    first = prompts[0].messages
    assert first[-1].content == "what did we say last?"
    # kept turns are whole: every tool result follows the call that made it
    ids = [c.id for m in first for c in m.tool_calls]
    assert all(m.tool_call_id in ids for m in first if m.role == "tool")
    assert len(warnings) == 1 and "left out of the prompt" in warnings[0]
    assert "8,192-token" in warnings[0]
    status = agent.status()
    assert status.remaining_tokens > 0  # the turn still has room for its own work
    assert 0 < status.omitted_messages < len(history)
    assert status.used_tokens < 8192
    agent.turn("and now?")  # the cut moves on: not told again (/status shows it)
    assert len(warnings) == 1
    assert agent.status().omitted_messages >= status.omitted_messages
    assert len(agent.history) == len(history) + 6  # nothing dropped from history itself


def test_a_turn_the_store_refuses_still_returns_its_reply(
    make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = make_agent(["the answer", "the next answer"])
    real_add_turn = agent.store.add_turn
    calls: list[int] = []

    def full_once(session_id: str, messages: list[Message]) -> None:
        calls.append(len(messages))
        if len(calls) == 1:
            raise StoreError("session store sessions.db: database or disk is full")
        real_add_turn(session_id, messages)

    monkeypatch.setattr(agent.store, "add_turn", full_once)
    with pytest.raises(TurnNotSaved) as err:
        agent.turn("question")
    assert err.value.outcome.reply == "the answer"
    assert "not saved" in str(err.value) and "disk is full" in str(err.value)
    assert isinstance(err.value, StoreError)
    assert [m.content for m in agent.history] == ["question", "the answer"]
    assert agent.store.messages(agent.session_id) == []
    # the disk has room again: the next turn saves the refused one with it
    agent.turn("next")
    stored = [m.content for m in agent.store.messages(agent.session_id)]
    assert stored == ["question", "the answer", "next", "the next answer"]
    assert calls == [2, 4]
    agent.recorder.close()
    parsed = parse_session(agent.recorder.path)
    assert [s.reply for s in parsed.turns] == ["the answer", "the next answer"]


def test_imported_history_is_stored_with_the_first_turn_only(make_agent: AgentFactory) -> None:
    agent = make_agent(["fresh reply"])
    imported = [Message("user", "old q"), Message("assistant", "old a")]
    agent.load_history(imported, stored=False)
    assert agent.store.messages(agent.session_id) == []
    agent.turn("new q")
    stored = [m.content for m in agent.store.messages(agent.session_id)]
    assert stored == ["old q", "old a", "new q", "fresh reply"]

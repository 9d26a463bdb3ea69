"""Compaction end to end: a ten-turn conversation in a 2,048-token window, over HTTP.

The loopback OpenAI server enforces the window (``max_prompt_tokens``) and
answers the summary request with a scripted summary (``Summariser`` spots it by
its system prompt), so every request, the summary's included, is checked
against the window on the wire.
"""

from __future__ import annotations

import io
import itertools
from pathlib import Path
from typing import Any

import pytest

from harvey.chat.compaction import SUMMARISER
from harvey.chat.runtime import Runtime, open_runtime
from harvey.config.settings import load_settings, resolve_paths
from harvey.llm.scripted import Reply
from harvey.messages import Message
from harvey.session.compactions import summarised_span
from harvey.session.fountain import parse_session
from harvey.ui import HeadlessUI
from tests.fakes.base import HTTPFailure, _estimated_prompt
from tests.fakes.servers import FakeOpenAI

WINDOW = 2048
SUMMARY = "Summary: the user asked about rivers one to N; the assistant described each."


def is_summary(body: Any) -> bool:
    """A summary request: one call, or a group's summary, or the call joining them."""
    messages = body.get("messages") or [] if isinstance(body, dict) else []
    return any(SUMMARISER in str(m.get("content") or "") for m in messages[:2]) or any(
        "Summarise the conversation above" in str(m.get("content") or "") for m in messages
    )


class Summariser(FakeOpenAI):
    """Answers a summary request with ``summary`` (or a failure), other requests from the script."""

    def __init__(self, *args: Any, summary: Reply | HTTPFailure, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.summary = summary

    def _chat(self, h: Any, body: Any) -> None:
        if is_summary(body):
            with self._lock:
                self._steps.insert(0, self.summary)
        super()._chat(h, body)


def question(n: int) -> str:
    return f"Question {n}: tell me about river number {n}. " + "Please be thorough. " * 12


def answer(n: int) -> str:
    # no sentence twice: the loop guard (llm/repetition.py) would cut a reply that repeats
    return f"Answer {n}: river {n} flows north. " + "".join(
        f"It has tributary t{k:02d} of stream-{n}. " for k in range(18)
    )


def open_session(
    workspace: Path, url: str, *, resume: bool = False, **more: Any
) -> tuple[Runtime, HeadlessUI]:
    paths = resolve_paths(workspace)
    settings = load_settings(
        paths,
        {"backend": "openai", "base_url": url, "context_window": WINDOW, **more},
        env={},
    )
    ui = HeadlessUI(err=io.StringIO())
    return open_runtime(paths, settings, ui=ui, resume_latest=resume), ui


def warnings(ui: HeadlessUI) -> str:
    stream = ui.err
    assert isinstance(stream, io.StringIO)
    return stream.getvalue()


def chat_turns(rt: Runtime, turns: range) -> None:
    from harvey.chat.compaction import compact_if_needed

    for n in turns:
        compact_if_needed(rt.agent, question(n))
        rt.agent.turn(question(n))


def chat_turns_text(rt: Runtime, text: str) -> None:
    """One turn as the REPL and ``harvey run --continue`` take it: compaction first."""
    from harvey.chat.compaction import compact_if_needed

    compact_if_needed(rt.agent, text)
    rt.agent.turn(text)


def turn_requests(srv: FakeOpenAI) -> list[list[dict[str, Any]]]:
    return [r["messages"] for r in srv.chat_requests if not is_summary(r)]


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def test_ten_turns_in_a_2048_window_keep_recent_turns_and_a_recorded_summary(
    workspace: Path,
) -> None:
    script = [Reply(answer(n)) for n in range(1, 11)]
    with Summariser(
        script, summary=Reply(SUMMARY), context_window=WINDOW, max_prompt_tokens=WINDOW
    ) as srv:
        rt, ui = open_session(workspace, srv.url)
        try:
            chat_turns(rt, range(1, 11))
            session_id = rt.agent.session_id
            stored = rt.store.messages(session_id)
            rows = rt.store.compactions(session_id)
            recording = rt.recorder.path if rt.recorder else None
        finally:
            rt.close()
        bodies = srv.chat_requests
    assert srv.rejected == 0
    assert all(_estimated_prompt(b) <= WINDOW for b in bodies), "nothing over the window"
    summaries = [b for b in bodies if is_summary(b)]
    assert summaries, "the history outgrew the window, so it was summarised"
    last = turn_requests(srv)[-1]
    sent = [m["content"] for m in last]
    assert sent[1].startswith("[Harvey compacted turns 1–") and sent[2] == SUMMARY
    assert question(10) in sent and answer(9) in sent, "the newest turns are kept whole"
    assert question(1) not in sent
    # sessions.db keeps every original, and which turns the summary stands for
    assert [m.content for m in stored if m.role == "user"] == [question(n) for n in range(1, 11)]
    assert rows and rows[-1].first_turn == 1 and rows[-1].summary == SUMMARY
    assert rows[-1].messages == 2 * rows[-1].last_turn
    # the recording: the note and the summary as HARVEY's line, in the turn it happened
    assert recording is not None
    scenes = [s for s in parse_session(recording).turns if s.compaction is not None]
    assert len(scenes) == len(rows)
    note = scenes[-1].compaction
    assert note is not None and note.ok and note.summary == SUMMARY
    assert (note.first_turn, note.last_turn) == (rows[-1].first_turn, rows[-1].last_turn)
    assert note.tokens_after < note.tokens_before and note.model == "fake-model"
    assert scenes[-1].user_text is not None and scenes[-1].reply is not None
    text = recording.read_text(encoding="utf-8")
    assert f"tokens, model=fake-model — ok]]\n\nHARVEY\n{SUMMARY}" in text
    assert "compacted turns 1–" in warnings(ui)


def test_requests_after_a_compaction_extend_each_other_byte_for_byte(workspace: Path) -> None:
    script = [Reply(answer(n)) for n in range(1, 11)]
    with Summariser(
        script, summary=Reply(SUMMARY), context_window=WINDOW, max_prompt_tokens=WINDOW
    ) as srv:
        rt, _ui = open_session(workspace, srv.url)
        try:
            chat_turns(rt, range(1, 11))
        finally:
            rt.close()
        requests = turn_requests(srv)
    breaks = 0
    for before, after in itertools.pairwise(requests):
        if after[: len(before)] != before:
            breaks += 1
            assert after[1]["content"].startswith("[Harvey compacted turns"), "only at a compaction"
    assert 1 <= breaks <= len([b for b in srv.chat_requests if is_summary(b)])


def test_a_failed_summary_falls_back_to_leaving_turns_out_with_the_notice(
    workspace: Path,
) -> None:
    script = [Reply(answer(n)) for n in range(1, 11)]
    with Summariser(
        script,
        summary=HTTPFailure(400, "the model cannot do that"),
        context_window=WINDOW,
        max_prompt_tokens=WINDOW,
    ) as srv:
        rt, ui = open_session(workspace, srv.url)
        try:
            chat_turns(rt, range(1, 11))
            rows = rt.store.compactions(rt.agent.session_id)
            recording = rt.recorder.path if rt.recorder else None
        finally:
            rt.close()
        bodies = srv.chat_requests
    assert srv.rejected == 0 and all(_estimated_prompt(b) <= WINDOW for b in bodies)
    assert rows == []
    told = warnings(ui)
    assert "could not summarise turns 1–" in told
    assert "earlier messages" in told and "were left out of the prompt" in told
    last = turn_requests(srv)[-1]
    assert "earlier messages were left out" in last[1]["content"]
    assert recording is not None
    notes = [s.compaction for s in parse_session(recording).turns if s.compaction is not None]
    assert notes and all(n.status.startswith("error: ") and n.summary is None for n in notes)
    assert len(notes) <= 2, "a failed summary is not tried again before every turn"


def test_resume_after_compaction_sends_the_summary_not_the_originals(workspace: Path) -> None:
    script = [Reply(answer(n)) for n in range(1, 12)]
    with Summariser(
        script, summary=Reply(SUMMARY), context_window=WINDOW, max_prompt_tokens=WINDOW
    ) as srv:
        rt, _ui = open_session(workspace, srv.url)
        try:
            chat_turns(rt, range(1, 11))
        finally:
            rt.close()
        rt, _ui = open_session(workspace, srv.url, resume=True)
        try:
            assert rt.resumed
            chat_turns_text(rt, "What did we cover?")
            stored = rt.store.messages(rt.agent.session_id)
        finally:
            rt.close()
        last = srv.chat_requests[-1]["messages"]
    sent = [m["content"] for m in last]
    assert sent[1].startswith("[Harvey compacted turns 1–") and sent[2] == SUMMARY
    assert question(1) not in sent and question(10) in sent
    assert len([m for m in stored if m.role == "user"]) == 11, "every original is kept"


def test_the_model_reads_summarised_turns_back_with_recall_turns(workspace: Path) -> None:
    script: list[Reply] = [Reply(answer(n)) for n in range(1, 11)]
    script += [Reply(tool_calls=[("recall_turns", {"from": 1, "to": 2})]), Reply("River 1.")]
    with Summariser(
        script, summary=Reply(SUMMARY), context_window=WINDOW, max_prompt_tokens=WINDOW
    ) as srv:
        rt, _ui = open_session(workspace, srv.url)
        try:
            chat_turns(rt, range(1, 11))
            outcome = rt.agent.turn("Which river came first, exactly as I asked?")
        finally:
            rt.close()
        bodies = srv.chat_requests
    assert outcome.reply == "River 1." and srv.rejected == 0
    assert all(_estimated_prompt(b) <= WINDOW for b in bodies)
    (result,) = outcome.tool_results
    assert not result.is_error, result.content
    assert result.content.startswith("turns 1–2, characters 0–")
    assert "user: Question 1: tell me about river number 1." in result.content
    tools = [t["function"]["name"] for t in bodies[-1]["tools"]]
    assert "recall_turns" in tools


def test_turns_larger_than_the_window_are_summarised_in_groups_then_joined(workspace: Path) -> None:
    from harvey.chat.compaction import compact_if_needed

    big = [
        message
        for n in range(1, 4)
        for message in (Message("user", question(n)), Message("assistant", answer(n) * 6))
    ]
    with Summariser(
        [Reply("Fine.")], summary=Reply(SUMMARY), context_window=WINDOW, max_prompt_tokens=WINDOW
    ) as srv:
        rt, _ui = open_session(workspace, srv.url)
        try:
            rt.agent.load_history(big, stored=False)
            note = compact_if_needed(rt.agent, "And now?")
            assert note is not None and note.ok, note
            assert summarised_span(rt.agent.history) == (1, note.last_turn)
            rt.agent.turn("And now?")
            rows = rt.store.compactions(rt.agent.session_id)
        finally:
            rt.close()
        bodies = srv.chat_requests
    summaries = [b for b in bodies if is_summary(b)]
    assert len(summaries) >= 3, "a summary per group of turns, then one joining them"
    assert srv.rejected == 0 and all(_estimated_prompt(b) <= WINDOW for b in bodies)
    assert rows and rows[-1].messages == 2 * rows[-1].last_turn


def test_more_summary_calls_than_max_chunks_are_not_made_before_a_turn(workspace: Path) -> None:
    """No question stands between a person and their prompt: the leave-out takes over."""
    from harvey.chat.compaction import compact_if_needed

    big = [
        message
        for n in range(1, 4)
        for message in (Message("user", question(n)), Message("assistant", answer(n) * 6))
    ]
    with Summariser([], summary=Reply(SUMMARY), context_window=WINDOW) as srv:
        rt, ui = open_session(workspace, srv.url, chunking={"max_chunks": 2})
        try:
            rt.agent.load_history(big, stored=False)
            note = compact_if_needed(rt.agent, "And now?")
        finally:
            rt.close()
        assert srv.chat_requests == [], "not made: no call"
    assert note is not None and note.status.startswith("error: ") and "/compact asks" in note.status
    assert "could not summarise turns 1–" in warnings(ui)

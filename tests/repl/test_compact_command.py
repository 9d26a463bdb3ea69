"""``/compact`` through the real REPL loop, in process, against the loopback OpenAI server."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from harvey.chat.runtime import open_runtime
from harvey.config.settings import load_settings, resolve_paths
from harvey.llm.scripted import Reply
from harvey.repl.loop import Repl
from harvey.repl.ui import LineReader, TerminalUI
from harvey.session.fountain import parse_session
from tests.fakes.servers import FakeOpenAI

SUMMARY = "Earlier: the user named the cat Tom and the dog Rex."


def repl_on(workspace: Path, url: str) -> tuple[Repl, io.StringIO]:
    paths = resolve_paths(workspace)
    settings = load_settings(paths, {"backend": "openai", "base_url": url}, env={})
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    reader = LineReader(None)
    ui = TerminalUI(console, reader)
    return Repl(open_runtime(paths, settings, ui=ui), console, reader, ui), out


def test_compact_summarises_older_turns_and_the_next_turn_sends_the_summary(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [
        Reply("Noted: the cat is Tom."),
        Reply("Noted: the dog is Rex."),
        Reply("Noted: the bird is Kiwi."),
        Reply(SUMMARY),  # the /compact request
        Reply("Tom, Rex and Kiwi."),
    ]
    with FakeOpenAI(script) as srv:
        repl, out = repl_on(workspace, srv.url)
        try:
            for line in ("My cat is Tom.", "My dog is Rex.", "My bird is Kiwi."):
                assert repl.dispatch(line)
            assert repl.dispatch("/compact keep every pet's name")
            assert repl.dispatch("Name my pets.")
            stored = repl.rt.store.messages(repl.agent.session_id)
            recording = repl.rt.recorder.path if repl.rt.recorder else None
        finally:
            repl.rt.close()
        summary_request, last = srv.chat_requests[3], srv.chat_requests[4]
    shown = out.getvalue()
    assert shown.count("compacted turns 1–1 into a summary") == 1
    assert "keep every pet's name" in summary_request["messages"][-1]["content"]
    assert "My cat is Tom." in summary_request["messages"][-1]["content"]
    sent = [(m["role"], m["content"]) for m in last["messages"][1:]]
    assert sent[0][0] == "user" and sent[0][1].startswith("[Harvey compacted turns 1–1")
    assert sent[1] == ("assistant", SUMMARY)
    assert sent[2:] == [
        ("user", "My dog is Rex."),
        ("assistant", "Noted: the dog is Rex."),
        ("user", "My bird is Kiwi."),
        ("assistant", "Noted: the bird is Kiwi."),
        ("user", "Name my pets."),
    ]
    assert next(m.content for m in stored if m.role == "user") == "My cat is Tom."
    assert recording is not None
    scenes = parse_session(recording).turns
    compacted = [s for s in scenes if s.compaction is not None]
    assert len(compacted) == 1 and compacted[0].compaction is not None
    assert compacted[0].compaction.summary == SUMMARY
    assert compacted[0].user_text is None and compacted[0].reply is None


def test_compact_with_no_conversation_says_so(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeOpenAI([]) as srv:
        repl, _out = repl_on(workspace, srv.url)
        try:
            try:
                repl.dispatch("/compact")
            except Exception as exc:  # the loop prints it as one line; here we see it raw
                message = str(exc)
            else:
                message = ""
        finally:
            repl.rt.close()
        assert srv.chat_requests == [], "no model call for nothing to summarise"
    assert "nothing to compact" in message

"""Resuming a conversation from a recorded session file."""

from __future__ import annotations

from pathlib import Path

from harvey.session.fountain import parse_session, parse_session_text
from harvey.session.recorder import Recorder
from harvey.session.records import TurnRecord
from harvey.session.resume import conversation_from_session, load_conversation

from .test_fountain import clock_from


def test_turns_chunk_result_and_remote_routes_become_messages(tmp_path: Path) -> None:
    rec = Recorder(
        tmp_path / "s.spmd", user="rsdoiel", model="llama3", backend="ollama", clock=clock_from()
    )
    rec.record_turn(TurnRecord("rsdoiel", "llama3", "/w", "What is 2+2?", "4"))
    rec.record_shell("ls", "a\nb", 0)
    rec.record_turn(
        TurnRecord(
            "rsdoiel",
            "mistral",
            "/w",
            "@mistral hi",
            "Hello\n\nINT. X",
            remote=True,
            route="@mistral",
        )
    )
    rec.record_turn(
        TurnRecord(
            "rsdoiel",
            "llama3",
            "/w",
            "Read doc.md",
            None,
            harvey_notice="Context overflow: doc.md is too big.",
        )
    )
    rec.record_chunk_analysis_start("doc.md", 2, "LLAMA3", "paragraph", 6000, "Summarize.")
    rec.record_chunk_result(1, 2, "ok")
    rec.record_chunk_synthesis("LLAMA3", "ok")
    rec.record_turn(TurnRecord("rsdoiel", "llama3", "/w", None, "The synthesis."))
    rec.close()
    messages = conversation_from_session(parse_session(rec.path))
    assert [(m.role, m.content) for m in messages] == [
        ("user", "What is 2+2?"),
        ("assistant", "4"),
        ("user", "@mistral hi"),
        ("assistant", "Hello\n\nINT. X"),
        ("user", "Read doc.md"),
        ("assistant", "The synthesis."),
    ]


def test_model_named_harvey_is_not_mistaken_for_harvey(tmp_path: Path) -> None:
    rec = Recorder(
        tmp_path / "s.spmd", user="harvey", model="harvey", backend="b", clock=clock_from()
    )
    rec.record_turn(TurnRecord("harvey", "harvey", "/w", "hi", "hello"))
    messages, parsed = load_conversation(rec.path)
    assert [(m.role, m.content) for m in messages] == [("user", "hi"), ("assistant", "hello")]
    assert not parsed.complete


def test_truncated_file_resumes_what_is_readable(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "s.spmd", user="u", model="m", backend="b", clock=clock_from())
    rec.record_turn(TurnRecord("u", "m", "/w", "one", "uno"))
    rec.record_turn(TurnRecord("u", "m", "/w", "two", "dos"))
    text = rec.path.read_text()
    cut = text[: text.rindex("\nM\n")]  # the crash happened before the second reply
    parsed = parse_session_text(cut)
    messages = conversation_from_session(parsed)
    assert [m.content for m in messages] == ["one", "uno", "two"]
    assert parsed.warnings

"""Format 1.7: ``[[compaction:]]`` and the summary as HARVEY's line, written and read back."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.session.compactions import summarised_span, summary_messages
from harvey.session.fountain import parse_session
from harvey.session.notes import compaction_note, read_compaction
from harvey.session.recorder import Recorder
from harvey.session.records import CompactionNote, TurnRecord
from harvey.session.render import render_html
from harvey.session.resume import load_conversation

from .strategies import adversarial_text

WHEN = datetime(2026, 12, 1, 22, 0, 0)


def record(path: Path, records: list[TurnRecord]) -> Path:
    rec = Recorder(path, user="tester", model="m", backend="openai", clock=lambda: WHEN)
    for r in records:
        rec.record_turn(r)
    rec.close()
    return path


def turn(user: str | None, reply: str | None, note: CompactionNote | None = None) -> TurnRecord:
    return TurnRecord(
        user="tester", model="m", workspace="/ws", user_text=user, reply=reply, compaction=note
    )


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 999),
    st.integers(0, 999),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    adversarial_text(),
    st.one_of(st.just("ok"), adversarial_text().map(lambda t: f"error: {t}")),
)
def test_the_note_reads_back_what_was_written(
    first: int, more: int, before: int, after: int, model: str, status: str
) -> None:
    note = CompactionNote(first, first + more, before, after, model, status)
    body = compaction_note(note)[2:-2]
    back = read_compaction(body)
    assert back is not None
    assert (back.first_turn, back.last_turn, back.tokens_before, back.tokens_after) == (
        first,
        first + more,
        before,
        after,
    )
    assert back.model == model
    assert back.status == "ok" or back.status.startswith("error:")


def test_near_misses_are_not_compaction_notes() -> None:
    for body in (
        "compaction: turns 1-3, 10 tokens → 2 tokens, model=m — ok",  # a hyphen, not –
        "compaction: turns 1–3, 10 tokens → 2 tokens, model=m — fine",
        "compaction: turns 1–3, 10 tokens, model=m — ok",
        "tool: compaction({}) — ok",
    ):
        assert read_compaction(body) is None, body


def test_a_turn_with_a_compaction_keeps_its_words_reply_and_summary(tmp_path: Path) -> None:
    summary = "The user asked about rivers.\nINT. NOT A SCENE\n[[not a note]]"
    note = CompactionNote(1, 4, 1800, 120, "m", "ok", summary)
    path = record(
        tmp_path / "s.spmd",
        [turn("first", "one"), turn("What next?", "Next is five.", note)],
    )
    text = path.read_text(encoding="utf-8")
    assert "[[compaction: turns 1–4, 1800 tokens → 120 tokens, model=m — ok]]\n\nHARVEY\n" in text
    scene = parse_session(path).turns[-1]
    assert scene.user_text == "What next?" and scene.reply == "Next is five."
    assert scene.compaction == note
    assert 'class="note note-compaction"' in render_html(parse_session(path))


def test_continue_file_sends_the_summary_in_place_of_what_it_stands_for(tmp_path: Path) -> None:
    note = CompactionNote(1, 2, 900, 50, "m", "ok", "Turns one and two, summarised.")
    failed = CompactionNote(1, 3, 900, 0, "m", "error: the model is down")
    path = record(
        tmp_path / "s.spmd",
        [
            turn("q1", "a1"),
            turn("q2", "a2"),
            turn("q3", "a3", note),
            turn("q4", "a4", failed),
            turn(None, None, CompactionNote(1, 4, 700, 40, "m", "ok", "All four, summarised.")),
            turn("q5", "a5"),
        ],
    )
    messages, _parsed = load_conversation(path)
    assert [(m.role, m.content) for m in messages] == [
        *[(m.role, m.content) for m in summary_messages(1, 4, "All four, summarised.")],
        ("user", "q5"),
        ("assistant", "a5"),
    ]
    assert summarised_span(messages) == (1, 4)


def test_a_failed_compaction_has_no_summary_line(tmp_path: Path) -> None:
    failed = CompactionNote(1, 3, 900, 0, "m", "error: the model is down")
    path = record(tmp_path / "s.spmd", [turn("q", "a", failed)])
    scene = parse_session(path).turns[0]
    assert scene.compaction == failed
    assert [who for who, _ in scene.dialogue] == ["TESTER", "HARVEY", "M"]

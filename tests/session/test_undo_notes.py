"""``harvey undo``'s notes in the recording of the session it undid."""

from __future__ import annotations

from pathlib import Path

from harvey.session.fountain import parse_session
from harvey.session.recorder import Recorder
from harvey.session.undo_notes import record_undone


def recording(ws: Path, close: bool) -> Path:
    folder = ws / ".harvey" / "sessions"
    folder.mkdir(parents=True)
    recorder = Recorder.open_in(folder, user="tester", model="m", backend="openai")
    recorder.record_undo([("earlier.txt", "ok")])
    if close:
        recorder.close()
    return recorder.path


def test_notes_go_before_the_end_of_a_closed_recording(tmp_path: Path) -> None:
    path = recording(tmp_path, close=True)
    assert (
        record_undone(str(path), [("a.txt", "ok"), ("b — c]]", "skipped: changed since")]) is None
    )
    parsed = parse_session(path, strict=True)
    assert parsed.complete and path.read_text().endswith("\n\nTHE END.\n")
    assert [s.heading.startswith("INT. UNDO ") for s in parsed.scenes] == [True, True]
    assert [[(n.path, n.status) for n in s.undo_notes] for s in parsed.scenes] == [
        [("earlier.txt", "ok")],
        [("a.txt", "ok"), ("b — c]]", "skipped: changed since")],
    ]


def test_an_open_recording_gets_them_appended_and_problems_are_reasons(tmp_path: Path) -> None:
    path = recording(tmp_path, close=False)
    assert record_undone(str(path), [("a.txt", "ok")]) is None
    assert path.read_text().rstrip().endswith("[[undo: a.txt — ok]]")
    assert [len(s.undo_notes) for s in parse_session(path).scenes] == [1, 1]
    assert record_undone("", [("a.txt", "ok")]) is None
    missing = record_undone(str(path.with_name("gone.spmd")), [("a.txt", "ok")])
    assert missing == "gone.spmd no longer exists"


def test_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.spmd").write_text("Title: x\n\nFADE IN:\n\nTHE END.\n")
    (ws / ".harvey").mkdir(parents=True)
    (ws / ".harvey" / "sessions").symlink_to(elsewhere)
    problem = record_undone(str(ws / ".harvey" / "sessions" / "x.spmd"), [("a", "ok")])
    assert problem is not None and "x.spmd" in problem
    assert (elsewhere / "x.spmd").read_text() == "Title: x\n\nFADE IN:\n\nTHE END.\n"

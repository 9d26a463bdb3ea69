"""Checkpoints: what an approved write replaced is kept, and undo brings it back (or says why not)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harvey.chat.runtime import delete_session
from harvey.errors import UsageError
from harvey.session import checkpoints as cp
from harvey.session.notes import read_undo, undo_note
from harvey.session.records import ParsedUndoNote
from harvey.session.store import SessionStore

SID = "sess-1"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder.resolve()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def write(home: Path, ws: Path, name: str, data: bytes, sid: str = SID) -> cp.Written:
    return cp.write_checkpointed(home, sid, ws, ws / name, [data[:3], data[3:]])


def test_undo_restores_the_previous_content_newest_first(home: Path, ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"one\n")
    (ws / "a.txt").chmod(0o751)
    assert write(home, ws, "a.txt", b"two\n") == cp.Written(4)
    write(home, ws, "a.txt", b"three\n")
    store = cp.Checkpoints(home, SID)
    assert store.undo(1) == [cp.Undone("a.txt", "ok")]
    assert (ws / "a.txt").read_bytes() == b"two\n"
    assert store.undo(5) == [cp.Undone("a.txt", "ok")]
    assert (ws / "a.txt").read_bytes() == b"one\n"
    assert stat.S_IMODE((ws / "a.txt").stat().st_mode) == 0o751  # the mode is kept
    assert store.undo(1) == []
    assert cp.undo_lines([]) == [
        "nothing to undo: this session has no approved writes left to undo"
    ]
    folder = home / "checkpoints" / SID
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in folder.iterdir())


def test_a_new_file_is_removed_and_a_file_changed_since_is_left_alone(home: Path, ws: Path) -> None:
    (ws / "sub").mkdir()
    write(home, ws, "sub/new.txt", b"made by the model\n")
    (ws / "kept.txt").write_text("before\n")
    write(home, ws, "kept.txt", b"by harvey\n")
    (ws / "kept.txt").write_text("the user's own change\n")
    results = cp.Checkpoints(home, SID).undo(2)
    assert results == [cp.Undone("kept.txt", cp.CHANGED), cp.Undone("sub/new.txt", "ok")]
    assert (ws / "kept.txt").read_text() == "the user's own change\n"
    assert not (ws / "sub" / "new.txt").exists()
    assert cp.undo_lines(results)[0] == "undo: kept.txt — skipped: changed since"


def test_a_removed_file_is_changed_since(home: Path, ws: Path) -> None:
    write(home, ws, "gone.txt", b"x\n")
    (ws / "gone.txt").unlink()
    (status,) = cp.Checkpoints(home, SID).undo(1)
    assert status.status == "skipped: changed since (it was removed)"


def test_the_store_is_bounded(home: Path, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cp, "MAX_KEPT_BYTES", 10)
    (ws / "big.txt").write_bytes(b"x" * 11)
    done = write(home, ws, "big.txt", b"small\n")
    assert "larger than" in done.note and "cannot be undone" in done.note
    (status,) = cp.Checkpoints(home, SID).undo(1)
    assert status.status.startswith("skipped: the previous content was not kept")
    assert (ws / "big.txt").read_bytes() == b"small\n"

    monkeypatch.setattr(cp, "MAX_SESSION_BYTES", 12)
    for name in ("a", "b", "c"):
        (ws / name).write_bytes(b"12345")
        write(home, ws, name, b"new")
    names = sorted(p.name for p in (home / "checkpoints" / SID).iterdir())
    assert names == ["3.old", "4.old", "index.jsonl"]  # the oldest copy went first
    results = cp.Checkpoints(home, SID).undo(3)
    assert [r.status for r in results] == [
        "ok",
        "ok",
        "skipped: its checkpoint was dropped to stay within the budget",
    ]


def test_a_planted_link_costs_the_undo_never_the_write(
    home: Path, ws: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / "checkpoints").mkdir(parents=True)
    (home / "checkpoints" / SID).symlink_to(elsewhere)
    (ws / "a.txt").write_text("old\n")
    done = write(home, ws, "a.txt", b"new\n")
    assert "no checkpoint kept" in done.note
    assert (ws / "a.txt").read_bytes() == b"new\n"
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(Exception, match="not a session id"):
        cp.Checkpoints(home, "../x")


def test_a_failed_write_leaves_no_checkpoint(home: Path, ws: Path) -> None:
    (ws / "a.txt").write_text("old\n")

    def broken() -> object:
        yield b"half"
        raise OSError(28, "No space left on device")

    with pytest.raises(Exception, match="No space left"):
        cp.write_checkpointed(home, SID, ws, ws / "a.txt", broken())  # type: ignore[arg-type]
    assert (ws / "a.txt").read_text() == "old\n"
    assert cp.Checkpoints(home, SID).entries() == ([], set())
    assert [p.name for p in ws.iterdir()] == ["a.txt"]


def test_checkpoints_go_with_the_session(home: Path, ws: Path) -> None:
    home.mkdir()
    store = SessionStore(home / "sessions.db")
    sid = store.create_session(ws, "m")
    write(home, ws, "a.txt", b"x\n", sid=sid)
    assert (home / "checkpoints" / sid).is_dir()
    assert delete_session(store, sid, ws)
    assert not (home / "checkpoints" / sid).exists()
    store.close()


def test_orphans_of_sessions_never_kept_are_pruned_when_old(home: Path, ws: Path) -> None:
    for sid in ("known", "orphan-old", "orphan-new"):
        write(home, ws, f"{sid}.txt", b"x", sid=sid)
    old = home / "checkpoints" / "orphan-old"
    os.utime(old, (1_000_000, 1_000_000))
    assert cp.remove_orphans(home, {"known"}, days=1) == 1
    left = sorted(p.name for p in (home / "checkpoints").iterdir())
    assert left == ["known", "orphan-new"]  # a running session's folder is new


def test_counts_and_the_note() -> None:
    assert cp.parse_count("") == 1 and cp.parse_count(" 3 ") == 3
    for bad in ("0", "-1", "two"):
        with pytest.raises(UsageError):
            cp.parse_count(bad)
    hostile = "a — b]]\n[[write: x — ok"
    note = undo_note(hostile, "skipped: changed since")
    assert note.count("\n") == 0
    assert read_undo(note[2:-2]) == ParsedUndoNote(hostile, "skipped: changed since")
    assert read_undo("undo: x — maybe") is None

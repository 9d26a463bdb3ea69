from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from harvey.errors import StoreError
from harvey.messages import Message, ToolCall
from harvey.session.store import MIGRATIONS, SessionStore
from harvey.session.todos import Todo
from tests.conftest import process_context


@pytest.fixture()
def store(tmp_path: Path) -> SessionStore:
    s = SessionStore(tmp_path / "home" / "sessions.db")
    yield s
    s.close()


def test_wal_foreign_keys_and_migrations_recorded(store: SessionStore) -> None:
    assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.applied_migrations() == sorted(name for name, _ in MIGRATIONS)


def test_reopening_does_not_reapply_migrations(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    SessionStore(path).close()
    again = SessionStore(path)
    assert len(again.applied_migrations()) == len(MIGRATIONS)
    again.close()


def test_turn_round_trip_with_tool_calls(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path, "m")
    call = ToolCall("c1", "read_file", {"path": "a.txt"})
    turn = [
        Message("user", "read a.txt"),
        Message("assistant", "", [call]),
        Message("tool", "hello", tool_call_id="c1", name="read_file"),
        Message("assistant", "It says hello."),
    ]
    store.add_turn(sid, turn)
    assert store.messages(sid) == turn


def test_latest_session_is_per_workspace(store: SessionStore, tmp_path: Path) -> None:
    a = store.create_session(tmp_path / "a", "m")
    b = store.create_session(tmp_path / "b", "m")
    store.add_turn(a, [Message("user", "x")])
    store.add_turn(b, [Message("user", "y")])
    assert store.latest_session(tmp_path / "a").id == a
    assert store.latest_session(tmp_path / "b").id == b
    assert store.latest_session(tmp_path / "c") is None


def test_latest_session_skips_sessions_without_messages(
    store: SessionStore, tmp_path: Path
) -> None:
    real = store.create_session(tmp_path, "m")
    store.add_turn(real, [Message("user", "the real conversation")])
    store.create_session(tmp_path, "m")  # newer, but empty (an old failed run)
    todo_only = store.create_session(tmp_path, "m")
    store.set_todos(todo_only, [Todo("1", "x", "pending")])
    assert store.latest_session(tmp_path).id == real


def test_a_reserved_session_is_written_with_its_first_turn(
    store: SessionStore, tmp_path: Path
) -> None:
    sid = store.reserve_session(tmp_path, "m1")
    store.set_model(sid, "m2")  # /model before the first turn
    assert store.get_session(sid) is None
    assert store.list_sessions() == []
    store.add_turn(sid, [Message("user", "hi"), Message("assistant", "hello")])
    store.set_title(sid, "hi")
    info = store.get_session(sid)
    assert (info.workspace, info.model, info.title, info.message_count) == (
        str(tmp_path),
        "m2",
        "hi",
        2,
    )
    store.add_turn(sid, [Message("user", "again")])  # later turns: the same row
    assert len(store.list_sessions()) == 1


def test_a_reserved_session_that_fails_its_first_commit_stays_unwritten(
    store: SessionStore, tmp_path: Path
) -> None:
    sid = store.reserve_session(tmp_path, "m")
    with pytest.raises(StoreError):
        store.add_turn(sid, [Message("user", None)])  # type: ignore[arg-type]
    assert store.get_session(sid) is None
    store.add_turn(sid, [Message("user", "retry")])
    assert store.get_session(sid).message_count == 1


def test_discard_if_empty_keeps_conversations(store: SessionStore, tmp_path: Path) -> None:
    todo_only = store.reserve_session(tmp_path, "m")
    store.set_todos(todo_only, [Todo("1", "written by a failed first turn", "pending")])
    assert store.get_session(todo_only) is not None
    assert store.discard_if_empty(todo_only)
    assert store.get_session(todo_only) is None and store.get_todos(todo_only) == []
    kept = store.reserve_session(tmp_path, "m")
    store.add_turn(kept, [Message("user", "x")])
    assert not store.discard_if_empty(kept)
    assert store.get_session(kept) is not None
    never = store.reserve_session(tmp_path, "m")
    assert not store.discard_if_empty(never)
    with pytest.raises(StoreError):  # the reservation is gone: no row, no orphan messages
        store.add_turn(never, [Message("user", "too late")])
    assert store.get_session(never) is None


def test_delete_cascades_messages_and_todos(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path, "m")
    store.add_turn(sid, [Message("user", "x")])
    store.set_todos(sid, [Todo("1", "do it", "pending")])
    assert store.delete_session(sid)
    assert store.messages(sid) == []
    assert store.get_todos(sid) == []
    count = store._db.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    assert count == 0


def test_todos_keep_order_and_are_replaced_whole(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path, "m")
    store.set_todos(sid, [Todo("b", "second", "pending"), Todo("a", "first", "in_progress")])
    assert [t.id for t in store.get_todos(sid)] == ["b", "a"]
    store.set_todos(sid, [Todo("c", "only", "completed")])
    assert store.get_todos(sid) == [Todo("c", "only", "completed")]


def test_a_failed_turn_commits_nothing(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path, "m")
    bad = [Message("user", "fine"), Message("user", None)]  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        store.add_turn(sid, bad)
    assert store.messages(sid) == []


def test_calibration_keeps_the_safe_side(store: SessionStore) -> None:
    assert store.calibration_ratio("m") is None
    assert store.record_calibration("m", 4000, 1000) == 4.0
    assert store.record_calibration("m", 3000, 1000) == 3.0  # more tokens per byte: adopt it
    assert store.record_calibration("m", 5000, 1000) == 3.0  # never relax while 3.0 is recent
    assert store.calibration_ratio("m") == 3.0
    assert store.calibration_ratio("other") is None


def test_calibration_forgets_old_samples(store: SessionStore) -> None:
    from harvey.context.budget import MAX_SAMPLES

    store.record_calibration("m", 2000, 1000)
    for _ in range(MAX_SAMPLES):
        store.record_calibration("m", 3600, 1000)
    assert store.calibration_ratio("m") == 3.6
    assert len(store.calibration_samples("m")) == MAX_SAMPLES


def test_prefix_lookup_and_prune(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path, "m")
    assert store.get_session(sid[:8]).id == sid
    store._db.execute("UPDATE sessions SET updated_at = '2000-01-01T00:00:00+00:00'")
    assert [s.id for s in store.sessions_older_than(30)] == [sid]


def test_unopenable_database_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()
    with pytest.raises(StoreError, match="cannot open session store"):
        SessionStore(tmp_path / "db")


def test_corrupt_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        SessionStore(path)
    assert isinstance(sqlite3.sqlite_version, str)


def test_prefix_lookup_is_never_a_wildcard(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path, "m")
    for pattern in ("_", "%", "", "a_", sid[:3]):
        assert store.get_session(pattern) is None, pattern
    assert store.get_session(sid[:4]).id == sid


def test_lone_surrogates_are_stored_not_fatal(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path, "m")
    store.add_turn(sid, [Message("user", "bad \udcff byte")])
    assert store.messages(sid)[0].content == "bad \ufffd byte"


def test_failed_commit_leaves_the_store_usable(store: SessionStore, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path, "m")
    with pytest.raises(StoreError), store._tx() as db:
        db.execute("INSERT INTO nonexistent VALUES (1)")
    store.add_turn(sid, [Message("user", "still works")])
    assert [m.content for m in store.messages(sid)] == ["still works"]


def _open_when_released(path: str, barrier: Any, results: Any) -> None:
    """A child process: wait for the others, then open the same fresh store at once."""
    barrier.wait()
    try:
        store = SessionStore(Path(path))
        results.put(("ok", store.applied_migrations()))
        store.close()
    except Exception as exc:  # reported to the parent, which fails the test
        results.put(("error", f"{type(exc).__name__}: {exc}"))


@pytest.mark.slow
def test_processes_opening_a_fresh_store_at_once_migrate_it_once(tmp_path: Path) -> None:
    """Many processes racing on a new HARVEY_HOME: every one opens it, m001 runs once."""
    ctx = process_context(__name__)
    processes = 6
    for attempt in range(4):
        path = tmp_path / f"home{attempt}" / "sessions.db"
        barrier = ctx.Barrier(processes)
        results = ctx.Queue()
        children = [
            ctx.Process(target=_open_when_released, args=(str(path), barrier, results))
            for _ in range(processes)
        ]
        for child in children:
            child.start()
        outcomes = [results.get(timeout=120) for _ in children]
        for child in children:
            child.join(timeout=60)
        assert outcomes == [("ok", sorted(n for n, _ in MIGRATIONS))] * processes, outcomes
        db = sqlite3.connect(path)
        assert db.execute("SELECT COUNT(*) FROM _migrations").fetchone()[0] == len(MIGRATIONS)
        db.close()


def test_migrations_run_inside_an_exclusive_transaction(tmp_path: Path) -> None:
    """The re-check happens under the lock: a migration sees itself inside a transaction."""
    from harvey.session import migrations

    seen: list[bool] = []
    original = migrations.MIGRATIONS[0]

    def spy(db: sqlite3.Connection) -> None:
        seen.append(db.in_transaction)
        original[1](db)

    migrations.MIGRATIONS[0] = (original[0], spy)
    try:
        SessionStore(tmp_path / "s.db").close()
    finally:
        migrations.MIGRATIONS[0] = original
    assert seen == [True]


def test_a_full_database_refuses_the_turn_whole(store: SessionStore, tmp_path: Path) -> None:
    """A real "database or disk is full" (page limit reached) is a StoreError; nothing half-written."""
    sid = store.reserve_session(tmp_path, "m")
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count={pages + 1}")
    with pytest.raises(StoreError, match="full"):
        store.add_turn(sid, [Message("user", "x" * 200_000), Message("assistant", "reply")])
    assert store.get_session(sid) is None
    store._db.execute("PRAGMA max_page_count=1073741823")
    store.add_turn(sid, [Message("user", "x"), Message("assistant", "reply")])
    assert store.get_session(sid).message_count == 2

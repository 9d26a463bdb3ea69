"""Every store through the layer: racing processes migrate once; old databases open unchanged.

The old databases are made by the code at ``LEGACY`` (the commit before the
store layer), taken from git and run in a child process, so what is checked is
a file exactly as the previous release left it, not a copy of its DDL.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harvey.knowledge.store import MIGRATIONS as KNOWLEDGE_MIGRATIONS
from harvey.knowledge.store import create_store, open_store, rag_location
from harvey.memory.records import MIGRATIONS as MEMORY_MIGRATIONS
from harvey.memory.store import MemoryStore
from harvey.session.migrations import MIGRATIONS as SESSION_MIGRATIONS
from harvey.session.store import SessionStore
from harvey.store.migrations import Migration
from tests.conftest import process_context

LEGACY = "29bd7ce"  # the last commit with three connection recipes
REPO = Path(__file__).resolve().parents[2]


def _open(kind: str, path: Path) -> list[str]:
    """Open one store the current way; the migrations it has recorded, in order."""
    if kind == "knowledge":
        workspace = path
        store = open_store(workspace, "kb") if (path / ".harvey").exists() else None
        store = store or create_store(workspace, "kb", "none", 0)
        db = store._db
    else:
        store = SessionStore(path) if kind == "sessions" else MemoryStore(path)
        db = store._db if kind == "sessions" else store.db
    names = [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY rowid")]
    store.close()
    return names


EXPECTED = {
    "sessions": [n for n, _ in SESSION_MIGRATIONS],
    "memory": [n for n, _ in MEMORY_MIGRATIONS],
    "knowledge": [n for n, _ in KNOWLEDGE_MIGRATIONS],
}


def _open_when_released(kind: str, path: str, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        results.put(("ok", _open(kind, Path(path))))
    except Exception as exc:  # reported to the parent, which fails the test
        results.put(("error", f"{type(exc).__name__}: {exc}"))


@pytest.mark.parametrize("kind", ["sessions", "memory", "knowledge"])
@pytest.mark.slow
def test_processes_opening_a_fresh_store_at_once_migrate_it_once(kind: str, tmp_path: Path) -> None:
    """One code path for all three (sessions.db's harder, repeated race: tests/session)."""
    ctx = process_context(__name__)
    processes = 4
    path = tmp_path / {"sessions": "sessions.db", "memory": "memory.db"}.get(kind, "ws")
    if kind == "knowledge":  # an empty store file, as create_store makes it before connecting
        path.mkdir()
        with rag_location(path).open(create=True) as folder:
            folder.database("kb.db", create=True)
    barrier = ctx.Barrier(processes)
    results = ctx.Queue()
    children = [
        ctx.Process(target=_open_when_released, args=(kind, str(path), barrier, results))
        for _ in range(processes)
    ]
    for child in children:
        child.start()
    outcomes = [results.get(timeout=120) for _ in children]
    for child in children:
        child.join(timeout=60)
    assert outcomes == [("ok", EXPECTED[kind])] * processes, outcomes


_MAKE_LEGACY = """
import sys
from pathlib import Path
from harvey.knowledge.store import create_store
from harvey.memory.store import Memory, MemoryStore
from harvey.messages import Message
from harvey.session.store import SessionStore

root = Path(sys.argv[1])
s = SessionStore(root / "home" / "sessions.db")
sid = s.create_session(root, "m", "old title")
s.add_turn(sid, [Message("user", "old question"), Message("assistant", "old answer")])
s.close()
m = MemoryStore(root / "home" / "memory.db")
m.add(Memory(id="", type="project_fact", kind="fact", text="the build uses make"))
m.close()
(root / "ws").mkdir()
k = create_store(root / "ws", "kb", "none", 0)
k.set_meta("marker", "old")
k.close()
"""


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sessions.db, memory.db and a knowledge store made by the code at ``LEGACY``."""
    root = tmp_path_factory.mktemp("legacy")
    archive = root / "src.tar"
    made = subprocess.run(
        ["git", "-C", str(REPO), "archive", "-o", str(archive), LEGACY, "src/harvey"],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"commit {LEGACY} not in this checkout: {made.stderr.strip()}")
    with tarfile.open(archive) as tar:
        tar.extractall(root / "old", filter="data")
    env = {**os.environ, "PYTHONPATH": str(root / "old" / "src")}
    subprocess.run(
        [sys.executable, "-c", _MAKE_LEGACY, str(root)], env=env, check=True, timeout=120
    )
    return root


@pytest.fixture()
def ran() -> Iterator[list[str]]:
    """Every store's migrations wrapped to note when one runs (none may, on an old file)."""
    log: list[str] = []
    lists = (SESSION_MIGRATIONS, MEMORY_MIGRATIONS, KNOWLEDGE_MIGRATIONS)
    saved = [list(migrations) for migrations in lists]

    def noting(name: str, run: Callable[[sqlite3.Connection], None]) -> Migration:
        def wrapper(db: sqlite3.Connection) -> None:
            log.append(name)
            run(db)

        return (name, wrapper)

    for migrations in lists:
        migrations[:] = [noting(name, run) for name, run in migrations]
    yield log
    for migrations, original in zip(lists, saved, strict=True):
        migrations[:] = original


def _dump(path: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """The schema and every row, to compare a database before and after an open."""
    db = sqlite3.connect(path)
    schema = sorted(db.execute("SELECT name, coalesce(sql, '') FROM sqlite_master"))
    rows = list(db.iterdump())
    db.close()
    return schema, rows


#: sessions.db migrations written after ``LEGACY``: an old file gets these and keeps the rest.
SESSIONS_ADDED_SINCE_LEGACY = ["m008_session_recordings", "m009_compactions"]


def test_old_sessions_db_opens_unchanged(legacy: Path, ran: list[str]) -> None:
    path = legacy / "home" / "sessions.db"
    before = _dump(path)
    store = SessionStore(path)
    try:
        assert store.applied_migrations() == sorted(EXPECTED["sessions"])
        (info,) = store.list_sessions(legacy)
        assert info.title == "old title"
        assert [m.content for m in store.messages(info.id)] == ["old question", "old answer"]
    finally:
        store.close()
    assert ran == SESSIONS_ADDED_SINCE_LEGACY
    schema, rows = _dump(path)
    assert set(before[0]) <= set(schema)  # every old table and index as it was
    added = [r for r in rows if r not in before[1]]
    assert before[1] == [r for r in rows if r not in added]  # every old row, in order
    assert all(
        "compactions" in r or "session_recordings" in r or "_migrations" in r for r in added
    ), added


def test_old_memory_db_opens_unchanged(legacy: Path, ran: list[str]) -> None:
    path = legacy / "home" / "memory.db"
    before = _dump(path)
    with MemoryStore(path) as store:
        names = [r[0] for r in store.db.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert names == EXPECTED["memory"]
        found = store.search("build make", workspace=None)
        assert [m.text for m, _ in found] == ["the build uses make"]
    assert ran == []
    assert _dump(path) == before


def test_old_knowledge_store_records_its_schema_once_and_keeps_its_data(
    legacy: Path, ran: list[str]
) -> None:
    path = legacy / "ws" / ".harvey" / "rag" / "kb.db"
    schema, rows = _dump(path)
    assert "_migrations" not in {name for name, _ in schema}  # made before the record
    with open_store(legacy / "ws", "kb") as store:
        assert store.meta("marker") == "old"
        assert store.embedder_spec == "none"
        recorded = [r[0] for r in store._db.execute("SELECT name FROM _migrations")]
        assert recorded == ["m001_initial", "m002_pages"]
    after_schema, after_rows = _dump(path)
    # the changes: the record of the migration it already had (never re-run), and the
    # page columns m002 adds to chunks (0 for every old chunk); no row is lost
    assert [s for s in after_schema if "_migrations" not in s[0] and s[0] != "chunks"] == [
        s for s in schema if s[0] != "chunks"
    ]

    def other(row: str) -> bool:
        return "chunks" not in row.split("(", 1)[0] and "_migrations" not in row

    assert [r for r in after_rows if other(r)] == [r for r in rows if other(r)]
    assert sum('INTO "chunks"' in r for r in after_rows) == sum('INTO "chunks"' in r for r in rows)
    with open_store(legacy / "ws", "kb"):
        pass
    assert ran == ["m002_pages"]
    assert _dump(path) == (after_schema, after_rows)

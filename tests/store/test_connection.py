"""The one SQLite recipe: pragmas, permissions, errors translated, transactions."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest

from harvey.errors import StoreError, WorkspaceError
from harvey.store.connection import connect, open_home, transaction, translated


def _pragma(db: sqlite3.Connection, name: str) -> object:
    return db.execute(f"PRAGMA {name}").fetchone()[0]


def test_connect_sets_wal_foreign_keys_busy_timeout_and_autocommit(tmp_path: Path) -> None:
    db = connect(tmp_path / "a.db", busy_timeout=2.5, synchronous="NORMAL")
    try:
        assert _pragma(db, "journal_mode") == "wal"
        assert _pragma(db, "foreign_keys") == 1
        assert _pragma(db, "busy_timeout") == 2500
        assert _pragma(db, "synchronous") == 1  # NORMAL
        assert db.isolation_level is None
    finally:
        db.close()


def test_connect_applies_a_stores_own_pragmas(tmp_path: Path) -> None:
    db = connect(tmp_path / "a.db", pragmas=(("journal_size_limit", 4096),))
    try:
        assert _pragma(db, "journal_size_limit") == 4096
    finally:
        db.close()


def test_a_file_that_is_not_a_database_raises_and_is_not_left_open(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        connect(path)


def test_open_home_makes_the_folder_0700_and_the_file_0600(tmp_path: Path) -> None:
    path = tmp_path / "home" / "x.db"
    db = open_home(path)
    try:
        db.execute("CREATE TABLE t (v)")
    finally:
        db.close()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for p in path.parent.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


def test_open_home_refuses_a_database_that_is_a_link(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere.db"
    sqlite3.connect(elsewhere).close()
    (home / "x.db").symlink_to(elsewhere)
    with pytest.raises(WorkspaceError):
        open_home(home / "x.db")


def test_translated_names_the_store_and_chains_the_cause(tmp_path: Path) -> None:
    db = connect(tmp_path / "a.db")
    with (
        pytest.raises(StoreError, match=r"^thing\.db: no such table") as info,
        translated(StoreError, "thing.db"),
    ):
        db.execute("SELECT * FROM missing")
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)
    db.close()


def test_transaction_commits_or_rolls_back_whole_and_reports_the_failure(tmp_path: Path) -> None:
    db = connect(tmp_path / "a.db")
    db.execute("CREATE TABLE t (v INTEGER NOT NULL)")
    with transaction(db) as tx:
        tx.execute("INSERT INTO t VALUES (1)")
    failures: list[bool] = []
    with (
        pytest.raises(sqlite3.IntegrityError),
        transaction(db, after_failure=lambda d: failures.append(d.in_transaction)) as tx,
    ):
        tx.execute("INSERT INTO t VALUES (2)")
        tx.execute("INSERT INTO t VALUES (NULL)")
    with pytest.raises(KeyboardInterrupt), transaction(db) as tx:
        tx.execute("INSERT INTO t VALUES (3)")
        raise KeyboardInterrupt
    assert [r[0] for r in db.execute("SELECT v FROM t")] == [1]
    assert failures == [False]  # called after the rollback
    assert not db.in_transaction
    db.close()

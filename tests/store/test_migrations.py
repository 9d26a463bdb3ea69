"""The one migration mechanism: order, idempotence, rollback, adoption."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harvey.store.connection import connect
from harvey.store.migrations import Migration, migrate, pending_migrations, script


def _recorded(db: sqlite3.Connection) -> list[str]:
    return [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY rowid")]


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


@pytest.fixture()
def db(tmp_path: Path) -> sqlite3.Connection:
    conn = connect(tmp_path / "m.db")
    yield conn
    conn.close()


def _logging(log: list[str]) -> list[Migration]:
    def make(name: str, sql: str) -> Migration:
        def run(db: sqlite3.Connection) -> None:
            log.append(name)
            script(db, sql)

        return (name, run)

    return [
        make("m001_a", "CREATE TABLE a (x)"),
        make("m002_b", "CREATE TABLE b (y); INSERT INTO a VALUES (1)"),
        make("m003_c", "ALTER TABLE a ADD COLUMN z"),
    ]


def test_migrations_apply_in_list_order_and_are_recorded(db: sqlite3.Connection) -> None:
    log: list[str] = []
    assert migrate(db, _logging(log)) == ["m001_a", "m002_b", "m003_c"]
    assert log == ["m001_a", "m002_b", "m003_c"]
    assert _recorded(db) == log
    assert db.execute("SELECT x, z FROM a").fetchall() == [(1, None)]


def test_migrating_again_runs_nothing(db: sqlite3.Connection) -> None:
    log: list[str] = []
    migrate(db, _logging(log))
    assert migrate(db, _logging(log)) == []
    assert log == ["m001_a", "m002_b", "m003_c"]
    assert pending_migrations(db, _logging(log)) == []


def test_a_new_migration_runs_alone(db: sqlite3.Connection) -> None:
    log: list[str] = []
    migrations = _logging(log)
    migrate(db, migrations[:2])
    assert pending_migrations(db, migrations) == ["m003_c"]
    assert migrate(db, migrations) == ["m003_c"]
    assert log == ["m001_a", "m002_b", "m003_c"]


def test_a_failing_migration_rolls_back_whole_and_records_nothing(
    db: sqlite3.Connection,
) -> None:
    log: list[str] = []

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half (v)")
        conn.execute("INSERT INTO nowhere VALUES (1)")

    migrations = [*_logging(log)[:1], ("m002_broken", broken)]
    with pytest.raises(sqlite3.OperationalError, match="nowhere"):
        migrate(db, migrations)
    assert not db.in_transaction
    assert _tables(db) == set()  # not m001's table, not the record
    assert migrate(db, _logging(log)) == ["m001_a", "m002_b", "m003_c"]


def test_migrations_run_inside_one_exclusive_transaction(db: sqlite3.Connection) -> None:
    seen: list[bool] = []
    migrate(db, [("m001", lambda conn: seen.append(conn.in_transaction))])
    assert seen == [True]


def test_adopt_records_an_older_schema_marker_once_without_running(
    db: sqlite3.Connection,
) -> None:
    log: list[str] = []
    db.execute("CREATE TABLE a (x)")  # as an older store made it, recording nothing
    db.execute("INSERT INTO a VALUES (1)")
    calls: list[int] = []

    def adopt(conn: sqlite3.Connection) -> list[str]:
        calls.append(1)
        return ["m001_a"]

    assert migrate(db, _logging(log), adopt=adopt) == ["m002_b", "m003_c"]
    assert log == ["m002_b", "m003_c"]
    assert _recorded(db) == ["m001_a", "m002_b", "m003_c"]
    assert migrate(db, _logging(log), adopt=adopt) == []
    assert calls == [1]

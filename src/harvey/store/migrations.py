"""Schemas as ordered lists of small named migrations, applied once on open.

Each store lists its migrations (``m001_initial``, ``m002_...``) as
``(name, function)`` pairs; ``migrate`` applies the ones not yet recorded in
the store's ``_migrations`` table (sqlite-utils' ``Migrations`` and llm's
``migrations.py`` are the model). sessions.db and memory.db have always kept
that table; a knowledge store made before it existed said its schema with
``PRAGMA user_version`` alone, and ``adopt`` records what that meant, once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["Migration", "migrate", "pending_migrations", "script"]

Migration = tuple[str, Callable[[sqlite3.Connection], None]]
TABLE = "_migrations"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def script(db: sqlite3.Connection, sql: str) -> None:
    """Run ``;``-separated statements inside the migration's transaction.

    ``executescript()`` would COMMIT the migration's transaction early; run
    statement by statement so a failing migration rolls back whole. (No
    statement may hold a ``;`` of its own, e.g. in a trigger body.)
    """
    for statement in sql.split(";"):
        if statement.strip():
            db.execute(statement)


def _recorded(db: sqlite3.Connection) -> set[str] | None:
    """The names in ``_migrations``; None when the table does not exist yet."""
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)
    ).fetchone()
    return {row[0] for row in db.execute(f"SELECT name FROM {TABLE}")} if exists else None


def pending_migrations(db: sqlite3.Connection, migrations: list[Migration]) -> list[str]:
    """The names in ``migrations`` not yet recorded, in order."""
    done = _recorded(db) or set()
    return [name for name, _ in migrations if name not in done]


def migrate(
    db: sqlite3.Connection,
    migrations: list[Migration],
    *,
    adopt: Callable[[sqlite3.Connection], list[str]] | None = None,
) -> list[str]:
    """Apply the missing migrations, safely against other processes; the names applied.

    Several ``harvey`` processes started on a fresh ``HARVEY_HOME`` all see an
    empty database; checking first and migrating later let two of them run
    ``m001`` (``table sessions already exists``). So the check is repeated
    inside one ``BEGIN EXCLUSIVE`` transaction: the first process migrates,
    the others wait (the connection's busy timeout) and then find nothing to
    do. The check outside the lock only spares taking it when all is applied.
    A failing migration rolls the whole transaction back: nothing is recorded.

    ``adopt`` says which migrations a database without a ``_migrations`` table
    already has (an older record of its schema); they are recorded, not run.
    ``db`` must be in autocommit mode (``isolation_level=None``).
    """
    if not pending_migrations(db, migrations):
        return []
    functions = dict(migrations)
    applied: list[str] = []
    db.execute("BEGIN EXCLUSIVE")
    try:
        if _recorded(db) is None:
            db.execute(f"CREATE TABLE {TABLE} (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
            for name in adopt(db) if adopt is not None else []:
                db.execute(f"INSERT INTO {TABLE} VALUES (?, ?)", (name, _now()))
        for name in pending_migrations(db, migrations):
            functions[name](db)
            db.execute(f"INSERT INTO {TABLE} VALUES (?, ?)", (name, _now()))
            applied.append(name)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return applied

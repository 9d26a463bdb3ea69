"""One recipe for opening a Harvey SQLite database, used by every store.

Every database is opened in autocommit mode (``isolation_level=None``: the
stores say where a transaction begins and ends), with the busy timeout set
first, then WAL, then ``synchronous`` and foreign keys, then the store's own
tuning pragmas. ``sqlite3`` errors never leave a store raw: ``translated``
turns them into the store's ``HarveyError`` subclass, one line naming it.

Permissions are a security boundary (docs/SECURITY.md, "repository → Harvey"):
a database in ``HARVEY_HOME`` is checked and created 0600 by
``ownfiles.nofollow.home_database`` right before the connect (``open_home``); a
workspace store's path comes from ``Folder.database`` at its call site, which
reaches the folder without following a link. Nothing here relaxes either.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from harvey.errors import HarveyError

__all__ = ["connect", "enable_wal", "open_home", "transaction", "translated"]

DEFAULT_BUSY_TIMEOUT = 10.0  # seconds a process waits for another's lock (migrations, commits)
Pragma = tuple[str, int | str]


def enable_wal(db: sqlite3.Connection, busy_timeout: float) -> None:
    """Switch to WAL, retrying while another process holds the new file's lock.

    ``PRAGMA journal_mode=WAL`` answers "database is locked" at once, without
    waiting on the busy timeout, while a process that opened the same fresh
    file first is switching or migrating it; so wait here, within that timeout.
    """
    deadline = time.monotonic() + busy_timeout
    delay = 0.005
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.25)


def connect(
    path: Path,
    *,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    synchronous: str | None = None,
    pragmas: tuple[Pragma, ...] = (),
) -> sqlite3.Connection:
    """A connection to the already-checked ``path``: autocommit, WAL, foreign keys on.

    The busy timeout comes first: on a fresh file, switching to WAL and
    migrating take locks another process starting at once may hold.
    ``synchronous`` (e.g. ``NORMAL``) and ``pragmas`` are a store's own tuning.
    Raises ``sqlite3.Error`` (callers translate it, naming their store); the
    connection is closed when a pragma fails.
    """
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=busy_timeout)
    try:
        db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        enable_wal(db, busy_timeout)
        if synchronous is not None:
            db.execute(f"PRAGMA synchronous={synchronous}")
        db.execute("PRAGMA foreign_keys=ON")
        for name, value in pragmas:
            db.execute(f"PRAGMA {name}={value}").fetchall()
    except BaseException:
        db.close()
        raise
    return db


def open_home(
    path: Path,
    *,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    pragmas: tuple[Pragma, ...] = (),
) -> sqlite3.Connection:
    """A database in ``HARVEY_HOME`` (sessions.db, memory.db), opened the one safe way.

    The folder is made 0700 and the file 0600 before SQLite writes a byte of it,
    neither it nor its -wal/-shm a link (``home_database``, checked right before
    the connect); an older, more open -wal/-shm is tightened after. Raises
    ``OSError``, ``WorkspaceError`` or ``sqlite3.Error`` for the caller to name.
    """
    from harvey.ownfiles.nofollow import home_database
    from harvey.ownfiles.private import tighten_database

    checked = home_database(path)
    db = connect(checked, busy_timeout=busy_timeout, pragmas=pragmas)
    tighten_database(Path(path))
    return db


@contextmanager
def translated(error: type[HarveyError], what: str) -> Iterator[None]:
    """``sqlite3`` errors inside become ``error("<what>: <reason>")``, chained."""
    try:
        yield
    except sqlite3.Error as exc:
        raise error(f"{what}: {exc}") from exc


@contextmanager
def transaction(
    db: sqlite3.Connection,
    *,
    begin: str = "BEGIN IMMEDIATE",
    after_failure: Callable[[sqlite3.Connection], None] | None = None,
) -> Iterator[sqlite3.Connection]:
    """One write transaction; any failure (Ctrl-C, the COMMIT itself) rolls it back.

    A failed COMMIT (disk full, I/O error) leaves the transaction open, and
    SQLite sometimes rolls back by itself (SQLITE_FULL does), so roll back only
    if still open. ``after_failure`` runs after the rollback (the knowledge
    store gives a failed transaction's WAL frames back to the disk).
    """
    db.execute(begin)
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        if after_failure is not None:
            after_failure(db)
        raise

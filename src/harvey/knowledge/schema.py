"""The knowledge store's schema as named migrations (``store.py`` applies them on open).

``m002_pages`` gives every chunk the pages it came from (``page_start``/``page_end``,
0 for a file that has no pages), so a passage of a PDF can be cited as ``report.pdf:p3``.
"""

from __future__ import annotations

import sqlite3

from harvey.store.migrations import Migration, script

SCHEMA_VERSION = 1  # also in PRAGMA user_version, which stores before _migrations relied on

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    hash TEXT NOT NULL, ingested_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, hash TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(hash);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, content='chunks', content_rowid='id', tokenize='porter unicode61'
);
CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, vec BLOB NOT NULL);
"""


def _m001_initial(db: sqlite3.Connection) -> None:
    script(db, _SCHEMA)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def _m002_pages(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE chunks ADD COLUMN page_start INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE chunks ADD COLUMN page_end INTEGER NOT NULL DEFAULT 0")


MIGRATIONS: list[Migration] = [("m001_initial", _m001_initial), ("m002_pages", _m002_pages)]


def adopt(db: sqlite3.Connection) -> list[str]:
    """A store made before ``_migrations`` said its schema in ``user_version`` alone."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    return [name for name, _ in MIGRATIONS[:version]]

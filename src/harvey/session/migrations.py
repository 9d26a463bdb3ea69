"""The schema of sessions.db as an ordered list of named migrations.

Each migration is a small function applied once, in order, and recorded in the
``_migrations`` table by the store layer's ``harvey.store.migrations.migrate``
(under an exclusive lock, so processes that open a fresh store at the same
moment cannot both run the same migration).
"""

from __future__ import annotations

import sqlite3

from harvey.session import compactions, map_results, recordings
from harvey.store.migrations import Migration, pending_migrations
from harvey.store.migrations import migrate as _migrate
from harvey.store.migrations import script as _script


def _m001_initial(db: sqlite3.Connection) -> None:
    _script(
        db,
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            workspace TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX sessions_workspace ON sessions(workspace, updated_at);
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            tool_calls TEXT,
            tool_call_id TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX messages_session ON messages(session_id, id);
        CREATE TABLE todos (
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            id TEXT NOT NULL,
            content TEXT NOT NULL,
            status TEXT NOT NULL,
            PRIMARY KEY (session_id, position)
        );
        """,
    )


def _m002_calibration(db: sqlite3.Connection) -> None:
    _script(
        db,
        """
        CREATE TABLE calibration (
            model TEXT PRIMARY KEY,
            prompt_bytes INTEGER NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            bytes_per_token REAL NOT NULL,
            samples INTEGER NOT NULL,
            updated_at TEXT NOT NULL
        );
        """,
    )


def _m003_message_name(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE messages ADD COLUMN name TEXT")


def _m004_calibration_samples(db: sqlite3.Connection) -> None:
    _script(
        db,
        """
        CREATE TABLE calibration_samples (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            model TEXT NOT NULL,
            prompt_bytes INTEGER NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX calibration_samples_model ON calibration_samples(model, id);
        INSERT INTO calibration_samples (model, prompt_bytes, prompt_tokens, created_at)
            SELECT model, prompt_bytes, prompt_tokens, updated_at FROM calibration;
        DROP TABLE calibration
        """,
    )


def _m006_calibration_doc_type(db: sqlite3.Connection) -> None:
    """Prose and code tokenise differently: each sample says which it was (old ones: prose)."""
    _script(
        db,
        """
        ALTER TABLE calibration_samples ADD COLUMN doc_type TEXT NOT NULL DEFAULT 'prose';
        CREATE INDEX calibration_samples_type ON calibration_samples(model, doc_type, id)
        """,
    )


def _m007_calibration_units(db: sqlite3.Connection) -> None:
    """Texts are estimated from character classes (``context/estimate.py``): a sample
    keeps the prompt's units beside its bytes (NULL for the samples before)."""
    _script(db, "ALTER TABLE calibration_samples ADD COLUMN prompt_units INTEGER")


MIGRATIONS: list[Migration] = [
    ("m001_initial", _m001_initial),
    ("m002_calibration", _m002_calibration),
    ("m003_message_name", _m003_message_name),
    ("m004_calibration_samples", _m004_calibration_samples),
    ("m005_map_results", map_results.migration),  # resumable analyses (issue 14)
    ("m006_calibration_doc_type", _m006_calibration_doc_type),
    ("m007_calibration_units", _m007_calibration_units),
    ("m008_session_recordings", recordings.migration),  # a continued session's file (issue 22)
    ("m009_compactions", compactions.migration),  # recorded, reversible compaction (issue 21)
]

__all__ = ["MIGRATIONS", "Migration", "migrate", "pending_migrations"]


def migrate(db: sqlite3.Connection, migrations: list[Migration] | None = None) -> list[str]:
    """Bring sessions.db (or ``migrations``' database) up to date; the names applied."""
    return _migrate(db, MIGRATIONS if migrations is None else migrations)

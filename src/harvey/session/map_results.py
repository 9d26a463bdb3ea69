"""Stored map results: what makes an interrupted analysis resumable.

Every successful map call of a chunked analysis is written to ``sessions.db``
as soon as it returns, keyed by a hash of everything its prompt was made from
(model, instruction, chunk text, chunk position and chunking parameters — see
``harvey.analysis.params.result_key``). Running the same analysis again,
after Ctrl-C, a crash, ``kill -9`` or a failed synthesis, finds those rows and
makes only the calls that are missing. The key is the table's primary key, so
a call retried (by the pool, or a rerun) replaces its row instead of adding a
second. Rows belong to the session that made them and go with it
(``ON DELETE CASCADE``), so ``harvey sessions delete`` and ``prune`` remove them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Protocol


def migration(db: sqlite3.Connection) -> None:
    """The ``m005_map_results`` migration (listed in ``session/migrations.py``)."""
    db.execute(
        "CREATE TABLE map_results ("
        " key TEXT PRIMARY KEY,"
        " session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
        " model TEXT NOT NULL,"
        " text TEXT NOT NULL,"
        " created_at TEXT NOT NULL)"
    )
    db.execute("CREATE INDEX map_results_session ON map_results(session_id)")


class _Store(Protocol):
    def _query(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]: ...

    def _session_tx(self, session_id: str) -> AbstractContextManager[sqlite3.Connection]: ...


class MapResultsMixin:
    """The map-result methods of ``SessionStore`` (kept here to keep store.py short)."""

    def stored_map_result(self: _Store, key: str) -> str | None:
        rows = self._query("SELECT text FROM map_results WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def store_map_result(self: _Store, session_id: str, key: str, model: str, text: str) -> None:
        """Write (or replace) one result; the session's row is written first if reserved."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self._session_tx(session_id) as db:
            db.execute(
                "INSERT OR REPLACE INTO map_results VALUES (?, ?, ?, ?, ?)",
                (key, session_id, model, text, now),
            )

    def map_result_count(self: _Store, session_id: str) -> int:
        rows = self._query("SELECT COUNT(*) FROM map_results WHERE session_id = ?", (session_id,))
        return int(rows[0][0])


class _ResultStore(Protocol):
    def stored_map_result(self, key: str) -> str | None: ...

    def store_map_result(self, session_id: str, key: str, model: str, text: str) -> None: ...


class StoredResults:
    """The map phase's ``ResultCache`` over sessions.db for one session.

    ``fresh`` (``harvey analyze --fresh``) ignores what is stored but still
    writes, so the fresh run can itself be resumed.
    """

    def __init__(self, store: _ResultStore, session_id: str, fresh: bool = False) -> None:
        self.store = store
        self.session_id = session_id
        self.fresh = fresh

    def get(self, key: str) -> str | None:
        return None if self.fresh else self.store.stored_map_result(key)

    def put(self, key: str, model: str, text: str) -> None:
        self.store.store_map_result(self.session_id, key, model, text)


__all__ = ["MapResultsMixin", "StoredResults", "migration"]

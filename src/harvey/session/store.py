"""sessions.db: sessions, their messages and todos, and token calibration.

SQLite in WAL mode with foreign keys on. The schema evolves through the named
migrations of ``harvey.session.migrations``, applied on open. Each completed
turn is committed as one transaction, so a crash loses at most the turn in
flight.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harvey.context.budget import BYTES_PER_TOKEN, MAX_SAMPLES, calibrated_ratio
from harvey.errors import StoreError, WorkspaceError
from harvey.messages import Message, ToolCall
from harvey.redact import redact, redact_data
from harvey.session.compactions import CompactionsMixin
from harvey.session.map_results import MapResultsMixin
from harvey.session.migrations import MIGRATIONS, migrate
from harvey.session.recordings import RecordingsMixin
from harvey.session.todos import Todo
from harvey.store.connection import open_home, transaction

__all__ = ["MIGRATIONS", "SessionInfo", "SessionStore"]

_SURROGATE = re.compile("[\ud800-\udfff]")
BUSY_TIMEOUT = 10.0  # seconds a process waits for another's lock (migrations, commits)


def _storable(text: str) -> str:
    """Text SQLite can store: lone surrogates (from undecodable argv/stdin bytes)
    become U+FFFD rather than failing the whole turn; secrets become a marker
    (harvey.redact), so no key is ever written to sessions.db."""
    if not isinstance(text, str):
        return text  # let the NOT NULL constraint reject it inside the transaction
    return _SURROGATE.sub("\ufffd", redact(text))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class SessionInfo:
    id: str
    workspace: str
    title: str
    model: str
    created_at: str
    updated_at: str
    message_count: int = 0


class SessionStore(MapResultsMixin, CompactionsMixin, RecordingsMixin):
    """All access to sessions.db. Thread-safe through one lock per store."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._ratios: dict[tuple[str, str, str], float | None] = {}
        # Sessions handed out by reserve_session whose row is not written yet:
        # id -> (workspace, model, title). See reserve_session.
        self._reserved: dict[str, tuple[str, str, str]] = {}
        self._recordings: dict[str, str] = {}  # session -> its .spmd, until its row is written
        try:
            # HARVEY_HOME 0700, the file 0600 and no link (harvey.store.connection)
            self._db = open_home(path, busy_timeout=BUSY_TIMEOUT)
        except (sqlite3.Error, OSError, WorkspaceError) as exc:
            raise StoreError(f"cannot open session store {path}: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        try:
            self._migrate()
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(f"cannot open session store {path}: {exc}") from exc

    # -- plumbing -----------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; on any failure (the COMMIT included) roll back.

        A failed COMMIT (disk full, I/O error) leaves the transaction open, and
        SQLite sometimes rolls back by itself, so roll back only if still open.
        """
        with self._lock:
            try:
                with transaction(self._db) as db:
                    yield db
            except BaseException as exc:
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"session store {self.path}: {exc}") from exc
                if isinstance(exc, UnicodeError):
                    raise StoreError(f"session store {self.path}: unencodable text: {exc}") from exc
                raise

    def _query(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return list(self._db.execute(sql, params))
            except sqlite3.Error as exc:
                raise StoreError(f"session store {self.path}: {exc}") from exc

    def _migrate(self) -> None:
        migrate(self._db)

    def applied_migrations(self) -> list[str]:
        return [row[0] for row in self._query("SELECT name FROM _migrations ORDER BY name")]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- sessions -------------------------------------------------------------

    def create_session(self, workspace: Path | str, model: str, title: str = "") -> str:
        session_id = uuid.uuid4().hex
        now = _now()
        with self._tx() as db:
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, str(workspace), title, model, now, now),
            )
        return session_id

    def reserve_session(self, workspace: Path | str, model: str, title: str = "") -> str:
        """A new session id whose row is written only with its first committed write.

        A run that fails before its first turn (server down, Ctrl-C, bad
        file) must not leave an empty session behind for ``--continue`` to
        resume instead of the last real conversation. The id is fixed now, so
        plan files, offloaded output and todos name the session from the start.
        """
        session_id = uuid.uuid4().hex
        with self._lock:
            self._reserved[session_id] = (str(workspace), model, title)
        return session_id

    def _materialize(self, db: sqlite3.Connection, session_id: str) -> None:
        """Inside a write transaction: write a reserved session's row if it is still unwritten."""
        reserved = self._reserved.get(session_id)
        if reserved is None:
            return
        workspace, model, title = reserved
        now = _now()
        db.execute(
            "INSERT OR IGNORE INTO sessions VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, workspace, title, model, now, now),
        )
        recording = self._recordings.pop(session_id, None)  # its .spmd (session/recordings.py)
        if recording is not None:
            db.execute(
                "INSERT OR REPLACE INTO session_recordings VALUES (?, ?)", (session_id, recording)
            )

    @contextmanager
    def _session_tx(self, session_id: str) -> Iterator[sqlite3.Connection]:
        """A write transaction about one session, its reserved row written first.

        The reservation is dropped only once the transaction has committed, so
        a failed first commit leaves the session reserved, not half-written.
        """
        with self._lock, self._tx() as db:
            self._materialize(db, session_id)
            yield db
        with self._lock:
            self._reserved.pop(session_id, None)

    def discard_if_empty(self, session_id: str) -> bool:
        """Forget a session that never got a message (its todos go by cascade).

        Called when a session ends: a first turn that failed after its tools
        had written todos leaves a row, but nothing to resume. A session whose
        row was never written, or that has messages, costs no write at all.
        """
        with self._lock:
            if self._reserved.pop(session_id, None) is not None:
                return False  # never written: nothing to remove
        empty = (  # stored map results are kept: they are what a rerun resumes from
            "id = ? AND NOT EXISTS (SELECT 1 FROM messages WHERE session_id = ?)"
            " AND NOT EXISTS (SELECT 1 FROM map_results WHERE session_id = ?)"
        )
        ids = (session_id, session_id, session_id)
        if not self._query(f"SELECT 1 FROM sessions WHERE {empty}", ids):
            return False
        with self._tx() as db:
            cur = db.execute(f"DELETE FROM sessions WHERE {empty}", ids)
        return cur.rowcount > 0

    def _info(self, row: sqlite3.Row) -> SessionInfo:
        keys = row.keys()
        return SessionInfo(
            row["id"],
            row["workspace"],
            row["title"],
            row["model"],
            row["created_at"],
            row["updated_at"],
            row["n"] if "n" in keys else 0,
        )

    _SELECT = (
        "SELECT s.*, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n "
        "FROM sessions s"
    )

    def get_session(self, session_id: str) -> SessionInfo | None:
        """A session by id, or by an unambiguous prefix of at least 4 hex digits."""
        rows = self._query(f"{self._SELECT} WHERE s.id = ?", (session_id,))
        if not rows:
            if len(session_id) < 4 or any(c not in "0123456789abcdef" for c in session_id):
                return None  # never a wildcard: "_" or "%" must not match anything
            rows = self._query(
                f"{self._SELECT} WHERE substr(s.id, 1, ?) = ?", (len(session_id), session_id)
            )
            if len(rows) != 1:
                return None
        return self._info(rows[0])

    def latest_session(self, workspace: Path | str) -> SessionInfo | None:
        """The newest session of ``workspace`` with at least one message (what to resume)."""
        rows = self._query(
            f"{self._SELECT} WHERE s.workspace = ? "
            "AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id) "
            "ORDER BY s.updated_at DESC, s.rowid DESC LIMIT 1",
            (str(workspace),),
        )
        return self._info(rows[0]) if rows else None

    def list_sessions(self, workspace: Path | str | None = None) -> list[SessionInfo]:
        if workspace is None:
            rows = self._query(f"{self._SELECT} ORDER BY s.updated_at DESC, s.rowid DESC")
        else:
            rows = self._query(
                f"{self._SELECT} WHERE s.workspace = ? ORDER BY s.updated_at DESC, s.rowid DESC",
                (str(workspace),),
            )
        return [self._info(r) for r in rows]

    def set_title(self, session_id: str, title: str) -> None:
        if self._update_reserved(session_id, title=title):
            return
        with self._tx() as db:
            db.execute("UPDATE sessions SET title = ? WHERE id = ?", (_storable(title), session_id))

    def set_model(self, session_id: str, model: str) -> None:
        if self._update_reserved(session_id, model=model):
            return
        with self._tx() as db:
            db.execute("UPDATE sessions SET model = ? WHERE id = ?", (model, session_id))

    def _update_reserved(
        self, session_id: str, *, title: str | None = None, model: str | None = None
    ) -> bool:
        """Change a reserved session's future row in memory; False if it is not reserved."""
        with self._lock:
            reserved = self._reserved.get(session_id)
            if reserved is None:
                return False
            workspace, old_model, old_title = reserved
            self._reserved[session_id] = (
                workspace,
                old_model if model is None else model,
                old_title if title is None else title,
            )
            return True

    def delete_session(self, session_id: str) -> bool:
        """Delete the rows; messages and todos go by cascade. Files are the caller's."""
        with self._lock:
            self._reserved.pop(session_id, None)
        with self._tx() as db:
            cur = db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        return cur.rowcount > 0

    def sessions_older_than(self, days: float) -> list[SessionInfo]:
        cutoff = (datetime.now(UTC) - timedelta(days=days)).isoformat(timespec="seconds")
        rows = self._query(f"{self._SELECT} WHERE s.updated_at < ?", (cutoff,))
        return [self._info(r) for r in rows]

    # -- messages ---------------------------------------------------------------

    def add_turn(self, session_id: str, messages: Sequence[Message]) -> None:
        """Commit one completed turn's messages atomically (a reserved session's row too)."""
        now = _now()
        with self._session_tx(session_id) as db:
            for m in messages:
                calls = (
                    json.dumps(
                        [
                            {
                                "id": redact(c.id),  # a hostile server names calls, too
                                "name": redact(c.name),
                                "arguments": redact_data(c.arguments),
                            }
                            for c in m.tool_calls
                        ]
                    )
                    if m.tool_calls
                    else None
                )
                db.execute(
                    "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, "
                    "created_at, name) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        session_id,
                        m.role,
                        _storable(m.content),
                        calls,
                        None if m.tool_call_id is None else redact(m.tool_call_id),
                        now,
                        None if m.name is None else redact(m.name),
                    ),
                )
            db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))

    def messages(self, session_id: str) -> list[Message]:
        rows = self._query(
            "SELECT role, content, tool_calls, tool_call_id, name FROM messages "
            "WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
        out: list[Message] = []
        for r in rows:
            calls = [
                ToolCall(c.get("id", ""), c["name"], c.get("arguments") or {})
                for c in json.loads(r["tool_calls"] or "[]")
            ]
            out.append(Message(r["role"], r["content"], calls, r["tool_call_id"], r["name"]))
        return out

    # -- todos (implements harvey.tools.todo.TodoStore) --------------------------

    def get_todos(self, session_id: str) -> list[Todo]:
        rows = self._query(
            "SELECT id, content, status FROM todos WHERE session_id = ? ORDER BY position",
            (session_id,),
        )
        return [Todo(r["id"], r["content"], r["status"]) for r in rows]

    def set_todos(self, session_id: str, todos: Sequence[Todo]) -> None:
        with self._session_tx(session_id) as db:
            db.execute("DELETE FROM todos WHERE session_id = ?", (session_id,))
            db.executemany(
                "INSERT INTO todos VALUES (?, ?, ?, ?, ?)",
                [(session_id, i, t.id, t.content, t.status) for i, t in enumerate(todos)],
            )

    # -- calibration --------------------------------------------------------------

    def record_calibration(
        self,
        model: str,
        prompt_bytes: int,
        prompt_tokens: int,
        doc_type: str = "prose",
        prompt_units: int | None = None,
    ) -> float:
        """Keep one (prompt bytes, units, reported prompt tokens) sample; return the
        text ratio now in use.

        Samples are per model and per document type (``"prose"``, ``"source"``:
        the chunker's ``DocType`` values). Only the most recent ``MAX_SAMPLES``
        of each are kept, and each ratio is ``calibrated_ratio`` over them: a low
        quantile, so estimates err towards more tokens.
        """
        if prompt_bytes > 0 and prompt_tokens > 0:
            self._ratios.pop((model, doc_type, "units"), None)
            self._ratios.pop((model, doc_type, "bytes"), None)
            with self._tx() as db:
                db.execute(
                    "INSERT INTO calibration_samples (model, prompt_bytes, prompt_tokens, "
                    "created_at, doc_type, prompt_units) VALUES (?, ?, ?, ?, ?, ?)",
                    (model, prompt_bytes, prompt_tokens, _now(), doc_type, prompt_units),
                )
                db.execute(
                    "DELETE FROM calibration_samples WHERE model = ? AND doc_type = ? AND id "
                    "NOT IN (SELECT id FROM calibration_samples WHERE model = ? AND doc_type = ? "
                    "ORDER BY id DESC LIMIT ?)",
                    (model, doc_type, model, doc_type, MAX_SAMPLES),
                )
        return self.calibration_ratio(model, doc_type) or BYTES_PER_TOKEN

    def calibration_samples(
        self, model: str, doc_type: str = "prose", measure: str = "bytes"
    ) -> list[tuple[int, int]]:
        """``(bytes, tokens)`` pairs, or ``(units, tokens)`` with ``measure="units"``.

        A sample without units (recorded before m007) stands in with its bytes:
        units read like bytes by design, and bytes are the fewer for code — the
        safe direction.
        """
        column = "COALESCE(prompt_units, prompt_bytes)" if measure == "units" else "prompt_bytes"
        rows = self._query(
            f"SELECT {column}, prompt_tokens FROM calibration_samples "
            "WHERE model = ? AND doc_type = ? ORDER BY id",
            (model, doc_type),
        )
        return [(int(r[0]), int(r[1])) for r in rows]

    def calibration_ratio(
        self, model: str, doc_type: str = "prose", measure: str = "units"
    ) -> float | None:
        """Units per token for texts (or bytes per token with ``measure="bytes"``),
        cached per model and type: budget checks ask for it on every read and round."""
        key = (model, doc_type, measure)
        if key not in self._ratios:
            samples = self.calibration_samples(model, doc_type, measure)
            self._ratios[key] = calibrated_ratio(samples)
        return self._ratios[key]

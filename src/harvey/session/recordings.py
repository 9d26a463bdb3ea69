"""A session's recording: which ``.spmd`` file it writes, so a continued session goes on in it.

``harvey run -c`` three times in a row is one conversation; it should read as
one screenplay, not three files of one scene each. ``sessions.db`` keeps, per
session, the name of the file its recorder writes (``m008_session_recordings``,
removed with the session). A session continued later (``--continue``,
``--session ID``, the REPL's ``--continue``) reopens that file: its closing
``THE END.`` is taken off and the new scenes follow the old ones, and
``THE END.`` is written again when the session closes. The file is reached
through ``ownfiles`` like every recording (no link followed, the folder the
recorder would use); a file that is gone, moved, or in another folder than
``session.directory`` names now is not reopened — the session records into a
new file, as before.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from harvey.errors import HarveyError
from harvey.ownfiles.nofollow import Location
from harvey.session.recorder import Recorder

log = logging.getLogger(__name__)

THE_END = b"\n\nTHE END.\n"


def migration(db: sqlite3.Connection) -> None:
    """The ``m008_session_recordings`` migration (listed in ``session/migrations.py``)."""
    db.execute(
        "CREATE TABLE session_recordings ("
        " session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,"
        " path TEXT NOT NULL)"
    )


class _Store(Protocol):
    _recordings: dict[str, str]

    def _query(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]: ...

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]: ...


class RecordingsMixin:
    """The recording methods of ``SessionStore`` (kept here to keep store.py short)."""

    def recording_of(self: _Store, session_id: str) -> str | None:
        rows = self._query(
            "SELECT path FROM session_recordings WHERE session_id = ?", (session_id,)
        )
        return str(rows[0][0]) if rows else None

    def note_recording(self: _Store, session_id: str, path: str) -> None:
        """Remember ``path`` as the session's recording: now if its row exists, else when the
        row is written with the first turn (``SessionStore._materialize``), so no empty
        session is kept."""
        if self._query("SELECT 1 FROM sessions WHERE id = ?", (session_id,)):
            with self._tx() as db:
                db.execute(
                    "INSERT OR REPLACE INTO session_recordings VALUES (?, ?)", (session_id, path)
                )
        else:
            self._recordings[session_id] = path


def _reopen(where: Location, name: str) -> bool:
    """Take ``THE END.`` off the session's file so scenes can follow; False when it cannot be
    reopened (gone, not a regular file, a link, someone else's)."""
    try:
        with where.open(create=False) as folder:
            entry = folder.entry(name)
            if entry is None or not stat.S_ISREG(entry.st_mode):
                return False
            fd = folder.open_file(name, os.O_RDWR)
            try:
                size = os.fstat(fd).st_size
                if (
                    size >= len(THE_END)
                    and os.pread(fd, len(THE_END), size - len(THE_END)) == THE_END
                ):
                    os.ftruncate(fd, size - len(THE_END))
            finally:
                os.close(fd)
    except (OSError, HarveyError) as exc:
        log.debug("cannot reopen the recording %s: %s", name, exc)
        return False
    return True


def open_recording(
    sessions: Location,
    store: Any,
    session_id: str,
    resumed: bool,
    **kw: Any,
) -> Recorder:
    """The session's recorder: its own file again when it continues a session that has one
    in ``sessions``, else a new file; either way the file is noted as the session's."""
    previous = store.recording_of(session_id) if resumed else None
    recorder: Recorder | None = None
    if previous is not None:
        path = sessions.path / os.path.basename(previous)
        if str(path) == previous and _reopen(sessions, path.name):
            recorder = Recorder(path, where=sessions, continuing=True, **kw)
    if recorder is None:
        recorder = Recorder.open_in(sessions, **kw)
    if recorder.enabled:
        try:
            store.note_recording(session_id, str(recorder.path))
        except HarveyError as exc:  # the turn matters more; a later --continue starts a file
            log.warning("could not note the recording of session %s: %s", session_id, exc)
    return recorder

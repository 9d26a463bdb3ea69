"""Which stored session ``harvey run --session ID`` continues, or why it cannot.

``--continue`` picks the workspace's newest session with messages
(``SessionStore.latest_session``); ``--session ID`` names one, by its id or an
unambiguous prefix (as ``harvey sessions show`` does). It is looked up before
a client is made or anything is created, so a wrong id is one line and no
connection. A session of another workspace is refused rather than continued
here: its conversation is about that folder's files, and its tools would now
run in this one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harvey.errors import UsageError
from harvey.session.store import SessionStore

if TYPE_CHECKING:
    from harvey.config.settings import Paths


def session_to_resume(paths: Paths, session_id: str) -> str:
    """The full id of the session ``session_id`` names in this workspace, or a ``UsageError``."""
    wanted = session_id.strip().lower()
    missing = UsageError(f"no session {session_id!r} (see 'harvey sessions list')")
    if not wanted or not paths.sessions_db.is_file():
        raise missing
    store = SessionStore(paths.sessions_db)
    try:
        info = store.get_session(wanted)
    finally:
        store.close()
    if info is None:
        raise missing
    if Path(info.workspace) != Path(paths.workspace):
        raise UsageError(
            f"session {info.id[:12]} belongs to the workspace {info.workspace}; "
            f"continue it there (harvey -w {info.workspace} run --session {info.id[:12]} ...)"
        )
    return info.id

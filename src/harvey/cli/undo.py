"""``harvey undo``: restore the files a session's approved writes changed.

The REPL has ``/undo``; this is the same for a session that has ended, or a
``harvey run`` in a script: the last N writes (``write_file``, ``edit_file``) of
the workspace's newest session, or of ``--session ID``, newest first, from the
checkpoints in ``HARVEY_HOME`` (``session/checkpoints.py``). A file changed since
by someone else is left alone and said so; each undo is logged with the
checkpoints, so running it again goes further back, and noted in the session's
recording (``session/undo_notes.py``).
"""

from __future__ import annotations

from pathlib import Path

import click

from harvey.cli.errors import handle_errors
from harvey.cli.options import workspace_option
from harvey.errors import UsageError


@click.command()
@click.argument("count", default="1", metavar="[N]")
@click.option(
    "--session",
    "session_id",
    default=None,
    help="Session ID (or a prefix; see 'harvey sessions list'). Default: the newest here.",
)
@workspace_option
@handle_errors
def undo(count: str, session_id: str | None, workspace: Path | None) -> None:
    """Undo the last N approved file writes of a session (default 1).

    Each file is brought back to what it held before the write; a file the
    write created is removed. A file changed since by someone else is skipped.
    Exit status 1 when any write could not be undone.
    """
    from harvey.chat.runtime import open_store
    from harvey.config.settings import resolve_paths
    from harvey.session.checkpoints import Checkpoints, parse_count, undo_lines
    from harvey.session.undo_notes import record_undone
    from harvey.ui import printable

    n = parse_count(count)
    paths = resolve_paths(workspace)
    if not paths.sessions_db.is_file():
        raise UsageError("no sessions yet, so nothing to undo")
    store = open_store(paths)
    try:
        info = (
            store.get_session(session_id)
            if session_id is not None
            else store.latest_session(paths.workspace)
        )
    finally:
        store.close()
    if info is None:
        which = f"no session {session_id!r}" if session_id else "no session in this workspace"
        raise UsageError(f"{which} (see 'harvey sessions list')")
    results = Checkpoints(paths.harvey_home, info.id).undo(n)
    for line in undo_lines(results):
        click.echo(printable(line))
    for recording in dict.fromkeys(r.recording for r in results if r.recording):
        mine = [(r.path, r.status) for r in results if r.recording == recording]
        problem = record_undone(recording, mine)
        if problem is not None:
            click.echo(printable(f"harvey: the undo is not recorded ({problem})"), err=True)
    if any(r.status != "ok" for r in results):
        raise SystemExit(1)

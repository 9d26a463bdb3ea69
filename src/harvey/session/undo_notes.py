"""``harvey undo``'s ``[[undo:]]`` notes, written into the recording of the session undone.

The REPL's ``/undo`` has the live ``Recorder``; ``harvey undo`` runs later, in
another process, when the recording usually ends with ``THE END.`` (after which
nothing may stand). So an ``INT. UNDO`` scene with the notes goes in just before
that line, by replacing the
file whole through ``ownfiles`` (no link followed, from the folder holding
``.harvey``); a recording still open (no ``THE END.`` yet: the session is
running) gets them appended, as its recorder would. A recording that cannot be
written is reported, never an error: the files were restored either way.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from harvey.errors import HarveyError
from harvey.ownfiles.private import location_of
from harvey.session.notes import undo_note
from harvey.session.recorder import TIME_FORMAT

END = b"THE END.\n"


def record_undone(recording: str, undone: list[tuple[str, str]]) -> str | None:
    """Write one ``[[undo: PATH — STATUS]]`` note per ``(path, status)`` into ``recording``;
    the reason when it could not be (``None`` when written)."""
    if not recording or not undone:
        return None
    path = Path(recording)
    heading = f"\n\nINT. UNDO {datetime.now().strftime(TIME_FORMAT)}\n\n"
    block = (heading + "".join(undo_note(p, s) + "\n" for p, s in undone)).encode("utf-8")
    try:
        with location_of(path.parent).open(create=False) as folder:
            data = folder.read_bytes(path.name)
            if data is None:
                return f"{path.name} no longer exists"
            body = data.rstrip(b"\n")
            if body.endswith(END.rstrip(b"\n")):
                head = body[: -len(END.rstrip(b"\n"))].rstrip(b"\n")
                folder.replace(path.name, [head, block, b"\n\n", END])
            else:
                folder.append(path.name, block)
    except (OSError, HarveyError) as exc:
        return f"{path.name}: {getattr(exc, 'strerror', None) or exc}"
    return None

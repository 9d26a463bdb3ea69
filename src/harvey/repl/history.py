"""The REPL's input history: a file only its user can read, with no key in it.

prompt_toolkit's ``FileHistory`` appends every line typed, pasted keys too, to
a file made under the umask (0644). ``PrivateHistory`` keeps its file format
(``# time`` then ``+line`` per line, so older histories load) but writes
through ``harvey.ownfiles.nofollow``: ``HARVEY_HOME/history`` is created 0600 and
tightened when found more open, never opened through a link, and what is
stored has passed the active ``Redactor``. A history written before this, with
a key in it, is rewritten redacted the first time it is loaded.

The up-arrow within a session still recalls what was typed (prompt_toolkit
keeps it in memory); only the file is redacted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from prompt_toolkit.history import FileHistory

from harvey.errors import WorkspaceError
from harvey.ownfiles.nofollow import PRIVATE_FILE, Location
from harvey.redact import redact

log = logging.getLogger(__name__)


def parse_history(data: bytes) -> list[str]:
    """The entries of a history file, oldest first."""
    entries: list[str] = []
    current: list[str] | None = None
    for raw in data.decode("utf-8", errors="replace").splitlines():
        if raw.startswith("+"):
            current = [] if current is None else current
            current.append(raw[1:])
        elif current is not None:
            entries.append("\n".join(current))
            current = None
    if current is not None:
        entries.append("\n".join(current))
    return entries


def format_entry(text: str, when: datetime | None = None) -> str:
    lines = "".join(f"+{line}\n" for line in text.split("\n"))
    return f"\n# {when or datetime.now()}\n{lines}"


class PrivateHistory(FileHistory):
    """``FileHistory`` with a 0600 file reached without following a link, and redacted."""

    def __init__(self, path: Path) -> None:
        super().__init__(os.fspath(path))
        self._where = Location(Path(path).parent, home=True)
        self._name = Path(path).name
        with self._where.open(create=True) as folder:  # raises OSError / UnsafePath
            if not folder.create_new(self._name):
                os.close(folder.open_file(self._name, os.O_RDONLY))  # checked, tightened

    def load_history_strings(self) -> Iterable[str]:
        try:
            with self._where.open(create=False) as folder:
                data = folder.read_bytes(self._name) or b""
                entries = parse_history(data)
                clean = [redact(entry) for entry in entries]
                if clean != entries:  # a key typed before history was redacted: scrub the file
                    text = "".join(format_entry(entry) for entry in clean)
                    folder.replace(self._name, text.encode("utf-8"), mode=PRIVATE_FILE)
        except (OSError, WorkspaceError) as exc:
            log.debug("cannot load the history: %s", exc)
            return []
        return list(reversed(clean))

    def store_string(self, string: str) -> None:
        try:
            with self._where.open(create=False) as folder:
                folder.append(self._name, format_entry(redact(string)).encode("utf-8"))
        except (OSError, WorkspaceError) as exc:  # history is a convenience: never a crash
            log.debug("cannot store the history: %s", exc)

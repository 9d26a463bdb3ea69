"""Private files: what Harvey keeps about a session is readable by its user only.

``sessions.db`` holds whole conversations, the ``.spmd`` recordings the same
again, and both can contain whatever a tool read. On a shared machine the
default umask (0022) would make all of it world-readable. So Harvey creates
its folders 0700 and its files 0600 — ``HARVEY_HOME``, ``sessions.db`` with its
``-wal``/``-shm``, the workspace's ``.harvey/`` with ``sessions/`` and
``plans/``, every session file — as ``tools/offload.py`` already does for
offloaded output, and tightens them when it finds them more open than that
(written by an older Harvey, or created under a loose umask).

Tightening is best effort and never fails a command: a folder that belongs to
someone else (``HARVEY_HOME=/tmp``) or a read-only file system is left as it
is. A symlink is never chmod-ed, since that would change its target, which a
hostile workspace may have pointed anywhere.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
#: SQLite's companions of a database in WAL mode.
DB_COMPANIONS = ("-wal", "-shm", "-journal")


def tighten(path: Path) -> None:
    """Take every group and other permission off ``path`` (0644 → 0600); never raises."""
    try:
        if path.is_symlink():
            return
        current = path.stat().st_mode & 0o777
        if current & 0o077:
            os.chmod(path, current & 0o700)
    except OSError as exc:
        log.debug("cannot make %s private: %s", path, exc)


def make_private_dirs(path: Path) -> Path:
    """Create ``path`` and its missing parents 0700, and tighten ``path`` itself.

    When ``path``'s parent is Harvey's own ``.harvey`` folder (``.harvey/sessions``,
    ``.harvey/plans``), that is tightened too. Raises ``OSError`` when the folder
    cannot be created, like ``Path.mkdir``.
    """
    path = Path(path)
    missing: list[Path] = []
    level = path
    while not level.exists() and not level.is_symlink() and level != level.parent:
        missing.append(level)
        level = level.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            pass  # a concurrent Harvey made it first
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is not a folder")
    tighten(path)
    if path.parent.name == ".harvey":
        tighten(path.parent)
    return path


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists; tighten it if it does."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        tighten(path)
    else:
        os.close(fd)


def tighten_database(path: Path) -> None:
    """Make a SQLite database and the companions that exist now 0600."""
    for candidate in (path, *(path.with_name(path.name + s) for s in DB_COMPANIONS)):
        if candidate.exists():
            tighten(candidate)


def private_opener(path: str, flags: int) -> int:
    """An ``open(..., opener=)`` that creates files 0600 (existing ones keep their mode)."""
    return os.open(path, flags, PRIVATE_FILE)

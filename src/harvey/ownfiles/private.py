"""Private files: what Harvey keeps about a session is readable by its user only.

``sessions.db`` holds whole conversations, the ``.spmd`` recordings the same
again, and both can contain whatever a tool read. On a shared machine the
default umask (0022) would make all of it world-readable. So Harvey creates
its folders 0700 and its files 0600 and tightens ones it finds more open.

The work is done by ``harvey.ownfiles.nofollow`` (which also never follows a link);
these are the older entry points, kept for trusted paths under ``HARVEY_HOME``.
A path with a ``.harvey`` part is walked from the folder that holds ``.harvey``,
so a link planted there by a repository is refused, never followed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from harvey.errors import WorkspaceError
from harvey.ownfiles.nofollow import DB_COMPANIONS, PRIVATE_DIR, PRIVATE_FILE, Location, open_root

__all__ = [
    "DB_COMPANIONS",
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "create_private_file",
    "location_of",
    "make_private_dirs",
    "private_opener",
    "tighten_database",
]


def location_of(path: Path) -> Location:
    """``path`` as a ``Location``: from the folder holding ``.harvey`` when it has one."""
    path = Path(os.path.abspath(path))
    parts = path.parts
    if ".harvey" in parts:
        at = parts.index(".harvey")
        return Location(Path(*parts[:at]), tuple(parts[at:]))
    return Location(path, home=True)


def make_private_dirs(path: Path) -> Path:
    """Create ``path`` 0700 (missing parents too) and tighten it.

    Raises ``OSError``, or ``UnsafePath`` for a link or someone else's folder.
    """
    location = location_of(path)
    os.makedirs(location.root, mode=PRIVATE_DIR, exist_ok=True)
    location.open(create=True).close()
    return Path(path)


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists; tighten it if it does."""
    path = Path(path)
    with location_of(path.parent).open(create=False) as folder:
        # lstat checks, no open: closing a descriptor on a database this process has
        # connected to would drop SQLite's locks on it
        folder.database(path.name, create=True)


def tighten_database(path: Path) -> None:
    """Make a SQLite database and the companions that exist now 0600 (never through a link)."""
    path = Path(path)
    try:
        with location_of(path.parent).open(create=False) as folder:
            folder.database(path.name, create=False)
    except (OSError, WorkspaceError):  # an UnsafePath: nothing is tightened through it
        pass


def private_opener(path: str, flags: int) -> int:
    """An ``open(..., opener=)`` that creates files 0600 and refuses a final link."""
    return os.open(path, flags | os.O_NOFOLLOW, PRIVATE_FILE)


def tighten(path: Path) -> None:
    """Take group and other permissions off ``path`` unless it is a link; never raises."""
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            open_root(path, tighten=True).close()
        elif stat.S_ISREG(st.st_mode) and st.st_mode & 0o077:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o700)
            finally:
                os.close(fd)
    except OSError:
        pass

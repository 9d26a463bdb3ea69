"""The one atomic file write: readers see the old file or the new one, never half of it.

``write_file``'s workspace files, offloaded tool output and the plan file all
replace a file whole. Each writes a temporary sibling and renames it over the
target, so a crash, a full disk or a concurrent reader never meets a truncated
file. The temporary name is unique (a UUID) and created exclusively without
following a symlink, so two writers — two threads, two Harvey processes — never
share one, and a link planted under that name cannot redirect the write.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` in one rename.

    ``mode`` None keeps an existing file's permission bits (a script stays
    executable) and gives a new file the umask's default, as ``open`` would;
    a ``mode`` such as 0o600 is set exactly, whatever the umask or the old file
    said. Raises ``OSError`` (the temporary file is removed first).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, _CREATE | getattr(os, "O_CLOEXEC", 0), 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            keep = mode if mode is not None else _existing_mode(path)
            if keep is not None:
                os.fchmod(handle.fileno(), keep)
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _existing_mode(path: Path) -> int | None:
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return None

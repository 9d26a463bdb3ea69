"""The one atomic file write: readers see the old file or the new one, never half of it.

``write_file``'s workspace files, offloaded tool output and the plan file all
replace a file whole. Each writes a temporary sibling and renames it over the
target, so a crash, a full disk or a concurrent reader never meets a truncated
file. The temporary name is unique (a UUID) and created exclusively without
following a symlink, so two writers never share one, and a link planted under
that name cannot redirect the write.

The folder is reached through ``harvey.ownfiles.nofollow``: given a ``root`` (the
workspace), every folder from the root down is opened, and made when missing,
without following a link, and the temporary file and the rename happen in the
folder that walk holds, not in wherever a path would lead by then.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from harvey.errors import WorkspaceError
from harvey.ownfiles.nofollow import Location, open_root


def atomic_write(
    path: Path, data: bytes | Iterable[bytes], mode: int | None = None, *, root: Path | None = None
) -> None:
    """Replace ``path`` with ``data`` (bytes, or pieces of them) in one rename.

    ``mode`` None keeps an existing file's permission bits (a script stays
    executable) and gives a new file the umask's default, as ``open`` would;
    a ``mode`` such as 0o600 is set exactly, whatever the umask or the old file
    said. With ``root``, ``path`` must be under it and its missing folders are
    made (umask modes), none of them through a link; without, its folder must
    exist. Raises ``OSError`` or ``WorkspaceError`` (the temporary file is
    removed first).
    """
    path = Path(path)
    if root is None:
        folder = open_root(path.parent)
        folder.private = False
    else:
        root = Path(root)
        try:
            relative = path.parent.relative_to(root)
        except ValueError as exc:
            raise WorkspaceError(f"{path} is not inside {root}") from exc
        folder = Location.under(root, relative, private=False).open(create=True)
    with folder:
        folder.replace(path.name, data, mode)

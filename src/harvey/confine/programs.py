"""Which file a program's name means when Harvey itself runs it, outside the sandbox.

Harvey runs a few programs of its own, unconfined: ``bwrap`` (the sandbox itself),
``git`` (to read a repository's config before deciding whether the model's ``git``
may run), the user's ``$EDITOR`` and ``api_key_command``. A name is looked up on
``PATH``, and ``PATH`` may hold a folder of the workspace — an activated ``.venv``,
direnv's ``PATH_add bin`` — which a cloned repository fills with a ``git`` or a
``bwrap`` of its own. So a name is never resolved there: the sandbox's own tools
come from the system folders only, and the user's programs from ``PATH`` less every
relative entry and every folder inside the workspace (or the current folder).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

#: Where the sandbox's own tools may come from: folders only root can write.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def system_program(name: str) -> str | None:
    """``name`` found in the system folders only (for the tools that confine others)."""
    return shutil.which(name, path=SYSTEM_PATH)


def trusted_search_path(workspace: Path | str | None = None, path: str | None = None) -> str:
    """``PATH`` without relative or empty entries and without any folder inside the
    workspace or the current folder (resolved, so a link into them counts as inside)."""
    roots = {os.path.realpath(os.getcwd())}
    if workspace is not None:
        roots.add(os.path.realpath(workspace))
    folders = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
    kept = [
        folder
        for folder in folders
        if os.path.isabs(folder) and not _inside(os.path.realpath(folder), roots)
    ]
    return os.pathsep.join(dict.fromkeys(kept))


def find_program(name: str, workspace: Path | str | None = None) -> str | None:
    """The program a user-chosen command names: a path as written (the user typed it),
    a bare name on :func:`trusted_search_path`; None when there is none."""
    if os.sep in name:
        return name
    search = trusted_search_path(workspace)
    return shutil.which(name, path=search) if search else None


def _inside(folder: str, roots: set[str]) -> bool:
    return any(folder == root or folder.startswith(root.rstrip(os.sep) + os.sep) for root in roots)

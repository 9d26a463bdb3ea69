"""The one list of folders no walk of the workspace enters.

``search_files``, ``list_files``, a knowledge-store ingest and whole-folder analysis
(``workspace/files.py``'s walk) all skip the same folders: ``.harvey/`` (Harvey's own
recordings, offloaded output and plans: a search must never answer from them),
``.git/``, virtualenvs (by name, or any folder holding a ``pyvenv.cfg``),
``node_modules/`` and tool caches. A folder is judged by its name and, for a
virtualenv, by what it holds; a walk that meets one goes around it.
"""

from __future__ import annotations

import os

#: Harvey's own folder in a workspace: never searched, never walked.
OWN_FOLDER = ".harvey"

#: Folders every walk of the workspace leaves out, by name.
SKIPPED_DIRS = frozenset(
    {
        OWN_FOLDER,
        ".git",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)


def is_virtualenv(path: str | os.PathLike[str]) -> bool:
    """A Python virtual environment, whatever its name (it holds ``pyvenv.cfg``)."""
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))


def skipped_dir(name: str, path: str | os.PathLike[str]) -> bool:
    """Whether a walk leaves the folder ``name`` at ``path`` out (never entered)."""
    return name in SKIPPED_DIRS or is_virtualenv(path)


def under_own_folder(relative: str) -> bool:
    """Whether a workspace-relative path (``/``-separated) lies in Harvey's own folder."""
    return relative.split("/", 1)[0] == OWN_FOLDER


__all__ = ["OWN_FOLDER", "SKIPPED_DIRS", "is_virtualenv", "skipped_dir", "under_own_folder"]

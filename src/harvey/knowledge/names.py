"""Store names and where stores live: what every session asks, without opening SQLite.

Each session start asks whether the workspace has a store (to offer the
``search_knowledge`` tool) and checks ``--rag NAME``; that must cost a stat,
not the import of the store module (its dataclasses alone take milliseconds)
or a database open. ``store`` re-exports these for everything else.

The folder is listed through ``harvey.ownfiles.nofollow``: a ``.harvey`` or ``rag``
that a cloned repository made a link lists no store, so nothing behind the
link is ever offered, opened or written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.errors import UsageError, WorkspaceError
from harvey.ownfiles.nofollow import Location

if TYPE_CHECKING:
    from harvey.config.settings import Settings

NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_name(name: str) -> str:
    """A store name is ``[A-Za-z0-9_-]{1,64}``: it becomes a file name, so nothing else."""
    if not NAME_RE.fullmatch(name):
        raise UsageError(
            f"bad store name {name!r}: use 1-64 letters, digits, '_' or '-' (e.g. notes)"
        )
    return name


def with_active(settings: Settings, name: str | None) -> Settings:
    """``settings`` with ``rag.active`` set to ``name`` (``--rag``, ``/rag use``), if given."""
    if not name:
        return settings
    rag = settings.rag.model_copy(update={"active": check_name(name)})
    return settings.model_copy(update={"rag": rag})


def rag_location(workspace: Path) -> Location:
    return Location(Path(workspace), (".harvey", "rag"))


def rag_dir(workspace: Path) -> Path:
    return rag_location(workspace).path


def store_path(workspace: Path, name: str) -> Path:
    return rag_dir(workspace) / f"{check_name(name)}.db"


def store_names(workspace: Path) -> list[str]:
    """The stores in the workspace; none when ``.harvey/rag`` is missing or refused."""
    try:
        with rag_location(workspace).open(create=False) as folder:
            names = folder.names()
    except (OSError, WorkspaceError):
        return []
    stems = (n[: -len(".db")] for n in names if n.endswith(".db"))
    return sorted(stem for stem in stems if NAME_RE.fullmatch(stem))

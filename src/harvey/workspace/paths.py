"""Where a path the model names may lead: inside the workspace, never Harvey's own state,
never a secret file or a hard link when its bytes go to the model.

Every reader and writer for the model resolves a path here first: the read, write and
edit tools, search, the chunked read, the folder walk, ingest, the sandbox's view of the
workspace. One answer, one error vocabulary (``WorkspaceError`` for an escape,
``FileRefused`` for a file that is there but not for the model).
"""

from __future__ import annotations

import os
from pathlib import Path

from harvey.errors import FileRefused, WorkspaceError
from harvey.workspace import secret_files
from harvey.workspace.files import SECRET_FILE, check_readable

BINARY_SNIFF_BYTES = 8192
_NAME_MAX = 255  # bytes in one path component, on every file system Harvey runs on


def safe_path(workspace: Path | str, path: Path | str) -> Path:
    """Resolve ``path`` (relative to ``workspace`` or absolute) and insist it stays inside.

    Symlinks are resolved before the check, so a link pointing outside is an
    escape too. Raises ``WorkspaceError`` rather than returning a "maybe" path, and
    ``FileRefused`` for Harvey's own state (``HARVEY_HOME`` inside the workspace): no
    tool reads, writes, edits or lists it, however it is spelt.
    """
    raw = os.fspath(path)
    if "\x00" in raw:
        raise WorkspaceError("path contains a NUL byte")
    try:
        root = Path(workspace).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise WorkspaceError(f"workspace {workspace} is not usable: {exc}") from exc
    candidate = Path(os.path.expanduser(raw)) if raw.startswith("~") else Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # symlink loops, overly long names
        raise WorkspaceError(f"cannot resolve path {raw!r}: {exc}") from exc
    if resolved != root and not resolved.is_relative_to(root):
        raise WorkspaceError(f"path {raw!r} is outside the workspace {root}")
    if secret_files.active().is_own(resolved.relative_to(root).as_posix()):
        raise own_state_refused(raw)
    # Every later stat would fail with ENAMETOOLONG (an OSError, not a "no such file").
    if any(len(os.fsencode(part)) > _NAME_MAX for part in resolved.parts):
        shown = raw if len(raw) <= 60 else raw[:57] + "..."
        raise WorkspaceError(f"file name too long: {shown!r} (at most {_NAME_MAX} bytes a name)")
    return resolved


def own_state_refused(shown: str) -> FileRefused:
    """The one line for a path inside Harvey's own state folder."""
    return FileRefused(
        f"{shown} is inside HARVEY_HOME, Harvey's own state (your settings, the trust store, "
        "sessions, checkpoints): never read or written for the model",
        SECRET_FILE,
    )


def readable_path(workspace: Path | str, path: Path | str) -> Path:
    """``safe_path`` for a read whose bytes go to the model: also refuses a secret file,
    by the name asked for and by its real path, and a hard link (``FileRefused``)."""
    resolved = safe_path(workspace, path)
    check_readable(workspace, resolved, os.fspath(path))
    return resolved


def display_path(workspace: Path, path: Path) -> str:
    """The workspace-relative spelling a model can pass straight back to a tool."""
    try:
        rel = path.relative_to(Path(workspace).resolve())
    except ValueError:
        return str(path)
    return "." if str(rel) == "." else rel.as_posix()


def looks_binary(head: bytes) -> bool:
    """The one binary test used everywhere: a NUL byte in the first 8 KB."""
    return b"\x00" in head[:BINARY_SNIFF_BYTES]

"""``search_files``: a regular expression over the workspace's text files, with bounds.

A model chooses the pattern and a hostile file in the workspace may choose it
for the model, so nothing about a search may be unbounded:

* **Time.** Python's ``re`` backtracks: ``(a|aa)+$`` against one short line of
  ``a``s runs for hours. The ``regex`` engine (``re``'s syntax, plus a
  ``timeout=``) runs every line's search against one deadline for the whole
  search; when it passes, the result is an ``error:`` naming the pattern.
* **What is opened.** Only regular files, checked with ``lstat`` before
  ``open``: opening a FIFO blocks until a writer comes, and a device may never
  end. Symlinks are not followed — neither to files nor (``os.walk``'s
  default) to folders — so a link cannot lead the search out of the workspace.
* **Size.** Files over ``MAX_SEARCH_FILE_BYTES`` are skipped from their
  ``lstat`` size without reading them; matches stop at ``MAX_SEARCH_MATCHES``.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harvey.errors import ToolError, WorkspaceError
from harvey.tools.files import (
    SKIP_DIRS,
    _require_str,
    display_path,
    file_kind,
    looks_binary,
    open_regular,
    safe_path,
)
from harvey.tools.registry import ToolContext

MAX_SEARCH_MATCHES = 200
MAX_SEARCH_LINE = 300
MAX_SEARCH_FILE_BYTES = 5 * 1024 * 1024
SEARCH_DEADLINE_SECONDS = 10.0


class _DeadlinePassed(ToolError):
    """The whole search ran out of time (``regex`` raised ``TimeoutError``, or between files).

    Control flow inside ``SearchFilesTool.run``, which turns it into its error line.
    """


class SearchFilesTool:
    name = "search_files"
    description = (
        "Search text files in the workspace for a regular expression (Python syntax). "
        "Returns 'path:line: text' for each match."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol reads an attribute
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "regular expression"},
            "path": {"type": "string", "description": "file or folder to search (default '.')"},
        },
        "required": ["pattern"],
    }

    def __init__(self, deadline_seconds: float = SEARCH_DEADLINE_SECONDS) -> None:
        self.deadline_seconds = deadline_seconds

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        import regex  # 10-20 ms to import: paid by the first search, not by every start

        pattern = _require_str(args, "pattern")
        try:
            compiled = regex.compile(pattern)
        except (regex.error, ValueError, OverflowError) as exc:
            return f"error: invalid regular expression {pattern!r}: {exc}"
        root = safe_path(ctx.workspace, args.get("path") or ".")
        shown = display_path(ctx.workspace, root)
        try:
            mode = os.lstat(root).st_mode
        except FileNotFoundError:
            return f"error: {shown} does not exist"
        except OSError as exc:
            return f"error: cannot search {shown}: {exc.strerror or exc}"
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            return f"error: {shown} is {file_kind(mode)}; search_files reads regular files"
        deadline = time.monotonic() + self.deadline_seconds
        matches: list[str] = []
        try:
            for file in _walk_files(root, deadline):
                for number, line in _text_lines(file):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise _DeadlinePassed
                    try:
                        found = compiled.search(line, timeout=remaining)
                    except TimeoutError:
                        raise _DeadlinePassed from None
                    if found is None:
                        continue
                    text = line if len(line) <= MAX_SEARCH_LINE else line[:MAX_SEARCH_LINE] + "…"
                    matches.append(f"{display_path(ctx.workspace, file)}:{number}: {text}")
                    if len(matches) >= MAX_SEARCH_MATCHES:
                        matches.append(f"[stopped after {MAX_SEARCH_MATCHES} matches; narrow it]")
                        return "\n".join(matches)
        except _DeadlinePassed:
            return (
                f"error: the search for {pattern!r} was stopped after "
                f"{self.deadline_seconds:g} s ({len(matches)} matches by then). A pattern with "
                "nested or overlapping repetition, like (a+)+ or (a|aa)+, can take exponential "
                "time: try a simpler pattern (a plain word, or one repetition without a group "
                "around it), or search a smaller path"
            )
        return "\n".join(matches) if matches else f"no matches for {pattern!r}"


def _walk_files(root: Path, deadline: float) -> Iterator[Path]:
    """Regular files under ``root`` (or ``root`` itself), symlinks never followed."""
    if not root.is_dir():
        yield root
        return
    for folder, dirs, files in os.walk(root):  # os.walk does not follow symlinked folders
        if time.monotonic() >= deadline:
            raise _DeadlinePassed
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            yield Path(folder) / name


def _text_lines(file: Path) -> Iterator[tuple[int, str]]:
    """The lines of a regular, small, text file; nothing for anything else.

    ``lstat`` decides before anything is opened: a symlink, FIFO, socket or
    device is skipped, and so is a file over the size cap.
    """
    try:
        info = os.lstat(file)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SEARCH_FILE_BYTES:
            return
        with open_regular(file) as handle:
            data = handle.read(MAX_SEARCH_FILE_BYTES + 1)
    except (OSError, WorkspaceError):  # gone, unreadable, or swapped for a FIFO after lstat
        return
    if len(data) > MAX_SEARCH_FILE_BYTES or looks_binary(data):
        return
    yield from enumerate(data.decode("utf-8", errors="replace").splitlines(), 1)


__all__ = ["SearchFilesTool"]

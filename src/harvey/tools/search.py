"""``search_files``: a regular expression over the workspace's text files, with bounds.

A model chooses the pattern and a hostile file in the workspace may choose it
for the model, so nothing about a search may be unbounded:

* **Time.** Python's ``re`` backtracks: ``(a|aa)+$`` against one short line of
  ``a``s runs for hours. The ``regex`` engine (``re``'s syntax, plus a
  ``timeout=``) runs every line's search against one deadline for the whole
  search; when it passes, the result is an ``error:`` naming the pattern.
* **What is opened.** Only regular files, checked with ``lstat`` before
  ``open``: opening a FIFO blocks until a writer comes, and a device may never
  end. Symlinks are not followed — neither to files nor to folders — so a
  link cannot lead the search out of the workspace.
* **Size.** Files over ``MAX_SEARCH_FILE_BYTES`` are skipped from their
  ``lstat`` size without reading them; matches stop at ``MAX_SEARCH_MATCHES``.
* **Depth.** The walk keeps its own stack of folders (``os.walk`` recurses in
  Python 3.11: a tree a few thousand folders deep raised ``RecursionError``);
  a folder it cannot list (too deep for ``PATH_MAX``, no permission) is skipped.
* **Secrets.** Secret files (``harvey.workspace.secret_files``) and hard links
  (``st_nlink > 1``) are never opened; the result says how many were left out.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harvey.errors import FileRefused, ToolError, WorkspaceError
from harvey.tools.files import _require_str
from harvey.tools.registry import ToolContext
from harvey.workspace import secret_files
from harvey.workspace.files import HARD_LINK, SECRET_FILE, file_kind
from harvey.workspace.paths import display_path, looks_binary, safe_path
from harvey.workspace.skipped import OWN_FOLDER, skipped_dir, under_own_folder

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
        requested = args.get("path") or "."
        root = safe_path(ctx.workspace, requested)
        shown = display_path(ctx.workspace, root)
        if under_own_folder(shown):
            return (
                f"error: {OWN_FOLDER}/ holds Harvey's own files (session recordings, offloaded "
                "output, plans); search_files never searches them"
            )
        try:
            info = os.lstat(root)
        except FileNotFoundError:
            return f"error: {shown} does not exist"
        except OSError as exc:
            return f"error: cannot search {shown}: {exc.strerror or exc}"
        mode = info.st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            return f"error: {shown} is {file_kind(mode)}; search_files reads regular files"
        if stat.S_ISREG(mode):  # one file: refused in one line, like read_file
            try:
                ctx.source(requested)
            except FileRefused as exc:
                if exc.reason != HARD_LINK:
                    raise  # a secret file: one error line from the registry
                return f"error: {exc}"
        deadline = time.monotonic() + self.deadline_seconds
        matches: list[str] = []
        left_out = _LeftOut()
        try:
            workspace = Path(ctx.workspace).resolve()
            for file in _walk_files(workspace, root, deadline, left_out):
                for number, line in _text_lines(ctx, workspace, file, left_out):
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
                        return "\n".join([*matches, *left_out.note()])
        except _DeadlinePassed:
            return (
                f"error: the search for {pattern!r} was stopped after "
                f"{self.deadline_seconds:g} s ({len(matches)} matches by then). A pattern with "
                "nested or overlapping repetition, like (a+)+ or (a|aa)+, can take exponential "
                "time: try a simpler pattern (a plain word, or one repetition without a group "
                "around it), or search a smaller path"
            )
        found = [*matches, *left_out.note()]
        return "\n".join(found) if matches else "\n".join([f"no matches for {pattern!r}", *found])


class _LeftOut:
    """How many files the search would not open, by why (told to the model, so it does
    not conclude a secret file holds no match)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, reason: str) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1

    def note(self) -> list[str]:
        if not self.counts:
            return []
        parts = ", ".join(f"{n} {why}{'s' if n != 1 else ''}" for why, n in self.counts.items())
        return [f"[not searched: {parts}; Harvey never reads these for the model]"]


def _walk_files(workspace: Path, root: Path, deadline: float, left_out: _LeftOut) -> Iterator[Path]:
    """Regular files under ``root`` (or ``root`` itself), symlinks never followed, secret
    files left out (and counted). An explicit stack, not recursion: any depth is fine."""
    if not root.is_dir():
        yield root
        return
    rule = secret_files.active()
    stack = [root]
    while stack:
        if time.monotonic() >= deadline:
            raise _DeadlinePassed
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:  # gone, no permission, or a path longer than PATH_MAX
            continue
        subdirs: list[Path] = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not skipped_dir(entry.name, entry.path):
                    subdirs.append(Path(entry.path))
            elif rule.matches(display_path(workspace, Path(entry.path))):
                left_out.add(SECRET_FILE)
            else:
                yield Path(entry.path)
        stack.extend(reversed(subdirs))  # depth first, in name order


def _text_lines(
    ctx: ToolContext, workspace: Path, file: Path, left_out: _LeftOut
) -> Iterator[tuple[int, str]]:
    """The lines of a regular, small, text file; nothing for anything else.

    ``lstat`` decides before anything is opened: a symlink, FIFO, socket or device is
    skipped, and so is a file over the size cap; then the file is a ``Source`` (a secret
    file by its workspace name, a hard link: counted in ``left_out``), read once.
    """
    try:
        info = os.lstat(file)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SEARCH_FILE_BYTES:
            return
        data = ctx.source(file.relative_to(workspace)).data(MAX_SEARCH_FILE_BYTES)
    except FileRefused as exc:  # a hard link, or a secret file by its workspace name
        left_out.add(exc.reason)
        return
    except (OSError, WorkspaceError):  # gone, unreadable, or swapped for a FIFO after lstat
        return
    if len(data) > MAX_SEARCH_FILE_BYTES or looks_binary(data):
        return
    yield from enumerate(data.decode("utf-8", errors="replace").splitlines(), 1)


__all__ = ["SearchFilesTool"]

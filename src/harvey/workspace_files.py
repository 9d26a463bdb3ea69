"""Walk a workspace's files the way a person means "all my files".

Ingesting a folder into a knowledge store and whole-folder analysis
(``harvey analyze FOLDER``) want the same set: regular files under the folder, never inside
``.git/``, ``.harvey/``, a virtualenv or ``node_modules/``, and not what the
workspace's ``.gitignore`` ignores. This module owns that rule so every
caller skips the same things.

The ``.gitignore`` support covers what real projects write: blank lines and
``#`` comments, ``!`` negation, a trailing ``/`` for folders only, a leading
or inner ``/`` anchoring the pattern at the workspace root, ``*``/``?``/
``[...]`` globs and ``**`` across folders. Only the workspace root's file is
read; nested ``.gitignore`` files are not (said in the docs).
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

SKIPPED_DIRS = frozenset(
    {".git", ".harvey", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".tox"}
)


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _glob_regex(pattern: str, anchored: bool) -> re.Pattern[str]:
    """``pattern`` as a regex over a ``/``-separated relative path."""
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            parts.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            parts.append("/.*")
            i += 3
        elif pattern[i] == "*":
            parts.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            parts.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                parts.append(re.escape("["))
                i += 1
            else:
                parts.append(fnmatch.translate(pattern[i : end + 1])[4:-3])
                i = end + 1
        else:
            parts.append(re.escape(pattern[i]))
            i += 1
    head = "" if anchored else "(?:.*/)?"
    return re.compile(f"^{head}{''.join(parts)}$")


def matches_any(relative: str, patterns: Sequence[str]) -> bool:
    """Whether an ``--include``/``--exclude`` glob matches the workspace-relative path
    or its file name (so ``'*.md'`` finds Markdown files in every folder)."""
    name = relative.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(name, p) for p in patterns)


class GitIgnore:
    """The rules of one ``.gitignore``; the last matching rule wins, as in git."""

    def __init__(self, text: str) -> None:
        self.rules: list[_Rule] = []
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            if negate:
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            self.rules.append(_Rule(_glob_regex(line.lstrip("/"), anchored), negate, dir_only))

    @classmethod
    def of_workspace(cls, workspace: Path) -> GitIgnore:
        try:
            with open(workspace / ".gitignore", encoding="utf-8", errors="replace") as fh:
                return cls(fh.read(1_000_000))
        except OSError:
            return cls("")

    def ignored(self, relative: str, is_dir: bool) -> bool:
        verdict = False
        for rule in self.rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(relative):
                verdict = not rule.negate
        return verdict


def walk_files(workspace: Path, folder: Path, ignore: GitIgnore | None = None) -> Iterator[Path]:
    """Regular files under ``folder`` (inside ``workspace``, both resolved), sorted, skipping
    the folders in ``SKIPPED_DIRS``, virtualenvs (a ``pyvenv.cfg``), symlinks and ignored paths.

    Symlinks are not followed: a link could lead out of the workspace, and a
    linked file is ingested under its own path when its folder is walked.
    """
    ignore = ignore if ignore is not None else GitIgnore.of_workspace(workspace)
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[Path] = []
        for entry in entries:
            path = Path(entry.path)
            relative = path.relative_to(workspace).as_posix()
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                if entry.name in SKIPPED_DIRS or (path / "pyvenv.cfg").exists():
                    continue
                if not ignore.ignored(relative, True):
                    subdirs.append(path)
            elif stat.S_ISREG(mode) and not ignore.ignored(relative, False):
                yield path
        stack.extend(reversed(subdirs))

r"""Walk a workspace's files the way a person means "all my files".

Ingesting a folder into a knowledge store and whole-folder analysis
(``harvey analyze FOLDER``) want the same set: regular files under the folder, never inside
``.git/``, ``.harvey/``, a virtualenv or ``node_modules/``, and not what the
workspace's ``.gitignore`` ignores. This module owns that rule so every
caller skips the same things.

``.gitignore`` files follow git's rules: the workspace root's and every
nested one (read lazily, once per folder), each pattern relative to the folder
of its file; blank lines and ``#`` comments, ``\#``/``\!`` escapes, ``!``
negation, a trailing ``/`` for folders only, a leading or inner ``/``
anchoring the pattern at its file's folder, ``*``/``?``/``[...]`` globs and
``**`` across folders. A deeper file's rules win over a shallower one's, the
last matching rule of a file wins, and nothing inside an ignored folder can be
re-included (git does not look inside it either). ``.git/info/exclude`` and a
global excludes file are not read: they are one person's, not the project's.

It also holds the rule for which workspace files are never read for the
model: secret files by name (``harvey.workspace.secret_files``, the installed rule) and
regular files with more than one name (``st_nlink > 1``: a hard link's other
name may be ``~/.ssh/id_rsa``, and nothing says where it is). The walk yields
them like any other file, so a caller can count what it skips:
``not_for_model`` says why one is skipped; ``check_not_secret`` and
``check_readable`` refuse one asked for by name, judging both the name asked
for and the real path after links (``notes.txt -> .env``).
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harvey.errors import FileRefused, WorkspaceError
from harvey.workspace import secret_files
from harvey.workspace.skipped import skipped_dir

#: Why a file is never read for the model (skip reasons, and ``FileRefused.reason``).
SECRET_FILE = "secret file"
HARD_LINK = "hard link"


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
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            parts.append(re.escape(pattern[i + 1]))
            i += 2
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                parts.append(re.escape("["))
                i += 1
            else:  # git's [^...] is fnmatch's [!...]
                bracket = pattern[i : end + 1].replace("[^", "[!", 1)
                parts.append(fnmatch.translate(bracket)[4:-3])
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


def _parse(text: str) -> list[_Rule]:
    rules: list[_Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip(" ")
        if line.endswith("\\") and len(raw) > len(line):
            line += " "  # "\\ " at the end: the escaped space is part of the pattern
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith(("\\#", "\\!")):  # "!x" negates; "\\!x" is literal
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        rules.append(_Rule(_glob_regex(line.lstrip("/"), anchored), negate, dir_only))
    return rules


def _read_text(path: Path) -> str:
    """A ``.gitignore``'s text; "" unless it is a regular file (git does not follow a
    symlinked one either, and a FIFO must not hang the walk)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:  # none there (the usual case), a symlink, unreadable: no rules
        return ""
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return fh.read(1_000_000).decode("utf-8", errors="replace")


def _read_rules(folder: Path) -> list[_Rule]:
    return _parse(_read_text(folder / ".gitignore"))


class GitIgnore:
    """The ``.gitignore`` rules of a workspace: its root file's (``text``) and, when
    ``root`` is given, every nested file's, read when a path under it is first asked
    about."""

    def __init__(self, text: str, root: Path | None = None) -> None:
        self.rules = _parse(text)
        self._root = root
        self._nested: dict[str, list[_Rule]] = {}  # folder (workspace-relative) -> rules
        # folder -> the folders from the root down to it that have rules (most have none)
        self._chains: dict[str, tuple[str, ...]] = {}

    @classmethod
    def of_workspace(cls, workspace: Path) -> GitIgnore:
        return cls(_read_text(workspace / ".gitignore"), workspace)

    def _rules_of(self, folder: str) -> list[_Rule]:
        if not folder:
            return self.rules
        if self._root is None:
            return []
        if folder not in self._nested:
            self._nested[folder] = _read_rules(self._root / folder)
        return self._nested[folder]

    def _with_rules(self, folder: str) -> tuple[str, ...]:
        """The folders from the root down to ``folder`` (itself included) that have rules,
        the root first. Remembered per folder and built from the nearest remembered one
        above, without recursion: asking about every entry of a tree thousands of folders
        deep costs its path's length, not its depth squared."""
        pending: list[str] = []
        current = folder
        while current not in self._chains:
            pending.append(current)
            if not current:
                break
            current = current.rpartition("/")[0]
        chain = self._chains.get(current, ())
        for name in reversed(pending):
            if self._rules_of(name):
                chain = (*chain, name)
            self._chains[name] = chain
        return chain

    def _verdict(self, relative: str, is_dir: bool) -> bool:
        """Whether the path itself is ignored, its folders taken as not ignored."""
        verdict = False
        # the root's file first, the deepest last: a later match wins, as in git
        for folder in self._with_rules(relative.rpartition("/")[0]):
            rest = relative[len(folder) + 1 :] if folder else relative
            for rule in self._rules_of(folder):
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.match(rest):
                    verdict = not rule.negate
        return verdict

    def ignored(self, relative: str, is_dir: bool) -> bool:
        """Whether ``relative`` (``/``-separated, from the workspace root) is ignored:
        by its own rules, or because a folder above it is (git never looks inside one)."""
        parts = relative.strip("/").split("/")
        for depth in range(1, len(parts)):
            if self._verdict("/".join(parts[:depth]), True):
                return True
        return self._verdict("/".join(parts), is_dir)


def relative_posix(workspace: Path, path: Path | str) -> str:
    """``path`` relative to ``workspace`` with "/" separators, by string prefix when it can.

    Why not ``Path.relative_to``: an unchanged re-ingest does little else than walk
    and compare, and pathlib's parsing was half its time (issue 11's ≤ 3% target).
    """
    text, base = os.fspath(path), os.fspath(workspace)
    if text.startswith(base) and text[len(base) : len(base) + 1] == os.sep:
        relative = text[len(base) + 1 :]
        return relative if os.sep == "/" else relative.replace(os.sep, "/")
    return Path(text).relative_to(workspace).as_posix()


def _shown(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` with "/" separators ("." for the root itself), or
    as given when it lies elsewhere (then the whole path is judged: ``~/.ssh/config``)."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return str(path)
    return relative.as_posix() if relative.parts else "."


def secret_refused(shown: str) -> FileRefused:
    """The one line for a secret file: its name, never its content."""
    return FileRefused(
        f"{shown} is a secret file by its name (.env*, *.pem, *.key, id_rsa*, credentials*, "
        "... or security.secret_files; see docs/CONFIGURATION.md): Harvey never reads it "
        "for the model",
        SECRET_FILE,
    )


def hard_link_refused(shown: str, links: int) -> FileRefused:
    """The one line for a file with more than one name."""
    return FileRefused(
        f"{shown} has {links} hard links: Harvey cannot tell where its other names are (one "
        "may be a file outside the workspace), so it never reads it for the model (see "
        "'Secret files and hard links' in docs/CONFIGURATION.md)",
        HARD_LINK,
    )


def _lexical_relative(root: Path, workspace: Path | str, raw: str) -> str | None:
    """The workspace-relative spelling of what was asked for, ``..`` folded but links
    not resolved (``None``: it does not name a place inside the workspace)."""
    if raw.startswith("~"):
        raw = os.path.expanduser(raw)
    if not os.path.isabs(raw):
        return os.path.normpath(raw)
    normal = os.path.normpath(raw)
    for base in (os.fspath(root), os.path.abspath(workspace)):
        if normal == base:
            return "."
        if normal.startswith(base.rstrip(os.sep) + os.sep):
            return normal[len(base.rstrip(os.sep)) + 1 :]
    return None


def check_not_secret(workspace: Path | str, path: Path, requested: str | None = None) -> None:
    """Raise ``FileRefused`` when ``path`` (resolved, inside ``workspace``) or the name it
    was asked by (``requested``) is a secret file: a link ``notes.txt -> .env`` is refused
    by its real path, a link named ``.env`` by the name asked for."""
    rule = secret_files.active()
    root = Path(workspace).resolve()
    names = [_shown(root, path)]
    if requested is not None:
        lexical = _lexical_relative(root, workspace, requested)
        if lexical is not None:
            names.append(lexical)
    if any(name not in ("", ".") and rule.matches(name) for name in names):
        raise secret_refused(names[-1] if len(names) > 1 else names[0])


def check_readable(workspace: Path | str, path: Path, requested: str | None = None) -> None:
    """``check_not_secret``, then refuse a regular file with more than one name
    (``FileRefused``): what a reader checks before it asks, sizes up or opens."""
    check_not_secret(workspace, path, requested)
    try:
        info = os.stat(path)
    except OSError:
        return  # the read that follows says why it cannot
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        raise hard_link_refused(_shown(Path(workspace).resolve(), path), info.st_nlink)


def not_for_model(workspace: Path, path: Path) -> str | None:
    """``SECRET_FILE`` when ``path`` (inside ``workspace``, both resolved) is a secret file
    by its workspace-relative name, ``HARD_LINK`` when it is a regular file with more than
    one name, ``None`` when it may be read. ``lstat``: a link is judged as itself."""
    try:
        relative = relative_posix(workspace, path)
    except ValueError:  # not under the workspace (a caller's own path): its name decides
        relative = path.name
    if secret_files.active().matches(relative):
        return SECRET_FILE
    try:
        info = os.lstat(path)
    except OSError:
        return None  # the read that follows reports why
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        return HARD_LINK
    return None


def walk_files(workspace: Path, folder: Path, ignore: GitIgnore | None = None) -> Iterator[Path]:
    """Regular files under ``folder`` (inside ``workspace``, both resolved), sorted, skipping
    the folders ``workspace/skipped.py`` lists (``SKIPPED_DIRS``, virtualenvs), symlinks and
    ignored paths.

    Symlinks are not followed: a link could lead out of the workspace, and a
    linked file is ingested under its own path when its folder is walked. The walk
    keeps its own stack (any depth; ``os.walk`` recurses in Python 3.11), and a
    folder it cannot list is skipped.
    """
    ignore = ignore if ignore is not None else GitIgnore.of_workspace(workspace)
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as listing:  # closed even when a read fails midway
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:  # gone, no permission, or deeper than PATH_MAX: skipped
            continue
        subdirs: list[Path] = []
        for entry in entries:
            relative = relative_posix(workspace, entry.path)
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                if skipped_dir(entry.name, entry.path):
                    continue
                # the walk never enters an ignored folder, so only the entry itself is judged
                if not ignore._verdict(relative, True):
                    subdirs.append(Path(entry.path))
            elif stat.S_ISREG(mode) and not ignore._verdict(relative, False):
                yield Path(entry.path)
        stack.extend(reversed(subdirs))


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


def file_kind(mode: int) -> str:
    """What a non-regular file is, for an error line ("a named pipe (FIFO)", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: Path) -> IO[bytes]:
    """Open ``path`` for reading only if it is a regular file, without ever blocking.

    ``stat`` decides before the open, because opening a FIFO for reading waits
    for a writer; the open itself is non-blocking and refuses a final symlink
    (``path`` is already resolved, so one there was swapped in since), and
    ``fstat`` re-checks what was actually opened. Raises ``WorkspaceError`` for
    a non-regular file, ``FileRefused`` for a secret file (by name) or a hard
    link (on the opened descriptor, so a swap after the check changes nothing),
    and ``OSError`` when it cannot be opened. Every reader whose bytes reach the
    model opens through here; nothing else should.
    """
    if secret_files.active().matches(path.name):
        raise secret_refused(path.name)
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise WorkspaceError(f"{path} is {file_kind(mode)}, not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise WorkspaceError(f"{path} is {file_kind(info.st_mode)}, not a regular file")
        if info.st_nlink > 1:
            raise hard_link_refused(path.name, info.st_nlink)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise

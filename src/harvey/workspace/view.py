"""What of the workspace a confined command may see: everything but its secret files.

Landlock grants are allow-list only and hierarchical: a right granted on a
folder holds for everything beneath it. So the workspace cannot simply be
granted whole when it holds a ``.env``. ``workspace_view`` walks it once (no
links followed) and splits it:

- ``whole``: folders with no secret file at any depth, granted as one rule;
- ``split``: folders that hold a secret somewhere below, granted only listing
  (names are shown, contents are not: like ``list_files``);
- ``files``: the other entries of a split folder, granted one by one;
- ``secrets`` and ``secret_dirs``: what is left out (masked under bubblewrap,
  denied under sandbox-exec).

A file that is a hard link to a secret file (same device and inode) is a secret
too. A link inside the workspace that points at a secret file grants nothing:
the kernel checks the target, which has no rule. ``.git/objects`` (thousands
of hash-named files) and ``node_modules`` folders are granted without a walk.

The walk is bounded (``MAX_ENTRIES`` looked at, ``MAX_RULES`` rules): when it
cannot finish, ``WorkspaceTooBig`` says why and the command asks instead of
running unasked (fail closed).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from harvey.errors import ToolError
from harvey.workspace.secret_files import SecretFiles

MAX_ENTRIES = 100_000
MAX_RULES = 5_000
# Granted whole without a walk: git's objects (hash-named) and installed packages
# (tools write them, people do not keep keys there; a test certificate inside a
# package stays readable). A link with such a name is never granted.
UNWALKED = (".git/objects", ".git/lfs/objects")
UNWALKED_NAMES = ("node_modules",)


class WorkspaceTooBig(ToolError):
    """The walk that keeps secret files out of reach could not finish."""


@dataclass(frozen=True)
class WorkspaceView:
    root: str
    whole: tuple[str, ...] = ()
    split: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    secret_dirs: tuple[str, ...] = field(default=())

    @classmethod
    def everything(cls, root: str) -> WorkspaceView:
        return cls(root, whole=(root,))

    @property
    def hidden(self) -> tuple[str, ...]:
        return self.secrets + self.secret_dirs


@dataclass
class _Folder:
    path: str
    files: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    secret: bool = False  # holds a secret somewhere below


def workspace_view(
    workspace: Path | str,
    secret_files: SecretFiles,
    max_entries: int = MAX_ENTRIES,
    max_rules: int = MAX_RULES,
) -> WorkspaceView:
    """Split ``workspace`` (a real path) into what may be granted and what may not."""
    root = os.path.realpath(workspace)
    folders: dict[str, _Folder] = {}
    order: list[str] = []
    secrets: list[str] = []
    secret_dirs: list[str] = []
    secret_inodes: set[tuple[int, int]] = set()
    linked: list[tuple[str, tuple[int, int]]] = []  # files with st_nlink > 1
    seen = 0
    stack = [root]
    while stack:
        path = stack.pop()
        folder = folders[path] = _Folder(path)
        order.append(path)
        try:
            entries = list(os.scandir(path))
        except OSError as exc:
            raise WorkspaceTooBig(f"cannot list {path}: {exc.strerror}") from exc
        seen += len(entries)
        if seen > max_entries:
            raise WorkspaceTooBig(
                f"the workspace has more than {max_entries:,} entries, too many to keep "
                "its secret files out of a command's reach"
            )
        for entry in entries:
            relative = entry.path[len(root) + 1 :] if root != "/" else entry.path[1:]
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                folder.files.append(entry.path)  # never granted: the kernel checks its target
            elif is_dir and secret_files.matches(f"{relative}/-"):  # .ssh/: all of it
                secret_dirs.append(entry.path)
                folder.secret = True
            elif not is_dir and secret_files.matches(relative):
                secrets.append(entry.path)
                secret_inodes.add((info.st_dev, info.st_ino))
                folder.secret = True
            elif is_dir:
                folder.folders.append(entry.path)
                if relative not in UNWALKED and entry.name not in UNWALKED_NAMES:
                    stack.append(entry.path)
            else:
                folder.files.append(entry.path)
                if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                    linked.append((entry.path, (info.st_dev, info.st_ino)))
    for path, inode in linked:  # a hard link to a secret is that secret
        if inode in secret_inodes:
            secrets.append(path)
            parent = folders[os.path.dirname(path)]
            parent.files.remove(path)
            parent.secret = True
    for path in reversed(order):  # children before parents: a secret marks every ancestor
        if folders[path].secret and path != root:
            folders[os.path.dirname(path)].secret = True
    view = _grants(root, folders, secrets, secret_dirs)
    if len(view.split) + len(view.files) + len(view.whole) > max_rules:
        raise WorkspaceTooBig(
            f"keeping the workspace's secret files out of reach needs more than {max_rules:,} "
            "rules (many files beside them)"
        )
    return view


def _grants(
    root: str, folders: dict[str, _Folder], secrets: list[str], secret_dirs: list[str]
) -> WorkspaceView:
    if not folders[root].secret:
        return WorkspaceView.everything(root)
    whole: list[str] = []
    split: list[str] = []
    files: list[str] = []
    todo = [root]
    while todo:
        folder = folders[todo.pop()]
        split.append(folder.path)
        files.extend(folder.files)
        for child in folder.folders:
            if child in folders and folders[child].secret:
                todo.append(child)
            else:
                whole.append(child)
    return WorkspaceView(
        root, tuple(whole), tuple(split), tuple(files), tuple(secrets), tuple(secret_dirs)
    )

"""Which workspace files hold secrets by convention, and so are never read for the model.

Redaction can only hide a value it knows, whole; a model that pages through
``.env`` six bytes at a time, or a command that prints it in slices, defeats it.
So files that hold keys by convention are kept out of reach instead: the file
tools, search, ingest and analysis refuse them (``list_files`` still shows the
name), and confined commands cannot read them. ``security.secret_files`` adds
patterns of the user's own.

A pattern without ``/`` matches a file's name; one with ``/`` matches the path
relative to the workspace. Names are compared case-folded and NFKC-normalised,
so ``.ENV`` on a case-insensitive disk, or a full-width ``．env``, is the same
file. A file inside a folder that holds keys (``.ssh/``, ``.gnupg/``) is secret
whatever its name, and so is everything inside Harvey's own state folder
(``HARVEY_HOME``: the user's ``harvey.yaml``, the trust store, ``sessions.db``,
undo checkpoints, caches) when it lies inside the workspace (``own_state``), as
it does with ``harvey -w ~``.
"""

from __future__ import annotations

import fnmatch
import re
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import PurePath, PurePosixPath

#: File names that hold secrets by convention (matched case-insensitively).
DEFAULT_SECRET_FILES: tuple[str, ...] = (
    ".env",
    ".env.*",
    ".env*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".htpasswd",
    ".git-credentials",
    "credentials*",
    "kubeconfig*",
    ".kube/config",
    ".docker/config.json",
    # more of the same kind (issue 19): keys, secrets files, state and history that hold them
    "*.ppk",
    "*.keytab",
    "*.secret",
    "*.secrets",
    "secrets.*",
    ".secrets",
    "*.tfstate",
    "*.tfstate.*",
    "application_default_credentials.json",
    ".config/gh/hosts.yml",
    ".*_history",
)

#: Folders whose every file is a secret.
SECRET_FOLDERS: tuple[str, ...] = (".ssh", ".gnupg", ".aws", ".kube")


def _compile(patterns: Iterable[str]) -> re.Pattern[str]:
    """fnmatch patterns as one regex (``(?!)`` matches nothing when there are none)."""
    return re.compile("|".join(fnmatch.translate(p) for p in patterns) or "(?!)")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


class SecretFiles:
    """The secret-file rule of one workspace: the defaults plus ``security.secret_files``,
    and ``own``: the workspace-relative folders that hold Harvey's own state (its
    ``HARVEY_HOME`` when that lies inside the workspace), kept from the model and its
    commands like a folder of keys, whatever their names."""

    def __init__(self, extra: Iterable[str] = (), own: Iterable[str] = ()) -> None:
        self._own = tuple(
            tuple(_fold(p) for p in PurePosixPath(o).parts if p not in ("", ".", "/")) for o in own
        )
        self.own = tuple(own)
        patterns = [_fold(p.strip().strip("/")) for p in (*DEFAULT_SECRET_FILES, *extra)]
        self._names = tuple(p for p in patterns if p and "/" not in p)
        self._paths = tuple(p for p in patterns if "/" in p)
        self._folders = tuple(_fold(f) for f in SECRET_FOLDERS)
        # One compiled regex each (what fnmatchcase does per pattern): the sandbox asks
        # this of every entry of the workspace before each command.
        self._name_re = _compile(self._names)
        self._path_re = _compile([*self._paths, *("*/" + p for p in self._paths)])

    @property
    def names(self) -> tuple[str, ...]:
        """The patterns matched against a file's name (case-folded)."""
        return self._names

    @property
    def paths(self) -> tuple[str, ...]:
        """The patterns matched against a workspace-relative path, at any depth."""
        return self._paths

    @property
    def folders(self) -> tuple[str, ...]:
        """Folders whose every file is secret."""
        return self._folders

    def matches(self, relative: str | PurePath) -> bool:
        """True when the workspace-relative path ``relative`` is a secret file (or lies in
        a secret folder). Works on names alone: nothing is read or stat-ed."""
        parts = [_fold(p) for p in PurePosixPath(str(relative).replace("\\", "/")).parts]
        parts = [p for p in parts if p not in ("", ".", "/")]
        if not parts:
            return False
        if self._inside_own(parts):
            return True
        if any(part in self._folders for part in parts[:-1]):
            return True
        if self._name_re.match(parts[-1]):
            return True
        return bool(self._path_re.match("/".join(parts)))

    def _inside_own(self, parts: Sequence[str]) -> bool:
        return any(o and tuple(parts[: len(o)]) == o for o in self._own)

    def is_own(self, relative: str | PurePath) -> bool:
        """True when the workspace-relative path is Harvey's own state or inside it."""
        parts = [_fold(p) for p in PurePosixPath(str(relative).replace("\\", "/")).parts]
        return self._inside_own([p for p in parts if p not in ("", ".", "/")])

    def any_matches(self, paths: Sequence[str | PurePath]) -> bool:
        return any(self.matches(p) for p in paths)


DEFAULT = SecretFiles()


def own_state(workspace: str | PurePath, *roots: str | PurePath) -> tuple[str, ...]:
    """The workspace-relative spellings of Harvey's state folders that lie inside the
    workspace (both real paths, so a ``..`` or a link in either is seen through)."""
    import os

    base = os.path.realpath(workspace)
    inside: list[str] = []
    for root in roots:
        real = os.path.realpath(root)
        if real != base and real.startswith(base.rstrip("/") + "/"):
            inside.append(os.path.relpath(real, base).replace(os.sep, "/"))
    return tuple(inside)


def state_inside(workspace: str | PurePath, home: str | PurePath) -> str:
    """A warning when ``home`` (``HARVEY_HOME``) lies inside the workspace ("" when not),
    and ``WorkspaceError`` when the workspace is ``HARVEY_HOME`` itself or inside it: then
    everything the model could touch would be Harvey's own state."""
    import os

    from harvey.errors import WorkspaceError

    base, real = os.path.realpath(workspace), os.path.realpath(home)
    if base == real or base.startswith(real.rstrip("/") + "/"):
        raise WorkspaceError(
            f"the workspace {base} is inside HARVEY_HOME ({real}), where Harvey keeps your "
            "settings, the trust store and your sessions; run Harvey in another folder"
        )
    if not own_state(base, real):
        return ""
    return (
        f"HARVEY_HOME ({real}) is inside the workspace: your settings, the trust store, "
        "sessions and checkpoints there are kept from the model and its commands, like a "
        "secret folder (set HARVEY_HOME outside the workspace to silence this)"
    )


def for_workspace(
    workspace: str | PurePath, home: str | PurePath, extra: Iterable[str] = ()
) -> SecretFiles:
    """The rule of a session in ``workspace``: the secret files and Harvey's own state."""
    return SecretFiles(extra, own=own_state(workspace, home))


def is_secret_file(relative: str | PurePath, extra: Iterable[str] = ()) -> bool:
    """``SecretFiles(extra).matches(relative)``: the one-off form."""
    return (SecretFiles(extra) if extra else DEFAULT).matches(relative)


_lock = threading.Lock()
_active: SecretFiles | None = None


def install(rule: SecretFiles) -> SecretFiles:
    """Make ``rule`` (the defaults plus this run's ``security.secret_files``) the one every
    reader for the model asks: the CLI and ``open_runtime`` install it beside the redactor,
    so the file tools, search, ingest, analysis and mentioned files agree without each
    caller passing the settings down."""
    global _active
    with _lock:
        _active = rule
    return rule


def active() -> SecretFiles:
    """The installed rule, or the defaults before one is installed (library use): a reader
    that never saw the settings still refuses ``.env``."""
    with _lock:
        return _active if _active is not None else DEFAULT


def reset() -> None:
    """Forget the installed rule (tests)."""
    global _active
    with _lock:
        _active = None

"""The trust store: which workspace's ``harvey.yaml`` the user trusted, by its hash.

``HARVEY_HOME/trusted-workspaces.json`` maps a workspace's real path to the SHA-256 of
the file it was trusted for (``harvey.config.trust.digest``), so an edited file (a ``git
pull``) is a new question. Its own module, apart from the screening table in
``harvey.config.trust``: this part reads and writes a file of the user's, that part decides
what a file may set. ``read_bounded`` is how every settings file is read: a repository
can ship ``harvey.yaml`` as a link to ``/dev/zero``, a FIFO or a folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harvey.errors import ConfigError

#: The trust store's file name inside ``HARVEY_HOME``.
STORE_NAME = "trusted-workspaces.json"
STORE_VERSION = 1
#: A trust store is a few hundred bytes a workspace; one larger than this is not one.
MAX_STORE_BYTES = 16 << 20


@dataclass(frozen=True)
class Entry:
    workspace: str
    digest: str
    trusted_at: float


#: A settings file is a few hundred bytes; a bigger one than this is a mistake or an attack.
MAX_CONFIG_BYTES = 1 << 20


def read_bounded(
    path: Path, limit: int = MAX_CONFIG_BYTES, what: str = "a settings file"
) -> bytes | None:
    """The file's bytes, None when there is none. A repository can ship harvey.yaml as
    a link to ``/dev/zero``, a FIFO or a folder: only a regular file is read (the open
    never blocks), and only up to ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = f"a folder, not {what}" if stat.S_ISDIR(mode) else "not a regular file"
            raise ConfigError(f"{path}: {kind}")
        with os.fdopen(fd, "rb") as handle:
            fd = -1  # the handle owns it now
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    finally:
        if fd >= 0:
            os.close(fd)
    if len(raw) > limit:
        raise ConfigError(f"{path}: larger than {limit // 1024} KiB: not {what}")
    return raw


class TrustStore:
    """``HARVEY_HOME/trusted-workspaces.json``: workspace real path → the trusted file's hash.

    Written whole (0600, a temporary file renamed over the old one), so a reader
    never sees half a store; HARVEY_HOME is the user's own folder.
    """

    def __init__(self, harvey_home: Path, name: str = STORE_NAME) -> None:
        self.home = harvey_home
        self.name = name  # another file of the same shape: MCP servers approved by hash
        self.path = harvey_home / name

    def _read(self) -> dict[str, dict[str, Any]]:
        raw = read_bounded(self.path, MAX_STORE_BYTES, "a trust store Harvey wrote")
        if raw is None:
            return {}
        try:
            data = json.loads(raw)
            workspaces = data["workspaces"]
            if not isinstance(workspaces, dict):
                raise TypeError("workspaces is not a mapping")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{self.path}: not a trust store Harvey wrote ({exc}); remove it and trust again"
            ) from exc
        return {k: v for k, v in workspaces.items() if isinstance(v, dict)}

    def _write(self, workspaces: Mapping[str, Any]) -> None:
        from harvey.ownfiles.atomic import atomic_write
        from harvey.ownfiles.private import make_private_dirs

        payload = {"version": STORE_VERSION, "workspaces": dict(sorted(workspaces.items()))}
        try:
            make_private_dirs(self.home)
            atomic_write(self.path, (json.dumps(payload, indent=1) + "\n").encode(), mode=0o600)
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot write: {exc.strerror or exc}") from exc

    def is_trusted(self, workspace: Path | str, file_digest: str) -> bool:
        entry = self._read().get(_key(workspace))
        return entry is not None and entry.get("sha256") == file_digest

    def trust(self, workspace: Path | str, file_digest: str, **kept: str) -> None:
        """Record ``file_digest`` (with ``kept``: what the hash was of, to show a change)."""
        with self._locked():
            workspaces = self._read()
            entry = {"sha256": file_digest, "trusted_at": time.time(), **kept}
            workspaces[_key(workspace)] = entry
            self._write(workspaces)

    def kept(self, workspace: Path | str, name: str) -> str | None:
        """A text ``trust`` kept beside the hash, or None."""
        value = self._read().get(_key(workspace), {}).get(name)
        return value if isinstance(value, str) else None

    def recorded(self, workspace: Path | str) -> str | None:
        """The hash on record for ``workspace`` (or a text key), trusted or since changed."""
        entry = self._read().get(_key(workspace))
        return None if entry is None else str(entry.get("sha256", ""))

    def revoke(self, workspace: Path | str) -> bool:
        """Forget ``workspace``; False when it was not trusted."""
        with self._locked():
            workspaces = self._read()
            if workspaces.pop(_key(workspace), None) is None:
                return False
            self._write(workspaces)
            return True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer at a time: two sessions trusting at once both keep their entry."""
        import fcntl

        from harvey.ownfiles.private import make_private_dirs

        try:
            make_private_dirs(self.home)
            fd = os.open(self.home / f".{self.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot write: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def entries(self) -> list[Entry]:
        return [
            Entry(path, str(value.get("sha256", "")), float(value.get("trusted_at", 0) or 0))
            for path, value in sorted(self._read().items())
        ]


def _key(workspace: Path | str) -> str:
    """The workspace's real path (a link or ``..`` to a trusted folder is that folder); a
    text key is the caller's own (``harvey.mcp``: a workspace's real path and a server)."""
    return workspace if isinstance(workspace, str) else os.path.realpath(workspace)

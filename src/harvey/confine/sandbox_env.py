"""The environment and the private temporary folder of a confined command.

Only what programs need gets through (``scrubbed_env``); ``HOME`` and ``TMPDIR``
point at a fresh 0700 folder that is removed afterwards (``scratch_folder``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from harvey.redact import is_secret_env_name

KEPT_ENV = ("PATH", "LANG", "TERM")


def scrubbed_env(scratch: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Only what programs need: PATH, LANG, LC_*, TERM, and HOME/TMPDIR in ``scratch``.
    Nothing else of the user's (API keys, tokens, proxies with passwords) gets through."""
    environ = os.environ if environ is None else environ
    env = {
        name: value
        for name, value in environ.items()
        if (name in KEPT_ENV or name.startswith("LC_")) and not is_secret_env_name(name)
    }
    env.setdefault("PATH", os.defpath)
    env["HOME"] = env["TMPDIR"] = str(scratch)
    return env


@contextmanager
def scratch_folder() -> Iterator[Path]:
    """A private (0700) temporary folder for one command, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="harvey-cmd-"))
    try:
        yield folder
    finally:
        _remove_tree(folder)


def _remove_tree(folder: Path) -> None:
    """Remove a command's scratch folder whatever it left there, and never raise.

    The command may have made parts unreadable (``chmod 0``) or nested folders
    thousands deep (``os.walk`` and ``shutil.rmtree`` recurse, and paths that deep
    pass ``PATH_MAX``). So the walk holds one folder descriptor at a time, goes
    down by name and back up by ``..``, keeps only a stack of names, and makes
    each folder accessible before it enters it. A link is removed, never followed.
    The command and everything it started have ended, so nothing moves meanwhile.
    """
    try:
        os.chmod(folder, 0o700)
        fd = os.open(folder, _DIR_FLAGS)
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        return
    names: list[str] = []
    try:
        while True:
            below = _empty_but_folders(fd)
            if below is not None:
                with contextlib.suppress(OSError):
                    os.chmod(below, 0o700, dir_fd=fd)
                try:
                    child = os.open(below, _DIR_FLAGS, dir_fd=fd)
                except OSError:  # cannot enter it: leave it (it stays in /tmp)
                    return
                os.close(fd)
                fd, names = child, [*names, below]
                continue
            if not names:
                break
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            try:
                os.rmdir(names.pop(), dir_fd=fd)
            except OSError:  # something would not go: stop rather than loop
                return
    except OSError:
        return
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(folder)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)


def _empty_but_folders(fd: int) -> str | None:
    """Unlink every non-folder in the folder ``fd``; the name of one subfolder, if any."""
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                return entry.name
            with contextlib.suppress(OSError):
                os.unlink(entry.name, dir_fd=fd)
    return None

"""The environment and the private temporary folder of a confined command.

Only what programs need gets through (``scrubbed_env``); ``HOME`` and ``TMPDIR``
point at a fresh 0700 folder that is removed afterwards (``scratch_folder``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

KEPT_ENV = ("PATH", "LANG", "TERM")
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


def scrubbed_env(scratch: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Only what programs need: PATH, LANG, LC_*, TERM, and HOME/TMPDIR in ``scratch``.
    Nothing else of the user's (API keys, tokens, proxies with passwords) gets through."""
    environ = os.environ if environ is None else environ
    env = {
        name: value
        for name, value in environ.items()
        if (name in KEPT_ENV or name.startswith("LC_"))
        and not any(marker in name.upper() for marker in SECRET_MARKERS)
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
    """Remove a folder even if the command made parts of it unreadable (``chmod 0``):
    top-down, each subfolder is made accessible before the walk enters it."""
    for root, dirs, _files in os.walk(folder):
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):  # never chmod through a link out of the folder
                try:
                    os.chmod(path, 0o700)
                except OSError:
                    pass
    shutil.rmtree(folder, ignore_errors=True)

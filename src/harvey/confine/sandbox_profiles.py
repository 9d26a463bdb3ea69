"""The bubblewrap and sandbox-exec forms of a ``sandbox.Policy``.

Landlock is the confinement Harvey prefers on Linux (``landlock_launcher.py``);
these two give the same view where it is missing (bubblewrap) and on macOS
(sandbox-exec). Both take the workspace's secret files from ``Policy.parts``
(``workspace_view``): bubblewrap covers them, sandbox-exec denies them.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from harvey.confine.programs import system_program

if TYPE_CHECKING:
    from harvey.workspace.view import WorkspaceView


class Policy(Protocol):
    """What these forms read of a ``sandbox.Policy``; named here, so that this module
    sits below ``sandbox`` in the import graph (type-only imports count too)."""

    @property
    def workspace(self) -> str: ...
    @property
    def scratch(self) -> str: ...
    @property
    def approved(self) -> bool: ...
    @property
    def network(self) -> bool: ...
    @property
    def parts(self) -> WorkspaceView: ...
    @property
    def limits(self) -> Mapping[str, int]: ...
    def readable(self) -> list[str]: ...
    def writable(self) -> list[str]: ...


def bubblewrap_argv(policy: Policy, argv: list[str]) -> list[str]:
    """A mount namespace with the same view; its own PID namespace (``--unshare-all``)
    ends every process when the command does, ``--die-with-parent`` when Harvey does.
    Secret files are covered with an empty file, secret folders with an empty tmpfs;
    no host socket is mounted and the network namespace is empty."""
    bwrap = system_program("bwrap") or "/usr/bin/bwrap"
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL"]
    if policy.network:
        args.append("--share-net")
    for path in policy.readable():
        args += ["--ro-bind-try", path, path]
    args += ["--dev", "/dev"]  # a minimal /dev (null, zero, urandom, tty); no --proc
    quota = policy.limits.get("scratch")
    for path in policy.writable():
        if path == policy.scratch and quota and _bwrap_sizes_tmpfs(bwrap):
            # The disk quota, as under Landlock (bubblewrap cannot bound its file count).
            args += ["--perms", "0700", "--size", str(quota), "--tmpfs", path]
        else:
            args += ["--bind", path, path]
    parts = policy.parts
    for path in parts.secrets:
        args += ["--ro-bind", "/dev/null", path]
    for path in parts.secret_dirs:
        args += ["--tmpfs", path, "--remount-ro", path]
    return [*args, "--chdir", policy.workspace, "--", *argv]


@functools.cache
def _bwrap_sizes_tmpfs(bwrap: str) -> bool:
    """Whether this bubblewrap has ``--size`` (0.8 and later)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--size" in done.stdout


SEATBELT_BASE = """(version 1)
(deny default)
(allow process-exec process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow file-read-metadata)
(allow file-read*
  (subpath "/usr") (subpath "/bin") (subpath "/sbin") (subpath "/System")
  (subpath "/Library/Apple") (subpath "/private/var/db/dyld")
  (subpath "/System/Volumes/Preboot/Cryptexes")
  (literal "/private/etc/localtime") (subpath "/private/var/db/timezone")
  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/urandom") (literal "/dev/random"))
(allow file-write-data (literal "/dev/null"))
(allow file-read* (subpath (param "WORKSPACE")))
(allow file-read* file-write* (subpath (param "SCRATCH")))
"""
SEATBELT_APPROVED = """(allow file-write* (subpath (param "WORKSPACE")))
(allow network*)
(allow file-read* (literal "/private/etc/resolv.conf") (literal "/private/etc/hosts")
  (subpath "/private/etc/ssl"))
(allow mach-lookup (global-name "com.apple.dnssd.service"))
"""


def seatbelt_profile(policy: Policy) -> str:
    """The SBPL profile: deny by default, like the Landlock rules, then deny the secret
    files and folders (later rules win). Paths come in as ``-D`` parameters, so no path
    is ever spliced into the profile text."""
    parts = policy.parts
    denied = [f'(literal (param "SECRET_{i}"))' for i in range(len(parts.secrets))]
    denied += [f'(subpath (param "SECRET_DIR_{i}"))' for i in range(len(parts.secret_dirs))]
    deny = f"(deny file-read* file-write* {' '.join(denied)})\n" if denied else ""
    return SEATBELT_BASE + (SEATBELT_APPROVED if policy.approved else "") + deny


def seatbelt_argv(policy: Policy, argv: list[str]) -> list[str]:
    return [
        "/usr/bin/sandbox-exec",
        "-p",
        seatbelt_profile(policy),
        "-D",
        f"WORKSPACE={policy.workspace}",
        "-D",
        f"SCRATCH={policy.scratch}",
        *[f"-D{name}={path}" for name, path in _secret_params(policy)],
        "--",
        *argv,
    ]


def _secret_params(policy: Policy) -> list[tuple[str, str]]:
    parts = policy.parts
    named = [(f"SECRET_{i}", path) for i, path in enumerate(parts.secrets)]
    return named + [(f"SECRET_DIR_{i}", path) for i, path in enumerate(parts.secret_dirs)]

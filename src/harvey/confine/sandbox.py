"""OS confinement for every command Harvey runs: detect it, describe it, wrap argv in it.

The allow-list and option checks in ``shell.py`` are a second line; the first
is the kernel. A command runs inside one of:

- **Landlock** (Linux, ABI >= 3): ``landlock_launcher.py`` builds a ruleset in
  a fresh interpreter, restricts itself and execs the command, so the command
  and all its children can read and execute only the workspace and the system
  folders programs need, write only a private temporary folder, reach no
  ``/proc``, no home, no TCP (ABI >= 4), no signals or abstract sockets outside
  their domain (ABI >= 6); besides Landlock the launcher drops every
  capability, installs a seccomp filter (no sockets offline, no Unix sockets
  unless the user allows them to approved commands, no io_uring), sets the
  ``security.limits`` and, as a child subreaper, ends every descendant when
  the command returns or is stopped.
- **bubblewrap** (Linux, when Landlock is missing and ``bwrap`` works): the
  same view built as a mount namespace with no ``/proc`` and no network, its
  own PID namespace, no capabilities and the same seccomp filter.
- **sandbox-exec** (macOS): an SBPL profile with the same rules.

The workspace is never granted whole when it holds secret files
(``workspace_view``): they get no read right under Landlock, are covered
under bubblewrap and denied under sandbox-exec.

Commands the user approved get a second profile (``Policy.approved``): they may
also write inside the workspace and use the network, because the person saw the
exact command line; they still cannot read the home folder or anything outside.
When nothing is available (or ``security.sandbox: none``) ``Confinement.active``
is False and the caller must ask before every command (fail closed).
"""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harvey.confine.programs import system_program
from harvey.confine.sandbox_env import KEPT_ENV, scratch_folder, scrubbed_env
from harvey.confine.sandbox_profiles import (
    SEATBELT_APPROVED,
    SEATBELT_BASE,
    bubblewrap_argv,
    seatbelt_argv,
    seatbelt_profile,
)
from harvey.workspace.view import WorkspaceView

__all__ = [
    "KEPT_ENV",
    "SEATBELT_APPROVED",
    "SEATBELT_BASE",
    "Confinement",
    "Launch",
    "Policy",
    "bubblewrap_argv",
    "detect",
    "launch",
    "scratch_folder",
    "scrubbed_env",
    "seatbelt_argv",
    "seatbelt_profile",
    "wrap",
]

Kind = Literal["landlock", "bubblewrap", "sandbox-exec", "none"]
MODES = ("auto", "landlock", "bubblewrap", "sandbox-exec", "none")
LAUNCHER = Path(__file__).with_name("landlock_launcher.py")
INLINE_SPEC_BYTES = 64 * 1024  # under MAX_ARG_STRLEN (128 KiB); bigger goes through a memfd

# ABI 3 is the first that handles truncate(2); below it a "read-only" command
# could still empty a workspace file, so older kernels do not count as confined.
LANDLOCK_MIN_ABI = 3
LANDLOCK_CREATE_RULESET = 444  # same number on x86_64 and aarch64
LANDLOCK_CREATE_RULESET_VERSION = 1

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Only what the dynamic loader, locale, time zone and file(1) read: /etc/passwd,
# /etc/shadow and the rest of /etc stay unreadable.
SYSTEM_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.preload",
    "/etc/locale.alias",
    "/etc/localtime",
    "/etc/magic",
    "/etc/magic.mime",
)
# What a networked (approved) command needs to resolve names and check TLS.
NETWORK_FILES = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/ssl",
    "/etc/ca-certificates",
)
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")


@dataclass(frozen=True)
class Confinement:
    """The confinement in force. ``kind == "none"`` means commands run unconfined."""

    kind: Kind
    abi: int = 0  # Landlock ABI, 0 for the others
    reason: str = ""  # for "none": why nothing is available

    @property
    def active(self) -> bool:
        return self.kind != "none"

    def describe(self) -> str:
        """One line for ``harvey doctor``, ``--version`` and ``/status``."""
        if not self.active:
            return f"none ({self.reason}): every command asks first; batch mode refuses them"
        if self.kind == "landlock":
            net = "no network" if self.abi >= 4 else "network NOT confined (ABI < 4)"
            scope = "" if self.abi >= 6 else ", signals not scoped (ABI < 6)"
            return f"landlock (ABI {self.abi}): workspace read-only, {net}, no /proc{scope}"
        if self.kind == "bubblewrap":
            return "bubblewrap: workspace read-only, no network, no /proc"
        return "sandbox-exec: workspace read-only, no network"


@dataclass(frozen=True)
class Policy:
    """What one command may touch. Paths are resolved (Landlock and SBPL see real paths).

    ``view`` is the workspace split around its secret files (``workspace_view``);
    without one the workspace is granted whole. ``limits`` are the resource limits
    in counts, bytes and seconds (``command_limits``)."""

    workspace: str
    scratch: str  # the private temporary folder: HOME and TMPDIR, removed afterwards
    approved: bool = False  # the user said yes: may write the workspace, may use the network
    read: tuple[str, ...] = field(default=SYSTEM_DIRS + SYSTEM_FILES)
    view: WorkspaceView | None = None
    limits: Mapping[str, int] = field(default_factory=dict)
    unix_sockets: bool = False  # approved commands may use pathname Unix sockets
    net: bool | None = None  # the network, apart from approval (an MCP server's entry says)
    writes: tuple[str, ...] = ()  # folders it may also write (and read): an MCP server's grant

    @classmethod
    def for_command(
        cls,
        workspace: Path,
        scratch: Path,
        approved: bool = False,
        *,
        view: WorkspaceView | None = None,
        limits: Mapping[str, int] | None = None,
        unix_sockets: bool = False,
    ) -> Policy:
        real = os.path.realpath(workspace)
        return cls(
            real,
            os.path.realpath(scratch),
            approved,
            view=view,
            limits=dict(limits or {}),
            unix_sockets=unix_sockets and approved,
        )

    @property
    def network(self) -> bool:
        return self.approved if self.net is None else self.net

    @property
    def parts(self) -> WorkspaceView:
        return self.view if self.view is not None else WorkspaceView.everything(self.workspace)

    def readable(self) -> list[str]:
        extra = NETWORK_FILES if self.network else ()
        return [*self.read, *extra, *([] if self.approved else [self.workspace])]

    def writable(self) -> list[str]:
        return [self.scratch, *self.writes, *([self.workspace] if self.approved else [])]

    def search_path(self, path: str) -> str:
        """PATH cut to system folders a confined command may execute from: never the
        workspace (a cloned repository's ``.venv/bin`` or ``bin/`` would shadow ``ls``),
        never a relative, empty or missing entry, never the home folder (a program
        there would be "not found" rather than shadowing the system one)."""
        roots = [os.path.realpath(p) for p in (*self.read, *NETWORK_FILES)]
        inside = [self.workspace, self.scratch]
        keep = []
        for folder in path.split(os.pathsep):
            if not os.path.isabs(folder):
                continue
            real = os.path.realpath(folder)
            if os.path.isdir(real) and _beneath(real, roots) and not _beneath(real, inside):
                keep.append(folder)
        return os.pathsep.join(dict.fromkeys(keep)) or "/usr/bin:/bin"


def command_limits(limits: object) -> dict[str, int]:
    """``security.limits`` (MB and seconds) as the launcher's counts, bytes and seconds."""
    mb = 1024 * 1024
    return {
        "processes": int(getattr(limits, "processes", 1024)),
        "file_size": int(getattr(limits, "file_size_mb", 4096)) * mb,
        "cpu": int(getattr(limits, "cpu_seconds", 3600)),
        "memory": int(getattr(limits, "memory_mb", 16_384)) * mb,
        "scratch": int(getattr(limits, "scratch_mb", 2048)) * mb,
        "scratch_files": int(getattr(limits, "scratch_files", 100_000)),
    }


def process_limit() -> str:
    """How ``security.limits.processes`` is enforced here, for ``harvey doctor``: the
    kernel never applies RLIMIT_NPROC to root, so as root it takes a ``pids`` cgroup."""
    if os.geteuid() != 0:
        return "RLIMIT_NPROC (processes of your user now + the limit)"
    try:
        with open("/sys/fs/cgroup/cgroup.subtree_control") as handle:
            v2 = "pids" in handle.read().split()
    except OSError:
        v2 = False
    if v2 or os.access("/sys/fs/cgroup/pids/cgroup.procs", os.W_OK):
        return "a pids cgroup per command (running as root)"
    return "NOT enforced: running as root and no pids cgroup can be made"


def _beneath(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


# -- detection ---------------------------------------------------------------------


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64", "arm64"):
        return 0
    import ctypes  # only when a command is about to run confined, not at every start

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(
            LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), LANDLOCK_CREATE_RULESET_VERSION
        )
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def _probe(argv: list[str]) -> bool:
    """Run a trivial command under a sandbox tool once, to see that it really works
    here (user namespaces may be disabled, a container may forbid mounts)."""
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def bubblewrap_works() -> bool:
    """Whether ``bwrap`` runs ``true`` with exactly the arguments commands will get."""
    if system_program("bwrap") is None:
        return False
    with scratch_folder() as folder:
        return _probe(bubblewrap_argv(Policy.for_command(folder, folder), ["true"]))


def mount_view_works() -> bool:
    """Whether a command gets the read-only mount view here (``launcher_mounts.py``):
    without it metadata changes are refused to unapproved commands only."""
    if sys.platform != "linux" or not sys.executable:
        return False
    return _probe([sys.executable, "-I", "-S", str(LAUNCHER.with_name("launcher_mounts.py"))])


def seatbelt_works() -> bool:
    if sys.platform != "darwin" or not os.path.exists("/usr/bin/sandbox-exec"):
        return False
    return _probe(["/usr/bin/sandbox-exec", "-p", "(version 1)(allow default)", "/usr/bin/true"])


@functools.cache
def detect(mode: str = "auto") -> Confinement:
    """The confinement for a ``security.sandbox`` value; cached, probes run once."""
    if mode == "none":
        return Confinement("none", reason="security.sandbox is none")
    if mode in ("auto", "landlock"):
        abi = landlock_abi() if sys.executable else 0  # the launcher needs an interpreter
        if abi >= LANDLOCK_MIN_ABI:
            return Confinement("landlock", abi)
        if mode == "landlock":
            found = f"ABI {abi}" if abi else "not available"
            return Confinement("none", reason=f"Landlock ABI >= {LANDLOCK_MIN_ABI} needed, {found}")
    if mode in ("auto", "bubblewrap"):
        if sys.platform == "linux" and bubblewrap_works():
            return Confinement("bubblewrap")
        if mode == "bubblewrap":
            return Confinement("none", reason="bwrap is not installed or does not work here")
    if mode in ("auto", "sandbox-exec"):
        if seatbelt_works():
            return Confinement("sandbox-exec")
        if mode == "sandbox-exec":
            return Confinement("none", reason="sandbox-exec is not available (macOS only)")
    if mode not in MODES:
        return Confinement("none", reason=f"unknown security.sandbox value {mode!r}")
    return Confinement("none", reason="no OS confinement available on this system")


# -- wrapping ------------------------------------------------------------------------


@dataclass
class Launch:
    """The argv to run, and the file descriptors it must inherit (the launcher's policy
    when it is too big for an argument); ``close`` after the process has started."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()

    def close(self) -> None:
        for fd in self.pass_fds:
            os.close(fd)


def launch(confinement: Confinement, policy: Policy, argv: list[str]) -> Launch:
    """How to run ``argv`` under ``confinement`` with ``policy``."""
    if confinement.kind == "landlock":
        text = json.dumps(landlock_spec(policy, confinement.abi))
        if len(text) < INLINE_SPEC_BYTES:
            return Launch(launcher_argv(text, argv))
        fd = _memfd(text.encode())
        return Launch(launcher_argv(None, argv, fd), (fd,))
    if confinement.kind == "bubblewrap":
        return _bubblewrap_launch(policy, argv)
    if confinement.kind == "none" and sys.platform == "linux" and sys.executable:
        # Unconfined (every command was approved), but still limited and reaped.
        return Launch(launcher_argv(json.dumps(_limits_only(policy)), argv))
    return Launch(wrap(confinement, policy, argv))


def _limits_only(policy: Policy) -> dict[str, object]:
    return {"abi": 0, "limits_only": True, "limits": dict(policy.limits), "parent": os.getpid()}


def _bubblewrap_launch(policy: Policy, argv: list[str]) -> Launch:
    """bubblewrap with the launcher's seccomp filter (``--seccomp FD``), under the
    launcher in ``limits_only`` mode for the resource limits and the supervision."""
    from harvey.confine.launcher_seccomp import ARCHES, filter_program

    wrapped = bubblewrap_argv(policy, argv)
    fds: tuple[int, ...] = ()
    machine = os.uname().machine
    if machine in ARCHES:
        fd = _memfd(filter_program(machine, policy.network, policy.unix_sockets))
        at = wrapped.index("--")
        wrapped[at:at] = ["--seccomp", str(fd)]
        fds = (fd,)
    return Launch(launcher_argv(json.dumps(_limits_only(policy)), wrapped), fds)


def _memfd(data: bytes) -> int:
    fd = os.memfd_create("harvey-policy", os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def wrap(confinement: Confinement, policy: Policy, argv: list[str]) -> list[str]:
    """The argv that runs ``argv`` under ``confinement`` (the policy inline)."""
    if confinement.kind == "landlock":
        return landlock_argv(policy, confinement.abi, argv)
    if confinement.kind == "bubblewrap":
        return bubblewrap_argv(policy, argv)
    if confinement.kind == "sandbox-exec":
        return seatbelt_argv(policy, argv)
    return list(argv)


def landlock_spec(policy: Policy, abi: int) -> dict[str, object]:
    """The launcher's policy: system folders, the workspace's parts around its secret
    files (listing only where a folder holds one), the scratch folder, the limits."""
    parts = policy.parts
    spec: dict[str, object] = {
        "abi": abi,
        "read": [*policy.read, *(NETWORK_FILES if policy.network else ()), *policy.writes],
        "write": [policy.scratch, *policy.writes],
        "files": list(parts.files),
        "devices": list(DEVICES),
        "net": policy.network,
        "unix": policy.unix_sockets,
        "limits": dict(policy.limits),
        "parent": os.getpid(),
        "workspace": policy.workspace,
        "scratch": policy.scratch,
        "approved": policy.approved,
        "bound": list(policy.writes),  # writable in the mount view too
    }
    if policy.approved:  # everything but reading the secrets
        spec["write"] = [policy.scratch, *policy.writes, *parts.whole]
        spec["dir_write"] = list(parts.split)
        spec["files_write"] = True
        spec["readonly"] = list(parts.hidden)
    else:
        spec["read"] = [*spec["read"], *parts.whole]  # type: ignore[misc]
        spec["list"] = list(parts.split)
    return spec


def landlock_argv(policy: Policy, abi: int, argv: list[str]) -> list[str]:
    return launcher_argv(json.dumps(landlock_spec(policy, abi)), argv)


def launcher_argv(spec: str | None, argv: list[str], spec_fd: int | None = None) -> list[str]:
    # -I: ignore PYTHON* variables and user site; -S: no site-packages.
    given = [spec] if spec is not None else ["--spec-fd", str(spec_fd)]
    return [sys.executable, "-I", "-S", str(LAUNCHER), *given, "--", *argv]

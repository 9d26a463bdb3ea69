"""The kernel-level parts of a confined command besides Landlock: seccomp, capabilities, limits.

Loaded by ``landlock_launcher.py`` by path, in the forked child just before it
execs the command; stdlib-only for the same reason as the launcher (nothing of
the user's environment runs first).

- ``install_filter``: a classic-BPF seccomp program. It kills the process on a
  foreign architecture (an i386 ``int 0x80`` or x32 call would bypass the
  syscall numbers checked here), denies ``io_uring_setup`` (io_uring can open
  sockets without calling ``socket``), and makes ``socket()`` fail with EPERM:
  every family for a command without network (UDP is not Landlock's), and
  ``AF_UNIX`` for the others unless the user's config allows Unix sockets.
  ``socketpair`` stays: an unnamed pair reaches nothing outside.
- ``drop_capabilities``: the bounding set, ambient, inheritable, permitted and
  effective sets all emptied, so even root execs with no capability.
- ``set_limits``: RLIMIT_NPROC/FSIZE/CPU/AS from ``security.limits`` (and no
  core files). RLIMIT_NPROC counts every process of the user and the kernel
  never applies it to uid 0, so the process limit is "what the user runs now +
  the limit", and as root a ``pids`` cgroup carries it where one can be made.
"""

from __future__ import annotations

import ctypes
import os
import resource
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522

# machine -> (AUDIT_ARCH_*, __NR_socket, __NR_io_uring_setup)
ARCHES = {
    "x86_64": (0xC000003E, 41, 425),
    "aarch64": (0xC00000B7, 198, 425),
    "arm64": (0xC00000B7, 198, 425),
}
X32_SYSCALL_BIT = 0x40000000
AF_UNIX = 1
SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_ERRNO, SECCOMP_RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
EPERM = 1
# BPF opcodes: BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_JMP|BPF_JGE|BPF_K, BPF_RET|BPF_K
LD_ABS, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06
NR, ARCH, ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arg0's low half, little-endian)
CGROUP_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/pids")


def filter_program(machine: str, allow_inet: bool, allow_unix: bool) -> bytes:
    """The BPF program as the kernel's ``struct sock_filter`` array."""
    arch, socket_nr, uring_nr = ARCHES[machine]
    deny = SECCOMP_RET_ERRNO | EPERM
    socket_rule = [(RET, 0, 0, deny)]  # offline: no socket at all
    if allow_inet:
        allow = SECCOMP_RET_ALLOW if allow_unix else deny
        socket_rule = [(LD_ABS, 0, 0, ARG0), (JEQ, 0, 1, AF_UNIX), (RET, 0, 0, allow)]
        socket_rule.append((RET, 0, 0, SECCOMP_RET_ALLOW))
    program = [
        (LD_ABS, 0, 0, ARCH),
        (JEQ, 1, 0, arch),
        (RET, 0, 0, SECCOMP_RET_KILL_PROCESS),
        (LD_ABS, 0, 0, NR),
        (JGE, 0, 1, X32_SYSCALL_BIT),  # x32 numbers alias the x86_64 ones plus this bit
        (RET, 0, 0, SECCOMP_RET_KILL_PROCESS),
        (JEQ, 0, 1, uring_nr),
        (RET, 0, 0, deny),
        (JEQ, 1, 0, socket_nr),
        (RET, 0, 0, SECCOMP_RET_ALLOW),
        *socket_rule,
    ]
    return b"".join(struct.pack("=HBBI", *op) for op in program)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_filter(libc: ctypes.CDLL, allow_inet: bool, allow_unix: bool) -> None:
    """Apply the filter to this process (needs no_new_privs, set before)."""
    machine = os.uname().machine
    if machine not in ARCHES:
        raise OSError(0, f"no seccomp filter for {machine}")
    code = filter_program(machine, allow_inet, allow_unix)
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def last_capability() -> int:
    """The highest capability number; read before Landlock hides /proc."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 63


def drop_capabilities(libc: ctypes.CDLL, last: int) -> None:
    """Empty every capability set; after this even root execs powerless."""
    header, data = CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    holds = any(d.permitted or d.effective or d.inheritable for d in data)
    for cap in range(last + 1):
        # Without CAP_SETPCAP (an ordinary user) the drop fails; it is harmless then:
        # such a process holds nothing, and no_new_privs keeps exec from granting more.
        failed = libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
        if failed and holds and ctypes.get_errno() != 22:  # EINVAL: no such capability
            raise OSError(ctypes.get_errno(), f"PR_CAPBSET_DROP {cap}")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    empty = (CapData * 2)()
    header = CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    if libc.capset(ctypes.byref(header), empty) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def user_tasks() -> int:
    """How many tasks (threads count) this user runs now: RLIMIT_NPROC counts them all."""
    uid, count = os.getuid(), 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                continue
    return count


def set_limits(limits: dict[str, Any]) -> None:
    """Lower (never raise) each limit; values are counts, bytes and seconds."""
    wanted = {resource.RLIMIT_CORE: 0}
    if limits.get("processes"):
        wanted[resource.RLIMIT_NPROC] = user_tasks() + int(limits["processes"])
    for key, which in (
        ("file_size", resource.RLIMIT_FSIZE),
        ("cpu", resource.RLIMIT_CPU),
        ("memory", resource.RLIMIT_AS),
    ):
        if limits.get(key):
            wanted[which] = int(limits[key])
    for which, value in wanted.items():
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def process_cgroup(limits: dict[str, Any]) -> str | None:
    """As root (where RLIMIT_NPROC does not apply), a fresh ``pids`` cgroup holding
    the process limit; None when there is no limit, no root or no such cgroup."""
    processes = limits.get("processes")
    if not processes or os.geteuid() != 0:
        return None
    for root in CGROUP_ROOTS:
        v2 = root == "/sys/fs/cgroup"
        if (v2 and not _v2_has_pids(root)) or not os.path.exists(f"{root}/cgroup.procs"):
            continue
        folder = os.path.join(root, f"harvey-cmd-{os.getpid()}")
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            continue
        try:
            with open(os.path.join(folder, "pids.max"), "w") as handle:
                handle.write(str(int(processes)))
        except OSError:
            remove_cgroup(folder)
            continue
        return folder
    return None


def _v2_has_pids(root: str) -> bool:
    try:
        with open(os.path.join(root, "cgroup.subtree_control")) as handle:
            return "pids" in handle.read().split()
    except OSError:
        return False


def join_cgroup(folder: str | None) -> None:
    if folder is not None:
        with open(os.path.join(folder, "cgroup.procs"), "w") as handle:
            handle.write("0")


def remove_cgroup(folder: str | None) -> None:
    if folder is not None:
        try:
            os.rmdir(folder)
        except OSError:
            pass

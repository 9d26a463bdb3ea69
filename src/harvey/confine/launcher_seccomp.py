"""The kernel-level parts of a confined command besides Landlock: seccomp, capabilities, limits.

Loaded by ``landlock_launcher.py`` by path, in the forked child just before it
execs the command; stdlib-only for the same reason as the launcher (nothing of
the user's environment runs first).

- ``install_filter``: a classic-BPF seccomp program for what Landlock does not
  cover. It kills the process on a foreign architecture (an i386 ``int 0x80`` or
  x32 call would bypass the syscall numbers checked here) and makes these fail
  with EPERM: ``io_uring_setup`` (io_uring can open sockets without calling
  ``socket``); ``socket()`` of every family for a command without network (UDP
  is not Landlock's) and of ``AF_UNIX`` for the others unless the user's config
  allows Unix sockets (``socketpair`` stays: an unnamed pair reaches nothing);
  the kernel keyring; ``memfd_create``; changing another process's limits,
  priority, CPUs or memory placement; and, where no read-only mount view could
  be made (``launcher_mounts.py``), every metadata change to unapproved commands.
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


class Table:
    """One architecture's audit number and the syscall numbers the filter names."""

    def __init__(self, arch: int, numbers: dict[str, int]) -> None:
        self.arch, self.numbers = arch, {**numbers, **GENERIC}

    def __getitem__(self, name: str) -> int:
        return self.numbers[name]

    def get(self, name: str) -> int | None:
        return self.numbers.get(name)


# Numbers shared by every architecture since the syscall table was unified (Linux 5.1+).
GENERIC = {
    "io_uring_setup": 425,
    "memfd_secret": 447,
    "fchmodat2": 452,
    "setxattrat": 463,
    "removexattrat": 466,
    "file_setattr": 469,
}
X86_64 = Table(
    0xC000003E,
    {
        "socket": 41, "add_key": 248, "request_key": 249, "keyctl": 250, "memfd_create": 319,
        "prlimit64": 302, "setpriority": 141, "sched_setparam": 142, "sched_setscheduler": 144,
        "sched_setaffinity": 203, "sched_setattr": 314, "ioprio_set": 251, "migrate_pages": 256,
        "move_pages": 279, "ioctl": 16, "chmod": 90, "fchmod": 91, "chown": 92, "fchown": 93,
        "lchown": 94, "utime": 132, "utimes": 235, "futimesat": 261, "fchownat": 260,
        "fchmodat": 268, "utimensat": 280, "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190,
        "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199,
    },
)  # fmt: skip
AARCH64 = Table(
    0xC00000B7,
    {
        "socket": 198, "add_key": 217, "request_key": 218, "keyctl": 219, "memfd_create": 279,
        "prlimit64": 261, "setpriority": 140, "sched_setparam": 118, "sched_setscheduler": 119,
        "sched_setaffinity": 122, "sched_setattr": 274, "ioprio_set": 30, "migrate_pages": 238,
        "move_pages": 239, "ioctl": 29, "fchmod": 52, "fchmodat": 53, "fchownat": 54,
        "fchown": 55, "utimensat": 88, "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7,
        "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16,
    },
)  # fmt: skip
ARCHES = {"x86_64": X86_64, "aarch64": AARCH64, "arm64": AARCH64}

# Always refused: the kernel keyring (a secret kept there would be read back),
# anonymous memory files (a program run from one escapes Landlock's execute rule).
REFUSED = ("add_key", "request_key", "keyctl", "memfd_create", "memfd_secret")
# Refused unless aimed at the caller itself (argument 0 is 0): another process's
# limits, CPUs, scheduling, memory placement.
SELF_ONLY = (
    "prlimit64",
    "sched_setparam",
    "sched_setscheduler",
    "sched_setaffinity",
    "sched_setattr",
    "migrate_pages",
    "move_pages",
)
# (which, who): allowed only for who == 0 and never for a whole user's processes.
PRIORITY = {"setpriority": 2, "ioprio_set": 3}  # PRIO_USER, IOPRIO_WHO_USER
# Metadata changes, refused when no read-only mount view could be made.
METADATA = (
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
    "utime", "utimes", "futimesat", "utimensat", "setxattr", "lsetxattr", "fsetxattr",
    "setxattrat", "removexattr", "lremovexattr", "fremovexattr", "removexattrat",
    "file_setattr",
)  # fmt: skip
# chattr's ioctls: FS_IOC_SETFLAGS (both sizes) and FS_IOC_FSSETXATTR.
METADATA_IOCTLS = (0x40086602, 0x40046602, 0x401C5820)

X32_SYSCALL_BIT = 0x40000000
AF_UNIX = 1
SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_ERRNO, SECCOMP_RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
EPERM = 1
DENY = SECCOMP_RET_ERRNO | EPERM
# BPF opcodes: BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_JMP|BPF_JGE|BPF_K, BPF_RET|BPF_K
LD_ABS, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06
NR, ARCH = 0, 4  # offsets in struct seccomp_data
CGROUP_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/pids")

Op = tuple[int, int, int, int]


def arg(index: int) -> int:
    """Offset of argument ``index``'s low 32 bits (little-endian): the kernel reads an
    ``int`` pid or flag from them alone, so the high half cannot smuggle a value."""
    return 16 + 8 * index


def filter_program(
    machine: str, allow_inet: bool, allow_unix: bool, allow_metadata: bool = True
) -> bytes:
    """The BPF program as the kernel's ``struct sock_filter`` array."""
    table = ARCHES[machine]
    program: list[Op] = [
        (LD_ABS, 0, 0, ARCH),
        (JEQ, 1, 0, table.arch),
        (RET, 0, 0, SECCOMP_RET_KILL_PROCESS),
        (LD_ABS, 0, 0, NR),
        (JGE, 0, 1, X32_SYSCALL_BIT),  # x32 numbers alias the x86_64 ones plus this bit
        (RET, 0, 0, SECCOMP_RET_KILL_PROCESS),
    ]
    refused = [*REFUSED, "io_uring_setup", *(() if allow_metadata else METADATA)]
    for name in refused:
        number = table.get(name)
        if number is not None:  # aarch64 has no chmod, only fchmodat
            program += [(JEQ, 0, 1, number), (RET, 0, 0, DENY)]
    for name in SELF_ONLY:
        program += _when(table[name], [*_unless_zero(arg(0))])
    for name, whole_user in PRIORITY.items():
        body = [(LD_ABS, 0, 0, arg(0)), (JEQ, 3, 0, whole_user), *_unless_zero(arg(1))]
        program += _when(table[name], body)
    if not allow_metadata:
        body = [(LD_ABS, 0, 0, arg(1))]
        for number in METADATA_IOCTLS:
            body.append((JEQ, 0, 1, number))
            body.append((RET, 0, 0, DENY))
        program += _when(table["ioctl"], [*body, (RET, 0, 0, SECCOMP_RET_ALLOW)])
    program += _sockets(table["socket"], allow_inet, allow_unix)
    program.append((RET, 0, 0, SECCOMP_RET_ALLOW))
    return b"".join(struct.pack("=HBBI", *op) for op in program)


def _when(number: int, body: list[Op]) -> list[Op]:
    """``body`` for syscall ``number`` (it must end every path in a return: it loads
    arguments over the number), skipped for any other."""
    return [(JEQ, 0, len(body), number), *body]


def _unless_zero(offset: int) -> list[Op]:
    return [
        (LD_ABS, 0, 0, offset),
        (JEQ, 0, 1, 0),
        (RET, 0, 0, SECCOMP_RET_ALLOW),
        (RET, 0, 0, DENY),
    ]


def _sockets(number: int, allow_inet: bool, allow_unix: bool) -> list[Op]:
    """Offline: no socket at all. Online: every family but AF_UNIX, which only the
    user's config allows (``socketpair`` stays: an unnamed pair reaches nothing)."""
    if not allow_inet:
        return _when(number, [(RET, 0, 0, DENY)])
    unix = SECCOMP_RET_ALLOW if allow_unix else DENY
    body = [(LD_ABS, 0, 0, arg(0)), (JEQ, 0, 1, AF_UNIX), (RET, 0, 0, unix)]
    return _when(number, [*body, (RET, 0, 0, SECCOMP_RET_ALLOW)])


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_filter(
    libc: ctypes.CDLL, allow_inet: bool, allow_unix: bool, allow_metadata: bool = True
) -> None:
    """Apply the filter to this process (needs no_new_privs, set before)."""
    machine = os.uname().machine
    if machine not in ARCHES:
        raise OSError(0, f"no seccomp filter for {machine}")
    code = filter_program(machine, allow_inet, allow_unix, allow_metadata)
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

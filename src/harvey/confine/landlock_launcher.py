"""Confine a command with Landlock, seccomp, no capabilities and limits; outlive none of it.

Run as ``python -I -S landlock_launcher.py --spec-fd N -- ARGV...`` (or with the
policy JSON in place of ``--spec-fd N``). The process splits in two:

- the **supervisor** (this process) makes itself a child subreaper and asks to
  get SIGTERM when Harvey dies; every process the command starts, even one that
  calls ``setsid()`` or double-forks, is its descendant or is reparented to it.
  When the command returns, or Harvey stops it (SIGTERM on a timeout or the
  output cap), the supervisor kills every remaining descendant and exits with
  the command's status. It stays outside the Landlock domain, so the confined
  command cannot signal it (Landlock's signal scope, ABI >= 6).
- the **command** (a forked child) lowers its resource limits, makes its own
  read-only view of the mounts with the scratch folder a sized tmpfs
  (``launcher_mounts.py``), restricts itself with Landlock (``restrict``), drops
  every capability (bounding, ambient, inheritable, permitted, effective: as root
  too), installs the seccomp filter of ``launcher_seccomp.py`` (no Unix or,
  offline, any sockets; no io_uring, keyring, memfd or other processes' limits)
  and execs the command.

Why a separate script instead of ``subprocess.Popen(preexec_fn=...)``: Harvey
is multi-threaded, and running Python between fork and exec in a threaded
process can deadlock on locks other threads held. Here the restriction happens
in a fresh single-threaded interpreter. It is stdlib-only: ``-I -S`` skips
site-packages and every ``PYTHON*`` variable, so nothing of the user's runs
before the restriction. Any failure to restrict exits with status 126 and a
``harvey-sandbox:`` line; it never runs the command unconfined (fail closed).

The policy is an object with:
  abi       the Landlock ABI the parent detected (decides which rights exist)
  read      paths to grant read and execute beneath (system dirs, workspace parts)
  write     paths to grant full read/write beneath (the private temporary folder;
            for approved commands the workspace parts without secrets)
  files     paths of single files to grant read and execute (workspace files
            beside a secret file, in a folder that is not granted whole), and
            write too with ``files_write``
  list      folders to grant only listing beneath (those holding a secret file)
  dir_write folders to grant creating, removing and writing (not reading) beneath
  devices   device files to grant read/write (/dev/null and friends)
  net       true to leave TCP alone; false denies TCP bind and connect (ABI >= 4)
  unix      true to allow ``socket(AF_UNIX)`` (only with net)
  limits    {"processes", "file_size", "cpu", "memory", "scratch", "scratch_files"}:
            counts and bytes
  scratch   the scratch folder: mounted over with a tmpfs of the scratch limits
  approved  true when the user approved the command: the workspace stays writable
            in the mount view (``readonly``: its secrets, bound read-only again)
  limits_only  true under bubblewrap: only the limits and the supervision here,
            bubblewrap itself confines (namespaces, capabilities, seccomp)
  parent    Harvey's pid: if Harvey is already gone, nothing runs
  workspace the workspace's real path: parts beneath it are granted only when no
            link leads to them (``add_path``)
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import stat
import sys
import time

TYPE_CHECKING = False  # not importing typing keeps the launcher's start-up small
if TYPE_CHECKING:
    from typing import Any, NoReturn

HERE = os.path.dirname(os.path.abspath(__file__))
# Syscall numbers: the generic table shared by x86_64 and aarch64.
SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "arm64": (444, 445, 446)}
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 38, 36
RULE_PATH_BENEATH = 1

# Filesystem rights (linux/landlock.h) and the ABI that introduced them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

# Rights that may be granted on a regular file (the others only make sense on folders).
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = EXECUTE | READ_FILE | READ_DIR
# A folder that holds a secret file: everything but reading (and running) its files.
DIR_WRITE = READ_DIR | WRITE_FILE | TRUNCATE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG
DIR_WRITE |= MAKE_SYM | MAKE_FIFO | REFER


def handled_fs(abi: int) -> int:
    """Every filesystem right this ABI knows: all of them are denied unless granted."""
    rights = (1 << 13) - 1  # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel struct is __attribute__((packed))
    _fields_ = [
        ("allowed_access", ctypes.c_uint64),
        ("parent_fd", ctypes.c_int32),
    ]


def fail(message: str) -> NoReturn:
    sys.stderr.write(f"harvey-sandbox: {message}\n")
    sys.stderr.flush()
    os._exit(126)


def restrict(libc: ctypes.CDLL, policy: dict[str, Any]) -> None:
    """Build the ruleset from the policy and apply it to this process."""
    numbers = SYSCALLS.get(os.uname().machine)
    if numbers is None:
        fail(f"Landlock syscalls unknown on {os.uname().machine}")
    create, add_rule, restrict_self = numbers
    abi = int(policy["abi"])
    fs = handled_fs(abi)
    attr = RulesetAttr(fs, 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = 0 if policy.get("net") else NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    ruleset = libc.syscall(create, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        fail(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    write = fs & ~(MAKE_CHAR | MAKE_BLOCK | IOCTL_DEV)
    grants = [(p, READ) for p in policy.get("read", [])]
    file_rights = READ_FILE | EXECUTE
    if policy.get("files_write"):
        file_rights |= WRITE_FILE | TRUNCATE
    grants += [(p, file_rights) for p in policy.get("files", [])]
    grants += [(p, READ_DIR) for p in policy.get("list", [])]
    grants += [(p, DIR_WRITE) for p in policy.get("dir_write", [])]
    grants += [(p, write) for p in policy.get("write", [])]
    grants += [(p, READ_FILE | WRITE_FILE) for p in policy.get("devices", [])]
    workspace = policy.get("workspace") or ""
    for path, access in grants:
        exact = bool(workspace) and (path == workspace or path.startswith(workspace + "/"))
        add_path(libc, add_rule, ruleset, path, access & fs, exact)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        fail(f"prctl(NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
    if libc.syscall(restrict_self, ruleset, 0) != 0:
        fail(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    os.close(ruleset)


def add_path(
    libc: ctypes.CDLL, add_rule: int, ruleset: int, path: str, access: int, exact: bool
) -> None:
    """Grant ``access`` beneath ``path``; a missing path is skipped (nothing to grant).

    System paths may be links (``/bin -> usr/bin``, ``/etc/resolv.conf``): their
    target is granted. A workspace part (``exact``) is granted only if it is still
    exactly what Harvey walked: opened without following a final link, and the path
    the kernel reports for it must be the one asked for, so a link swapped in for a
    folder since the walk grants nothing (fail closed)."""
    flags = os.O_PATH | os.O_CLOEXEC | (os.O_NOFOLLOW if exact else 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return
    except OSError as exc:
        fail(f"cannot open {path}: {exc.strerror}")
    try:
        mode = os.fstat(fd).st_mode
        if exact and (stat.S_ISLNK(mode) or os.readlink(f"/proc/self/fd/{fd}") != path):
            return  # a link is never granted: its target decides
        if not stat.S_ISDIR(mode):
            access &= FILE_RIGHTS
        rule = PathBeneathAttr(access, fd)
        if libc.syscall(add_rule, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            fail(f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


def find_program(name: str) -> str | None:
    """Resolve ``name`` on PATH now, before the restriction: ``os.execvp`` would
    import modules lazily, and after ``restrict`` the interpreter's own library
    may be unreadable."""
    if "/" in name:
        return name
    for folder in os.get_exec_path():
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def load_module(name: str) -> Any:
    """``name``.py beside this file (Harvey's own code, not sys.path)."""
    import importlib.util

    where = os.path.join(HERE, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"harvey_{name}", where)
    if spec is None or spec.loader is None:
        fail(f"cannot load {where}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the supervisor ------------------------------------------------------------------


class Stop(Exception):
    """Harvey (or Harvey's death) asked the command to stop."""


def on_stop(signum: int, _frame: object) -> None:
    raise Stop(signum)


def ignore_stops() -> None:
    """While the descendants are being ended, a second stop must not interrupt it."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)


def descendants() -> set[int]:
    """Every process below this one, from the parent links in /proc (the supervisor
    is outside the sandbox and sees it)."""
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents.setdefault(int(fields[1]), []).append(int(name))
    found: set[int] = set()
    todo = [os.getpid()]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def kill(pid: int, known: set[int]) -> None:
    """SIGKILL ``pid`` through a pidfd, checking after opening it that the process
    is still one of ours (a pid freed and reused meanwhile is left alone)."""
    try:
        fd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
        if parent == os.getpid() or parent in known:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except (OSError, IndexError, ValueError):
        pass
    finally:
        os.close(fd)


def end_descendants() -> None:
    """Kill and reap every descendant until none is left (a fork in flight is caught
    by the next pass: its orphans come to this subreaper)."""
    while True:
        found = descendants()
        for pid in found:
            kill(pid, found)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return
        time.sleep(0.002)


def supervise(child: int) -> int:
    """Wait for the command, reaping orphans meanwhile; returns its wait status
    (or None when stopped)."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            return status


def run(policy: dict[str, Any], program: str, argv: list[str]) -> NoReturn:
    libc = ctypes.CDLL(None, use_errno=True)
    kernel = load_module("launcher_seccomp")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a mirrored SIGSEGV writes no core
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_stop)
    cgroup = None
    try:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if policy.get("parent") and os.getppid() != policy["parent"]:
            raise Stop(signal.SIGTERM)  # Harvey died before PDEATHSIG was set
        cgroup = kernel.process_cgroup(policy.get("limits", {}))
        last_cap = kernel.last_capability()
        child = os.fork()
        if child == 0:
            confine_and_exec(libc, kernel, policy, program, argv, cgroup, last_cap)
        status = supervise(child)
    except Stop:
        ignore_stops()
        end_descendants()
        kernel.remove_cgroup(cgroup)
        os.kill(os.getpid(), signal.SIGKILL)  # Harvey sees "killed", as before
        raise SystemExit(137) from None
    ignore_stops()
    end_descendants()
    kernel.remove_cgroup(cgroup)
    if os.WIFSIGNALED(status):
        died = os.WTERMSIG(status)
        if died not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(died, signal.SIG_DFL)
        os.kill(os.getpid(), died)  # the same death, without a core (RLIMIT_CORE 0)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def confine_and_exec(
    libc: ctypes.CDLL,
    kernel: Any,
    policy: dict[str, Any],
    program: str,
    argv: list[str],
    cgroup: str | None,
    last_cap: int,
) -> NoReturn:
    try:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        kernel.join_cgroup(cgroup)
        kernel.set_limits(policy.get("limits", {}))
        if policy.get("limits_only"):  # bubblewrap confines (and needs its privileges)
            os.execv(program, argv)
        viewed = private_view(libc, policy)
        if int(policy.get("abi", 0)) > 0:
            restrict(libc, policy)
        elif libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            fail(f"prctl(NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
        kernel.drop_capabilities(libc, last_cap)
        net = bool(policy.get("net"))
        unix = net and bool(policy.get("unix"))
        metadata = viewed or bool(policy.get("approved"))
        kernel.install_filter(libc, allow_inet=net, allow_unix=unix, allow_metadata=metadata)
        os.execv(program, argv)
    except SystemExit:
        raise
    except OSError as exc:
        fail(f"cannot run {argv[0]}: {exc.strerror or exc}")
    except BaseException as exc:  # fail closed, never run unconfined
        fail(f"{type(exc).__name__}: {exc}")
    os._exit(126)


def private_view(libc: ctypes.CDLL, policy: dict[str, Any]) -> bool:
    """The read-only mount view of ``launcher_mounts.py``; False where none can be made
    (or the policy names no scratch folder). A failure after the namespace exists
    fails closed."""
    scratch = policy.get("scratch")
    if not scratch:
        return False
    limits = policy.get("limits", {})
    quota = (int(limits.get("scratch", 1 << 31)), int(limits.get("scratch_files", 100_000)))
    writable = [policy["workspace"]] if policy.get("approved") else []
    writable += [str(path) for path in policy.get("bound", [])]  # an MCP server's grants
    try:
        return bool(
            load_module("launcher_mounts").private_view(
                libc, scratch, writable, list(policy.get("readonly", [])), quota
            )
        )
    except OSError as exc:
        fail(f"cannot make the read-only mount view: {exc.strerror or exc}")


def main(args: list[str]) -> None:
    if len(args) >= 2 and args[0] == "--spec-fd":
        try:
            with os.fdopen(int(args[1]), "rb") as handle:
                text = handle.read().decode()
        except (OSError, ValueError) as exc:
            fail(f"cannot read the policy: {exc}")
        args = [text, *args[2:]]
    if len(args) < 3 or args[1] != "--":
        fail("usage: landlock_launcher.py (POLICY_JSON | --spec-fd N) -- ARGV...")
    argv = args[2:]
    program = find_program(argv[0])
    if program is None:
        sys.stderr.write(f"harvey-sandbox: command not found: {argv[0]}\n")
        sys.exit(127)
    try:
        policy = json.loads(args[0])
    except ValueError as exc:
        fail(f"bad policy: {exc}")
    if not isinstance(policy, dict) or "abi" not in policy:
        fail("bad policy: an object with 'abi' is needed")
    run(policy, program, argv)


if __name__ == "__main__":
    main(sys.argv[1:])

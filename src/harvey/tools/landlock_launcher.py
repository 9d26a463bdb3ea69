"""Confine this process with Landlock, then exec the command: Harvey's child launcher.

Run as ``python -I -S landlock_launcher.py POLICY_JSON -- ARGV...``.

Why a separate script instead of ``subprocess.Popen(preexec_fn=...)``: Harvey
is multi-threaded (streaming, spinners, worker pools), and running Python code
between fork and exec in a threaded process can deadlock on locks other
threads held at fork time. Here the fork+exec is plain ``Popen``; the
restriction happens in a fresh single-threaded interpreter which then
``execvp``s the real command, so the command and everything it starts run
inside the Landlock domain (Landlock is inherited and can never be lifted).

The script is deliberately stdlib-only and self-contained: ``-I -S`` skips
site-packages and every ``PYTHON*`` variable, so nothing from the user's
environment runs before the restriction. Any failure to restrict exits with
status 126 and a ``harvey-sandbox:`` line; it never runs the command
unconfined (fail closed).

POLICY_JSON is an object with:
  abi      the Landlock ABI the parent detected (decides which rights exist)
  read     paths to grant read and execute beneath (workspace, system dirs)
  write    paths to grant full read/write beneath (the private temp folder,
           and the workspace for commands the user approved)
  devices  device files to grant read/write (/dev/null and friends)
  net      true to leave TCP alone; false denies TCP bind and connect (ABI >= 4)
"""

from __future__ import annotations

import ctypes
import json
import os
import stat
import sys

TYPE_CHECKING = False  # not importing typing keeps the launcher's start-up small
if TYPE_CHECKING:
    from typing import Any, NoReturn

# Syscall numbers: the generic table shared by x86_64 and aarch64.
SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "arm64": (444, 445, 446)}
PR_SET_NO_NEW_PRIVS = 38
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
    sys.exit(126)


def restrict(policy: dict[str, Any]) -> None:
    """Build the ruleset from the policy and apply it to this process."""
    numbers = SYSCALLS.get(os.uname().machine)
    if numbers is None:
        fail(f"Landlock syscalls unknown on {os.uname().machine}")
    create, add_rule, restrict_self = numbers
    libc = ctypes.CDLL(None, use_errno=True)
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
    read = EXECUTE | READ_FILE | READ_DIR
    write = fs & ~(MAKE_CHAR | MAKE_BLOCK | IOCTL_DEV)
    grants = [(p, read) for p in policy.get("read", [])]
    grants += [(p, write) for p in policy.get("write", [])]
    grants += [(p, READ_FILE | WRITE_FILE) for p in policy.get("devices", [])]
    for path, access in grants:
        add_path(libc, add_rule, ruleset, path, access & fs)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        fail(f"prctl(NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
    if libc.syscall(restrict_self, ruleset, 0) != 0:
        fail(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    os.close(ruleset)


def add_path(libc: ctypes.CDLL, add_rule: int, ruleset: int, path: str, access: int) -> None:
    """Grant ``access`` beneath ``path``; a missing path is skipped (nothing to grant)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    except OSError as exc:
        fail(f"cannot open {path}: {exc.strerror}")
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
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


def main(args: list[str]) -> None:
    if len(args) < 3 or args[1] != "--":
        fail("usage: landlock_launcher.py POLICY_JSON -- ARGV...")
    argv = args[2:]
    program = find_program(argv[0])
    if program is None:
        sys.stderr.write(f"harvey-sandbox: command not found: {argv[0]}\n")
        sys.exit(127)
    restrict(json.loads(args[0]))
    try:
        os.execv(program, argv)
    except OSError as exc:
        fail(f"cannot run {argv[0]}: {exc.strerror}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""model → commands: what Landlock does not cover, attacked through the real launcher.

Invariant: a confined command changes no metadata (mode, owner, times, extended
attributes, chattr flags) outside the folders it may write, and none in the
workspace unless approved, nor of a secret file even then; it reads and adds no
kernel keyring entry; it changes no other process's limits, priority or CPUs;
it makes no memfd to run a program from; and its scratch folder holds no more
than ``scratch_mb`` and ``scratch_files``, counting files deleted but held open.

Each probe runs ``/usr/bin/python3`` through ``shell._execute`` (what ``run_shell``
ends in), and each promise is checked from outside too: the file's mode and times
as the test sees them, the other process's limits in ``/proc``.
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvey.config.settings import LimitsSettings
from harvey.confine import sandbox
from harvey.tools.shell import ShellResult
from tests.security.test_commands_confinement import (  # landlock: autouse, the same check
    PYTHON,
    confined,
    landlock,  # noqa: F401
    python,
)

METADATA = """
import fcntl, os, struct, sys
for target in sys.argv[1:]:
    def t(name, change):
        try:
            change()
            print(name, target, "CHANGED")
        except OSError as exc:
            print(name, target, "refused", exc.errno)
        except NotImplementedError:  # lchmod: Linux has none, so Python cannot try it;
            print(name, target, "unsupported")  # not a change, and every other call is tried
    t("chmod", lambda: os.chmod(target, 0o777))
    t("lchmod", lambda: os.chmod(target, 0o777, follow_symlinks=False))
    t("chown", lambda: os.chown(target, os.getuid(), os.getgid()))
    t("utime", lambda: os.utime(target, (1, 1)))
    t("setxattr", lambda: os.setxattr(target, "user.harvey", b"1"))
    t("removexattr", lambda: os.removexattr(target, "user.planted"))
    try:
        fd = os.open(target, os.O_RDONLY)
    except OSError as exc:
        print("open", target, "refused", exc.errno)
        continue
    t("fchmod", lambda: os.fchmod(fd, 0o777))
    t("futime", lambda: os.utime(fd, (2, 2)))
    t("fsetxattr", lambda: os.setxattr(fd, "user.harvey", b"1"))
    def chattr():
        flags = struct.unpack("l", fcntl.ioctl(fd, 0x80086601, b"\\0" * 8))[0]
        fcntl.ioctl(fd, 0x40086602, struct.pack("l", flags | 0x40))  # FS_NODUMP_FL
    t("chattr", chattr)
"""


def planted(path: Path, text: str = "x\n") -> tuple[int, int, list[str]]:
    path.write_text(text)
    path.chmod(0o640)
    os.utime(path, (1_000_000, 1_000_000))
    try:
        os.setxattr(path, "user.planted", b"1")
    except OSError:
        pass  # a filesystem without user xattrs: the other calls still count
    return state(path)


def state(path: Path) -> tuple[int, int, list[str]]:
    info = path.stat()
    try:
        names = sorted(os.listxattr(path))
    except OSError:
        names = []
    return info.st_mode, int(info.st_mtime), names


def changed(result: ShellResult) -> list[str]:
    return [line for line in result.output.splitlines() if line.endswith("CHANGED")]


@pytest.mark.parametrize("approved", [False, True])
def test_no_metadata_changes_outside_the_workspace(
    victim_workspace: Path, outside: Path, approved: bool
) -> None:
    target = outside / "secret.txt"
    folder = outside / "folder"
    folder.mkdir()
    before = planted(target), state(folder)
    result = confined(
        victim_workspace, PYTHON, "-c", METADATA, str(target), str(folder), approved=approved
    )
    assert not changed(result), result.output
    assert "refused" in result.output, result.output
    assert (state(target), state(folder)) == before


def test_an_unapproved_command_changes_no_workspace_metadata(victim_workspace: Path) -> None:
    target = victim_workspace / "notes.txt"
    before = planted(target)
    result = confined(victim_workspace, PYTHON, "-c", METADATA, "notes.txt", ".")
    assert not changed(result), result.output
    assert "fchmod notes.txt refused" in result.output  # it could open it: read is granted
    assert state(target) == before


def test_an_approved_command_changes_workspace_metadata_but_never_a_secrets(
    victim_workspace: Path,
) -> None:
    notes, dotenv = victim_workspace / "notes.txt", victim_workspace / ".env"
    planted(notes)
    secret_before = planted(dotenv, "API_KEY=sk-not-for-you\n")
    result = confined(victim_workspace, PYTHON, "-c", METADATA, "notes.txt", approved=True)
    assert "chmod notes.txt CHANGED" in result.output, result.output
    assert notes.stat().st_mode & 0o777 == 0o777
    result = confined(victim_workspace, PYTHON, "-c", METADATA, ".env", approved=True)
    assert not changed(result), result.output
    assert state(dotenv) == secret_before


def test_a_link_in_the_workspace_reaches_no_metadata_outside(
    victim_workspace: Path, outside: Path
) -> None:
    before = planted(outside / "secret.txt")
    (victim_workspace / "link").symlink_to(outside / "secret.txt")
    (victim_workspace / "dir-link").symlink_to(outside)
    result = confined(
        victim_workspace, PYTHON, "-c", METADATA, "link", "dir-link/secret.txt", approved=True
    )
    assert not changed(result), result.output
    assert state(outside / "secret.txt") == before


def test_without_a_mount_view_seccomp_refuses_metadata_to_unapproved_commands(
    victim_workspace: Path, tmp_path: Path
) -> None:
    """Where no mount namespace can be made the launcher gets no ``scratch`` view (the
    spec without it stands for that machine): the filter alone refuses the calls."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    target = scratch / "file"
    for approved in (False, True):
        planted(target)
        policy = sandbox.Policy.for_command(victim_workspace, scratch, approved)
        spec = sandbox.landlock_spec(policy, sandbox.detect("auto").abi)
        del spec["scratch"]
        argv = sandbox.launcher_argv(json.dumps(spec), [PYTHON, "-c", METADATA, str(target)])
        done = subprocess.run(
            argv, cwd=victim_workspace, capture_output=True, text=True, timeout=60
        )
        if approved:  # not promised without the view: docs/SECURITY.md says so
            assert "chmod" in done.stdout and "CHANGED" in done.stdout, done
        else:
            assert "CHANGED" not in done.stdout and "refused 1" in done.stdout, done


# -- the kernel keyring -----------------------------------------------------------------

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KEYCTL_READ, KEYCTL_REVOKE, KEY_SPEC_SESSION_KEYRING = 11, 3, -3
ADD_KEY, KEYCTL = 248, 250  # x86_64


@pytest.fixture()
def keyring_secret() -> Iterator[tuple[int, str]]:
    """A secret in this user's session keyring, as a credential helper would keep it."""
    if os.uname().machine != "x86_64":
        pytest.fail("the keyring probe names x86_64 syscall numbers")
    value = "keyring-" + secrets.token_hex(12)
    key = libc.syscall(
        ADD_KEY, b"user", b"harvey-probe", value.encode(), len(value), KEY_SPEC_SESSION_KEYRING
    )
    assert key > 0, f"add_key: {os.strerror(ctypes.get_errno())}"
    yield key, value
    libc.syscall(KEYCTL, KEYCTL_REVOKE, key)


KEYRING = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
key = int(sys.argv[1])
buf = ctypes.create_string_buffer(256)
n = libc.syscall(250, 11, ctypes.c_long(key), buf, 256)  # KEYCTL_READ
print("read", n, ctypes.get_errno(), buf.raw[: max(n, 0)].decode(errors="replace"))
n = libc.syscall(250, 10, ctypes.c_long(-3), b"user", b"harvey-probe", 0)  # KEYCTL_SEARCH
print("search", n, ctypes.get_errno())
n = libc.syscall(248, b"user", b"planted", b"v", 1, ctypes.c_long(-3))  # add_key
print("add", n, ctypes.get_errno())
n = libc.syscall(249, b"user", b"harvey-probe", None, ctypes.c_long(-3))  # request_key
print("request", n, ctypes.get_errno())
n = libc.syscall(250, 1, ctypes.c_long(-3), 0)  # KEYCTL_JOIN_SESSION_KEYRING
print("join", n, ctypes.get_errno())
"""


@pytest.mark.parametrize("approved", [False, True])
def test_the_kernel_keyring_is_out_of_reach(
    victim_workspace: Path, keyring_secret: tuple[int, str], approved: bool
) -> None:
    key, value = keyring_secret
    result = confined(victim_workspace, PYTHON, "-c", KEYRING, str(key), approved=approved)
    assert value not in result.output, "a keyring secret was read back"
    for call in ("read", "search", "add", "request"):
        assert f"{call} -1 1" in result.output, result.output  # EPERM, every one


# -- other processes ----------------------------------------------------------------------

OTHERS = """
import ctypes, os, resource, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
def t(name, change):
    try:
        change()
        print(name, "CHANGED")
    except OSError as exc:
        print(name, "refused", exc.errno)
t("prlimit", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (7, 7)))
def high_half():
    new = (ctypes.c_uint64 * 2)(7, 7)  # the kernel reads pid_t from the low half alone
    if libc.syscall(302, ctypes.c_long(pid | (1 << 32)), 7, new, None) != 0:
        raise OSError(ctypes.get_errno(), "prlimit64")
t("prlimit-high-half", high_half)
t("setpriority", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
t("setpriority-user", lambda: os.setpriority(os.PRIO_USER, 0, 19))
t("affinity", lambda: os.sched_setaffinity(pid, {0}))
t("scheduler", lambda: os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0)))
def ioprio():
    if libc.syscall(251, 1, pid, (3 << 13) | 0) != 0:  # IOPRIO_CLASS_IDLE
        raise OSError(ctypes.get_errno(), "ioprio_set")
t("ioprio", ioprio)
t("own-limit", lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
t("own-priority", lambda: os.setpriority(os.PRIO_PROCESS, 0, 5))
"""


@pytest.mark.parametrize("approved", [False, True])
def test_no_other_process_is_reached(victim_workspace: Path, approved: bool) -> None:
    other = subprocess.Popen(["sleep", "120"])
    try:
        limits_before = Path(f"/proc/{other.pid}/limits").read_text()
        nice_before = os.getpriority(os.PRIO_PROCESS, other.pid)
        affinity_before = os.sched_getaffinity(other.pid)
        result = confined(victim_workspace, PYTHON, "-c", OTHERS, str(other.pid), approved=approved)
        for name in ("prlimit", "prlimit-high-half", "setpriority", "setpriority-user"):
            assert f"{name} refused 1" in result.output, result.output
        for name in ("affinity", "scheduler", "ioprio"):
            assert f"{name} refused 1" in result.output, result.output
        # Its own limits and priority stay its own to lower (``ulimit``, ``nice``).
        assert "own-limit CHANGED" in result.output and "own-priority CHANGED" in result.output
        assert Path(f"/proc/{other.pid}/limits").read_text() == limits_before
        assert os.getpriority(os.PRIO_PROCESS, other.pid) == nice_before
        assert os.sched_getaffinity(other.pid) == affinity_before
    finally:
        other.kill()
        other.wait()


def test_ulimit_and_nice_still_work_inside(victim_workspace: Path) -> None:
    result = confined(
        victim_workspace, "sh", "-c", "ulimit -n 64 && ulimit -n && nice -n 3 true && echo OK"
    )
    assert result.output.split() == ["64", "OK"], result.output


# -- programs from memory ------------------------------------------------------------------

MEMFD = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
try:
    fd = os.memfd_create("payload")
    os.write(fd, open("/usr/bin/true", "rb").read())
    os.execv(f"/proc/self/fd/{fd}", ["payload"])
except OSError as exc:
    print("memfd refused", exc.errno)
print("memfd_secret", libc.syscall(447, 0), ctypes.get_errno())
try:
    open("/dev/shm/payload", "wb").write(b"x")
    print("shm CHANGED")
except OSError as exc:
    print("shm refused", exc.errno)
"""


@pytest.mark.parametrize("approved", [False, True])
def test_no_program_runs_from_memory(victim_workspace: Path, approved: bool) -> None:
    result = python(victim_workspace, MEMFD, approved=approved)
    assert "memfd refused 1" in result.output, result.output
    assert "memfd_secret -1 1" in result.output, result.output
    assert "shm refused" in result.output, result.output


# -- the scratch folder's quota -------------------------------------------------------------

FILL = """
import os, sys
scratch, how = os.environ["TMPDIR"], sys.argv[1]
written = 0
try:
    if how == "many":  # many files, each far under file_size_mb
        for i in range(100_000):
            with open(f"{scratch}/f{i}", "wb") as handle:
                handle.write(b"x" * 65536)
            written += 65536
    elif how == "count":  # empty files: only the inode count stops them
        for i in range(100_000):
            open(f"{scratch}/e{i}", "wb").close()
            written += 1
    elif how == "unlinked":  # deleted at once, still held open: a walk would see nothing
        held = []
        for i in range(10_000):
            fd = os.open(f"{scratch}/u{i}", os.O_CREAT | os.O_WRONLY)
            os.unlink(f"{scratch}/u{i}")
            held.append(fd)
            written += os.write(fd, b"x" * 1048576)
    elif how == "home":  # HOME is the same folder
        with open(os.path.expanduser("~/big"), "wb") as handle:
            for _ in range(100):
                handle.write(b"x" * 1048576)
                handle.flush()
                written += 1048576
except OSError as exc:
    print("STOPPED", exc.errno, written)
else:
    print("FILLED", written)
"""


@pytest.mark.parametrize("how", ["many", "unlinked", "home"])
def test_the_scratch_folder_has_a_disk_quota(victim_workspace: Path, how: str) -> None:
    limits = LimitsSettings(scratch_mb=16)
    result = python(victim_workspace, FILL.replace("sys.argv[1]", repr(how)), limits=limits)
    words = result.output.split()
    assert words[0] == "STOPPED" and words[1] == "28", result.output  # ENOSPC
    assert int(words[2]) <= 16 * 1024 * 1024, result.output


def test_the_scratch_folder_has_a_file_count_quota(victim_workspace: Path) -> None:
    limits = LimitsSettings(scratch_files=1000)
    result = python(victim_workspace, FILL.replace("sys.argv[1]", "'count'"), limits=limits)
    words = result.output.split()
    assert words[0] == "STOPPED" and words[1] == "28", result.output
    assert int(words[2]) <= 1000, result.output


def test_the_quota_leaves_ordinary_scratch_work_alone(victim_workspace: Path) -> None:
    script = textwrap.dedent(
        """
        cd "$TMPDIR" && mkdir -p a/b && seq 1 20000 > a/b/n.txt && sort -rn a/b/n.txt > s && head -1 s
        cp a/b/n.txt copy && chmod 600 copy && touch -d 2001-01-01 copy && ls -l copy | cut -c1-10
        """
    )
    result = confined(victim_workspace, "sh", "-c", script)
    assert result.output.split() == ["20000", "-rw-------"], result.output

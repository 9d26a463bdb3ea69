"""A confined command's own view of the mounts: read-only outside what it may write.

Loaded by ``landlock_launcher.py`` by path, in the forked child before Landlock
(a Landlock domain may not mount); stdlib-only like the launcher.

Landlock decides which files a command may read and write, but not who may change
a file's *metadata*: ``chmod``, ``chown``, ``utimensat``, extended attributes and
``chattr`` flags need only ownership, so without more a command could make the
user's ``~/.ssh`` world-readable or back-date a file outside the workspace. A
read-only mount refuses every one of them (EROFS) whatever the call, so the
command gets a private mount namespace where every mount is remounted read-only
except:

- the scratch folder, which becomes a fresh ``tmpfs`` of ``security.limits.
  scratch_mb`` and ``scratch_files``: the disk quota (a file deleted but held open
  still counts, which no walk of the folder could see), gone with the command;
- for an approved command, the workspace, bound onto itself writable, with the
  secret files and folders in it bound read-only again on top.

An ordinary user gets the namespace through a user namespace that maps only their
own uid and gid (so files of other users show as ``nobody``); root needs none.
Where neither can be made (user namespaces disabled), ``private_view`` returns
False and the launcher's seccomp filter refuses metadata calls to unapproved
commands instead; approved commands then keep them (docs/SECURITY.md says so).
"""

from __future__ import annotations

import ctypes
import os
import re
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
LOCKED_OPTIONS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC}
# Kernel views where a read-only remount may be refused and changes no file of the user.
PSEUDO_FILESYSTEMS = frozenset(
    (
        "proc", "sysfs", "cgroup", "cgroup2", "securityfs", "debugfs", "tracefs", "bpf",
        "pstore", "configfs", "fusectl", "binfmt_misc", "mqueue", "efivarfs", "autofs",
        "nsfs", "hugetlbfs", "rpc_pipefs",
    )
)  # fmt: skip


def private_view(
    libc: ctypes.CDLL,
    scratch: str,
    writable: list[str],
    readonly: list[str],
    quota: tuple[int, int],
) -> bool:
    """Give this process its own read-only mounts; False when no namespace can be made.

    ``writable`` are folders bound writable (the workspace of an approved command),
    ``readonly`` paths beneath them bound read-only again (its secrets), ``quota``
    the scratch tmpfs's (bytes, files). Raises OSError on a failure after the
    namespace exists: the caller fails closed."""
    if not _new_namespace(libc):
        return False
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)  # nothing leaks to the host
    size, files = quota
    options = f"size={max(size, 1 << 20)},nr_inodes={max(files, 64)},mode=0700"
    options += f",uid={os.geteuid()},gid={os.getegid()}"
    with _exact(scratch) as where:
        _mount(libc, "harvey-scratch", where, "tmpfs", MS_NOSUID | MS_NODEV, options)
    for path in writable:
        with _exact(path) as where:
            _mount(libc, where, where, None, MS_BIND | MS_REC)
    for path in readonly:
        with _exact(path, missing_ok=True) as where:
            if not where:
                continue
            _mount(libc, where, where, None, MS_BIND | MS_REC)
        # Opened again: the first descriptor names the mount beneath the new one.
        with _exact(path) as where:
            _mount(libc, None, where, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    _read_only_elsewhere(libc, [scratch, *writable])
    # The working folder still names the mount it was entered on, beneath the new ones.
    os.chdir(os.getcwd())
    return True


def _new_namespace(libc: ctypes.CDLL) -> bool:
    """A mount namespace: directly with CAP_SYS_ADMIN, else inside a user namespace."""
    if libc.unshare(CLONE_NEWNS) == 0:
        return True
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        return False
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    return True


def _read_only_elsewhere(libc: ctypes.CDLL, writable: list[str]) -> None:
    """Remount every visible mount read-only but the writable ones and those beneath."""
    for point, options, fstype in mounts():
        if "ro" in options or any(_beneath(point, root) for root in writable):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for name, bit in LOCKED_OPTIONS.items():  # a user namespace may not drop these
            if name in options:
                flags |= bit
        try:
            _mount(libc, None, point, None, flags)
        except FileNotFoundError:
            continue  # hidden beneath a later mount: unreachable anyway
        except OSError:
            if fstype not in PSEUDO_FILESYSTEMS:
                raise


def mounts() -> Iterator[tuple[str, set[str], str]]:
    """(mount point, per-mount options, filesystem type) of this namespace, parents first."""
    with open("/proc/self/mountinfo") as handle:
        lines = handle.read().splitlines()
    for line in lines:
        fields = line.split(" ")
        try:
            fstype = fields[fields.index("-", 6) + 1]
        except (ValueError, IndexError):
            continue
        yield _unescape(fields[4]), set(fields[5].split(",")), fstype


def _unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda found: chr(int(found.group(1), 8)), text)


def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class _exact:
    """The path as ``/proc/self/fd/N`` of a descriptor opened without following a
    final link, and only if the kernel reports the same path for it: a link swapped
    in for a workspace folder is never bound writable (its target would be)."""

    def __init__(self, path: str, missing_ok: bool = False) -> None:
        self.path, self.missing_ok, self.fd = path, missing_ok, -1

    def __enter__(self) -> str:
        try:
            self.fd = os.open(self.path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            if self.missing_ok:
                return ""
            raise
        where = f"/proc/self/fd/{self.fd}"
        if stat.S_ISLNK(os.fstat(self.fd).st_mode) or os.readlink(where) != self.path:
            if self.missing_ok:
                return ""
            raise OSError(0, f"{self.path} is not what it was (a link?)")
        return where

    def __exit__(self, *_exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)


def _mount(
    libc: ctypes.CDLL,
    source: str | None,
    target: str,
    fstype: str | None,
    flags: int,
    data: str | None = None,
) -> None:
    encoded = [
        None if value is None else value.encode() for value in (source, target, fstype, data)
    ]
    if libc.mount(encoded[0], encoded[1], encoded[2], ctypes.c_ulong(flags), encoded[3]) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {target}: {os.strerror(errno)}")


if __name__ == "__main__":  # ``harvey doctor``'s probe: can a command get the view here?
    raise SystemExit(0 if _new_namespace(ctypes.CDLL(None, use_errno=True)) else 1)

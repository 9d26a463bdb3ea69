"""Harvey's own files: made and opened without ever following a link out of their folder.

Harvey writes on its own, unasked: session recordings, plan files, offloaded
tool output, knowledge stores, ``sessions.db``, ``memory.db``, the REPL
history. Many of them live in the workspace's ``.harvey/``, and the workspace
may be a hostile clone: git stores symbolic links, so ``.harvey`` or
``.harvey/plans`` can arrive pointing at ``~/.bashrc.d/``. A writer that opens
``<workspace>/.harvey/plans/x.md`` by path follows that link.

So nothing here opens a path whole. A ``Location`` is a trusted root (the
workspace or ``HARVEY_HOME``, as the user gave it) plus plain names under it;
``Location.open`` opens the root and then each name relative to its parent's
descriptor with ``O_NOFOLLOW`` (``mkdir(dir_fd=)`` first when missing), and
checks what it holds with ``fstat``: a folder, owned by the user, that no one
else may write (refused otherwise; one others may only read is tightened to
0700). Files are opened the same way relative to
their folder's descriptor, refused when they are links, not regular, someone
else's or hard-linked; the atomic replace writes its temporary file and renames
it inside the folder the descriptor holds. A link swapped in between a
``mkdir`` and the next ``open`` is met by ``O_NOFOLLOW``, not followed.

SQLite opens by path, so ``Folder.database`` validates the chain and the
database's files (``-wal``/``-shm``/``-journal`` too) immediately before the
caller connects; the window between that check and SQLite's own open is the one
race left (see ``docs/ARCHITECTURE.md``): only a process that can already write
the user's 0700 folder can use it.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath

from harvey.errors import WorkspaceError
from harvey.terminal_text import for_terminal

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
#: SQLite's companions of a database file.
DB_COMPANIONS = ("-wal", "-shm", "-journal")

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
# O_NONBLOCK: a FIFO planted under a file's name never blocks the open.
_FILE = os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
_LINK_ERRORS = (errno.ELOOP, errno.ENOTDIR, errno.ENXIO, errno.EMLINK)


class UnsafePath(WorkspaceError):
    """A folder or file Harvey would write is a link, someone else's, or open to others."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path} {problem}")
        self.path = path
        self.problem = problem


def _names(relative: str | PurePath | Iterable[str]) -> tuple[str, ...]:
    """Plain names only: ``..``, ``.``, empty and absolute parts never reach a walk."""
    parts = PurePath(relative).parts if isinstance(relative, str | PurePath) else tuple(relative)
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\x00" in part:
            raise UnsafePath(Path(*parts) if parts else Path(), f"has a bad part {part!r}")
    return tuple(parts)


def _describe(dir_fd: int, name: str, path: Path, exc: OSError | None = None) -> UnsafePath:
    """Why ``name`` could not be opened without following: a link (and where to), or its kind."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        if exc is not None:
            raise exc from None
        raise
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            target = "?"
        # the repository chose the target: its escape sequences are shown, not obeyed,
        # and a newline cannot start a second, forged warning line
        shown = for_terminal(target).replace("\n", "^J").replace("\t", "^I")
        return UnsafePath(path, f"is a symbolic link to {shown}")
    if stat.S_ISDIR(st.st_mode):
        return UnsafePath(path, "is a folder, not a file")
    if stat.S_ISREG(st.st_mode):
        return UnsafePath(path, "is a file, not a folder")
    return UnsafePath(path, "is not a regular file or folder")


def _check_owned(fd: int, path: Path, st: os.stat_result, private_mode: int) -> os.stat_result:
    """Someone else's: refused. A folder others may write: refused (they could have
    swapped its entries already). Readable by others, or a file of the user's others
    may write: closed to them (0700/0600), then re-checked."""
    if st.st_uid != os.geteuid():
        raise UnsafePath(path, f"belongs to another user (uid {st.st_uid}), not to you")
    if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o022:
        mode = f"{stat.S_IMODE(st.st_mode):04o}"
        raise UnsafePath(path, f"is writable by other users (mode {mode}; chmod go-w it)")
    if st.st_mode & 0o077:
        try:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & private_mode)
        except OSError:
            pass  # a read-only file system: only write access for others matters below
        st = os.fstat(fd)
        if st.st_mode & 0o022:
            raise UnsafePath(path, "is writable by other users and cannot be made private")
    return st


class Folder:
    """An open folder, reached without following a link; ``path`` is for messages and SQLite."""

    def __init__(self, fd: int, path: Path, private: bool = True) -> None:
        self.fd = fd
        self.path = path
        self.private = private

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- folders ------------------------------------------------------------------

    def child(self, name: str, *, create: bool = True) -> Folder:
        """The folder ``name`` in this one (made 0700 when missing and ``create``).

        Raises ``FileNotFoundError`` when it is missing and not to be made,
        ``UnsafePath`` when it is a link or not acceptable.
        """
        (name,) = _names([name])
        path = self.path / name
        try:
            fd = os.open(name, _DIR, dir_fd=self.fd)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(name, PRIVATE_DIR if self.private else 0o777, dir_fd=self.fd)
            except FileExistsError:
                pass  # a concurrent Harvey made it first; the open below checks what it is
            fd = self._open_dir(name, path)
        except OSError as exc:
            if exc.errno not in _LINK_ERRORS:
                raise
            raise _describe(self.fd, name, path, exc) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISDIR(st.st_mode):
                raise UnsafePath(path, "is not a folder")
            if self.private:
                _check_owned(fd, path, st, PRIVATE_DIR)
        except BaseException:
            os.close(fd)
            raise
        return Folder(fd, path, self.private)

    def _open_dir(self, name: str, path: Path) -> int:
        try:
            return os.open(name, _DIR, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno not in _LINK_ERRORS:
                raise
            raise _describe(self.fd, name, path, exc) from None

    def walk(self, names: Iterable[str], *, create: bool = True) -> Folder:
        """``child`` after ``child``; the intermediate descriptors are closed on the way."""
        current = Folder(os.dup(self.fd), self.path, self.private)
        try:
            for name in names:
                nxt = current.child(name, create=create)
                current.close()
                current = nxt
        except BaseException:
            current.close()
            raise
        return current

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def entry(self, name: str) -> os.stat_result | None:
        """``lstat`` of ``name`` here (a link is reported as a link), or None when absent."""
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    # -- files --------------------------------------------------------------------

    def open_file(self, name: str, flags: int, mode: int = PRIVATE_FILE) -> int:
        """A descriptor on the regular file ``name`` here, never through a link."""
        (name,) = _names([name])
        path = self.path / name
        try:
            fd = os.open(name, flags | _FILE, mode, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno not in _LINK_ERRORS:
                raise
            raise _describe(self.fd, name, path, exc) from None
        try:
            self._check_file(fd, path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _check_file(self, fd: int, path: Path) -> None:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(path, "is not a regular file")
        if self.private:
            if st.st_nlink > 1:
                raise UnsafePath(path, f"has {st.st_nlink} hard links (one may be anywhere)")
            _check_owned(fd, path, st, PRIVATE_FILE)

    def create_new(self, name: str) -> bool:
        """Create ``name`` empty (0600), exclusively; False when it already exists."""
        try:
            fd = self.open_file(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return False
        os.close(fd)
        return True

    def append(self, name: str, data: bytes) -> None:
        """Append to the existing file ``name`` (a vanished one is an error, not re-made)."""
        fd = self.open_file(name, os.O_WRONLY | os.O_APPEND)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)

    def read_bytes(self, name: str) -> bytes | None:
        """The bytes of ``name``, or None when it does not exist."""
        try:
            fd = self.open_file(name, os.O_RDONLY)
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    def replace(self, name: str, data: bytes | Iterable[bytes], mode: int | None = None) -> None:
        """Replace ``name`` whole: a temporary file in this folder, renamed over it.

        ``data`` may come in pieces (an edit streamed through a large file): when the
        iterator raises, the temporary file is removed and ``name`` is untouched.

        ``mode`` None keeps an existing file's permission bits and gives a new
        one the umask's default; a ``mode`` is set exactly. A link at ``name``
        is replaced, never followed.
        """
        (name,) = _names([name])
        short = os.fsdecode(os.fsencode(name)[:200])
        tmp = f".{short}.{uuid.uuid4().hex}.tmp"
        keep = mode
        if keep is None:
            old = self.entry(name)
            keep = stat.S_IMODE(old.st_mode) if old and stat.S_ISREG(old.st_mode) else None
        create = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
        fd = os.open(tmp, create, 0o666 if mode is None else mode, dir_fd=self.fd)
        try:
            try:
                if keep is not None:
                    os.fchmod(fd, keep)
                for part in (data,) if isinstance(data, bytes) else data:
                    _write_all(fd, part)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=self.fd)
            except FileNotFoundError:
                pass
            raise

    def remove(self, name: str) -> None:
        """Unlink ``name`` here (a link is removed itself; its target is untouched)."""
        (name,) = _names([name])
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            pass

    def remove_tree(self, name: str) -> None:
        """Delete the folder ``name`` and everything in it, following no link inside."""
        (name,) = _names([name])
        st = self.entry(name)
        if st is None:
            return
        if not stat.S_ISDIR(st.st_mode):
            raise _describe(self.fd, name, self.path / name)
        shutil.rmtree(name, dir_fd=self.fd)

    # -- SQLite -------------------------------------------------------------------

    def database(self, name: str, *, create: bool = True) -> Path:
        """The path to connect SQLite to, after checking ``name`` and its companions.

        Each must be absent or a regular file of the user's with one link
        (tightened to 0600); a missing database is created 0600 first when
        ``create``, so SQLite never makes it under a looser umask.
        """
        (name,) = _names([name])
        for candidate in (name, *(name + suffix for suffix in DB_COMPANIONS)):
            self._check_database_file(candidate)
        if create and self.entry(name) is None:
            self.create_new(name)
        return self.path / name

    def _check_database_file(self, name: str) -> None:
        """``lstat`` checks only: opening and closing a database file this process has
        connected to would drop SQLite's POSIX locks on it (they belong to the process)."""
        st = self.entry(name)
        if st is None:
            return
        path = self.path / name
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
            raise _describe(self.fd, name, path)
        if not self.private:
            return
        if st.st_uid != os.geteuid():
            raise UnsafePath(path, f"belongs to another user (uid {st.st_uid}), not to you")
        if st.st_nlink > 1:
            raise UnsafePath(path, f"has {st.st_nlink} hard links (one may be anywhere)")
        if st.st_mode & 0o077:
            try:  # just seen as a regular file, in a folder only the user can change
                os.chmod(name, stat.S_IMODE(st.st_mode) & PRIVATE_FILE, dir_fd=self.fd)
            except OSError:
                pass
            if (self.entry(name) or st).st_mode & 0o022:
                raise UnsafePath(path, "is writable by other users and cannot be made private")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def open_root(path: Path, *, create: bool = False, tighten: bool = False) -> Folder:
    """A trusted root (the workspace, ``HARVEY_HOME``) opened as the user spelled it.

    Links in ``path`` itself are the user's own choice and followed. ``create``
    makes it and missing parents 0700; ``tighten`` takes group and other
    permissions off a root that is the user's own folder (not a link, not a
    shared sticky folder like ``/tmp``).
    """
    path = Path(os.path.abspath(path))
    if create:
        os.makedirs(path, mode=PRIVATE_DIR, exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    if tighten:
        try:
            st = os.fstat(fd)
            own = st.st_uid == os.geteuid() and not st.st_mode & stat.S_ISVTX
            if own and st.st_mode & 0o077 and not os.path.islink(path):
                os.fchmod(fd, stat.S_IMODE(st.st_mode) & PRIVATE_DIR)
        except OSError:
            pass  # best effort: a read-only file system
    return Folder(fd, path)


@dataclass(frozen=True)
class Location:
    """Where one of Harvey's folders is: a trusted root and plain names under it."""

    root: Path
    names: tuple[str, ...] = ()
    private: bool = True
    home: bool = False  # the root is HARVEY_HOME: made when missing, tightened to 0700

    @classmethod
    def under(cls, root: Path, relative: str | PurePath = "", **kw: bool) -> Location:
        return cls(Path(root), _names(relative) if str(relative) not in ("", ".") else (), **kw)

    @property
    def path(self) -> Path:
        return self.root.joinpath(*self.names)

    def open(self, *, create: bool = True) -> Folder:
        """The folder, made 0700 where missing; ``FileNotFoundError`` if absent and not made."""
        root = open_root(self.root, create=create and self.home, tighten=self.home)
        root.private = self.private
        try:
            return root.walk(self.names, create=create)
        finally:
            root.close()

    def problem(self) -> UnsafePath | None:
        """The refusal this location meets now (without creating anything), if any."""
        try:
            self.open(create=False).close()
        except UnsafePath as exc:
            return exc
        except OSError:
            return None
        return None


class Refusals:
    """Report each refused folder once a session, whichever feature meets it first."""

    def __init__(self, warn: Callable[[str], None]) -> None:
        self.warn = warn
        self._seen: set[Path] = set()

    def note(self, exc: UnsafePath, consequence: str) -> None:
        if any(exc.path == seen or exc.path.is_relative_to(seen) for seen in self._seen):
            return
        self._seen.add(exc.path)
        self.warn(f"{exc}: Harvey writes nothing there, {consequence}")


def home_database(path: Path) -> Path:
    """``sessions.db``/``memory.db`` in ``HARVEY_HOME``: the folder made 0700, the files checked.

    Call right before ``sqlite3.connect``: the database, created 0600 when
    missing, and its companions are then regular files of the user's, no link.
    """
    path = Path(path)
    with Location(path.parent, home=True).open(create=True) as folder:
        return folder.database(path.name, create=True)

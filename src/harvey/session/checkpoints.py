"""Checkpoints: the content a model's approved write replaced, kept so it can be undone.

Before ``write_file`` or ``edit_file`` replaces a file, the previous bytes are
copied (streamed) into ``HARVEY_HOME/checkpoints/<session>/``, and after the
write the SHA-256 of what Harvey wrote is noted beside them in ``index.jsonl``.
``undo`` restores the last N writes of a session, newest first: a file whose
current bytes are no longer what Harvey wrote has been changed since by someone
else and is left alone (``skipped: changed since``); a file Harvey created is
removed. Each undo is appended to the index too, so the next undo goes further
back instead of undoing the same write twice.

Everything here is written through ``ownfiles`` (no link followed, 0600 in a
0700 folder), restored through ``atomic_write`` under the workspace root (no
link followed on the way), and bounded: a previous content over
``MAX_KEPT_BYTES``, or one holding a key or token the redactor would catch, is not
kept (that write cannot be undone, and undo says so),
and a session keeps at most ``MAX_SESSION_BYTES``, dropping its oldest copies
first. The folder goes with the session (``harvey sessions delete``/``prune``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harvey.errors import HarveyError, ToolError, UsageError, WorkspaceError
from harvey.ownfiles.atomic import atomic_write
from harvey.ownfiles.nofollow import Folder, Location
from harvey.redact import redact
from harvey.workspace import secret_files

MAX_KEPT_BYTES = 128 * 1024 * 1024
MAX_SESSION_BYTES = 512 * 1024 * 1024
INDEX = "index.jsonl"
_BLOCK = 1 << 20
#: Characters of one block carried into the next, so a token cut by the block edge is seen.
_SECRET_OVERLAP = 512
_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
CHANGED = "skipped: changed since"


@dataclass(frozen=True)
class Written:
    """What a checkpointed write did: bytes written, and a note when nothing was kept."""

    size: int
    note: str = ""


@dataclass(frozen=True)
class Entry:
    """One write as the index remembers it."""

    n: int
    path: str  # absolute, as written
    workspace: str
    shown: str
    before: str | None  # the blob holding the previous content; None: the file was new
    kept: str  # "" when kept (or new), else why not
    sha: str  # of what Harvey wrote
    recording: str = ""  # the session's .spmd file, where `harvey undo` records


@dataclass(frozen=True)
class Undone:
    """One undo: the path as shown and ``ok``, ``skipped: …`` or ``error: …``."""

    path: str
    status: str
    recording: str = ""


def folder_location(home: Path, session_id: str) -> Location:
    return Location(Path(home), ("checkpoints", session_id), home=True)


def _stream(fd: int) -> Iterator[bytes]:
    with os.fdopen(fd, "rb") as handle:
        while data := handle.read(_BLOCK):
            yield data


def _open_existing(path: Path) -> int | None:
    """A descriptor on the regular file ``path`` (no final link), None when absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WorkspaceError(f"{path} is not a regular file")
    return fd


class Checkpoints:
    """The checkpoint folder of one session (made on the first write)."""

    def __init__(self, home: Path, session_id: str) -> None:
        if not _SESSION_ID.match(session_id):
            raise WorkspaceError(f"not a session id: {session_id!r}")
        self.where = folder_location(home, session_id)

    def entries(self) -> tuple[list[Entry], set[int]]:
        """The writes in order, and the numbers of those already undone (or tried)."""
        try:
            with self.where.open(create=False) as folder:
                raw = folder.read_bytes(INDEX) or b""
        except FileNotFoundError:
            return [], set()
        writes, undone = [], set()
        for line in raw.decode("utf-8", "replace").splitlines():
            try:
                item = json.loads(line)
                if "undo" in item:
                    undone.add(int(item["undo"]))
                else:
                    writes.append(Entry(**item))
            except (ValueError, TypeError):
                continue  # a torn last line after a crash
        return writes, undone

    def keep(self, folder: Folder, path: Path, shown: str, n: int) -> tuple[str | None, str]:
        """Copy ``path``'s current bytes to blob ``n``: (blob name or None if new, why not).

        A secret file (by name) or a hard link is never copied: a key must not gain a
        second home in ``HARVEY_HOME``, and a hard link's other name may be anywhere. Nor is
        a file whose text holds a key or token the redactor knows (by value or by shape):
        the copy is checked as it is made and removed when one turns up, so that write
        cannot be undone (undo says so) rather than a token lying in a checkpoint."""
        fd = _open_existing(path)
        if fd is None:
            return None, ""
        info = os.fstat(fd)
        size = info.st_size
        why = "a secret file" if secret_files.active().matches(shown) else ""
        why = why or ("a hard link" if info.st_nlink > 1 else "")
        if why:
            os.close(fd)
            return f"{n}.old", f"not kept: {why}"
        if size > MAX_KEPT_BYTES:
            os.close(fd)
            return f"{n}.old", f"not kept: larger than {MAX_KEPT_BYTES // 2**20} MiB"
        self._make_room(folder, size)
        name = f"{n}.old"
        out = folder.open_file(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        found = False
        try:
            with os.fdopen(out, "wb") as sink:
                tail = ""
                for data in _stream(fd):
                    text = tail + data.decode("utf-8", "replace")
                    if redact(text) != text:  # a token, whole, or across two blocks
                        found = True
                        break
                    tail = text[-_SECRET_OVERLAP:]
                    sink.write(data)
        except BaseException:
            folder.remove(name)
            raise
        if found:
            folder.remove(name)
            return name, "not kept: it holds a key or token"
        return name, ""

    def _make_room(self, folder: Folder, size: int) -> None:
        """Drop the oldest copies until ``size`` more bytes fit in the session's budget."""
        blobs = sorted((int(n.split(".")[0]), n) for n in folder.names() if n.endswith(".old"))
        sizes = {name: st.st_size if (st := folder.entry(name)) else 0 for _, name in blobs}
        total = sum(sizes.values())
        for _, name in blobs:
            if total + size <= MAX_SESSION_BYTES:
                break
            folder.remove(name)
            total -= sizes[name]

    def append(self, folder: Folder, item: dict[str, object]) -> None:
        folder.create_new(INDEX)
        folder.append(INDEX, (json.dumps(item) + "\n").encode("utf-8"))

    def undo(self, count: int, only: str | None = None) -> list[Undone]:
        """Undo the last ``count`` writes not undone yet, newest first (of the workspace
        ``only`` when given)."""
        writes, undone = self.entries()
        todo = [w for w in reversed(writes) if w.n not in undone]
        if only is not None:
            todo = [w for w in todo if w.workspace == only]
        results = []
        for entry in todo[:count]:
            status = self._undo_one(entry)
            with self.where.open(create=True) as folder:
                self.append(folder, {"undo": entry.n, "status": status})
            results.append(Undone(entry.shown, status, entry.recording))
        return results

    def _undo_one(self, entry: Entry) -> str:
        path, root = Path(entry.path), Path(entry.workspace)
        try:
            fd = _open_existing(path)
            if fd is None:
                return f"{CHANGED} (it was removed)"
            digest = hashlib.sha256()
            for data in _stream(fd):
                digest.update(data)
            if digest.hexdigest() != entry.sha:
                return CHANGED
            if entry.kept:
                return f"skipped: the previous content was {entry.kept}"
            relative = path.parent.relative_to(root)
            with Location.under(root, relative, private=False).open(create=False) as parent:
                if entry.before is None:
                    parent.remove(path.name)
                    return "ok"
                with self.where.open(create=False) as folder:
                    if folder.entry(entry.before) is None:
                        return "skipped: its checkpoint was dropped to stay within the budget"
                    blob = _stream(folder.open_file(entry.before, os.O_RDONLY))
                    parent.replace(path.name, blob)
            return "ok"
        except (OSError, ValueError, HarveyError) as exc:
            return f"error: {getattr(exc, 'strerror', None) or exc}"


def parse_count(arg: str) -> int:
    """``/undo``'s and ``harvey undo``'s N: a whole number from 1 (1 when empty)."""
    text = arg.strip() or "1"
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"not a number of writes to undo: {text!r} (a whole number from 1)")
    return int(text)


def undo_lines(results: list[Undone]) -> list[str]:
    """What the person reads: one line per write undone, or why there was nothing."""
    if not results:
        return ["nothing to undo: this session has no approved writes left to undo"]
    return [f"undo: {r.path} — {r.status}" for r in results]


def write_checkpointed(
    home: Path | None,
    session_id: str,
    workspace: Path,
    path: Path,
    data: Iterable[bytes],
    recording: object = None,
) -> Written:
    """Replace ``path`` (inside ``workspace``) with ``data`` atomically, keeping its previous
    content in the session's checkpoints first. A store that cannot be written costs the
    undo of this write, never the write: the result says so."""
    root = Path(workspace).resolve()
    digest, size = hashlib.sha256(), 0

    def counted() -> Iterator[bytes]:
        nonlocal size
        for part in data:
            digest.update(part)
            size += len(part)
            yield part

    store: Checkpoints | None = None
    folder: Folder | None = None
    note, before, kept, n = "", None, "", 0
    if home is not None and session_id:
        try:
            store = Checkpoints(home, session_id)
            writes, _ = store.entries()
            n = (writes[-1].n if writes else 0) + 1
            folder = store.where.open(create=True)
            before, kept = store.keep(folder, path, path.relative_to(root).as_posix(), n)
        except (OSError, HarveyError) as exc:
            note = f" (no checkpoint kept, so it cannot be undone: {exc})"
            if folder is not None:
                folder.close()
            store, folder = None, None
    try:
        try:
            atomic_write(path, counted(), root=root)
        except OSError as exc:
            shown = path.relative_to(root).as_posix()
            raise ToolError(f"cannot write {shown}: {exc.strerror or exc}") from exc
    except BaseException:
        if folder is not None:
            if before and not kept:
                folder.remove(before)
            folder.close()
        raise
    if store is not None and folder is not None:
        with folder:
            item = {"n": n, "path": str(path), "workspace": str(root), "before": before}
            item["recording"] = recording if isinstance(recording, str) else ""
            shown = path.relative_to(root).as_posix()
            store.append(folder, {**item, "shown": shown, "kept": kept, "sha": digest.hexdigest()})
        if kept:
            note = f" (the previous content was {kept}; this write cannot be undone)"
    return Written(size, note)


def remove_orphans(home: Path, sessions: set[str], days: float) -> int:
    """Delete the checkpoints of sessions ``sessions.db`` no longer knows (a session that
    never kept a turn) untouched for ``days``; how many. A running session's are newer."""
    import time

    cutoff = time.time() - days * 86400
    removed = 0
    try:
        with Location(Path(home), ("checkpoints",), home=True).open(create=False) as folder:
            for name in folder.names():
                entry = folder.entry(name)
                if name in sessions or entry is None or not stat.S_ISDIR(entry.st_mode):
                    continue
                if entry.st_mtime < cutoff:
                    folder.remove_tree(name)
                    removed += 1
    except FileNotFoundError:
        pass
    return removed


def remove_checkpoints(home: Path, session_id: str) -> None:
    """Delete a session's checkpoints (with the session)."""
    if not _SESSION_ID.match(session_id):
        return
    try:
        with Location(Path(home), ("checkpoints",), home=True).open(create=False) as folder:
            folder.remove_tree(session_id)
    except FileNotFoundError:
        pass

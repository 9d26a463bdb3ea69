"""One knowledge store: a SQLite file (WAL) at ``<workspace>/.harvey/rag/NAME.db``.

Tables: ``meta`` (the embedder bound at creation, the last ingest),
``files`` (one row per ingested file: size, mtime, content hash — what makes
re-ingest incremental), ``chunks`` (text and provenance: path, character and
line span, text hash), ``chunks_fts`` (an FTS5 index over the chunk text,
``porter unicode61``, external content so the text is stored once) and
``vectors`` (one float32 blob per distinct chunk hash, so a chunk that did
not change is never embedded twice).

Every change to one file (its chunks, its FTS rows, its file row) is one
transaction: a Ctrl-C or a crash between files leaves each file either fully
old or fully new, and the next ingest carries on from there. ``sqlite3``
errors never leave this module: a file that is not a store, or a store that
is damaged, is one ``KnowledgeError`` line naming it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from harvey.errors import KnowledgeError, UsageError, WorkspaceError
from harvey.knowledge import vocabulary
from harvey.knowledge.names import (  # re-exported: store.py is where callers look
    NAME_RE,
    check_name,
    rag_dir,
    rag_location,
    store_names,
    store_path,
    with_active,
)
from harvey.knowledge.schema import MIGRATIONS, SCHEMA_VERSION, adopt
from harvey.store.connection import connect, transaction, translated
from harvey.store.migrations import migrate

__all__ = [
    "NAME_RE",
    "ChunkRow",
    "FileRow",
    "KnowledgeStore",
    "NewChunk",
    "check_name",
    "create_store",
    "drop_store",
    "open_store",
    "rag_dir",
    "store_names",
    "store_path",
    "with_active",
]

_BUSY_SECONDS = 5.0
# A full disk: a write transaction that fails leaves its frames in the WAL past the last
# commit, and a WAL whose committed frames are not yet copied into the database cannot be
# reset, so each retry wrote its garbage further into whatever space had been freed. So
# the WAL is checkpointed often (committed pages reach the database before much piles
# up), trimmed to this size when it restarts, and after a failed transaction it is
# checkpointed with TRUNCATE, which gives its whole file back.
_WAL_AUTOCHECKPOINT_PAGES = 64
_WAL_SIZE_LIMIT = 1024 * 1024


@dataclass(frozen=True)
class FileRow:
    path: str
    size: int
    mtime_ns: int
    hash: str


@dataclass(frozen=True)
class ChunkRow:
    """One stored chunk with its provenance (``path`` is workspace-relative)."""

    id: int
    path: str
    start: int
    end: int
    start_line: int
    end_line: int
    hash: str
    text: str
    page_start: int = 0  # pages of a PDF chunk (0: not a paged document)
    page_end: int = 0


@dataclass(frozen=True)
class NewChunk:
    start: int
    end: int
    start_line: int
    end_line: int
    hash: str
    text: str
    page_start: int = 0
    page_end: int = 0


class KnowledgeStore:
    """An open store; use ``open_store``/``create_store`` rather than the constructor."""

    def __init__(self, name: str, path: Path, db: sqlite3.Connection) -> None:
        self.name = name
        self.path = path
        self._db = db

    # -- opening ------------------------------------------------------------------

    @classmethod
    def _connect(cls, name: str, path: Path) -> KnowledgeStore:
        try:
            # WAL + NORMAL: a crash never corrupts or half-applies a file's transaction;
            # a power cut may lose the last few, which the next ingest simply redoes
            db = connect(
                path,
                busy_timeout=_BUSY_SECONDS,
                synchronous="NORMAL",
                pragmas=(
                    ("wal_autocheckpoint", _WAL_AUTOCHECKPOINT_PAGES),
                    ("journal_size_limit", _WAL_SIZE_LIMIT),
                ),
            )
        except sqlite3.DatabaseError as exc:
            raise KnowledgeError(f"store {name!r} ({path}) is not usable: {exc}") from exc
        try:
            if _leftover_wal(path):  # a run that failed (full disk) or crashed left it
                _reclaim_wal(db)
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise KnowledgeError(
                    f"store {name!r} was made by a newer Harvey (schema {version}); "
                    "upgrade Harvey to use it"
                )
            migrate(db, MIGRATIONS, adopt=adopt)
            db.execute("SELECT count(*) FROM meta").fetchone()
        except (sqlite3.DatabaseError, KnowledgeError) as exc:
            db.close()
            bad = KnowledgeError(f"store {name!r} ({path}) is not usable: {exc}")
            raise exc if isinstance(exc, KnowledgeError) else bad from exc
        return cls(name, path, db)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> KnowledgeStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _translated(self) -> AbstractContextManager[None]:
        return translated(KnowledgeError, f"store {self.name!r} failed")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; any exception (Ctrl-C too) rolls back,
        and a failed transaction's WAL frames go back to the disk (``_reclaim_wal``)."""
        with self._translated(), transaction(self._db, after_failure=_reclaim_wal):
            yield

    # -- meta ---------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        with self._translated():
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._translated():
            self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    @property
    def embedder_spec(self) -> str:
        return self.meta("embedder") or "none"

    def dimension_error(self, bound: int, spec: str, got: int) -> KnowledgeError:
        """The one error for vectors of another size than the store's: both named."""
        return KnowledgeError(
            f"store {self.name!r} was made with embedder {self.embedder_spec} "
            f"({bound}-dimension vectors) but {spec} now answers with {got} dimensions "
            "(its model changed?); make a new store for it"
        )

    # -- files and chunks ---------------------------------------------------------

    def file_row(self, path: str) -> FileRow | None:
        with self._translated():
            row = self._db.execute(
                "SELECT path, size, mtime_ns, hash FROM files WHERE path=?", (path,)
            ).fetchone()
        return None if row is None else FileRow(*row)

    def files(self) -> list[FileRow]:
        with self._translated():
            rows = self._db.execute("SELECT path, size, mtime_ns, hash FROM files ORDER BY path")
            return [FileRow(*r) for r in rows]

    def touch_file(self, row: FileRow) -> None:
        """Same content, new mtime: remember it so the next ingest skips by size and mtime."""
        with self._translated():
            self._db.execute(
                "UPDATE files SET mtime_ns=?, size=? WHERE path=?",
                (row.mtime_ns, row.size, row.path),
            )

    def _delete_chunks(self, path: str) -> None:
        self._db.execute(
            "INSERT INTO chunks_fts(chunks_fts, rowid, text) "
            "SELECT 'delete', id, text FROM chunks WHERE path=?",
            (path,),
        )
        self._db.execute("DELETE FROM chunks WHERE path=?", (path,))

    def replace_file(self, row: FileRow, chunks: Sequence[NewChunk]) -> None:
        """A file's new chunks replace its old ones, all in one transaction."""
        with self.transaction():
            self._delete_chunks(row.path)
            for c in chunks:
                cur = self._db.execute(
                    "INSERT INTO chunks(path, start, end, start_line, end_line, hash, text, "
                    "page_start, page_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        row.path,
                        c.start,
                        c.end,
                        c.start_line,
                        c.end_line,
                        c.hash,
                        c.text,
                        c.page_start,
                        c.page_end,
                    ),
                )
                self._db.execute(
                    "INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)", (cur.lastrowid, c.text)
                )
            self._db.execute(
                "INSERT OR REPLACE INTO files(path, size, mtime_ns, hash, ingested_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (row.path, row.size, row.mtime_ns, row.hash, time.time()),
            )

    def remove_files(self, paths: Iterable[str]) -> int:
        """Prune files gone from disk (and vectors no chunk uses any more)."""
        count = 0
        with self.transaction():
            for path in paths:
                self._delete_chunks(path)
                self._db.execute("DELETE FROM files WHERE path=?", (path,))
                count += 1
            self._db.execute("DELETE FROM vectors WHERE hash NOT IN (SELECT hash FROM chunks)")
        return count

    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self._translated():
            rows = self._db.execute(
                "SELECT id, path, start, end, start_line, end_line, hash, text, page_start, "
                "page_end FROM chunks "
                f"WHERE id IN ({marks})",
                list(ids),
            )
            return {r[0]: ChunkRow(*r) for r in rows}

    def paths_of(self, ids: Sequence[int]) -> dict[int, str]:
        """Each chunk id's file path (no text: fusion only needs to know which file)."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self._translated():
            rows = self._db.execute(f"SELECT id, path FROM chunks WHERE id IN ({marks})", list(ids))
            return {int(r[0]): str(r[1]) for r in rows}

    def fts(self, match: str, limit: int) -> list[tuple[int, float]]:
        """``(chunk id, bm25)`` best first; bm25 is FTS5's (more negative is better)."""
        with self._translated():
            rows = self._db.execute(
                "SELECT rowid, bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ? "
                "ORDER BY s LIMIT ?",
                (match, limit),
            )
            return [(int(r[0]), float(r[1])) for r in rows]

    def match_counts(self, terms: Sequence[str], cap: int) -> list[int]:
        """How many chunks match each FTS term, counting no further than ``cap``.

        Counting walks a term's doclist without scoring, so it costs a small fraction of
        ranking the same rows; the cap bounds it for the commonest words."""
        with self._translated():
            return [
                int(
                    self._db.execute(
                        "SELECT count(*) FROM (SELECT rowid FROM chunks_fts "
                        "WHERE chunks_fts MATCH ? LIMIT ?)",
                        (term, cap),
                    ).fetchone()[0]
                )
                for term in terms
            ]

    def near_term(self, word: str) -> bool:
        """Whether the index holds a term one edit from ``word`` (``vocabulary``)."""
        with self._translated():
            return vocabulary.near_term(self._db, word)

    # -- vectors --------------------------------------------------------------------

    def unembedded(self) -> list[tuple[str, str]]:
        """``(hash, text)`` of every distinct chunk text without a vector yet."""
        with self._translated():
            rows = self._db.execute(
                "SELECT hash, min(text) FROM chunks WHERE hash NOT IN (SELECT hash FROM vectors) "
                "GROUP BY hash"
            )
            return [(str(h), str(t)) for h, t in rows]

    def put_vectors(self, items: Sequence[tuple[str, bytes]]) -> None:
        with self.transaction():
            self._db.executemany("INSERT OR REPLACE INTO vectors(hash, vec) VALUES (?, ?)", items)

    def chunk_vectors(self) -> tuple[list[int], list[bytes]]:
        """Every chunk id with its vector blob (chunks without one are left out)."""
        with self._translated():
            rows = self._db.execute(
                "SELECT chunks.id, vectors.vec FROM chunks JOIN vectors USING (hash) ORDER BY id"
            ).fetchall()
        return [int(r[0]) for r in rows], [bytes(r[1]) for r in rows]

    def counts(self) -> tuple[int, int, int]:
        """Files, chunks and bytes of chunk text."""
        with self._translated():
            files = self._db.execute("SELECT count(*) FROM files").fetchone()[0]
            chunks, size = self._db.execute(
                "SELECT count(*), coalesce(sum(length(CAST(text AS BLOB))), 0) FROM chunks"
            ).fetchone()
        return int(files), int(chunks), int(size)

    def integrity(self) -> None:
        """Raise ``KnowledgeError`` when SQLite finds the file damaged."""
        with self._translated():
            ok = self._db.execute("PRAGMA quick_check").fetchone()[0]
        if ok != "ok":
            raise KnowledgeError(f"store {self.name!r} is corrupted: {ok}")


def _leftover_wal(path: Path) -> bool:
    try:
        return Path(f"{path}-wal").stat().st_size > 0
    except OSError:
        return False


def _reclaim_wal(db: sqlite3.Connection) -> None:
    """Copy committed frames into the database and truncate the WAL; best effort.

    Never waits for another process (busy timeout 0 for the call) and never
    raises: on a disk still full the checkpoint fails and is simply tried again
    at the next open or failure.
    """
    try:
        db.execute("PRAGMA busy_timeout=0")
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            db.execute(f"PRAGMA busy_timeout={int(_BUSY_SECONDS * 1000)}")
    except sqlite3.Error:
        pass


def open_store(workspace: Path, name: str) -> KnowledgeStore:
    """An existing store; a usage error (exit 2) naming the stores there are, if not."""
    path = store_path(workspace, name)
    try:
        with rag_location(workspace).open(create=False) as folder:
            exists = folder.entry(path.name) is not None
            path = folder.database(path.name, create=False) if exists else path
    except FileNotFoundError:
        exists = False
    except (OSError, WorkspaceError) as exc:
        raise KnowledgeError(f"knowledge stores are off: {_reason(exc)}") from exc
    if not exists:
        known = ", ".join(store_names(workspace)) or "none yet"
        raise UsageError(f"no knowledge store {name!r} (stores: {known}; 'harvey rag new {name}')")
    return KnowledgeStore._connect(name, path)


def create_store(workspace: Path, name: str, embedder: str, dims: int) -> KnowledgeStore:
    """A new, empty store bound to ``embedder`` (its spec and dimensions)."""
    path = store_path(workspace, name)
    from harvey.ownfiles.private import tighten_database

    try:  # a store holds the text of the workspace's files: 0700 folder, 0600 files
        with rag_location(workspace).open(create=True) as folder:
            if folder.entry(path.name) is not None:
                raise UsageError(f"knowledge store {name!r} already exists ({path})")
            path = folder.database(path.name, create=True)
    except (OSError, WorkspaceError) as exc:
        raise KnowledgeError(f"cannot create {path}: {_reason(exc)}") from exc
    store = KnowledgeStore._connect(name, path)
    tighten_database(path)
    store.set_meta("embedder", embedder)
    store.set_meta("dims", str(dims))
    store.set_meta("created", str(time.time()))
    return store


def drop_store(workspace: Path, name: str) -> bool:
    """Delete the store's files (and SQLite's companions); False when there was none.

    Unlinked in the folder reached without following a link, so a ``.harvey/rag``
    that points elsewhere never loses a file there.
    """
    path = store_path(workspace, name)
    try:
        with rag_location(workspace).open(create=False) as folder:
            if folder.entry(path.name) is None:
                return False
            for suffix in ("", "-wal", "-shm", "-journal"):
                folder.remove(path.name + suffix)
    except FileNotFoundError:
        return False
    except (OSError, WorkspaceError) as exc:
        raise KnowledgeError(f"cannot drop {name!r}: {_reason(exc)}") from exc
    return True


def _reason(exc: Exception) -> str:
    return str(getattr(exc, "strerror", None) or exc) if isinstance(exc, OSError) else str(exc)

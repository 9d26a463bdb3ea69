"""Packed memory vectors: the matrix a vector recall scans, read as one row, never stale.

Reading one vector row per memory is what made a vector recall slow (10,000
rows for SQLite to hand back, then a join of 10,000 small byte strings), so
the vectors of one embedder and one workspace scope (that workspace's memories
and the every-workspace ones, as recall searches them) are also kept as one
packed row in memory.db (``memory_vector_packs``, migration m004): the ids,
newline-separated, and one float32 matrix, read with ``numpy.frombuffer``
without a copy.

A pack is a cache of ``memory_vectors``, not a second truth. It carries the
generation it was built at; triggers bump the generation in the same
transaction as every write that can change a recalled vector (see
``records._m004_memory_vector_packs``), so a pack is used only while nothing it
was built from has changed, and otherwise built anew from the per-row vectors.
Building reads the generation, the rows and the check for memories still
without a vector in one snapshot, and stores the pack only when none is
missing (a memory written by another process in between would otherwise be
left out until the next write). Storing is best effort: a busy or read-only
database still gets the right answer, only not cached.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvey.errors import StoreError

if TYPE_CHECKING:
    import numpy as np

    from harvey.memory.store import MemoryStore

ACTIVE = "m.archived = 0 AND m.superseded_by IS NULL"


@dataclass
class Pack:
    """The ids and unit vectors (one row each, ``dims`` wide) of one scope's active memories."""

    ids: list[str]
    matrix: np.ndarray


def _scope(workspace: str | None) -> str:
    return workspace or ""  # workspaces are absolute paths: "" is no workspace's name


def _unpack(ids_text: object, blob: object, dims: int) -> Pack | None:
    """The pack in a row, or None when the row is damaged (it is then built anew)."""
    import numpy as np

    ids = str(ids_text).split("\n") if ids_text else []
    data = bytes(blob) if isinstance(blob, bytes | memoryview) else b""
    if len(data) != len(ids) * dims * 4:
        return None
    return Pack(ids, np.frombuffer(data, dtype=np.float32).reshape(len(ids), dims))


def read_pack(store: MemoryStore, spec: str, workspace: str | None, dims: int) -> Pack | None:
    """The current pack (built at the current generation), or None: one statement, so the
    generation and the pack come from one snapshot."""
    try:
        rows = store.db.execute(
            "SELECT p.ids, p.vecs FROM memory_vector_packs p JOIN memory_generation g "
            "ON p.generation = g.n WHERE p.embedder = ? AND p.scope = ? AND p.dims = ?",
            (spec, _scope(workspace), dims),
        ).fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"memory.db: {exc}") from exc
    return _unpack(rows[0][0], rows[0][1], dims) if rows else None


def build_pack(store: MemoryStore, spec: str, workspace: str | None, dims: int) -> Pack:
    """The pack from the per-row vectors (those ``dims`` wide: a remote model that changed
    its size under one name has vectors the query cannot be compared with), stored when
    every active memory has a vector."""
    import numpy as np

    db = store.db
    try:
        db.execute("BEGIN")
        try:
            (generation,) = db.execute("SELECT n FROM memory_generation").fetchone()
            rows = db.execute(
                f"SELECT m.id, v.vec FROM memories m JOIN memory_vectors v ON v.id = m.id "
                f"WHERE v.embedder = ? AND {ACTIVE} "
                "AND (m.workspace IS NULL OR m.workspace = ?) ORDER BY m.id",
                (spec, workspace),
            ).fetchall()
            missing = db.execute(
                f"SELECT 1 FROM memories m WHERE {ACTIVE} AND NOT EXISTS (SELECT 1 FROM "
                "memory_vectors v WHERE v.id = m.id AND v.embedder = ?) LIMIT 1",
                (spec,),
            ).fetchone()
            rows = [(str(mid), bytes(vec)) for mid, vec in rows if len(vec) == dims * 4]
            ids = [mid for mid, _ in rows]
            blob = b"".join(vec for _, vec in rows)
            if missing is None:
                _store(db, spec, workspace, dims, generation, ids, blob)
        finally:
            if db.in_transaction:
                db.execute("COMMIT")
    except sqlite3.Error as exc:
        raise StoreError(f"memory.db: {exc}") from exc
    return Pack(ids, np.frombuffer(blob, dtype=np.float32).reshape(len(ids), dims))


def _store(
    db: sqlite3.Connection,
    spec: str,
    workspace: str | None,
    dims: int,
    generation: int,
    ids: list[str],
    blob: bytes,
) -> None:
    """Replace this scope's pack and drop the stale ones; given up (rolled back) when
    another process wrote first or the file is read-only, since the pack is only a cache."""
    try:
        db.execute(
            "DELETE FROM memory_vector_packs WHERE embedder = ? AND (scope = ? OR generation != ?)",
            (spec, _scope(workspace), generation),
        )
        db.execute(
            "INSERT INTO memory_vector_packs (embedder, scope, dims, generation, ids, vecs) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (spec, _scope(workspace), dims, generation, "\n".join(ids), blob),
        )
    except sqlite3.Error:
        db.execute("ROLLBACK")

"""Packed memory vectors: the matrix a vector recall scans, read in 16 rows, never stale.

Reading one vector row per memory is what made a vector recall slow (10,000
rows for SQLite to hand back, then a join of 10,000 small byte strings), so
the vectors of one embedder and one workspace scope (that workspace's memories
and the every-workspace ones, as recall searches them) are also kept packed in
memory.db (``memory_vector_packs``, migration m004): one row per bucket (the
ids are split in 16 by their last character), holding the ids,
newline-separated, and one float32 matrix, read with ``numpy.frombuffer``
without a copy.

A pack is a cache of ``memory_vectors``, not a second truth. It carries its
bucket's generation when it was built; triggers bump that generation in the
same transaction as every write that can change one of the bucket's recalled
vectors (see ``records._m004_memory_vector_packs``), so a pack is used only
while nothing it was built from has changed, and otherwise built anew from the
per-row vectors: after one write, one bucket (a sixteenth of the rows).
Building reads the generations, the current packs, the stale buckets' rows and
the check for memories still without a vector in one snapshot, and stores the
new packs only when none is missing (a memory written by another process in
between would otherwise be left out until the next write). Storing is best
effort: a busy or read-only database still gets the right answer, only not
cached.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvey.errors import StoreError
from harvey.memory.records import PACK_BUCKETS, bucket_sql

if TYPE_CHECKING:
    import numpy as np

    from harvey.memory.store import MemoryStore

ACTIVE = "m.archived = 0 AND m.superseded_by IS NULL"
CURRENT = (
    "SELECT p.bucket, p.ids, p.vecs FROM memory_vector_packs p JOIN memory_generation g "
    "ON p.bucket = g.bucket AND p.generation = g.n "
    "WHERE p.embedder = ? AND p.scope = ? AND p.dims = ?"
)


@dataclass
class Pack:
    """The ids and unit vectors (one row each, ``dims`` wide) of one bucket's active
    memories in one scope."""

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


def _current(
    db: sqlite3.Connection, spec: str, workspace: str | None, dims: int
) -> dict[int, Pack]:
    out = {}
    for bucket, ids_text, blob in db.execute(CURRENT, (spec, _scope(workspace), dims)):
        pack = _unpack(ids_text, blob, dims)
        if pack is not None:
            out[int(bucket)] = pack
    return out


def read_packs(store: MemoryStore, spec: str, workspace: str | None, dims: int) -> dict[int, Pack]:
    """The current packs by bucket (all ``PACK_BUCKETS`` of them when nothing is stale):
    one statement, so the generations and the packs come from one snapshot."""
    try:
        return _current(store.db, spec, workspace, dims)
    except sqlite3.Error as exc:
        raise StoreError(f"memory.db: {exc}") from exc


def build_packs(store: MemoryStore, spec: str, workspace: str | None, dims: int) -> dict[int, Pack]:
    """Every bucket's pack, the stale ones built from the per-row vectors (those ``dims``
    wide: a remote model that changed its size under one name has vectors the query
    cannot be compared with) and stored when every active memory has a vector."""
    db = store.db
    try:
        db.execute("BEGIN")
        try:
            current = _current(db, spec, workspace, dims)
            stale = [b for b in range(PACK_BUCKETS) if b not in current]
            built = _from_rows(db, spec, workspace, dims, stale)
            missing = None  # a current bucket had none missing when built, nor since
            if stale:
                missing = db.execute(
                    f"SELECT 1 FROM memories m WHERE {ACTIVE} AND {bucket_sql('m.id')} IN "
                    f"({', '.join(map(str, stale))}) AND NOT EXISTS (SELECT 1 FROM "
                    "memory_vectors v WHERE v.id = m.id AND v.embedder = ?) LIMIT 1",
                    (spec,),
                ).fetchone()
            if stale and missing is None:
                _store(db, spec, workspace, dims, built)
        finally:
            if db.in_transaction:
                db.execute("COMMIT")
    except sqlite3.Error as exc:
        raise StoreError(f"memory.db: {exc}") from exc
    current.update(built)
    return current


def _from_rows(
    db: sqlite3.Connection, spec: str, workspace: str | None, dims: int, buckets: list[int]
) -> dict[int, Pack]:
    import numpy as np

    if not buckets:
        return {}
    rows = db.execute(
        f"SELECT {bucket_sql('v.id')}, m.id, v.vec FROM memory_vectors v "
        f"JOIN memories m ON m.id = v.id WHERE v.embedder = ? AND {ACTIVE} "
        "AND (m.workspace IS NULL OR m.workspace = ?) "
        f"AND {bucket_sql('v.id')} IN ({', '.join(map(str, buckets))}) ORDER BY m.id",
        (spec, workspace),
    ).fetchall()
    grouped: dict[int, list[tuple[str, bytes]]] = {b: [] for b in buckets}
    for bucket, mid, vec in rows:
        if len(vec) == dims * 4:
            grouped[int(bucket)].append((str(mid), bytes(vec)))
    return {
        b: Pack(
            [mid for mid, _ in items],
            np.frombuffer(b"".join(vec for _, vec in items), dtype=np.float32).reshape(
                len(items), dims
            ),
        )
        for b, items in grouped.items()
    }


def _store(
    db: sqlite3.Connection, spec: str, workspace: str | None, dims: int, built: dict[int, Pack]
) -> None:
    """Replace the rebuilt buckets' packs and drop this embedder's stale ones; given up
    (rolled back) when another process wrote first or the file is read-only, since a
    pack is only a cache."""
    try:
        db.execute(
            "DELETE FROM memory_vector_packs WHERE embedder = ? AND generation != "
            "(SELECT n FROM memory_generation g WHERE g.bucket = memory_vector_packs.bucket)",
            (spec,),
        )
        db.executemany(
            "INSERT OR REPLACE INTO memory_vector_packs "
            "(embedder, scope, bucket, dims, generation, ids, vecs) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (spec, _scope(workspace), b, dims, _generation(db, b), "\n".join(pack.ids),
                 pack.matrix.tobytes())
                for b, pack in built.items()
            ],
        )  # fmt: skip
    except sqlite3.Error:
        db.execute("ROLLBACK")


def _generation(db: sqlite3.Connection, bucket: int) -> int:
    row = db.execute("SELECT n FROM memory_generation WHERE bucket = ?", (bucket,)).fetchone()
    return int(row[0])

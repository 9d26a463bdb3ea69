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
GENERATIONS = CURRENT.replace("p.bucket, p.ids, p.vecs", "p.bucket, p.generation", 1)


class Pack:
    """The ids and unit vectors (one row each, ``dims`` wide) of one bucket's active
    memories in one scope.

    The ids stay one newline-separated string until asked for: a recall needs the
    ids of its best 200 rows, and splitting 10,000 ids into strings on every recall
    cost more than the scan itself.
    """

    def __init__(self, ids_text: str, matrix: np.ndarray) -> None:
        self.ids_text = ids_text
        self.matrix = matrix
        self._ends: np.ndarray | None = None  # byte offset of each id's newline, lazily
        self._raw = b""

    @classmethod
    def of(cls, ids: list[str], matrix: np.ndarray) -> Pack:
        return cls("\n".join(ids), matrix)

    def id_at(self, row: int) -> str:
        """The id of row ``row``, found by byte offset (no split of the whole list)."""
        import numpy as np

        if self._ends is None:
            self._raw = self.ids_text.encode()
            newlines = np.flatnonzero(np.frombuffer(self._raw, dtype=np.uint8) == 10)
            self._ends = np.append(newlines, len(self._raw))
        start = int(self._ends[row - 1]) + 1 if row else 0
        return self._raw[start : int(self._ends[row])].decode()


def _scope(workspace: str | None) -> str:
    return workspace or ""  # workspaces are absolute paths: "" is no workspace's name


def _unpack(ids_text: object, blob: object, dims: int) -> Pack | None:
    """The pack in a row, or None when the row is damaged (it is then built anew)."""
    import numpy as np

    text = str(ids_text) if ids_text else ""
    count = text.count("\n") + 1 if text else 0
    data = bytes(blob) if isinstance(blob, bytes | memoryview) else b""
    if len(data) != count * dims * 4:
        return None
    return Pack(text, np.frombuffer(data, dtype=np.float32).reshape(count, dims))


def _current(
    db: sqlite3.Connection,
    spec: str,
    workspace: str | None,
    dims: int,
    buckets: list[int] | None = None,
) -> dict[int, Pack]:
    """The current packs (of ``buckets`` only, when given), by bucket."""
    sql, args = CURRENT, (spec, _scope(workspace), dims)
    if buckets is not None:
        sql += f" AND p.bucket IN ({', '.join(map(str, buckets))})"
    out = {}
    for bucket, ids_text, blob in db.execute(sql, args):
        pack = _unpack(ids_text, blob, dims)
        if pack is not None:
            out[int(bucket)] = pack
    return out


class PackCache:
    """The packs one connection has read or built, each with its bucket's generation then.

    A session recalls once a turn, and between two turns usually nothing changed:
    then only the 16 generations are read, not the 10 MB of vectors. A pack is
    reused only while its bucket's generation is the one it was read at, and the
    triggers bump a generation with every write that could change the pack, in
    this process or another, so a reused pack is exactly what a read would give.
    """

    def __init__(self) -> None:
        self._held: dict[tuple[str, int, int], tuple[int, Pack]] = {}  # scope, dims, bucket

    def read(
        self, store: MemoryStore, spec: str, workspace: str | None, dims: int
    ) -> dict[int, Pack]:
        """The current packs by bucket (all ``PACK_BUCKETS`` of them when nothing is stale).

        Two statements, so possibly two snapshots: a bucket written in between has
        no current row in the second and counts as stale, which is what the next
        read would say anyway.
        """
        try:
            return self._current(store.db, spec, workspace, dims)
        except sqlite3.Error as exc:
            raise StoreError(f"memory.db: {exc}") from exc

    def build(
        self, store: MemoryStore, spec: str, workspace: str | None, dims: int
    ) -> dict[int, Pack]:
        """Every bucket's pack, the stale ones built from the per-row vectors (those ``dims``
        wide: a remote model that changed its size under one name has vectors the query
        cannot be compared with) and stored when every active memory has a vector; one
        transaction, so one snapshot."""
        db = store.db
        try:
            db.execute("BEGIN")
            try:
                current = self._current(db, spec, workspace, dims)
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
                    at = {b: _generation(db, b) for b in built}
                    if _store(db, spec, workspace, dims, built, at):
                        for b, pack in built.items():
                            self._held[(_scope(workspace), dims, b)] = (at[b], pack)
            finally:
                if db.in_transaction:
                    db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"memory.db: {exc}") from exc
        current.update(built)
        return current

    def _current(
        self, db: sqlite3.Connection, spec: str, workspace: str | None, dims: int
    ) -> dict[int, Pack]:
        """The current packs, reading only those this cache lacks at their generation."""
        scope = _scope(workspace)
        at = {int(b): int(g) for b, g in db.execute(GENERATIONS, (spec, scope, dims))}
        held = {}
        for bucket, generation in at.items():
            kept = self._held.get((scope, dims, bucket))
            if kept is not None and kept[0] == generation:
                held[bucket] = kept[1]
        wanted = [b for b in at if b not in held]
        fetched = _current(db, spec, workspace, dims, wanted) if wanted else {}
        for bucket, pack in fetched.items():
            self._held[(scope, dims, bucket)] = (at[bucket], pack)
        return {**held, **fetched}


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
        b: Pack.of(
            [mid for mid, _ in items],
            np.frombuffer(b"".join(vec for _, vec in items), dtype=np.float32).reshape(
                len(items), dims
            ),
        )
        for b, items in grouped.items()
    }


def _store(
    db: sqlite3.Connection,
    spec: str,
    workspace: str | None,
    dims: int,
    built: dict[int, Pack],
    at: dict[int, int],
) -> bool:
    """Replace the rebuilt buckets' packs (at generations ``at``) and drop this embedder's
    stale ones; given up (rolled back, False) when another process wrote first or the
    file is read-only, since a pack is only a cache."""
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
                (spec, _scope(workspace), b, dims, at[b], pack.ids_text, pack.matrix.tobytes())
                for b, pack in built.items()
            ],
        )
    except sqlite3.Error:
        db.execute("ROLLBACK")
        return False
    return True


def _generation(db: sqlite3.Connection, bucket: int) -> int:
    row = db.execute("SELECT n FROM memory_generation WHERE bucket = ?", (bucket,)).fetchone()
    return int(row[0])

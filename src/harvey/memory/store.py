"""memory.db: the long-term memories mined from recordings, and which recordings were mined.

SQLite in WAL mode, opened and evolved by the store layer (``harvey.store``:
the same connection recipe and ``migrate`` as sessions.db), with an FTS5
index over the text kept in step by the store's own writes. Nothing here
deletes a memory except ``forget``: an UPDATE from deduplication adds the
new text and marks the old row ``superseded_by``, and flagging archives, so
a bad merge or a wrong flag can be undone by hand.

Every write is one transaction, so a crash or a refused write leaves no
half-written memory. A file that is not a database, or is corrupted, is
reported as one ``StoreError`` line naming it, never a traceback.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from harvey.errors import StoreError, UsageError, WorkspaceError
from harvey.memory.records import (
    COLUMNS,
    INITIAL_CONFIDENCE,
    KINDS,
    MIGRATIONS,
    TYPES,
    Memory,
    bucket_sql,
    normalise,
    to_memory,
)
from harvey.retrieval.words import coverage, query_words
from harvey.store.connection import open_home, transaction, translated
from harvey.store.migrations import migrate

__all__ = ["INITIAL_CONFIDENCE", "KINDS", "TYPES", "Memory", "MemoryStore", "normalise"]

FLAG_STEP = 0.1
ARCHIVE_AT = 0.2
BUSY_TIMEOUT = 10.0
MMAP_BYTES = 256 * 1024 * 1024
COMMON_SHARE = 0.05  # a word in more of the memories than this is not searched alone
OVERFETCH = 8  # FTS hits fetched per result wanted, before the workspace filter


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class MemoryStore:
    """Opens (creating and migrating) ``memory.db``; every method is one transaction."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:  # 0700 folder, 0600 file, no link; WAL, and the packed vectors (one ~10 MB
            # row at 10,000 memories) mapped: read from the OS page cache (vector_pack)
            self.db = open_home(
                self.path, busy_timeout=BUSY_TIMEOUT, pragmas=(("mmap_size", MMAP_BYTES),)
            )
        except (OSError, sqlite3.OperationalError, WorkspaceError) as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        except sqlite3.Error as exc:  # not a database, or a damaged one
            raise self._unusable(exc) from exc
        try:
            migrate(self.db, MIGRATIONS)
            self.db.execute("SELECT count(*) FROM memories_fts").fetchone()
        except sqlite3.Error as exc:
            self.db.close()
            raise self._unusable(exc) from exc

    def _unusable(self, exc: sqlite3.Error) -> StoreError:
        return StoreError(
            f"{self.path} is not a usable memory database ({exc}); move it aside to start anew"
        )

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with translated(StoreError, "memory.db"), transaction(self.db) as db:
            yield db

    def _query(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        with translated(StoreError, "memory.db"):
            return [tuple(r) for r in self.db.execute(sql, args).fetchall()]

    # -- writing ----------------------------------------------------------------

    def new_id(self, mtype: str) -> str:
        while True:
            mid = f"{mtype}_{secrets.token_hex(3)}"
            if self.get(mid) is None:
                return mid

    def add(self, memory: Memory) -> Memory:
        """Store ``memory`` (its id is made when empty); returns it as stored."""
        if memory.type not in TYPES:
            raise StoreError(f"unknown memory type {memory.type!r} (one of {', '.join(TYPES)})")
        if not memory.text.strip():
            raise StoreError("a memory needs text")
        now = _now()
        memory.id = memory.id or self.new_id(memory.type)
        memory.created_at = memory.created_at or now
        memory.updated_at = now
        with self._tx() as db:
            self._insert(db, memory)
        return memory

    def _insert(self, db: sqlite3.Connection, m: Memory) -> None:
        db.execute(
            f"INSERT INTO memories ({COLUMNS}, norm) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                m.id, m.type, m.kind, m.text, m.workspace, m.recording, json.dumps(m.scenes),
                m.confidence, m.created_at, m.updated_at, m.last_recalled, m.recall_count,
                int(m.archived), m.superseded_by, normalise(m.text),
            ),
        )  # fmt: skip
        db.execute("INSERT INTO memories_fts (id, text) VALUES (?, ?)", (m.id, m.text))

    def supersede(self, old_id: str, new: Memory) -> Memory:
        """Store ``new`` and mark ``old_id`` superseded by it, in one transaction."""
        self.require(old_id)
        now = _now()
        new.id = new.id or self.new_id(new.type)
        new.created_at = new.created_at or now
        new.updated_at = now
        with self._tx() as db:
            self._insert(db, new)
            db.execute(
                "UPDATE memories SET superseded_by = ?, updated_at = ? WHERE id = ?",
                (new.id, now, old_id),
            )
        return new

    def set_text(self, mid: str, text: str) -> Memory:
        self.require(mid)
        with self._tx() as db:
            db.execute(
                "UPDATE memories SET text = ?, norm = ?, updated_at = ? WHERE id = ?",
                (text, normalise(text), _now(), mid),
            )
            db.execute("UPDATE memories_fts SET text = ? WHERE id = ?", (text, mid))
            db.execute("DELETE FROM memory_vectors WHERE id = ?", (mid,))  # made anew when used
        return self.require(mid)

    def flag(self, mid: str) -> Memory:
        """Lower confidence by ``FLAG_STEP``; at or below ``ARCHIVE_AT`` the memory is archived."""
        memory = self.require(mid)
        confidence = max(0.0, round(memory.confidence - FLAG_STEP, 2))
        with self._tx() as db:
            db.execute(
                "UPDATE memories SET confidence = ?, archived = ?, updated_at = ? WHERE id = ?",
                (confidence, int(memory.archived or confidence <= ARCHIVE_AT), _now(), mid),
            )
        return self.require(mid)

    def forget(self, mid: str) -> None:
        self.require(mid)
        with self._tx() as db:
            db.execute("DELETE FROM memories WHERE id = ?", (mid,))
            db.execute("DELETE FROM memories_fts WHERE id = ?", (mid,))
            db.execute("DELETE FROM memory_vectors WHERE id = ?", (mid,))

    def mark_recalled(self, ids: list[str]) -> None:
        if not ids:
            return
        now = _now()
        with self._tx() as db:
            db.executemany(
                "UPDATE memories SET last_recalled = ?, recall_count = recall_count + 1 "
                "WHERE id = ?",
                [(now, mid) for mid in ids],
            )

    def mark_mined(self, path: Path, accepted: int) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO mined (path, mined_at, accepted) VALUES (?, ?, ?)",
                (str(Path(path).resolve()), _now(), accepted),
            )

    def set_choice(self, workspace: str, name: str, value: str) -> None:
        """Remember a person's answer for ``workspace`` (e.g. the declined profile offer)."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO workspace_choices (workspace, name, value, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (workspace, name, value, _now()),
            )

    def put_vectors(self, items: list[tuple[str, str, bytes]]) -> None:
        """``(id, embedder spec, vector blob)`` rows, replacing a memory's older vector."""
        with self._tx() as db:
            db.executemany(
                "INSERT OR REPLACE INTO memory_vectors (id, embedder, vec) VALUES (?, ?, ?)", items
            )

    # -- reading ----------------------------------------------------------------

    def unvectored(self, spec: str, buckets: list[int] | None = None) -> list[tuple[str, str]]:
        """``(id, text)`` of the active memories with no vector from embedder ``spec``
        (only those of the pack ``buckets`` when given: the others are known complete)."""
        only = f"AND {bucket_sql('m.id')} IN ({', '.join(map(str, buckets))}) " if buckets else ""
        rows = self._query(
            "SELECT m.id, m.text FROM memories m WHERE m.archived = 0 AND m.superseded_by IS NULL "
            f"{only}AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.id = m.id "
            "AND v.embedder = ?)",
            (spec,),
        )
        return [(str(mid), str(text)) for mid, text in rows]

    def vectors(self, spec: str, workspace: str | None) -> list[tuple[str, bytes]]:
        """``(id, blob)`` of this workspace's (and every workspace's) active memories with a
        ``spec`` vector: ids only, the rows are read for the nearest few (``by_ids``)."""
        rows = self._query(
            "SELECT m.id, v.vec FROM memories m JOIN memory_vectors v ON v.id = m.id "
            "WHERE v.embedder = ? AND m.archived = 0 AND m.superseded_by IS NULL "
            "AND (m.workspace IS NULL OR m.workspace = ?)",
            (spec, workspace),
        )
        return [(str(mid), bytes(vec)) for mid, vec in rows]  # type: ignore[call-overload]

    def by_ids(self, ids: list[str]) -> dict[str, Memory]:
        marks = ", ".join("?" for _ in ids)
        rows = self._query(f"SELECT {COLUMNS} FROM memories WHERE id IN ({marks})", tuple(ids))
        return {m.id: m for m in map(to_memory, rows)}

    def choice(self, workspace: str, name: str) -> str | None:
        rows = self._query(
            "SELECT value FROM workspace_choices WHERE workspace = ? AND name = ?",
            (workspace, name),
        )
        return str(rows[0][0]) if rows else None

    def get(self, mid: str) -> Memory | None:
        rows = self._query(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (mid,))
        return to_memory(rows[0]) if rows else None

    def require(self, mid: str) -> Memory:
        memory = self.get(mid)
        if memory is None:
            raise UsageError(f"no memory {mid!r} (see 'harvey memory list --all-workspaces')")
        return memory

    def memories(
        self,
        *,
        workspace: str | None = None,
        all_workspaces: bool = False,
        mtype: str | None = None,
        include_inactive: bool = False,
    ) -> list[Memory]:
        """This workspace's memories and the ones for every workspace (or all of them)."""
        sql = f"SELECT {COLUMNS} FROM memories WHERE 1=1"
        args: list[object] = []
        if not all_workspaces:
            sql += " AND (workspace IS NULL OR workspace = ?)"
            args.append(workspace)
        if mtype:
            sql += " AND type = ?"
            args.append(mtype)
        if not include_inactive:
            sql += " AND archived = 0 AND superseded_by IS NULL"
        return [to_memory(r) for r in self._query(sql + " ORDER BY created_at, id", tuple(args))]

    def pinned(self, workspace: str, types: tuple[str, ...]) -> list[Memory]:
        """This workspace's own active memories of ``types`` (recall's always-included)."""
        marks = ", ".join("?" for _ in types)
        rows = self._query(
            f"SELECT {COLUMNS} FROM memories WHERE workspace = ? AND type IN ({marks}) "
            "AND archived = 0 AND superseded_by IS NULL ORDER BY created_at, id",
            (workspace, *types),
        )
        return [to_memory(r) for r in rows]

    def search(
        self, text: str, *, workspace: str | None, limit: int = 50
    ) -> list[tuple[Memory, float]]:
        """Active memories of this workspace (or every workspace) matching ``text``, best
        first, each with its relevance in (0, 1]: FTS5 finds them, ``coverage`` scores them.

        Memories holding every word are asked for first: that query matches few rows,
        and ranking them is cheap. Only when they are too few are the memories holding
        any of the *rare* words added (``_rare``): ranking costs time in proportion to
        the rows matched, and a word most memories contain ranks nothing.
        """
        words = query_words(text, min_len=3)
        if not words:
            return []
        rows = self._ranked(" AND ".join(f'"{w}"' for w in words), workspace, limit)
        rare = self._rare(words) if len(rows) < limit and len(words) > 1 else []
        if rare:
            seen = {row[0] for row in rows}
            more = self._ranked(" OR ".join(f'"{w}"' for w in rare), workspace, limit)
            rows += [row for row in more if row[0] not in seen][: limit - len(rows)]
        out = [(m, coverage(words, m.text)) for m in (to_memory(row[:-1]) for row in rows)]
        return sorted(out, key=lambda hit: -hit[1])  # stable: bm25 order breaks ties

    def _rare(self, words: list[str]) -> list[str]:
        """The words in at most ``COMMON_SHARE`` of the memories (at least 200): a word in
        more says little about relevance, and ranking its matches is what costs time."""
        total = int(self._query("SELECT count(*) FROM memories")[0][0])  # type: ignore[call-overload]
        cap = max(200, int(total * COMMON_SHARE))
        rare = []
        for word in words:
            found = self._query(
                "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? "
                "LIMIT ?)",
                (f'"{word}"', cap + 1),
            )
            if int(found[0][0]) <= cap:  # type: ignore[call-overload]
                rare.append(word)
        return rare

    def _ranked(self, match: str, workspace: str | None, limit: int) -> list[tuple[object, ...]]:
        return self._query(
            f"SELECT {', '.join('m.' + c.strip() for c in COLUMNS.split(','))}, "
            "f.rank FROM (SELECT id, rank FROM memories_fts WHERE memories_fts MATCH ? "
            "ORDER BY rank LIMIT ?) f JOIN memories m ON m.id = f.id "
            "WHERE m.archived = 0 AND m.superseded_by IS NULL "
            "AND (m.workspace IS NULL OR m.workspace = ?) ORDER BY f.rank LIMIT ?",
            # FTS5 ranks its best hits itself; the filters then see only those
            (match, limit * OVERFETCH, workspace, limit),
        )

    def find_exact(self, text: str, workspace: str | None) -> Memory | None:
        rows = self._query(
            f"SELECT {COLUMNS} FROM memories WHERE norm = ? AND superseded_by IS NULL "
            "AND (workspace IS NULL OR workspace IS ?)",
            (normalise(text), workspace),
        )
        return to_memory(rows[0]) if rows else None

    def is_mined(self, path: Path) -> bool:
        rows = self._query("SELECT 1 FROM mined WHERE path = ?", (str(Path(path).resolve()),))
        return bool(rows)

    def counts(self) -> dict[str, int]:
        rows = self._query(
            "SELECT sum(archived = 0 AND superseded_by IS NULL), sum(archived), "
            "sum(superseded_by IS NOT NULL), (SELECT count(*) FROM mined) FROM memories"
        )
        active, archived, superseded, mined = rows[0]
        if mined is None:
            mined = self._query("SELECT count(*) FROM mined")[0][0]
        return {
            "active": int(active or 0),  # type: ignore[call-overload]
            "archived": int(archived or 0),  # type: ignore[call-overload]
            "superseded": int(superseded or 0),  # type: ignore[call-overload]
            "mined_recordings": int(mined or 0),  # type: ignore[call-overload]
        }

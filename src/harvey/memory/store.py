"""memory.db: the long-term memories mined from recordings, and which recordings were mined.

SQLite in WAL mode, evolved by named migrations (the same ``migrate`` as
sessions.db), with an FTS5 index over the text kept in step by the store's own
writes. Nothing here deletes a memory except ``forget``: an UPDATE from
deduplication adds the new text and marks the old row ``superseded_by``, and
flagging archives, so a bad merge or a wrong flag can be undone by hand.

Every write is one transaction, so a crash or a refused write leaves no
half-written memory. A file that is not a database, or is corrupted, is
reported as one ``StoreError`` line naming it, never a traceback.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from harvey.errors import StoreError, UsageError
from harvey.private import create_private_file, make_private_dirs, tighten_database
from harvey.session.migrations import Migration, _script, migrate

TYPES = ("tool_use", "workflow", "user_preference", "workspace_profile", "project_fact")
KINDS = ("pitfall", "workaround", "recommendation", "pattern", "fact", "preference", "profile")
INITIAL_CONFIDENCE = 0.5
FLAG_STEP = 0.1
ARCHIVE_AT = 0.2
BUSY_TIMEOUT = 10.0
COMMON_SHARE = 0.05  # a word in more of the memories than this is not searched alone
OVERFETCH = 8  # FTS hits fetched per result wanted, before the workspace filter


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def normalise(text: str) -> str:
    """The text exact duplicates are compared by: case, spacing and end punctuation ignored."""
    return re.sub(r"\s+", " ", text).strip().strip(".!").lower()


def _m001_memories(db: sqlite3.Connection) -> None:
    _script(
        db,
        """
        CREATE TABLE memories (
            id TEXT PRIMARY KEY,
            type TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,
            norm TEXT NOT NULL,
            workspace TEXT,
            recording TEXT,
            scenes TEXT NOT NULL DEFAULT '[]',
            confidence REAL NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            last_recalled TEXT,
            recall_count INTEGER NOT NULL DEFAULT 0,
            archived INTEGER NOT NULL DEFAULT 0,
            superseded_by TEXT
        );
        CREATE INDEX memories_workspace ON memories(workspace, type);
        CREATE VIRTUAL TABLE memories_fts USING fts5(id UNINDEXED, text);
        CREATE TABLE mined (
            path TEXT PRIMARY KEY,
            mined_at TEXT NOT NULL,
            accepted INTEGER NOT NULL
        )
        """,
    )


MIGRATIONS: list[Migration] = [("m001_memories", _m001_memories)]


@dataclass
class Memory:
    """One remembered thing; ``workspace`` None means every workspace."""

    id: str
    type: str
    text: str
    kind: str = ""
    workspace: str | None = None
    recording: str | None = None
    scenes: list[int] = field(default_factory=list)
    confidence: float = INITIAL_CONFIDENCE
    created_at: str = ""
    updated_at: str = ""
    last_recalled: str | None = None
    recall_count: int = 0
    archived: bool = False
    superseded_by: str | None = None

    @property
    def active(self) -> bool:
        return not self.archived and self.superseded_by is None

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "type": self.type,
            "kind": self.kind,
            "text": self.text,
            "workspace": self.workspace,
            "recording": self.recording,
            "scenes": self.scenes,
            "confidence": round(self.confidence, 2),
            "created": self.created_at,
            "updated": self.updated_at,
            "last_recalled": self.last_recalled,
            "recall_count": self.recall_count,
            "archived": self.archived,
            "superseded_by": self.superseded_by,
        }


_COLUMNS = (
    "id, type, kind, text, workspace, recording, scenes, confidence, created_at, updated_at, "
    "last_recalled, recall_count, archived, superseded_by"
)


def _row(row: sqlite3.Row | tuple[object, ...]) -> Memory:
    (
        mid,
        mtype,
        kind,
        text,
        ws,
        rec,
        scenes,
        conf,
        created,
        updated,
        recalled,
        count,
        arch,
        sup,
    ) = tuple(row)
    return Memory(
        id=str(mid),
        type=str(mtype),
        kind=str(kind),
        text=str(text),
        workspace=None if ws is None else str(ws),
        recording=None if rec is None else str(rec),
        scenes=[int(s) for s in json.loads(str(scenes) or "[]")],
        confidence=float(conf),
        created_at=str(created),
        updated_at=str(updated),
        last_recalled=None if recalled is None else str(recalled),
        recall_count=int(count),
        archived=bool(arch),
        superseded_by=None if sup is None else str(sup),
    )


STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "how",
        "what",
        "why",
        "when",
        "who",
        "can",
        "you",
        "are",
        "was",
        "this",
        "that",
        "from",
        "into",
        "not",
        "have",
        "has",
        "had",
        "does",
        "did",
        "out",
        "our",
        "your",
        "their",
        "there",
        "then",
        "than",
        "them",
        "they",
        "its",
    ]
)


def query_words(text: str) -> list[str]:
    """The words of ``text`` a search uses: three letters or more, no stop words, unique."""
    words = re.findall(r"[a-z0-9_]{3,}", text.lower())
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))[:32]


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression from free text: its words OR-ed, each quoted (no syntax)."""
    return " OR ".join(f'"{w}"' for w in query_words(text))


def coverage(words: list[str], text: str) -> float:
    """The share of the query's words that ``text`` contains: bm25's scale depends on the
    size of the store (two memories give near-zero scores), this one does not."""
    if not words:
        return 0.0
    have = set(re.findall(r"[a-z0-9_]{3,}", text.lower()))
    return sum(1 for w in words if w in have) / len(words)


class MemoryStore:
    """Opens (creating and migrating) ``memory.db``; every method is one transaction."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            make_private_dirs(self.path.parent)
            create_private_file(self.path)
            self.db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            migrate(self.db, MIGRATIONS)
            self.db.execute("SELECT count(*) FROM memories_fts").fetchone()
        except sqlite3.Error as exc:
            self.db.close()
            raise StoreError(
                f"{self.path} is not a usable memory database ({exc}); move it aside to start anew"
            ) from exc
        tighten_database(self.path)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"memory.db: {exc}") from exc

    def _query(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            return [tuple(r) for r in self.db.execute(sql, args).fetchall()]
        except sqlite3.Error as exc:
            raise StoreError(f"memory.db: {exc}") from exc

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
            f"INSERT INTO memories ({_COLUMNS}, norm) VALUES "
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

    # -- reading ----------------------------------------------------------------

    def get(self, mid: str) -> Memory | None:
        rows = self._query(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (mid,))
        return _row(rows[0]) if rows else None

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
        sql = f"SELECT {_COLUMNS} FROM memories WHERE 1=1"
        args: list[object] = []
        if not all_workspaces:
            sql += " AND (workspace IS NULL OR workspace = ?)"
            args.append(workspace)
        if mtype:
            sql += " AND type = ?"
            args.append(mtype)
        if not include_inactive:
            sql += " AND archived = 0 AND superseded_by IS NULL"
        return [_row(r) for r in self._query(sql + " ORDER BY created_at, id", tuple(args))]

    def pinned(self, workspace: str, types: tuple[str, ...]) -> list[Memory]:
        """This workspace's own active memories of ``types`` (recall's always-included)."""
        marks = ", ".join("?" for _ in types)
        rows = self._query(
            f"SELECT {_COLUMNS} FROM memories WHERE workspace = ? AND type IN ({marks}) "
            "AND archived = 0 AND superseded_by IS NULL ORDER BY created_at, id",
            (workspace, *types),
        )
        return [_row(r) for r in rows]

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
        words = query_words(text)
        if not words:
            return []
        rows = self._ranked(" AND ".join(f'"{w}"' for w in words), workspace, limit)
        rare = self._rare(words) if len(rows) < limit and len(words) > 1 else []
        if rare:
            seen = {row[0] for row in rows}
            more = self._ranked(" OR ".join(f'"{w}"' for w in rare), workspace, limit)
            rows += [row for row in more if row[0] not in seen][: limit - len(rows)]
        out = [(m, coverage(words, m.text)) for m in (_row(row[:-1]) for row in rows)]
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
            f"SELECT {', '.join('m.' + c.strip() for c in _COLUMNS.split(','))}, "
            "f.rank FROM (SELECT id, rank FROM memories_fts WHERE memories_fts MATCH ? "
            "ORDER BY rank LIMIT ?) f JOIN memories m ON m.id = f.id "
            "WHERE m.archived = 0 AND m.superseded_by IS NULL "
            "AND (m.workspace IS NULL OR m.workspace = ?) ORDER BY f.rank LIMIT ?",
            # FTS5 ranks its best hits itself; the filters then see only those
            (match, limit * OVERFETCH, workspace, limit),
        )

    def find_exact(self, text: str, workspace: str | None) -> Memory | None:
        rows = self._query(
            f"SELECT {_COLUMNS} FROM memories WHERE norm = ? AND superseded_by IS NULL "
            "AND (workspace IS NULL OR workspace IS ?)",
            (normalise(text), workspace),
        )
        return _row(rows[0]) if rows else None

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

"""What a memory is and how memory.db is laid out: the record, its row, the migrations.

Kept apart from the store so the schema and the record can be read (and
changed) in one place, and so the store holds only the operations.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field

from harvey.store.migrations import Migration
from harvey.store.migrations import script as _script

TYPES = ("tool_use", "workflow", "user_preference", "workspace_profile", "project_fact")
KINDS = ("pitfall", "workaround", "recommendation", "pattern", "fact", "preference", "profile")
INITIAL_CONFIDENCE = 0.5


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


def _m002_workspace_choices(db: sqlite3.Connection) -> None:
    """What a person answered once for a workspace (``profile_offer: declined``), so a
    question is not asked again every session."""
    _script(
        db,
        """
        CREATE TABLE workspace_choices (
            workspace TEXT NOT NULL,
            name TEXT NOT NULL,
            value TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (workspace, name)
        )
        """,
    )


def _m003_memory_vectors(db: sqlite3.Connection) -> None:
    """One vector per memory (``memory.embedder``'s, unit-length float32); the index lets
    "which memories have no vector yet" skip the blobs."""
    _script(
        db,
        """
        CREATE TABLE memory_vectors (
            id TEXT PRIMARY KEY,
            embedder TEXT NOT NULL,
            vec BLOB NOT NULL
        );
        CREATE INDEX memory_vectors_embedder ON memory_vectors(embedder, id)
        """,
    )


# What a recalled vector depends on: a change to any of these makes its bucket's packs stale.
_VECTOR_INPUTS = ("id", "text", "workspace", "archived", "superseded_by")
PACK_BUCKETS = 16


def bucket_sql(column: str) -> str:
    """The pack bucket of an id, in SQL: its last character's code point mod 16 (ids end
    in random hex, so buckets are even; any other id still lands in one). ``vector_pack``
    selects it from SQL too, so Python never has to compute it the same way."""
    return f"coalesce(unicode(substr({column}, -1)), 0) % {PACK_BUCKETS}"


_M004_STATEMENTS = (
    "CREATE TABLE memory_generation (bucket INTEGER PRIMARY KEY, n INTEGER NOT NULL)",
    *(f"INSERT INTO memory_generation (bucket, n) VALUES ({b}, 0)" for b in range(PACK_BUCKETS)),
    """CREATE TABLE memory_vector_packs (
        embedder TEXT NOT NULL,
        scope TEXT NOT NULL,
        bucket INTEGER NOT NULL,
        dims INTEGER NOT NULL,
        generation INTEGER NOT NULL,
        ids TEXT NOT NULL,
        vecs BLOB NOT NULL,
        PRIMARY KEY (embedder, scope, bucket)
    )""",
    # a stale bucket's vector rows are found without reading every memory's vector
    f"CREATE INDEX memory_vectors_bucket ON memory_vectors(embedder, {bucket_sql('id')})",
)


def _generation_triggers() -> list[str]:
    """One trigger per write to ``memories`` and ``memory_vectors`` that bumps the
    generation of the row's bucket (both the old and the new id's on an UPDATE); an
    UPDATE of memories only when it changes a ``_VECTOR_INPUTS`` column."""
    changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in _VECTOR_INPUTS)
    rows = {"INSERT": ("NEW",), "DELETE": ("OLD",), "UPDATE": ("OLD", "NEW")}
    out = []
    for table in ("memories", "memory_vectors"):
        for event, sides in rows.items():
            when = f"WHEN {changed}" if (table, event) == ("memories", "UPDATE") else ""
            buckets = ", ".join(bucket_sql(f"{side}.id") for side in sides)
            out.append(
                f"CREATE TRIGGER memory_generation_{table}_{event.lower()} AFTER {event} "
                f"ON {table} {when} BEGIN UPDATE memory_generation SET n = n + 1 "
                f"WHERE bucket IN ({buckets}); END"
            )
    return out


def _m004_memory_vector_packs(db: sqlite3.Connection) -> None:
    """Packed vectors: per embedder, workspace scope and bucket (1/16 of the ids), one row
    of ids and one float32 matrix, tagged with the bucket's generation when it was built.
    Triggers bump a bucket's generation on every write that can change one of its
    recalled vectors (a memory added, deleted, edited, moved, archived or superseded; a
    vector made or removed; recall counts do not), so a pack whose generation is not its
    bucket's current one is never read, and a write makes only its bucket be rebuilt.
    The per-row vectors of m003 stay the source the packs are built from: an older
    memory.db upgrades without re-embedding anything. (Statement by statement: a trigger
    body holds ``;``.)"""
    for statement in (*_M004_STATEMENTS, *_generation_triggers()):
        db.execute(statement)


MIGRATIONS: list[Migration] = [
    ("m001_memories", _m001_memories),
    ("m002_workspace_choices", _m002_workspace_choices),
    ("m003_memory_vectors", _m003_memory_vectors),
    ("m004_memory_vector_packs", _m004_memory_vector_packs),
]


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


COLUMNS = (
    "id, type, kind, text, workspace, recording, scenes, confidence, created_at, updated_at, "
    "last_recalled, recall_count, archived, superseded_by"
)


def to_memory(row: sqlite3.Row | tuple[object, ...]) -> Memory:
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

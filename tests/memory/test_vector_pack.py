"""Packed memory vectors: a pack is read only while nothing it was built from changed.

The embedder here is a real one of a different kind: it maps each text to a
fixed pseudo-random unit vector (seeded by the text), so a query equal to a
memory's text finds that memory at cosine 1.0 and any other text is far from
it. That makes a stale vector visible: a memory recalled at 1.0 for its *old*
text still carries its old vector.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvey.memory.recall import recall
from harvey.memory.records import MIGRATIONS, PACK_BUCKETS
from harvey.memory.store import Memory, MemoryStore
from harvey.memory.vector_pack import PackCache
from harvey.memory.vectors import MemoryVectors
from harvey.store.migrations import migrate

WS = "/work/project"


def read_packs(store: MemoryStore, spec: str, workspace: str, dims: int) -> dict[int, object]:
    """The current packs as a new session reads them (an empty cache)."""
    return dict(PackCache().read(store, spec, workspace, dims))


DIMS = 16


class SeededEmbedder:
    """One fixed unit vector per text; counts the texts it was asked to embed."""

    spec = "seeded"
    dims = DIMS
    max_chars = 10_000

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded += list(texts)
        rows = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIMS) for t in texts]
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), DIMS)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore(tmp_path / "memory.db") as opened:
        yield opened


def _add(store: MemoryStore, text: str, workspace: str | None = WS) -> Memory:
    return store.add(Memory("", "tool_use", text, workspace=workspace))


def _cosines(vectors: MemoryVectors, query: str) -> dict[str, float]:
    return {m.id: cos for m, cos in vectors.nearest(query, workspace=WS, limit=50)}


def _filled(store: MemoryStore) -> tuple[MemoryVectors, list[Memory]]:
    vectors = MemoryVectors(store, SeededEmbedder())
    memories = [_add(store, f"memory number {i}") for i in range(6)]
    assert _cosines(vectors, "memory number 0")[memories[0].id] == pytest.approx(1.0)
    assert len(read_packs(store, "seeded", WS, DIMS)) == PACK_BUCKETS  # built and stored
    return vectors, memories


def test_an_edited_memory_is_not_found_by_its_old_vector(store: MemoryStore) -> None:
    vectors, memories = _filled(store)
    store.set_text(memories[0].id, "something else entirely")
    assert len(read_packs(store, "seeded", WS, DIMS)) < PACK_BUCKETS  # the edit made the pack stale
    assert _cosines(vectors, "memory number 0").get(memories[0].id, 0.0) < 0.9
    assert _cosines(vectors, "something else entirely")[memories[0].id] == pytest.approx(1.0)


@pytest.mark.parametrize("how", ["forget", "archive", "supersede"])
def test_an_inactive_memory_is_not_recalled_by_its_vector(store: MemoryStore, how: str) -> None:
    vectors, memories = _filled(store)
    gone = memories[1]
    if how == "forget":
        store.forget(gone.id)
    elif how == "archive":
        while not store.require(gone.id).archived:
            store.flag(gone.id)
    else:
        new = store.supersede(gone.id, Memory("", "tool_use", "the newer wording", workspace=WS))
        assert _cosines(vectors, "the newer wording")[new.id] == pytest.approx(1.0)
    assert gone.id not in _cosines(vectors, "memory number 1")
    found = recall(store, Path(WS), "memory number 1", context_window=8192, vectors=vectors)
    assert gone.id not in {m.id for m, _ in found.items}


def test_a_write_by_another_process_makes_the_pack_stale(store: MemoryStore) -> None:
    vectors, memories = _filled(store)
    with sqlite3.connect(store.path, isolation_level=None) as other:
        other.execute("UPDATE memories SET archived = 1 WHERE id = ?", (memories[2].id,))
    assert len(read_packs(store, "seeded", WS, DIMS)) < PACK_BUCKETS
    assert memories[2].id not in _cosines(vectors, "memory number 2")


def test_an_unchanged_store_is_scanned_from_its_pack(store: MemoryStore) -> None:
    vectors, memories = _filled(store)
    embedder = vectors.embedder
    assert isinstance(embedder, SeededEmbedder)
    store.mark_recalled([m.id for m in memories])  # a recall count is not a vector input
    embedder.embedded.clear()
    _cosines(vectors, "memory number 3")
    assert embedder.embedded == ["memory number 3"]  # only the query: nothing re-embedded
    assert len(read_packs(store, "seeded", WS, DIMS)) == PACK_BUCKETS
    elsewhere = _add(store, "another project's note", workspace="/elsewhere")
    assert elsewhere.id not in _cosines(vectors, "another project's note")  # not this scope


def test_a_write_makes_only_its_bucket_stale(store: MemoryStore) -> None:
    vectors, memories = _filled(store)
    store.set_text(memories[5].id, "a new text")
    current = store.db.execute(
        "SELECT count(*) FROM memory_vector_packs p JOIN memory_generation g "
        "ON p.bucket = g.bucket AND p.generation = g.n"
    ).fetchone()[0]
    assert current == PACK_BUCKETS - 1
    assert _cosines(vectors, "a new text")[memories[5].id] == pytest.approx(1.0)
    assert len(read_packs(store, "seeded", WS, DIMS)) == PACK_BUCKETS


def test_a_damaged_pack_is_built_anew(store: MemoryStore) -> None:
    vectors, memories = _filled(store)
    store.db.execute("UPDATE memory_vector_packs SET vecs = x'00'")  # no trigger on packs
    assert len(read_packs(store, "seeded", WS, DIMS)) < PACK_BUCKETS
    vectors = MemoryVectors(store, SeededEmbedder())  # a new session: nothing held
    assert _cosines(vectors, "memory number 4")[memories[4].id] == pytest.approx(1.0)
    assert len(read_packs(store, "seeded", WS, DIMS)) == PACK_BUCKETS


def _pack_reads(store: MemoryStore) -> list[str]:
    """Records every statement that reads pack vectors on ``store``'s connection."""
    seen: list[str] = []
    store.db.set_trace_callback(lambda sql: seen.append(sql) if "p.vecs" in sql else None)
    return seen


def test_a_session_reads_the_packs_once_and_rebuilds_only_a_written_bucket(
    store: MemoryStore,
) -> None:
    vectors, memories = _filled(store)
    _cosines(vectors, "memory number 1")  # read once on this connection
    reads = _pack_reads(store)
    assert _cosines(vectors, "memory number 2")[memories[2].id] == pytest.approx(1.0)
    assert reads == []  # nothing changed: only the generations were read
    with MemoryStore(store.path) as other:  # another session, its own connection
        other.set_text(memories[3].id, "changed elsewhere")
    assert _cosines(vectors, "changed elsewhere")[memories[3].id] == pytest.approx(1.0)
    assert _cosines(vectors, "memory number 3").get(memories[3].id, 0.0) < 0.9  # not the old
    assert reads == []  # the written bucket was rebuilt from its rows, the rest kept
    assert len(read_packs(store, "seeded", WS, DIMS)) == PACK_BUCKETS  # and stored
    store.db.set_trace_callback(None)


def test_ids_are_found_by_offset_as_a_split_would_give_them() -> None:
    from harvey.memory.vector_pack import Pack

    ids = ["a", "tool_use_00ff01", "é_unicode", "x" * 40, "last"]
    pack = Pack.of(ids, np.zeros((len(ids), 2), dtype=np.float32))
    assert [pack.id_at(i) for i in range(len(ids))] == ids


def test_a_memory_db_with_per_row_vectors_is_upgraded(tmp_path: Path) -> None:
    db_path = tmp_path / "memory.db"
    embedder = SeededEmbedder()
    with sqlite3.connect(db_path, isolation_level=None) as old:  # a memory.db as m003 left it
        migrate(old, MIGRATIONS[:3])
        for i, text in enumerate(["build with make", "test with pytest -x"]):
            old.execute(
                "INSERT INTO memories (id, type, text, norm, workspace, confidence, created_at, "
                "updated_at) VALUES (?, 'tool_use', ?, ?, ?, 0.5, '2026', '2026')",
                (f"tool_use_00000{i}", text, text, WS),
            )
            old.execute(
                "INSERT INTO memories_fts (id, text) VALUES (?, ?)", (f"tool_use_00000{i}", text)
            )
            vec = embedder.embed([text])[0].tobytes()
            old.execute(
                "INSERT INTO memory_vectors VALUES (?, 'seeded', ?)", (f"tool_use_00000{i}", vec)
            )
    embedder.embedded.clear()
    with MemoryStore(db_path) as store:
        names = [r[0] for r in store.db.execute("SELECT name FROM _migrations ORDER BY name")]
        assert names[-1] == "m004_memory_vector_packs"
        vectors = MemoryVectors(store, embedder)
        near = vectors.nearest("test with pytest -x", workspace=WS, limit=2)
        assert near[0][0].id == "tool_use_000001"
        assert embedder.embedded == ["test with pytest -x"]  # the old vectors were kept
        store.set_text("tool_use_000001", "lint with ruff")  # the triggers work on old rows
        assert len(read_packs(store, "seeded", WS, DIMS)) < PACK_BUCKETS


OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "add_global", "add_elsewhere", "edit", "forget", "archive",
                         "supersede", "scan"]),
        st.integers(0, 30),
    ),
    max_size=25,
)  # fmt: skip


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS, query=st.integers(0, 30), limit=st.integers(1, 8))
def test_the_packed_scan_matches_a_brute_force_cosine(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]], query: int, limit: int
) -> None:
    with MemoryStore(tmp_path_factory.mktemp("pack") / "memory.db") as store:
        embedder = SeededEmbedder()
        vectors = MemoryVectors(store, embedder)
        for k, (op, n) in enumerate(ops):  # k keeps texts unique: equal vectors would tie
            active = store.memories(all_workspaces=True)
            target = active[n % len(active)] if active else None
            if op.startswith("add"):
                ws = {"add": WS, "add_global": None, "add_elsewhere": "/elsewhere"}[op]
                _add(store, f"text {n} #{k}", workspace=ws)
            elif op == "scan":
                vectors.nearest(f"text {n}", workspace=WS, limit=5)  # builds a pack
            elif target is None:
                continue
            elif op == "edit":
                store.set_text(target.id, f"text {n} edited #{k}")
            elif op == "forget":
                store.forget(target.id)
            elif op == "archive":
                store.db.execute("UPDATE memories SET archived = 1 WHERE id = ?", (target.id,))
            else:
                store.supersede(
                    target.id, Memory("", "tool_use", f"text {n} v2 #{k}", workspace=WS)
                )
        current = store.memories(workspace=WS)  # active, this workspace and every workspace
        got = vectors.nearest(f"text {query}", workspace=WS, limit=limit)
        if not current:
            assert got == []
            return
        q = embedder.embed([f"text {query}"])[0]
        sims = embedder.embed([m.text for m in current]) @ q
        order = sorted(range(len(current)), key=lambda i: -sims[i])[:limit]
        assert [m.id for m, _ in got] == [current[i].id for i in order]
        assert [c for _, c in got] == pytest.approx([float(sims[i]) for i in order], abs=1e-5)

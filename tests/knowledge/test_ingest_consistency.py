"""Ingest under pressure: Ctrl-C between and inside files, a file that changes while it
is read, huge and binary files; and the local embedder with the network unreachable."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harvey.knowledge import ingest as ingest_module
from harvey.knowledge.ingest import Ingester
from harvey.knowledge.search import Searcher
from harvey.knowledge.store import FileRow, KnowledgeStore, NewChunk, create_store
from harvey.retrieval.embedders import LocalEmbedder, local_available
from tests.conftest import missing_dependency


def _fts_ok(store: KnowledgeStore) -> None:
    store._db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')")
    store.integrity()
    orphans = store._db.execute(
        "SELECT count(*) FROM chunks WHERE path NOT IN (SELECT path FROM files)"
    ).fetchone()[0]
    assert orphans == 0


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "docs").mkdir(parents=True)
    for i in range(6):
        (root / "docs" / f"n{i}.md").write_text(f"# Note {i}\n\nword{i} appears here.\n" * 40)
    return root


def test_ctrl_c_between_files_then_continue(ws: Path) -> None:
    store = create_store(ws, "s", "none", 0)
    seen = []

    def progress(done: int, total: int, _b: int, _t: int) -> None:
        seen.append(done)
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Ingester(store, ws, None).ingest(["docs"], progress=progress)
    assert store.counts()[0] == 3
    _fts_ok(store)
    report = Ingester(store, ws, None).ingest(["docs"])
    assert (report.added, report.unchanged) == (3, 3)
    _fts_ok(store)


def test_ctrl_c_inside_a_file_rolls_it_back(ws: Path) -> None:
    store = create_store(ws, "s", "none", 0)
    Ingester(store, ws, None).ingest(["docs/n0.md"])
    before = store.counts()

    def chunks() -> Iterator[NewChunk]:
        yield NewChunk(0, 5, 1, 1, "h1", "new text")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store.replace_file(FileRow("docs/n0.md", 1, 1, "x"), list_then(chunks()))
    assert store.counts() == before
    assert store.file_row("docs/n0.md") != FileRow("docs/n0.md", 1, 1, "x")
    _fts_ok(store)


def list_then(gen: Iterator[NewChunk]) -> Any:
    """An iterable that fails part-way, as a Ctrl-C during the inserts would."""

    class Lazy:
        def __iter__(self) -> Iterator[NewChunk]:
            return gen

    return Lazy()


def test_file_changed_while_read_is_skipped(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = create_store(ws, "s", "none", 0)
    import harvey.workspace.source as source_module

    real_open = source_module.open_regular

    def open_and_append(path: Path) -> Any:
        fh = real_open(path)
        if path.name == "n1.md":
            with open(path, "a") as out:
                out.write("a late line\n")
        return fh

    monkeypatch.setattr(source_module, "open_regular", open_and_append)
    report = Ingester(store, ws, None).ingest(["docs"])
    assert ("docs/n1.md", "changed while it was read (ingest again)") in report.skipped
    assert report.added == 5 and store.file_row("docs/n1.md") is None
    monkeypatch.setattr(source_module, "open_regular", real_open)
    assert Ingester(store, ws, None).ingest(["docs"]).added == 1


def test_huge_and_binary_are_counted_not_fatal(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_module, "MAX_FILE_BYTES", 2000)
    (ws / "docs" / "big.txt").write_text("x" * 5000)
    (ws / "docs" / "img.png").write_bytes(b"\x89PNG\x00\x00")
    store = create_store(ws, "s", "none", 0)
    report = Ingester(store, ws, None).ingest(["docs"])
    whys = dict(report.skipped)
    assert whys["docs/img.png"] == "binary" and whys["docs/big.txt"].startswith("over")
    assert report.added == 6


def test_only_new_chunk_hashes_are_embedded(ws: Path) -> None:
    class Counting:
        spec, dims, max_chars = "fake", 4, 10_000

        def __init__(self) -> None:
            self.texts: list[str] = []

        def embed(self, texts: Any) -> np.ndarray:
            self.texts += list(texts)
            out = np.ones((len(texts), 4), dtype=np.float32)
            out[:, 0] = [len(t) for t in texts]
            return out / np.linalg.norm(out, axis=1, keepdims=True)

    store = create_store(ws, "s", "fake", 4)
    model = Counting()
    Ingester(store, ws, model).ingest(["docs"])
    first = len(model.texts)
    assert first == len(set(model.texts)) > 0
    (ws / "docs" / "n0.md").write_text((ws / "docs" / "n0.md").read_text() + "\nmore.\n")
    Ingester(store, ws, model).ingest(["docs"])
    assert 0 < len(model.texts) - first <= 2  # only n0's changed chunk(s)


def test_local_embedder_never_touches_the_network(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not local_available():  # `make test` installs it: in CI its absence is a failure
        missing_dependency("wordllama is not installed (pip install 'harvey-agent[local]')")

    def refuse(*_a: Any, **_k: Any) -> None:
        raise AssertionError("the local embedder tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = LocalEmbedder()
    vectors = model.embed(["the boiler pressure", "boiler pressure gauge", "roses in March"])
    assert vectors.shape == (3, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    store = create_store(ws, "h", "local", 256)
    Ingester(store, ws, model).ingest(["docs"])
    hits = Searcher(store, model).search("where does word3 appear", 3)
    assert hits[0].chunk.path == "docs/n3.md" and 0 < hits[0].score <= 1


def test_store_files_are_private(ws: Path) -> None:
    store = create_store(ws, "p", "none", 0)
    Ingester(store, ws, None).ingest(["docs"])
    assert (ws / ".harvey" / "rag").stat().st_mode & 0o077 == 0
    for f in (ws / ".harvey" / "rag").iterdir():
        assert f.stat().st_mode & 0o077 == 0, f

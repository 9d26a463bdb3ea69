"""Which splitter ingest uses per language, and what a re-ingest after one edit touches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harvey.chunks import chunking
from harvey.knowledge import ingest as ingest_module
from harvey.knowledge.ingest import TREE_SITTER_LANGUAGES, Ingester
from harvey.knowledge.store import KnowledgeStore, create_store

_JS = "".join(
    f"// helper {i}\nfunction helper{i}(a, b) {{\n  const x = a + b;\n"
    + "  if (x > 10) {\n    return x;\n  }\n" * 8
    + "  return a;\n}\n\n"
    for i in range(40)
)


def test_measured_choice_picks_the_splitter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JavaScript goes through tree-sitter, Python and C through the heuristic
    (bench/rag_chunk_paths.py measured it so)."""
    assert "javascript" in TREE_SITTER_LANGUAGES and "python" not in TREE_SITTER_LANGUAGES
    seen: dict[str, str | None] = {}
    real = chunking.chunk_document

    def spy(content: str, cfg: Any, doc_type: Any, *, language: str | None = None) -> Any:
        seen[content[:12]] = language
        return real(content, cfg, doc_type, language=language)

    monkeypatch.setattr(ingest_module, "chunk_document", spy)
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.js").write_text(_JS)
    (ws / "src" / "b.py").write_text("def f():\n    return 1\n" * 100)
    (ws / "src" / "c.c").write_text("int f(void) {\n  return 1;\n}\n" * 100)
    store = create_store(ws, "s", "none", 0)
    Ingester(store, ws, None).ingest(["src"])
    assert seen == {_JS[:12]: "javascript", "def f():\n   ": None, "int f(void) ": None}
    # and the JavaScript cuts land on the definitions' comment lines
    starts = [row[0] for row in store._db.execute("SELECT text FROM chunks WHERE path='src/a.js'")]
    assert len(starts) > 1 and all(t.startswith("// helper") for t in starts)


def _ids(store: KnowledgeStore) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for path, cid in store._db.execute("SELECT path, id FROM chunks ORDER BY id"):
        out.setdefault(path, []).append(cid)
    return out


def test_reingest_after_one_edit_touches_only_that_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    for i in range(5):
        (ws / "notes" / f"n{i}.md").write_text(f"# Note {i}\n\nword{i} here.\n" * 60)
    store = create_store(ws, "s", "none", 0)
    Ingester(store, ws, None).ingest(["notes"])
    before, rows_before = _ids(store), {r.path: r for r in store.files()}
    edited = ws / "notes" / "n2.md"
    edited.write_text(edited.read_text() + "\nOne more line.\n")
    report = Ingester(store, ws, None).ingest(["notes"])
    assert (report.updated, report.unchanged, report.added, report.removed) == (1, 4, 0, 0)
    after, rows_after = _ids(store), {r.path: r for r in store.files()}
    for path in before:
        if path == "notes/n2.md":
            assert after[path] != before[path]  # its chunks were replaced
            assert rows_after[path].hash != rows_before[path].hash
        else:
            assert after[path] == before[path]  # the same rows, not rewritten
            assert rows_after[path] == rows_before[path]

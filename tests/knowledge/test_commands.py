"""The knowledge command layer ``harvey rag`` and ``/rag`` both call: values back, no printing."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.config.settings import Settings
from harvey.errors import UsageError
from harvey.knowledge import commands
from harvey.knowledge.retrieval import active_retrieval
from harvey.knowledge.service import open_knowledge


def _workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "boiler.md").write_text("Bleed the radiators every autumn.\n")
    (tmp_path / "notes" / "car.md").write_text("Check the tyre pressure monthly.\n")
    return tmp_path


def test_create_ingest_list_status_query(tmp_path: Path) -> None:
    ws, settings = _workspace(tmp_path), Settings()
    assert commands.summaries(ws) == []
    assert commands.create(ws, "n", "none").startswith("created store n (embedder none) at ")
    knowledge = open_knowledge(ws, "n", settings)
    try:
        report = commands.ingest(knowledge, ws, ["notes"])
    finally:
        knowledge.close()
    assert not report.skipped
    assert commands.summaries(ws) == [commands.StoreSummary("n", 2, 2, "none")]
    status = commands.status(ws, "n")
    assert (status.files, status.changed, status.embedder) == (2, 0, "none")
    assert status.last_ingest != "never"
    (ws / "notes" / "car.md").unlink()
    assert commands.status(ws, "n").changed == 1
    hits = commands.query(ws, "n", settings, "bleed the radiators", 5)
    assert hits[0].chunk.path == "notes/boiler.md"
    assert commands.hit_line(hits[0]).startswith("notes/boiler.md:L1-L1 — score ")
    assert commands.hit_row(hits[0])["text"] == "Bleed the radiators every autumn.\n"


def test_an_unknown_store_is_a_usage_error_naming_the_stores(tmp_path: Path) -> None:
    commands.create(tmp_path, "kept", "none")
    with pytest.raises(UsageError, match=r"no knowledge store 'gone' \(stores: kept\)"):
        commands.existing_store_path(tmp_path, "gone")
    assert commands.existing_store_path(tmp_path, "kept").name == "kept.db"


def test_use_replaces_the_active_store_among_the_providers(tmp_path: Path) -> None:
    for name in ("a", "b"):
        commands.create(tmp_path, name, "none")
    other = object()
    providers: list[object] = [other]
    first, settings = commands.use(providers, tmp_path, "a", Settings(), print)
    assert settings.rag.active == "a" and active_retrieval(providers) is first
    second, settings = commands.use(providers, tmp_path, "b", settings, print)
    assert settings.rag.active == "b"
    assert providers == [other, second]
    assert commands.retrieval_line(second).startswith(
        "b: 0 files, 0 chunks, 0 bytes, embedder none"
    )
    second.close()

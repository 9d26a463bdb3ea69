"""Memory vectors with the real wordllama embedder (offline): near-duplicates by meaning,
recall fused from words and vectors, and nothing changed when no embedder is configured."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvey.config.settings import Paths, load_settings
from harvey.errors import ConfigError
from harvey.llm.scripted import Reply
from harvey.memory.recall import recall
from harvey.memory.review import near_duplicates
from harvey.memory.store import Memory, MemoryStore
from harvey.memory.vectors import MemoryVectors, hybrid_search
from harvey.session.fountain import parse_session
from tests.conftest import missing_dependency
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import invoke_harvey

MIGRATIONS = "the database migrations live in db/migrations"
QUESTION = "where is the schema migration folder?"  # no word in common with MIGRATIONS


@pytest.fixture(scope="module")
def embedder() -> object:
    if importlib.util.find_spec("wordllama") is None:
        missing_dependency("wordllama is not installed (pip install 'harvey-agent[local]')")
    from harvey.retrieval.embedders import LocalEmbedder

    return LocalEmbedder()


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture()
def store(tmp_path: Path, ws: Path) -> Iterator[MemoryStore]:
    with MemoryStore(tmp_path / "memory.db") as opened:
        for text in (
            MIGRATIONS,
            "run pytest with -x to stop at the first failing test",
            "deploys go through the staging cluster first",
        ):
            opened.add(Memory("", "tool_use", text, kind="pattern", workspace=str(ws)))
        yield opened


def test_vectors_are_made_lazily_and_follow_every_write(
    store: MemoryStore, embedder: object, ws: Path
) -> None:
    vectors = MemoryVectors(store, embedder)  # type: ignore[arg-type]
    assert len(store.unvectored("local")) == 3
    assert store.search(QUESTION, workspace=str(ws)) == []  # the words find nothing
    best, cosine = vectors.nearest(QUESTION, workspace=str(ws), limit=3)[0]
    assert best.text == MIGRATIONS and cosine > 0.5
    assert store.unvectored("local") == []  # made on the way
    assert store.unvectored("ollama:other") != []  # another model's vectors are its own
    store.set_text(best.id, "the user likes green tea in the afternoon")
    assert [mid for mid, _ in store.unvectored("local")] == [best.id]  # stale: made anew
    after = dict((m.id, cos) for m, cos in vectors.nearest(QUESTION, workspace=str(ws), limit=3))
    assert after[best.id] < cosine - 0.3  # the new text's vector, not the old one
    store.forget(best.id)
    left = {mid for mid, _ in store.vectors("local", str(ws))}
    assert len(left) == 2 and best.id not in left
    assert vectors.nearest(QUESTION, workspace="/elsewhere", limit=3) == []


def test_recall_fuses_words_and_vectors(store: MemoryStore, embedder: object, ws: Path) -> None:
    vectors = MemoryVectors(store, embedder)  # type: ignore[arg-type]
    store.add(Memory("", "tool_use", "stage the schema dump before pushing", workspace=str(ws)))
    words_only = recall(store, ws, QUESTION, context_window=8192)
    assert [m.text for m, _ in words_only.items] == ["stage the schema dump before pushing"]
    without = hybrid_search(store, None, QUESTION, workspace=str(ws))
    assert without == store.search(QUESTION, workspace=str(ws))  # no embedder: unchanged
    fused = recall(store, ws, QUESTION, context_window=8192, vectors=vectors)
    texts = [m.text for m, _ in fused.items]
    assert texts[0] == MIGRATIONS  # found by meaning, ranked above the word match
    assert "stage the schema dump before pushing" in texts  # found by a word ("schema")
    assert "deploys go through the staging cluster first" not in texts  # neither
    assert all(0 < score < 1 for _, score in fused.items)


def test_near_duplicates_by_meaning(store: MemoryStore, embedder: object, ws: Path) -> None:
    vectors = MemoryVectors(store, embedder)  # type: ignore[arg-type]
    proposal = "schema changes are kept in db/migrations"
    assert near_duplicates(store, None, proposal, str(ws)) == []  # too few words in common
    found = near_duplicates(store, vectors, proposal, str(ws))
    assert [m.text for m in found] == [MIGRATIONS]
    assert near_duplicates(store, vectors, "the user likes green tea", str(ws)) == []


def test_memory_embedder_setting_is_checked(tmp_path: Path) -> None:
    (tmp_path / "harvey.yaml").write_text("memory:\n  embedder: word2vec\n")
    with pytest.raises(ConfigError, match=r"memory\.embedder"):
        load_settings(Paths(tmp_path, tmp_path / "home", tmp_path / "harvey.yaml"))


def test_run_recalls_by_meaning_when_configured(
    ws: Path, isolated_env: Path, embedder: object
) -> None:
    with MemoryStore(isolated_env / "memory.db") as store:
        tip = store.add(Memory("", "tool_use", MIGRATIONS, kind="fact", workspace=str(ws)))

    def run(srv: FakeOpenAI) -> subprocess.CompletedProcess[str]:
        return invoke_harvey("run", QUESTION, "--backend", "openai", "--base-url", srv.url, cwd=ws)

    with FakeOpenAI([Reply("Look in db/migrations."), Reply("No idea.")]) as srv:
        (ws / "harvey.yaml").write_text("memory:\n  embedder: local\n")
        assert run(srv).returncode == 0
        (ws / "harvey.yaml").write_text("memory:\n  embedder: none\n")
        assert run(srv).returncode == 0
        sent = [
            "\n".join(m["content"] for m in r["messages"] if m["role"] == "system")
            for r in srv.chat_requests
        ]
    assert MIGRATIONS in sent[0] and MIGRATIONS not in sent[1]
    recordings = sorted((ws / ".harvey" / "sessions").glob("*.spmd"), key=os.path.getmtime)
    scene = parse_session(recordings[0]).scenes[0]
    assert scene.kind == "recall" and [r.id for r in scene.recall] == [tip.id]
    assert "INT. CONTEXT RECALL" not in recordings[1].read_text()


def test_retrieve_memory_uses_vectors_when_configured(
    tmp_path: Path, ws: Path, embedder: object
) -> None:
    from harvey.config.settings import Settings
    from harvey.tools.memory_tools import RetrieveMemoryTool
    from harvey.tools.registry import ToolContext

    home = tmp_path / "home"
    with MemoryStore(home / "memory.db") as store:
        store.add(Memory("", "tool_use", MIGRATIONS, workspace=str(ws)))
    ctx = ToolContext(workspace=ws)
    words = RetrieveMemoryTool(home, Settings()).run(ctx, {"query": QUESTION})
    assert words == "no matching memories"  # memory.embedder: none, the default
    settings = Settings.model_validate({"memory": {"embedder": "local"}})
    meaning = RetrieveMemoryTool(home, settings).run(ctx, {"query": QUESTION})
    assert MIGRATIONS in meaning

"""Per-turn retrieval through the real ``harvey run --rag``: the passage reaches the
model's prompt, history keeps the user's words, the .spmd has the notes in place."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from harvey.session.fountain import parse_session
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import run_harvey
from tests.knowledge.conftest import Harvey

QUESTION = "How often should I bleed the radiators?"


def _offline_env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env.pop(var, None)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_ENDPOINT="http://127.0.0.1:9")
    return env


def _run(ws: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = ["run", QUESTION, "--backend", "openai", "--base-url", url, *args]
    return run_harvey(*argv, cwd=ws, base_env=_offline_env())


def _spmd(ws: Path) -> Path:
    files = list((ws / ".harvey" / "sessions").glob("*.spmd"))
    assert len(files) == 1
    return files[0]


@pytest.mark.slow
def test_passage_reaches_prompt_and_spmd_has_notes(
    harvey: Harvey, notes_ws: Path, isolated_env: Path
) -> None:
    assert harvey("rag", "new", "notes", "--embedder", "local").returncode == 0
    assert harvey("rag", "ingest", "notes", "notes").returncode == 0
    with FakeOpenAI([Reply("Every October (notes/boiler.md:L1-L4).")]) as srv:
        proc = _run(notes_ws, srv.url, "--rag", "notes")
        bodies = srv.chat_requests
    assert proc.returncode == 0, proc.stderr
    assert "Every October" in proc.stdout
    user = [m for m in bodies[0]["messages"] if m["role"] == "user"][-1]["content"]
    assert user.startswith("### Context (from knowledge base)")
    assert "#### notes/boiler.md:L1-L4" in user and "brass key" in user
    assert user.endswith(QUESTION)
    # the history (and sessions.db) keep the message as sent, so the next request extends
    # this one byte for byte; the recording keeps the user's own words
    db = sqlite3.connect(isolated_env / "sessions.db")
    stored = [r[0] for r in db.execute("SELECT content FROM messages WHERE role='user'")]
    assert stored == [user]
    # the scene: [[rag:]] then [[rag-source:]] notes, before the user's dialogue
    text = _spmd(notes_ws).read_text()
    rag_at = text.index("[[rag: ")
    source_at = text.index("[[rag-source: notes/boiler.md:L1-L4 — score ")
    assert rag_at < source_at < text.index(QUESTION)
    scene = next(s for s in parse_session(_spmd(notes_ws)).scenes if s.rag is not None)
    assert scene.rag.store == "notes" and 0 < scene.rag.top_score <= 1
    assert scene.rag_sources[0].path == "notes/boiler.md"
    assert (scene.rag_sources[0].start_line, scene.rag_sources[0].end_line) == (1, 4)


@pytest.mark.slow
def test_turn_without_matches_records_nothing(harvey: Harvey, notes_ws: Path) -> None:
    harvey("rag", "new", "notes", "--embedder", "none")
    harvey("rag", "ingest", "notes", "notes/garden.md")
    with FakeOpenAI([Reply("no idea")]) as srv:
        proc = _run(notes_ws, srv.url, "--rag", "notes")
        bodies = srv.chat_requests
    assert proc.returncode == 0, proc.stderr
    user = [m for m in bodies[0]["messages"] if m["role"] == "user"][-1]["content"]
    assert user == QUESTION
    assert "[[rag" not in _spmd(notes_ws).read_text()


@pytest.mark.slow
def test_active_store_from_config_and_missing_store(harvey: Harvey, notes_ws: Path) -> None:
    harvey("rag", "new", "kb", "--embedder", "none")
    harvey("rag", "ingest", "kb", "notes")
    (notes_ws / "harvey.yaml").write_text("rag:\n  active: kb\n  top_k: 1\n")
    with FakeOpenAI([Reply("ok")]) as srv:
        proc = _run(notes_ws, srv.url)
        bodies = srv.chat_requests
    assert proc.returncode == 0, proc.stderr
    user = [m for m in bodies[0]["messages"] if m["role"] == "user"][-1]["content"]
    assert user.count("#### ") == 1 and "notes/boiler.md" in user
    with FakeOpenAI([Reply("ok")]) as srv:
        missing = _run(notes_ws, srv.url, "--rag", "nope")
    assert missing.returncode == 2 and "no knowledge store 'nope'" in missing.stderr
    assert "Traceback" not in missing.stderr
    json.loads(harvey("rag", "query", "kb", "boiler", "--json").stdout)  # kb untouched

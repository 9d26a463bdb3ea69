"""Start-up stays cheap when no store is in use: ``harvey run`` imports neither numpy
nor wordllama, nor the store module, and opens no store (issue 11's start-up cost)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from tests.fakes.openai import FakeOpenAI
from tests.knowledge.conftest import Harvey, run_wrapped

HEAVY = ("numpy", "wordllama", "safetensors", "tokenizers", "harvey.knowledge.store")


def _modules_of_a_run(ws: Path, tmp_path: Path, *args: str) -> set[str]:
    out = tmp_path / "modules.json"
    env = {**os.environ, "HARVEY_TEST_MODULES": str(out)}
    with FakeOpenAI(default_reply=Reply("hello")) as srv:
        proc = run_wrapped(
            ws, "run", "hi", "--backend", "openai", "--base-url", srv.url, *args, env=env
        )
    assert proc.returncode == 0, proc.stderr
    assert "hello" in proc.stdout
    return set(json.loads(out.read_text()))


@pytest.mark.usefixtures("isolated_env")
@pytest.mark.slow
def test_no_store_in_use_imports_nothing_heavy(
    harvey: Harvey, notes_ws: Path, tmp_path: Path
) -> None:
    loaded = _modules_of_a_run(notes_ws, tmp_path)
    assert not [m for m in loaded if m.split(".")[0] in HEAVY or m in HEAVY]
    assert not (notes_ws / ".harvey" / "rag").exists()  # nothing made or opened
    # a store in the workspace that is not in use: still nothing heavy (only its name is seen)
    assert harvey("rag", "new", "kb", "--embedder", "local").returncode == 0
    loaded = _modules_of_a_run(notes_ws, tmp_path)
    assert not [m for m in loaded if m.split(".")[0] in HEAVY or m in HEAVY]
    assert "harvey.tools.knowledge" in loaded  # search_knowledge is offered for /rag use
    # and with --rag the store and its embedder do load: the check above can fail
    assert harvey("rag", "ingest", "kb", "notes").returncode == 0
    loaded = _modules_of_a_run(notes_ws, tmp_path, "--rag", "kb")
    assert {"numpy", "harvey.knowledge.store"} <= loaded

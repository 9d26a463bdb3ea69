"""Done-when, offline: the embedded chat model and the local embedder, no network at all.

A store over a folder of notes (``--embedder local``: wordllama's bundled weights); a
``harvey run --backend local --rag notes`` question whose answer sits in one note. The
embedded model (SmolLM2-135M, in-process) is given the passage ahead of the question,
and the ``.spmd`` scene has the ``[[rag:]]`` and ``[[rag-source:]]`` notes before the
user's dialogue. Every connection but loopback fails (``WRAPPER``), so nothing was
fetched from anywhere.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harvey.retrieval.embedders import local_available
from tests.conftest import missing_dependency
from tests.knowledge.conftest import run_wrapped

QUESTION = "How often should I bleed the radiators?"


def _offline_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_ENDPOINT="http://127.0.0.1:9",
        HARVEY_TEST_PROMPTS=str(tmp_path / "prompts.jsonl"),
    )
    return env


@pytest.mark.slow
@pytest.mark.usefixtures("embedded_model", "isolated_env")
def test_embedded_model_gets_the_passage_offline(notes_ws: Path, tmp_path: Path) -> None:
    if not local_available():
        missing_dependency("wordllama is not installed (pip install 'harvey-agent[local]')")
    env = _offline_env(tmp_path)
    # What is checked is the first prompt; tool rounds (constrained mode, the embedded
    # model's default: tests/chat/test_constrained_embedded.py) would only add minutes.
    (notes_ws / "harvey.yaml").write_text("tools:\n  mode: 'off'\n")
    made = run_wrapped(notes_ws, "rag", "new", "notes", "--embedder", "local", env=env)
    assert made.returncode == 0, made.stderr
    filled = run_wrapped(notes_ws, "rag", "ingest", "notes", "notes", env=env)
    assert filled.returncode == 0, filled.stderr
    proc = run_wrapped(
        notes_ws, "run", QUESTION, "--backend", "local", "--rag", "notes",
        env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "network disabled" not in proc.stderr
    calls = [json.loads(line) for line in (tmp_path / "prompts.jsonl").read_text().splitlines()]
    user = [m for m in calls[0] if m["role"] == "user"][-1]["content"]
    assert user.startswith("### Context (from knowledge base)")
    assert "#### notes/boiler.md:L1-L4" in user and "brass key" in user
    assert user.endswith(QUESTION)
    (spmd,) = (notes_ws / ".harvey" / "sessions").glob("*.spmd")
    text = spmd.read_text()
    rag_at = text.index("[[rag: ")
    assert "chunks from notes, top score" in text[rag_at:]
    source_at = text.index("[[rag-source: notes/boiler.md:L1-L4 — score ")
    assert rag_at < source_at < text.index(QUESTION)

"""The floor's background (``floor.BACKGROUND``: the benchmark's levels, not one a person
picks with ``rag.floor``): the cosine with the store's mean direction taken out, the
unknown-word gate, and the fallback to the plain floor for a small store (or with the
background levels at 0)."""

from __future__ import annotations

import importlib
import os
import pydoc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from harvey.knowledge.floor import (
    BACKGROUND,
    FLOORS,
    MIN_BACKGROUND_CHUNKS,
    Evidence,
    Floor,
    admits,
    relative,
)
from harvey.knowledge.search import VectorIndex
from harvey.llm.scripted import Reply
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import invoke_harvey

NONSENSE = ["zzqx qqxz", "hello", "what is the capital of Mongolia"]
REAL = "turn a dictionary into a JSON string and back"
MODULES = ("json", "csv", "random", "shutil", "tempfile", "zipfile")

vectors = arrays(np.float64, 8, elements=st.floats(-1, 1, allow_nan=False))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


@settings(max_examples=100)
@given(vectors, vectors, vectors)
def test_relative_is_the_cosine_with_the_background_taken_out(q, c, b) -> None:  # type: ignore[no-untyped-def]
    if min(np.linalg.norm(v) for v in (q, c, b)) < 1e-3:
        return
    q, c, b = _unit(q), _unit(c), _unit(b)
    qp, cp = q - (q @ b) * b, c - (c @ b) * b
    if min(np.linalg.norm(qp), np.linalg.norm(cp)) < 1e-3:
        return
    want = float(_unit(qp) @ _unit(cp))
    assert relative(float(q @ c), float(q @ b), float(c @ b)) == pytest.approx(want, abs=1e-6)


def test_a_text_that_is_all_background_has_no_cosine_left() -> None:
    assert relative(1.0, 1.0, 1.0) == 0.0


def test_the_background_rule() -> None:
    floor = Floor(0.26, 0.2, 0.38, 0.29, 0.32, 0.5)
    assert admits(Evidence(0.30, 0.2, background=True), floor)
    assert not admits(Evidence(0.28, 0.9, background=True), floor)  # under 0.29
    assert admits(Evidence(0.33, 0.0, background=True), floor)  # the cosine alone
    assert not admits(Evidence(0.31, 0.1, background=True), floor)
    # a query of words a large store does not know: only a strong vector match passes
    assert not admits(Evidence(0.45, 0.9, background=True, unknown_share=0.5), floor)
    assert admits(Evidence(0.5, 0.0, background=True, unknown_share=0.5), floor)
    # plain evidence is judged on the plain levels, whatever the background's
    assert admits(Evidence(0.27, 0.2), floor) and not admits(Evidence(0.28, 0.1), floor)
    assert not Floor().uses_background and BACKGROUND.uses_background
    # the other two levels alone do not switch the plain cosine floor off
    assert not Floor(unknown_word_cosine=0.5, background_cosine_alone=0.3).uses_background


class _Vectors:
    """A store as ``VectorIndex`` reads it: chunk ids and float32 blobs."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix.astype(np.float32)

    def chunk_vectors(self) -> tuple[list[int], list[bytes]]:
        return list(range(1, len(self.matrix) + 1)), [row.tobytes() for row in self.matrix]


def test_the_background_is_the_mean_direction_of_a_large_store_only() -> None:
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(MIN_BACKGROUND_CHUNKS, 16)) + 3.0  # one shared direction
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    small = VectorIndex(_Vectors(rows[:-1]), 16)  # type: ignore[arg-type]
    assert small.background() is None
    index = VectorIndex(_Vectors(rows), 16)  # type: ignore[arg-type]
    found = index.background()
    assert found is not None
    unit, along = found
    assert np.allclose(unit, _unit(rows.mean(axis=0)), atol=1e-5)
    assert np.allclose(along, rows @ unit, atol=1e-5) and index.background() is found


@pytest.fixture(scope="module")
def docs_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of more than ``MIN_BACKGROUND_CHUNKS`` chunks: stdlib modules' pydoc text."""
    ws = tmp_path_factory.mktemp("docs-ws")
    (ws / "docs").mkdir()
    for name in MODULES:
        text = pydoc.render_doc(importlib.import_module(name), renderer=pydoc.plaintext)
        (ws / "docs" / f"{name}.txt").write_text(text)
    assert invoke_harvey("rag", "new", "d", "--embedder", "local", cwd=ws).returncode == 0
    assert invoke_harvey("rag", "ingest", "d", "docs", cwd=ws).returncode == 0
    return ws


@pytest.mark.slow  # wordllama and a 150-chunk store
def test_a_large_store_reads_cosines_against_its_background(docs_ws: Path) -> None:
    from harvey.knowledge.search import Searcher
    from harvey.knowledge.store import open_store
    from harvey.retrieval.embedders import LocalEmbedder

    embedder = LocalEmbedder()
    with open_store(docs_ws, "d") as store:
        assert store.counts()[1] >= MIN_BACKGROUND_CHUNKS
        on, plain = Searcher(store, embedder, BACKGROUND), Searcher(store, embedder, Floor())
        for text in NONSENSE:
            ranked = on.ranked(text, 5)
            assert ranked.hits == [] and ranked.below_floor > 0, text
        assert next(h.chunk.path for h in on.search(REAL, 5)) == "docs/json.txt"
        # the background changes which candidates pass, never their order or scores
        everything = iter((h.chunk.id, h.score) for h in Searcher(store, embedder).search(REAL, 50))
        assert all((h.chunk.id, h.score) in everything for h in on.search(REAL, 50))
        assert plain.search(REAL, 5)  # the plain floor is still what a store gets by default
        # in a large store the background levels, not the plain ones, decide
        high = Floor(0.0, 0.0, 0.0001, background_cosine=0.99, background_cosine_alone=0.99)
        assert Searcher(store, embedder, high).ranked(REAL, 5).hits == []


@pytest.mark.slow
def test_a_small_store_keeps_the_plain_floor(notes_ws: Path) -> None:
    """Under ``MIN_BACKGROUND_CHUNKS`` chunks (a store made by any Harvey: nothing is
    stored for the background) the background levels change nothing."""
    from harvey.knowledge.search import Searcher
    from harvey.knowledge.store import open_store
    from harvey.retrieval.embedders import LocalEmbedder

    assert invoke_harvey("rag", "new", "n", "--embedder", "local", cwd=notes_ws).returncode == 0
    assert invoke_harvey("rag", "ingest", "n", "notes", cwd=notes_ws).returncode == 0
    embedder = LocalEmbedder()
    with open_store(notes_ws, "n") as store:
        on, plain = Searcher(store, embedder, BACKGROUND), Searcher(store, embedder, Floor())
        for text in [*NONSENSE, "How often should I bleed the radiators?", "tyre pressure"]:
            assert on.ranked(text, 5) == plain.ranked(text, 5), text


@pytest.mark.slow  # two `harvey run` turns with wordllama
def test_harvey_run_sends_nothing_for_nonsense_and_passages_for_a_question(
    docs_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(FLOORS, "default", BACKGROUND)  # in process: the background floor
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    for question, sent in (("zzqx qqxz", False), (REAL, True)):
        with FakeOpenAI([Reply("noted")]) as srv:
            argv = ["run", question, "--backend", "openai", "--base-url", srv.url, "--rag", "d"]
            proc = invoke_harvey(*argv, cwd=docs_ws, env=env)
            body = srv.chat_requests[0]
        assert proc.returncode == 0, proc.stderr
        prompt = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        spmd = max((docs_ws / ".harvey" / "sessions").glob("*.spmd"), key=os.path.getmtime)
        text = spmd.read_text()
        if sent:
            assert (
                prompt.startswith("### Context (from knowledge base)") and "docs/json.txt" in prompt
            )
            assert "[[rag: " in text and "[[rag-source: docs/json.txt" in text
        else:
            assert prompt == question and "[[rag" not in text and question in text

"""The floor's unknown-word check (``Floor.unknown_share``, ``unknown_word_cosine``): in a
store large enough to know its subject's words, a prompt a quarter of whose words no chunk
holds is sent only close matches; a smaller store is judged on its words only at
``rag.floor: strict``."""

from __future__ import annotations

import importlib
import json
import pydoc
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.knowledge.floor import FLOORS, MIN_VOCABULARY_CHUNKS
from harvey.knowledge.vocabulary import within_one_edit
from tests.harvey_process import invoke_harvey

# about 1.35 MB of the stdlib's own pydoc text: 8,000+ chunks of 200 bytes
MODULES = (
    "json", "csv", "random", "shutil", "tempfile", "zipfile", "argparse", "datetime",
    "logging", "pathlib", "sqlite3", "hashlib", "collections", "itertools", "functools",
    "subprocess", "threading", "socket", "email", "http.client", "urllib.request",
    "unittest", "typing", "re", "os", "io", "asyncio", "decimal", "fractions", "statistics",
)  # fmt: skip
OFF_SUBJECT = ["how do I reset my iPhone to factory settings", "how to file my income tax return"]
REAL = "turn a dictionary into a JSON string and back"


def _store(ws: Path, modules: tuple[str, ...]) -> Path:
    (ws / "docs").mkdir(parents=True)
    for name in modules:
        text = pydoc.render_doc(importlib.import_module(name), renderer=pydoc.plaintext)
        (ws / "docs" / f"{name}.txt").write_text(text)
    (ws / "harvey.yaml").write_text("rag:\n  chunk_size_bytes: 200\n")
    assert invoke_harvey("rag", "new", "d", "--embedder", "local", cwd=ws).returncode == 0
    assert invoke_harvey("rag", "ingest", "d", "docs", cwd=ws).returncode == 0
    return ws


def _paths(ws: Path, query: str, *config: str) -> list[str]:
    (ws / "harvey.yaml").write_text("rag:\n  chunk_size_bytes: 200\n" + "".join(config))
    # --trust: a workspace file may lower the floor only once trusted (this one is ours)
    proc = invoke_harvey("--trust", "rag", "query", "d", query, "--json", cwd=ws)
    assert proc.returncode == 0, proc.stderr
    return [row["path"] for row in json.loads(proc.stdout)]


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _store(tmp_path_factory.mktemp("large"), MODULES)


def _without_the_check(monkeypatch: pytest.MonkeyPatch, **levels: float) -> None:
    """The default level with the check changed (runs in process: ``invoke_harvey``)."""
    monkeypatch.setitem(FLOORS, "default", replace(FLOORS["default"], **levels))


@pytest.mark.slow  # wordllama over 8,000 chunks (about 2 s)
def test_a_large_store_sends_nothing_for_a_prompt_of_words_it_does_not_know(
    large: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harvey.knowledge.store import open_store

    with open_store(large, "d") as store:
        assert store.counts()[1] >= MIN_VOCABULARY_CHUNKS
    for query in OFF_SUBJECT:
        assert _paths(large, query) == [], query
        assert _paths(large, query, "  floor: strict\n") == [], query
        assert _paths(large, query, "  floor: 'off'\n"), query
    # the check is what keeps them out: without it the cosine floor lets passages by
    for levels in ({"unknown_share": 0.0}, {"unknown_word_cosine": 0.0}):
        with monkeypatch.context() as patch:
            _without_the_check(patch, **levels)
            assert all(_paths(large, query) for query in OFF_SUBJECT), levels
    # a question in the store's own words is answered as before, misspelt too: a word one
    # letter from one the store holds is not unknown (three of these five are misspelt)
    assert "docs/json.txt" in _paths(large, REAL)[:2]
    assert "docs/json.txt" in _paths(large, "turn a dictonary into a JSON strng and bak")


@pytest.mark.slow
def test_a_small_store_is_judged_on_its_words_only_when_strict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store of a few modules lacks everyday words: at ``default`` the check is not made
    there, so the check at any share changes nothing; ``strict`` makes it."""
    ws = _store(tmp_path / "small", ("json", "csv"))
    # four of its five words are in no chunk, yet the csv module answers it
    unknown_words = "export my recipes and grocery invoices as csv"
    assert "docs/csv.txt" in _paths(ws, unknown_words)
    before = {query: _paths(ws, query) for query in [*OFF_SUBJECT, REAL, unknown_words]}
    _without_the_check(monkeypatch, unknown_share=0.01)
    assert before == {query: _paths(ws, query) for query in before}
    strict = {query: _paths(ws, query, "  floor: strict\n") for query in before}
    assert strict != before and all(set(strict[q]) <= set(before[q]) for q in before)


@settings(max_examples=500)
@given(st.text("abcd", max_size=7), st.text("abcd", max_size=7))
def test_one_edit_is_the_optimal_string_alignment_distance_of_one(a: str, b: str) -> None:
    assert within_one_edit(a, b) == (_osa(a, b) <= 1)


def _osa(a: str, b: str) -> int:
    """The optimal string alignment distance, the textbook table."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def test_a_misspelling_is_near_a_term_and_another_subject_is_not(tmp_path: Path) -> None:
    from harvey.knowledge.store import open_store

    ws = _store(tmp_path / "near", ("json", "csv"))
    with open_store(ws, "d") as store:
        for typo in ("dictonary", "serialise", "delimter", "quotchar", "encodr", "gien"):
            assert store.near_term(typo), typo
        for other in ("calories", "sourdough", "iphone", "thermostat", "tax", "zzqx"):
            assert not store.near_term(other), other
        before = store.counts()
    assert before == open_store(ws, "d").counts()  # the store file is not touched

"""The relevance floors on stores they were not tuned on (``bench_rag`` calls it).

The floor's levels were chosen on the Python docs' store and its in-sample questions; a
level that only fits that store shows here: the standard library's own ``pydoc`` text of
a dozen modules (a small store) and the code corpus (a large one), each with the
questions whose ``library/`` pages document a module it holds.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bench.rag_questions import (
    HELDOUT_QUESTIONS,
    HELDOUT_UNANSWERABLE,
    QUESTIONS,
    UNANSWERABLE,
)
from harvey.knowledge.embedders import LocalEmbedder
from harvey.knowledge.floor import BACKGROUND, Floor
from harvey.knowledge.ingest import Ingester
from harvey.knowledge.search import Searcher
from harvey.knowledge.store import KnowledgeStore, create_store

NO_WORD = replace(BACKGROUND, unknown_word_cosine=0.0)  # without the unknown-word gate
# the pydoc store: the stdlib's own pydoc text of these modules

SECOND = (
    "argparse",
    "csv",
    "datetime",
    "hashlib",
    "json",
    "logging",
    "pathlib",
    "random",
    "shutil",
    "sqlite3",
    "tempfile",
    "zipfile",
)


def pydoc_store(tmp: Path, embedder: LocalEmbedder) -> KnowledgeStore:
    """A store of the stdlib's own ``pydoc`` text for the ``SECOND`` modules."""
    import importlib
    import pydoc

    ws = tmp / "ws-second"
    (ws / "docs").mkdir(parents=True)
    for name in SECOND:
        text = pydoc.render_doc(importlib.import_module(name), renderer=pydoc.plaintext)
        (ws / "docs" / f"{name}.txt").write_text(text)
    store = create_store(ws, "second", "local", embedder.dims)
    Ingester(store, ws, embedder).ingest(["docs"])
    return store


def _module_files(store: KnowledgeStore, relevant: tuple[str, ...]) -> set[str]:
    """The store's files that are the modules a question's ``library/X`` pages document
    (``X.txt`` in the pydoc store, ``X.py`` or the package ``X/`` in the code store)."""
    names = {r.split("/", 1)[1].split("-")[0] for r in relevant if r.startswith("library/")}
    out = set()
    for row in store.files():
        rel = row.path.removeprefix("docs/")
        for name in names:
            base = name.replace(".", "/")
            if rel in (f"{base}.py", f"{base}.txt") or rel.startswith(f"{base}/"):
                out.add(row.path)
    return out


def other_stores(stores: dict[str, KnowledgeStore], embedder: LocalEmbedder) -> list[str]:
    """The floors on stores they were not tuned on: each one's kept answerable questions
    (a passage of a module the question's pages document in the top 5, among the questions
    the store has such a module for) and silenced unanswerable ones, all lists pooled."""
    nothing = UNANSWERABLE + HELDOUT_UNANSWERABLE
    floors = (
        ("none", Floor(0.0, 0.0, 0.0)),
        ("plain cosine (default)", Floor()),
        ("background (opt-in)", BACKGROUND),
        ("background without the unknown-word gate", NO_WORD),
    )
    cells: dict[str, list[str]] = {label: [] for label, _f in floors}
    heads = []
    for store_name, store in stores.items():
        questions = [(q, _module_files(store, rel)) for q, rel in QUESTIONS + HELDOUT_QUESTIONS]
        questions = [(q, files) for q, files in questions if files]
        heads.append(f"{store_name} ({store.counts()[1]:,} chunks, {len(questions)} questions)")
        for label, floor in floors:
            searcher = Searcher(store, embedder, floor)
            kept = sum(
                any(h.chunk.path in files for h in searcher.search(q, 5)) for q, files in questions
            )
            silent = sum(not searcher.search(q, 5) for q in nothing)
            cells[label].append(f"{kept} kept, {silent} of {len(nothing)} silent")
    return [
        "The floors on stores they were not tuned on: the standard library's own `pydoc` text "
        f"of {len(SECOND)} modules and the code corpus above; answerable: the questions (both "
        "lists) whose `library/` pages document a module the store holds, kept when a "
        f"passage of that module is in the top 5; unanswerable: all {len(nothing)}.",
        "",
        f"| floor | {' | '.join(heads)} |",
        "| --- |" + " --- |" * len(heads),
        *(f"| {label} | {' | '.join(row)} |" for label, row in cells.items()),
    ]

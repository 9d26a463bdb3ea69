"""The absolute relevance floor: what it admits, that fusion only orders what passed, and
that a prompt with nothing relevant sends nothing (``harvey rag query``, ``harvey run``)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.knowledge.floor import (
    Evidence,
    Floor,
    admits,
    bm25_ceiling,
    bm25_share,
    floored,
    idf,
    pooled,
    unknown_share,
)
from harvey.llm.scripted import Reply
from harvey.protocols import TurnQuery
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import invoke_harvey
from tests.knowledge.conftest import Harvey

NOTHING_RELEVANT = ["zzqx qqxz", "hello", "what is the capital of Mongolia"]
ANSWERABLE = "How often should I bleed the radiators?"

levels = st.floats(0.0, 1.0, allow_nan=False)
floors = st.builds(Floor, levels, levels, levels, levels, levels, levels, levels)


def test_idf_and_share_follow_fts5s_scale() -> None:
    assert idf(100, 1) == pytest.approx(math.log(99.5 / 1.5))
    assert idf(2, 1) == 1e-6  # FTS5's floor for a word in half the chunks or more
    ceiling = bm25_ceiling(100, [1, 1])
    assert ceiling == pytest.approx(2.2 * 2 * math.log(99.5 / 1.5))
    # a word no chunk holds weighs as a word one chunk holds, not several times more
    assert bm25_ceiling(3, [0, 1]) == bm25_ceiling(3, [1, 1]) == pytest.approx(4.4 * idf(3, 1))
    assert bm25_share(-ceiling / 2, ceiling) == pytest.approx(0.5)
    assert bm25_share(-10 * ceiling, ceiling) == 1.0 and bm25_share(-1.0, 0.0) == 0.0


def test_the_rule() -> None:
    floor = Floor(0.26, 0.14, 0.38)
    assert admits(Evidence(0.30, 0.20), floor)  # both scales
    assert admits(Evidence(0.40, 0.0), floor)  # the cosine alone
    assert not admits(Evidence(0.30, 0.10), floor)
    assert not admits(Evidence(0.20, 0.90), floor)  # every word matched, nothing meant
    assert admits(Evidence(None, 0.14), floor) and not admits(Evidence(None, 0.13), floor)
    assert admits(Evidence(-1.0, 0.0), Floor(0, 0, 0))  # all 0: the floor is off


def test_a_prompt_of_words_a_large_store_does_not_know_needs_a_strong_match() -> None:
    floor = Floor()  # the defaults: a quarter of the words unknown needs a cosine of 0.5
    assert admits(Evidence(0.45, 0.9, unknown_share=0.2), floor)
    assert admits(Evidence(0.45, 0.9, unknown_share=0.2, vocabulary=True), floor)
    assert not admits(Evidence(0.45, 0.9, unknown_share=0.25, vocabulary=True), floor)
    # a store too small to know its own subject's words: absent words say nothing
    assert admits(Evidence(0.45, 0.9, unknown_share=1.0, vocabulary=False), floor)
    strong = Evidence(0.5, 0.0, unknown_share=1.0, vocabulary=True)
    assert admits(strong, floor)  # a strong match still passes
    assert admits(Evidence(None, 0.5, unknown_share=1.0, vocabulary=True), floor)  # BM25 alone
    # either level at 0 turns the check off
    weak = Evidence(0.3, 0.9, unknown_share=1.0, vocabulary=True)
    assert admits(weak, Floor(unknown_word_cosine=0)) and admits(weak, Floor(unknown_share=0))
    assert not admits(weak, Floor())
    assert unknown_share([0, 5, 9, 0]) == 0.5 and unknown_share([]) == 0.0


candidates = st.lists(
    st.tuples(
        st.integers(0, 40),
        st.floats(-1, 1, allow_nan=False),
        st.floats(0, 1, allow_nan=False),
        st.sampled_from("abcde"),
    ),
    max_size=30,
    unique_by=lambda c: c[0],
)


@given(candidates, floors, st.booleans(), st.booleans(), levels, st.booleans())
def test_the_floor_admits_nothing_under_it_and_keeps_the_order(
    cands: list[tuple[int, float, float, str]],
    floor: Floor,
    embedded: bool,
    background: bool,
    unknown: float,
    vocabulary: bool,
) -> None:
    cosines = {c: cos for c, cos, _b, _f in cands} if embedded else None
    shares = {c: b for c, _cos, b, _f in cands}
    files = {c: f for c, _cos, _b, f in cands}
    evidence = pooled(
        cosines, shares, files, background=background, unknown_share=unknown, vocabulary=vocabulary
    )
    # a chunk keeps its own cosine and carries its file's best BM25 share
    for c, cos, _b, f in cands:
        ev = evidence[c]
        assert ev.cosine == (cos if embedded else None)
        assert ev.bm25 == max(b for _o, _cos, b, g in cands if g == f)
    ranked = sorted(((c, s) for c, s, _b, _f in cands), key=lambda cs: (-cs[1], cs[0]))
    kept = floored(ranked, evidence, floor)
    for c, _s in kept:  # nothing under the floor
        ev = evidence[c]
        # words the store does not know: the background floor any, the plain one enough
        gated = (unknown > 0) if background else (vocabulary and unknown >= floor.unknown_share)
        if not floor.off and ev.cosine is not None and floor.unknown_share > 0 and gated:
            assert ev.cosine >= floor.unknown_word_cosine
        if not floor.off and ev.cosine is not None and background:
            assert ev.background and ev.cosine >= floor.background_cosine
            assert ev.bm25 >= floor.bm25 or ev.cosine >= floor.background_cosine_alone
        elif not floor.off and ev.cosine is not None:
            assert ev.cosine >= floor.cosine
            assert ev.bm25 >= floor.bm25 or ev.cosine >= floor.cosine_alone
        elif not floor.off:
            assert ev.bm25 >= floor.bm25
    # everything over it, in fusion's order
    assert kept == [cs for cs in ranked if admits(evidence[cs[0]], floor)]


@pytest.fixture(scope="module")
def searchers(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from harvey.knowledge.ingest import Ingester
    from harvey.knowledge.search import Searcher
    from harvey.knowledge.store import create_store
    from harvey.retrieval.embedders import LocalEmbedder
    from tests.knowledge.conftest import NOTES

    ws = tmp_path_factory.mktemp("floor-ws")
    for rel, text in NOTES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    embedder = LocalEmbedder()
    store = create_store(ws, "s", "local", embedder.dims)
    Ingester(store, ws, embedder).ingest(["notes"])
    yield Searcher(store, embedder, Floor()), Searcher(store, embedder)
    store.close()


WORDS = ["boiler", "pressure", "radiators", "bleed", "roses", "tyre", "car", "zzqx", "hello"]


@pytest.mark.slow  # the module's store: loading wordllama takes ~1.7 s
@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.integers(1, 5))
def test_a_real_search_is_the_unfloored_ranking_with_some_left_out(searchers, words, k) -> None:  # type: ignore[no-untyped-def]
    floored_searcher, plain = searchers
    text = " ".join(words)
    ranked = floored_searcher.ranked(text, k)
    everything = [(h.chunk.id, h.score) for h in plain.search(text, 50)]
    got = [(h.chunk.id, h.score) for h in ranked.hits]
    it = iter(everything)
    assert all(hit in it for hit in got)  # a subsequence: fusion's order and scores kept
    assert len(got) + ranked.below_floor == len(everything) or len(got) == k


@pytest.mark.slow
def test_nonsense_is_below_the_floor_in_a_real_store(searchers) -> None:  # type: ignore[no-untyped-def]
    floored_searcher, plain = searchers
    for text in NOTHING_RELEVANT:
        assert plain.search(text, 5), text  # fusion alone would send something
        ranked = floored_searcher.ranked(text, 5)
        assert ranked.hits == [] and ranked.below_floor > 0, text
    best = floored_searcher.search(ANSWERABLE, 5)
    assert [h.chunk.path for h in best] == ["notes/boiler.md"]


@pytest.mark.slow
def test_rag_query_says_no_passage_above_the_floor(harvey: Harvey) -> None:
    assert harvey("rag", "new", "n", "--embedder", "local").returncode == 0
    assert harvey("rag", "ingest", "n", "notes").returncode == 0
    out = harvey("rag", "query", "n", "zzqx qqxz")
    assert out.returncode == 0 and out.stdout == ""
    assert out.stderr.startswith("no passage above the floor (")
    as_json = harvey("rag", "query", "n", "hello", "--json")
    assert json.loads(as_json.stdout) == [] and "no passage above the floor" in as_json.stderr
    found = harvey("rag", "query", "n", ANSWERABLE)
    assert found.stdout.startswith("notes/boiler.md:L1-L4 — score ") and found.stderr == ""


def _turn(ws: Path, question: str) -> tuple[str, str]:
    """One ``harvey run --rag n`` turn against the fake: the prompt the model got and
    the session recording."""
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.update({k: "" for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")})
    with FakeOpenAI([Reply("noted")]) as srv:
        argv = ["run", question, "--backend", "openai", "--base-url", srv.url, "--rag", "n"]
        proc = invoke_harvey(*argv, cwd=ws, env=env)
        bodies = srv.chat_requests
    assert proc.returncode == 0, proc.stderr
    prompt = [m for m in bodies[0]["messages"] if m["role"] == "user"][-1]["content"]
    recordings = sorted((ws / ".harvey" / "sessions").glob("*.spmd"), key=os.path.getmtime)
    return prompt, recordings[-1].read_text()


@pytest.mark.slow
def test_a_turn_with_nothing_relevant_sends_nothing_and_records_no_note(
    harvey: Harvey, notes_ws: Path
) -> None:
    assert harvey("rag", "new", "n", "--embedder", "local").returncode == 0
    assert harvey("rag", "ingest", "n", "notes").returncode == 0
    for question in NOTHING_RELEVANT[:2]:
        prompt, spmd = _turn(notes_ws, question)
        assert prompt == question
        assert "[[rag" not in spmd and question in spmd
    prompt, spmd = _turn(notes_ws, ANSWERABLE)
    assert prompt.startswith("### Context (from knowledge base)") and "brass key" in prompt
    assert "[[rag: 1 chunks from n, top score " in spmd
    assert "[[rag-source: notes/boiler.md:L1-L4 — score " in spmd


def test_the_turn_provider_and_the_tool_say_nothing_was_above_the_floor(
    harvey: Harvey, notes_ws: Path
) -> None:
    from harvey.config.settings import Settings
    from harvey.knowledge import commands
    from harvey.knowledge.retrieval import Retrieval
    from harvey.tools.knowledge import SearchKnowledgeTool
    from harvey.tools.registry import ToolContext

    assert harvey("rag", "new", "n", "--embedder", "local").returncode == 0
    assert harvey("rag", "ingest", "n", "notes").returncode == 0
    warnings: list[str] = []
    retrieval = Retrieval.open(notes_ws, "n", Settings(), warnings.append)
    try:
        assert retrieval.for_turn(TurnQuery("zzqx qqxz", 8192, 4.0)) is None
        assert "last turn: no passage above the floor, nothing sent" in commands.retrieval_line(
            retrieval
        )
        tool = SearchKnowledgeTool(lambda: retrieval)
        said = tool.run(ToolContext(workspace=notes_ws), {"query": "hello"})
        assert said == "no passage in n above the floor for 'hello'"
        context = retrieval.for_turn(TurnQuery(ANSWERABLE, 8192, 4.0))
        assert context is not None and "brass key" in context.text
        assert "last turn: 1 passages sent" in commands.retrieval_line(retrieval)
        found = tool.run(ToolContext(workspace=notes_ws), {"query": ANSWERABLE})
        assert found.startswith("notes/boiler.md:L1-L4 — score ")
    finally:
        retrieval.close()
    assert warnings == []

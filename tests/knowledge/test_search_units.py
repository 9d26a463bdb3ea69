"""The pieces of ranking: the FTS query sanitiser, the 0–1 scores, RRF, passage merging."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.knowledge.retrieval import merge, render
from harvey.knowledge.search import Hit, bm25_score, fuse, prune_terms
from harvey.knowledge.store import ChunkRow, create_store
from harvey.retrieval.words import coverage, fts_query


def test_fts_query_quotes_every_word() -> None:
    assert fts_query('Boiler-pressure AND "x: *') == '"boiler" OR "pressure" OR "x"'
    assert fts_query("how do I") == '"how" OR "do" OR "i"'  # only stopwords: keep them
    assert fts_query("* - : \"'") == ""
    assert fts_query("a a a") == '"a"'


@pytest.mark.parametrize(
    "text", ["NEAR(a b", "col:val", "^start", '"', "a*", "-x", "AND", "OR NOT"]
)
def test_no_user_text_is_an_fts_error(tmp_path: Path, text: str) -> None:
    store = create_store(tmp_path, "s", "none", 0)
    assert store.fts(fts_query(text) or '""', 5) == []


def test_scores_are_zero_to_one() -> None:
    assert bm25_score(0.0) == 0 and bm25_score(-5.0) == 0.5 and 0 < bm25_score(-100) < 1
    assert bm25_score(3.0) == 0  # FTS5 never returns a positive BM25; a bad one scores 0
    files = {1: "a", 2: "b", 3: "c", 4: "d"}
    fused = dict(fuse([(1, 9.0), (2, 5.0), (3, 1.0)], [(1, 0.9), (3, 0.5), (4, 0.1)], files))
    assert fused[1] == pytest.approx(1.0)  # best in both lists
    assert fused[3] < fused[1] and fused[2] <= 0.5 and fused[4] == 0  # one list only: ≤ ½
    assert all(0 <= s <= 1 for s in fused.values())
    tie = dict(fuse([(5, 2.0), (6, 1.0)], [(6, 0.8), (5, 0.4)], {5: "x", 6: "y"}))
    assert tie[5] == pytest.approx(tie[6])


def test_fusion_pools_a_files_evidence() -> None:
    """BM25 finds file f by chunk 1, cosine by chunk 2: f's best chunk gets both."""
    files = {1: "f", 2: "f", 3: "g", 4: "h"}
    lexical = [(1, 10.0), (3, 8.0), (4, 0.0)]
    dense = [(3, 0.8), (2, 0.7), (4, 0.1)]
    ranked = fuse(lexical, dense, files)
    assert [c for c, _s in ranked][:2] == [1, 3]  # chunk-level fusion would put 3 first
    scores = dict(ranked)
    assert scores[1] == pytest.approx((1.0 + (0.7 - 0.1) / 0.7) / 2)
    assert scores[2] < scores[1]  # the file's other chunk keeps its own score
    assert [s for _c, s in ranked] == sorted((s for _c, s in ranked), reverse=True)


def test_common_words_are_dropped_once_the_budget_is_spent() -> None:
    terms = ['"rare"', '"common"', '"mid"', '"none"']
    assert prune_terms(terms, [10, 9_000, 500, 0], 8_000) == ['"none"', '"rare"', '"mid"']
    assert prune_terms(terms, [9_000, 9_500, 8_500, 9_900], 8_000) == ['"mid"']  # one at least
    assert prune_terms(terms, [1, 2, 3, 4], 8_000) == ['"rare"', '"common"', '"mid"', '"none"']


def _hit(path: str, start: int, end: int, lines: tuple[int, int], text: str, score: float) -> Hit:
    return Hit(ChunkRow(0, path, start, end, lines[0], lines[1], "h", text), score)


def test_merge_adjacent_and_overlapping_of_one_file() -> None:
    a = _hit("n.md", 0, 10, (1, 2), "aaaa\nbbbb\n", 0.4)
    b = _hit("n.md", 10, 20, (3, 4), "cccc\ndddd\n", 0.9)
    c = _hit("n.md", 15, 25, (4, 5), "dddd\neeee\n", 0.2)
    far = _hit("n.md", 500, 510, (40, 41), "zzzz\n", 0.3)
    other = _hit("m.md", 10, 20, (3, 4), "other\n", 0.5)
    passages = merge([a, b, c, far, other])
    assert [p.label for p in passages] == ["n.md:L1-L5", "m.md:L3-L4", "n.md:L40-L41"]
    assert passages[0].text == "aaaa\nbbbb\ncccc\ndddd\neeee\n"
    assert passages[0].score == 0.9 and passages[0].chunks == 3
    text = render(passages)
    assert text.startswith("### Context (from knowledge base)\n\nCite a passage by its path")
    assert "\n#### n.md:L1-L5\naaaa\n" in text and text.endswith("### Question")


def test_a_clear_match_in_a_two_note_store_is_not_scored_zero(tmp_path: Path) -> None:
    """BM25's IDF is log 1 = 0 for a word in one of two chunks; the coverage floor keeps
    the matching note above ``floor.MIN_SCORE`` (0.1) while the order stays BM25's."""
    from harvey.knowledge.ingest import Ingester
    from harvey.knowledge.search import COVERAGE_WEIGHT, Searcher

    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "boiler.md").write_text("The boiler pressure valve sticks in winter.\n")
    (ws / "notes" / "garden.md").write_text("Tomatoes want sun and water.\n")
    store = create_store(ws, "s", "none", 0)
    Ingester(store, ws, None).ingest(["notes"])
    hits = Searcher(store, None).search("why does the boiler valve stick?", k=5)
    assert [h.chunk.path for h in hits] == ["notes/boiler.md"]
    assert hits[0].score >= COVERAGE_WEIGHT * 0.6 > 0.1  # boiler, valve, stick(s) of 4 words
    assert coverage(["notes", "configure"], "my note on configuration") == 1.0
    assert coverage(["cat"], "category") == 0.0  # under four letters: the word itself only


def test_when_every_word_is_common_the_two_rarest_together_rank_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the row budget for every word, FTS5 scores only the chunks holding the two
    rarest words together; too few of those, and the rarest word alone ranks, as before."""
    from harvey.knowledge import search
    from harvey.knowledge.ingest import Ingester

    ws = tmp_path / "ws"
    (ws / "n").mkdir(parents=True)
    texts = ["pump valve", "pump valve", "pump", "pump", "valve", "valve", "pump valve seal"]
    for i, text in enumerate(texts):
        (ws / "n" / f"{i}.md").write_text(text + "\n")
    store = create_store(ws, "s", "none", 0)
    Ingester(store, ws, None).ingest(["n"])
    monkeypatch.setattr(search, "ROW_BUDGET", 2)  # every word matches more chunks than this
    searcher = search.Searcher(store, None)
    both = {"n/0.md", "n/1.md", "n/6.md"}
    assert {h.chunk.path for h in searcher.search("pump valve", k=3)} == both
    wider = {h.chunk.path for h in searcher.search("pump valve", k=5)}  # only 3 hold both
    assert len(wider) == 5 and not wider <= both  # the rarest word alone decided


@settings(max_examples=300)
@given(
    st.lists(st.text("abcde", min_size=1, max_size=7), min_size=1, max_size=5),
    st.lists(st.text("abcde", min_size=1, max_size=7), max_size=30),
)
def test_coverage_matches_comparing_every_word(query: list[str], words: list[str]) -> None:
    """Comparing a query word only with the words that begin as it does finds what
    comparing it with every word finds."""
    from harvey.retrieval.words import same_word

    text = " ".join(words)
    found = sum(1 for q in query if any(same_word(q, w) for w in set(words)))
    assert coverage(query, text) == found / len(query)

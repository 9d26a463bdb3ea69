"""The pieces of ranking: the FTS query sanitiser, the 0–1 scores, RRF, passage merging."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.knowledge.retrieval import merge, render
from harvey.knowledge.search import Hit, bm25_score, fts_query, fuse
from harvey.knowledge.store import ChunkRow, create_store


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
    fused = dict(fuse([1, 2, 3], [1, 3, 4]))
    assert fused[1] == pytest.approx(1.0)
    assert fused[3] < fused[1] and fused[2] < 0.51 and fused[4] < 0.51
    tie = dict(fuse([5, 6], [6, 5]))
    assert tie[5] == pytest.approx(tie[6])


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

"""The retrieval floor's pieces: one word helper, BM25 over units, one fusion."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from harvey.retrieval.fusion import combine, minmax
from harvey.retrieval.lexical import LexicalIndex, terms_of
from harvey.retrieval.words import (
    STOPWORDS,
    coverage,
    fts_query,
    query_words,
    same_word,
    stem,
)


def test_one_stem_for_a_word_s_forms() -> None:
    assert stem("compiles") == stem("compiled") == stem("compiling") == stem("compile")
    assert stem("reservoirs") == stem("reservoir")
    assert stem("is") == "is"  # too short to cut


def test_query_words_leave_stopwords_out_unless_nothing_else_is_left() -> None:
    assert query_words("How do I compile the pattern?") == ["compile", "pattern"]
    assert query_words("how do I") == ["how", "do", "i"]
    assert query_words("a an to of at", min_len=3) == []


def test_coverage_counts_a_word_by_its_stem() -> None:
    assert coverage(["notes", "archivist"], "An archivist's note, dated 1881.") == 1.0
    assert coverage(["configuration"], "configure it") == 1.0
    assert coverage([], "anything") == 0.0
    assert same_word("note", "notes") and not same_word("cat", "cats")


@given(st.text(max_size=200))
def test_an_fts_query_is_only_quoted_words_joined_by_or(text: str) -> None:
    query = fts_query(text)
    if query:
        assert re.fullmatch(r'"\w+"( OR "\w+")*', query), query
        assert "AND" not in query.replace('"AND"', "").replace('"and"', "")


def test_bm25_ranks_the_unit_holding_the_rare_word_and_stems_match() -> None:
    units = [
        "The pattern is compiled once.",
        "The pattern is used twice.",
        "Nothing here.",
        "The pattern, the pattern, the pattern.",
    ]
    index = LexicalIndex(units)
    scores = index.scores("how is a pattern compiling?")
    assert int(scores.argmax()) == 0
    assert scores[2] == 0.0
    share = index.share("pattern compile")
    assert share[0] == 1.0 and 0 < share[1] < 1 and share[2] == 0


@given(st.lists(st.text(max_size=60), max_size=12), st.text(max_size=40))
def test_bm25_and_share_are_bounded_and_defined_for_any_text(
    units: list[str], query: str
) -> None:
    index = LexicalIndex(units)
    scores, share = index.scores(query), index.share(query)
    assert len(scores) == len(share) == len(units)
    assert (scores >= 0).all() and ((share >= 0) & (share <= 1.0001)).all()
    for i, unit in enumerate(units):
        if not set(terms_of(unit)) & set(terms_of(query)):
            assert scores[i] == 0


def test_stopwords_are_one_list() -> None:
    assert {"the", "how", "not", "they"} <= STOPWORDS


scores = st.dictionaries(st.integers(0, 30), st.floats(-50, 50), max_size=15)


@given(st.lists(scores, min_size=1, max_size=4))
def test_fusion_stays_within_0_and_1_and_an_empty_list_carries_no_weight(
    lists: list[dict[int, float]],
) -> None:
    fused = combine(lists)
    assert set(fused) == {k for d in lists for k in d}
    assert all(-1e-9 <= v <= 1 + 1e-9 for v in fused.values())
    with_empty = combine([*lists, {}])
    assert with_empty == fused


@given(scores)
def test_minmax_puts_the_best_at_1_and_the_worst_at_0(d: dict[int, float]) -> None:
    scaled = minmax(d)
    if d:
        best = max(d, key=lambda k: d[k])
        assert scaled[best] == 1.0
        if len(set(d.values())) > 1:
            worst = min(d, key=lambda k: d[k])
            assert scaled[worst] == 0.0


def test_a_unit_first_in_every_list_scores_1_and_weights_count() -> None:
    fused = combine([{1: 9.0, 2: 1.0}, {1: 0.9, 2: 0.1}])
    assert fused[1] == 1.0 and fused[2] == 0.0
    leaning = combine([{1: 1.0, 2: 0.0}, {1: 0.0, 2: 1.0}], [1.0, 3.0])
    assert leaning[2] == 0.75 and leaning[1] == 0.25


def test_loading_wordllama_leaves_the_user_s_logging_alone() -> None:
    """wordllama's import calls logging.basicConfig(INFO): httpx's request lines would
    then reach the user's stderr from every analysis."""
    import subprocess
    import sys

    import pytest

    from harvey.retrieval.embedders import local_available

    if not local_available():
        pytest.skip("wordllama is not installed")
    code = (
        "import logging\n"
        "from harvey.retrieval.embedders import shared_local\n"
        "assert shared_local() is not None\n"
        "root = logging.getLogger()\n"
        "print(len(root.handlers), root.level)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", str(30)]  # no handler added, WARNING as Python starts

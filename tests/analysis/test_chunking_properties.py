"""Hypothesis properties of the chunker: hard bound, lossless offsets, overlap rules."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.chunks.chunking import Chunk, ChunkConfig, chunk_document
from harvey.workspace.kinds import DocType

ALPHABET = st.sampled_from([*list("ab cd.!?\n\n\n\t#=}é日😀\r"), "ab", "# ", "\n\n", ". "])
RAW = st.lists(ALPHABET, max_size=400).map("".join) | st.text(max_size=300)
SIZES = st.integers(min_value=16, max_value=400)
OVERLAPS = st.sampled_from(["paragraph", "sentence", "none"])
DOC_TYPES = st.sampled_from([DocType.PROSE, DocType.SOURCE])


def nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


def check_invariants(content: str, chunks: list[Chunk], size: int) -> None:
    assert chunks, "never an empty list"
    assert chunks[0].start == 0
    assert chunks[-1].end == len(content)
    for c in chunks:
        assert content[c.start : c.end] == c.text
        assert nbytes(c.text) <= size
        assert c.start_line == content.count("\n", 0, c.start) + 1
        assert c.end_line == content.count("\n", 0, max(c.start, c.end - 1)) + 1
    for prev, nxt in itertools.pairwise(chunks):
        assert prev.start <= nxt.start <= prev.end  # no gap, progress
        assert nxt.start > prev.start  # never a chunk wholly repeated by the next
        assert nxt.end > prev.end
        assert nbytes(content[nxt.start : prev.end]) <= size // 4


@settings(max_examples=200, deadline=None)
@given(RAW, SIZES, OVERLAPS, DOC_TYPES)
def test_bound_lossless_offsets_lines(
    content: str, size: int, overlap: str, doc_type: DocType
) -> None:
    cfg = ChunkConfig(chunk_size_bytes=size, overlap=overlap)  # type: ignore[arg-type]
    chunks = chunk_document(content, cfg, doc_type)
    check_invariants(content, chunks, size)
    if not content:
        assert chunks == [Chunk("", 0, 0, 1, 1)]


@settings(max_examples=100, deadline=None)
@given(RAW, SIZES, DOC_TYPES)
def test_overlap_none_is_disjoint(content: str, size: int, doc_type: DocType) -> None:
    chunks = chunk_document(content, ChunkConfig(chunk_size_bytes=size, overlap="none"), doc_type)
    assert "".join(c.text for c in chunks) == content
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start == prev.end


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.sampled_from(["def f():\n    pass\n", "\n", "class A:\n  x = 1\n", "y = 2\n"]),
        max_size=80,
    ).map("".join),
    SIZES,
    OVERLAPS,
)
def test_tree_sitter_path_keeps_the_invariants(content: str, size: int, overlap: str) -> None:
    cfg = ChunkConfig(chunk_size_bytes=size, overlap=overlap)  # type: ignore[arg-type]
    check_invariants(content, chunk_document(content, cfg, DocType.SOURCE, language="python"), size)


# --- documents whose sentences and paragraphs are known by construction ---------------------


@dataclass
class Doc:
    text: str
    paragraph_starts: list[int]  # after a blank line
    sentence_starts: list[int]  # after ". " or ".\n" (and every paragraph start)


WORD = st.sampled_from(["lorem", "ipsum", "dolor", "sit", "amet", "é", "日本", "x" * 30])


@st.composite
def documents(draw: st.DrawFn) -> Doc:
    paragraphs = draw(
        st.lists(
            st.lists(st.lists(WORD, min_size=1, max_size=12), min_size=1, max_size=6),
            min_size=1,
            max_size=12,
        )
    )
    text = ""
    paragraph_starts: list[int] = []
    sentence_starts: list[int] = [0]
    for pi, sentences in enumerate(paragraphs):
        if pi:
            text += "\n\n"
            paragraph_starts.append(len(text))
            sentence_starts.append(len(text))
        for si, words in enumerate(sentences):
            if si:
                text += draw(st.sampled_from([" ", "\n"]))
                sentence_starts.append(len(text))
            text += " ".join(words).capitalize() + "."
    return Doc(text, paragraph_starts, sorted(set(sentence_starts)))


def trailing_sentences_start(
    doc: Doc, lo: int, prev: Chunk, quarter: int, starts: list[int]
) -> int:
    fitting = [
        t for t in starts if lo <= t < prev.end and nbytes(doc.text[t : prev.end]) <= quarter
    ]
    return min(fitting) if fitting else prev.end


@settings(max_examples=80, deadline=None)
@given(documents(), st.integers(min_value=40, max_value=600))
def test_paragraph_overlap_rule(doc: Doc, size: int) -> None:
    chunks = chunk_document(doc.text, ChunkConfig(chunk_size_bytes=size), DocType.PROSE)
    check_invariants(doc.text, chunks, size)
    quarter = size // 4
    for prev, nxt in itertools.pairwise(chunks):
        inside = [p for p in doc.paragraph_starts if prev.start < p < prev.end]
        last_para = max(inside, default=prev.start)
        if nbytes(doc.text[last_para : prev.end]) <= quarter:
            assert nxt.start == last_para  # begins with chunk N's last paragraph
        else:  # else the longest run of its trailing whole sentences that fits
            expected = trailing_sentences_start(doc, last_para, prev, quarter, doc.sentence_starts)
            assert nxt.start == expected


@settings(max_examples=80, deadline=None)
@given(documents(), st.integers(min_value=40, max_value=600))
def test_sentence_overlap_rule(doc: Doc, size: int) -> None:
    chunks = chunk_document(
        doc.text, ChunkConfig(chunk_size_bytes=size, overlap="sentence"), DocType.PROSE
    )
    check_invariants(doc.text, chunks, size)
    for prev, nxt in itertools.pairwise(chunks):
        expected = trailing_sentences_start(doc, prev.start, prev, size // 4, doc.sentence_starts)
        assert nxt.start == expected


@settings(max_examples=120, deadline=None)
@given(documents(), st.integers(min_value=60, max_value=600))
@pytest.mark.slow
def test_prose_cuts_prefer_paragraphs_then_sentences(doc: Doc, size: int) -> None:
    """A smaller unit only when the larger one cannot fill half the chunk; never tiny chunks."""
    chunks = chunk_document(
        doc.text, ChunkConfig(chunk_size_bytes=size, overlap="none"), DocType.PROSE
    )
    check_invariants(doc.text, chunks, size)
    after_space = [m.start() + 1 for m in re.finditer(r"\s", doc.text)]
    for prev, nxt in itertools.pairwise(chunks):
        cut = nxt.start
        assert nbytes(prev.text) >= size // 2  # full enough: no tiny fallback chunks

        def candidates(starts: list[int], start: int = prev.start) -> list[int]:
            near = (p for p in starts if start < p <= start + size)  # chars ≤ bytes
            return [p for p in near if size // 2 <= nbytes(doc.text[start:p]) <= size]

        paras = candidates(doc.paragraph_starts)
        sentences = candidates(doc.sentence_starts)
        if paras:  # the first paragraph start past 75 %, else the last one past half
            late = [p for p in paras if nbytes(doc.text[prev.start : p]) >= (3 * size + 3) // 4]
            assert cut == (min(late) if late else max(paras))
        elif sentences:
            assert cut == max(sentences)
        elif candidates(after_space):
            assert cut in after_space  # a line, else a word boundary
        else:
            assert nbytes(prev.text) > size - 4  # a character cut, as full as the bound allows


@pytest.mark.parametrize("overlap", ["paragraph", "sentence"])
@pytest.mark.parametrize("language", [None, "python"])
def test_small_definition_before_an_oversized_one_is_not_repeated(
    overlap: str, language: str | None
) -> None:
    """A short definition, then one too big for a chunk: the first chunk is the short
    one, and the second must not start over at byte 0 (it used to repeat it whole)."""
    body = "def big():\n" + "".join(f"    x{i} = {i}\n" for i in range(40))
    content = "def small(): pass\n\n" + body
    cfg = ChunkConfig(chunk_size_bytes=120, overlap=overlap)  # type: ignore[arg-type]
    chunks = chunk_document(content, cfg, DocType.SOURCE, language=language)
    check_invariants(content, chunks, 120)
    assert chunks[0].text == "def small(): pass\n\n"
    assert chunks[1].start == chunks[0].end  # nothing of the small chunk is worth repeating


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.sampled_from(["def f(): pass\n\n", "x = 1. Y = 2.\n\n", "def g():\n" + " z\n" * 30]),
        min_size=1,
        max_size=20,
    ).map("".join),
    st.integers(min_value=40, max_value=200),
    OVERLAPS,
)
def test_small_units_then_oversized_ones_keep_the_invariants(
    content: str, size: int, overlap: str
) -> None:
    cfg = ChunkConfig(chunk_size_bytes=size, overlap=overlap)  # type: ignore[arg-type]
    check_invariants(content, chunk_document(content, cfg, DocType.SOURCE), size)

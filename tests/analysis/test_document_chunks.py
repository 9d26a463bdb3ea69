"""Documents are chunked at their page or heading boundaries wherever they can be."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.chunks.chunking import ChunkConfig
from harvey.chunks.document_chunks import chunk_sections, section_starts
from harvey.documents.model import Document, Heading, TextBuilder

WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta\n", "é", "\n\n"]), max_size=80)


def _pdf(pages: list[str]) -> Document:
    out = TextBuilder()
    for page in pages:
        out.page()
        out.add(page)
    return out.build("pdf", len(pages))


def test_whole_pages_are_packed_and_never_split_when_they_fit() -> None:
    doc = _pdf(["Intro to the plant.", "The turbine bearing was replaced.", "Cooling water."])
    chunks = chunk_sections(doc, ChunkConfig(chunk_size_bytes=60, overlap="none"))
    assert [doc.pages_of(c.start, c.end) for c in chunks] == [(1, 2), (3, 3)]
    assert chunks[0].text == "Intro to the plant.\n\nThe turbine bearing was replaced."
    assert (chunks[1].start_line, chunks[1].end_line) == (5, 5)


def test_a_page_larger_than_a_chunk_is_cut_inside_it_only() -> None:
    big = "\n\n".join(f"Paragraph {i} of the long page." for i in range(20))
    doc = _pdf(["Short first page.", big, "Last page."])
    chunks = chunk_sections(doc, ChunkConfig(chunk_size_bytes=200, overlap="none"))
    pages = [doc.pages_of(c.start, c.end) for c in chunks]
    assert pages[0] == (1, 1) and pages[-1] == (3, 3)
    assert all(p == (2, 2) for p in pages[1:-1]) and len(pages) > 3


def test_unpaged_documents_break_at_headings() -> None:
    out = TextBuilder()
    out.heading(1, "One")
    out.block("First section text.")
    out.heading(1, "Two")
    out.block("Second section text.")
    doc = out.build("docx")
    assert section_starts(doc) == [0, doc.headings[1].offset]
    chunks = chunk_sections(doc, ChunkConfig(chunk_size_bytes=40, overlap="none"))
    assert [c.text for c in chunks] == [
        "# One\n\nFirst section text.",
        "# Two\n\nSecond section text.",
    ]
    assert doc.headings[1] == Heading(chunks[1].start, 1, "Two")


@settings(max_examples=60, deadline=None)
@given(st.lists(WORDS.map(" ".join), min_size=1, max_size=6), st.integers(20, 300))
def test_chunks_are_exact_slices_in_order_covering_every_word(pages: list[str], size: int) -> None:
    doc = _pdf(pages)
    chunks = chunk_sections(doc, ChunkConfig(chunk_size_bytes=size, overlap="none"))
    covered = [False] * len(doc.text)
    last = -1
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text and c.text.strip()
        assert c.start > last
        last = c.start
        assert c.start_line == doc.text.count("\n", 0, c.start) + 1
        assert c.end_line == c.start_line + c.text[:-1].count("\n")  # the last char's line
        for i in range(c.start, c.end):
            covered[i] = True
    assert all(covered[i] for i, ch in enumerate(doc.text) if not ch.isspace())

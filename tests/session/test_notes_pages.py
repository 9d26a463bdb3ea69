"""The page fields of the chunk notes: written only for a PDF, read back both ways."""

from __future__ import annotations

from harvey.session.notes import chunk_file_note, chunk_note, read_chunk, read_chunk_file
from harvey.session.records import ChunkFileNote


def test_chunk_note_names_the_pages_only_for_a_pdf() -> None:
    plain = chunk_note("notes.md", 3, "m", "paragraph", 4000)
    assert "pages" not in plain
    paged = chunk_note("report.pdf", 3, "m", "paragraph", 4000, pages="1-12")
    assert paged.endswith(", chunk-size=4000, pages=1-12]]")
    back = read_chunk(paged[2:-2])
    assert back is not None and back.pages == "1-12" and back.file == "report.pdf"
    assert read_chunk(plain[2:-2]).pages == ""  # type: ignore[union-attr]


def test_chunk_file_note_round_trips_its_pages() -> None:
    note = ChunkFileNote("r/q1.pdf", 1, 4, "paragraph", 4000, 0, "ok", 1, "1-9")
    text = chunk_file_note(note)
    assert "failed=0, pages=1-9 — ok]]" in text
    assert read_chunk_file(text[2:-2]) == note
    plain = ChunkFileNote("a.md", 1, 1, "paragraph", 4000, 0, "ok")
    assert "pages" not in chunk_file_note(plain)
    assert read_chunk_file(chunk_file_note(plain)[2:-2]) == plain

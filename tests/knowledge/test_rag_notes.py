"""``[[rag-source:]]``: written, parsed back and rendered, whatever the path holds."""

from __future__ import annotations

import pytest

from harvey.protocols import RagSource
from harvey.session.notes import rag_source_note, read_rag_source
from harvey.session.render import _note_class


@pytest.mark.parametrize(
    "path",
    ["notes/boiler.md", "a — b.md", "x:L1-L2.md", "weird]]name.md", "line\nbreak.md", "ünï/ç.txt"],
)
def test_round_trip(path: str) -> None:
    note = rag_source_note(RagSource(path, 3, 17, 0.8712))
    assert note.startswith("[[rag-source: ") and note.endswith("]]")
    assert "\n" not in note
    back = read_rag_source(note[2:-2])
    assert back == RagSource(path, 3, 17, 0.87)


def test_format_and_render_class() -> None:
    note = rag_source_note(RagSource("notes/boiler.md", 1, 4, 0.5))
    assert note == "[[rag-source: notes/boiler.md:L1-L4 — score 0.50]]"
    assert _note_class(note[2:-2]) == "note note-rag-source"
    assert read_rag_source("rag-source: nothing here") is None


@pytest.mark.parametrize(("first", "last", "span"), [(3, 3, "p3"), (3, 4, "p3-p4")])
def test_a_pdf_passage_names_its_pages(first: int, last: int, span: str) -> None:
    for path in ("report.pdf", "odd:p2.pdf", "a — b.pdf"):
        note = rag_source_note(RagSource(path, 0, 0, 0.8712, first, last))
        assert note.endswith(f":{span} — score 0.87]]")
        assert read_rag_source(note[2:-2]) == RagSource(path, 0, 0, 0.87, first, last)
    assert rag_source_note(RagSource("report.pdf", 0, 0, 0.5, 3, 4)) == (
        "[[rag-source: report.pdf:p3-p4 — score 0.50]]"
    )

"""Format 1.6: the whole-folder scene (``files=``, ``[[chunk-file:]]``) and ``[[chunk-served:]]``."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.session.fountain import parse_session, parse_session_text
from harvey.session.notes import chunk_file_note, read_chunk, read_chunk_file, read_chunk_served
from harvey.session.recorder import FORMAT_VERSION, Recorder
from harvey.session.records import ChunkFileNote, ChunkServed, ParsedChunkInfo
from harvey.session.render import render_html

from .strategies import adversarial_text

FIXED = datetime(2026, 12, 1, 10, 0, 0)


def folder_scene(path: Path) -> Path:
    rec = Recorder(path, user="tester", model="qwen", backend="openai", clock=lambda: FIXED)
    rec.record_chunk_analysis_start(
        "docs/", 3, "qwen", "mixed", 6000, "Summarise each file.", endpoints=3, files=2
    )
    for i, status in enumerate(["ok", "error: every endpoint failed the call", "ok"], 1):
        rec.record_chunk_result(i, 3, status)
    rec.record_chunk_served(2, 3)
    rec.record_chunk_file(ChunkFileNote("docs/a.md", 1, 2, "paragraph", 6000, 1, "ok"))
    rec.record_chunk_file(ChunkFileNote("docs/b.py", 3, 3, "source", 4000, 0, "error: x", 2))
    rec.record_chunk_synthesis("qwen", "ok")
    rec.close()
    return path


def test_the_folder_scene_is_written_and_read_back(tmp_path: Path) -> None:
    path = folder_scene(tmp_path / "s.spmd")
    text = path.read_text()
    assert f"Format: Harvey Fountain {FORMAT_VERSION}" in text
    assert "INT. CHUNK ANALYSIS — docs/ 2026-12-01 10:00:00" in text
    notes = [line for line in text.splitlines() if line.startswith("[[")]
    assert notes[0] == (
        "[[chunk: file=docs/, files=2, chunks=3, model=qwen, boundary=mixed, chunk-size=6000, "
        "endpoints=3]]"
    )
    assert notes[4:] == [
        "[[chunk-served: 2 of 3 endpoints]]",
        "[[chunk-file: docs/a.md — chunks=1-2, boundary=paragraph, chunk-size=6000, failed=1 — ok]]",
        "[[chunk-file: docs/b.py — chunks=3-3, boundary=source, chunk-size=4000, failed=0, "
        "levels=2 — error: x]]",
        "[[synthesis: model=qwen — ok]]",
    ]
    parsed = parse_session(path, strict=True)
    (scene,) = parsed.scenes
    assert scene.kind == "chunk_analysis" and scene.user_text == "Summarise each file."
    assert scene.chunk == ParsedChunkInfo("docs/", 3, "qwen", "mixed", 6000, 3, 2)
    assert scene.chunk_served == ChunkServed(2, 3)
    assert scene.chunk_files == [
        ChunkFileNote("docs/a.md", 1, 2, "paragraph", 6000, 1, "ok"),
        ChunkFileNote("docs/b.py", 3, 3, "source", 4000, 0, "error: x", 2),
    ]
    assert [r.status for r in scene.chunk_results][1].startswith("error:")


def test_a_one_file_header_has_no_files_or_endpoints() -> None:
    body = "chunk: file=doc.md, chunks=2, model=M, boundary=paragraph, chunk-size=6000"
    assert read_chunk(body) == ParsedChunkInfo("doc.md", 2, "M", "paragraph", 6000)


def test_malformed_notes_are_not_misread() -> None:
    assert read_chunk_served("chunk-served: two of 3 endpoints") is None
    assert (
        read_chunk_file("chunk-file: a.md — chunks=1, boundary=x, chunk-size=1, failed=0 — ok")
        is None
    )
    assert read_chunk_file("chunk-file: a.md — chunks=1-1, boundary=x, chunk-size=1, failed=0 — ok")
    assert read_chunk_file("chunk-file: a.md — chunks=1 — ok") is None
    assert read_chunk_file("chunk-file: a.md — ok") is None
    assert read_chunk_file("chunk-result: 1/2 — ok") is None


@settings(max_examples=150, deadline=None)
@given(
    path=adversarial_text(min_size=1),
    status=adversarial_text(),
    first=st.integers(1, 10_000),
    span=st.integers(0, 50),
    levels=st.integers(1, 5),
)
def test_any_path_and_status_round_trip(
    path: str, status: str, first: int, span: int, levels: int
) -> None:
    """A path holding ` — `, `]]`, newlines or commas stays one field; the status comes
    back as the recorder normalises it (one line, ``ok`` or ``error: …``)."""
    note = ChunkFileNote(path, first, first + span, "source", 6000, span, status, levels)
    heading = f"INT. CHUNK ANALYSIS — d/ {FIXED:%Y-%m-%d %H:%M:%S}"
    text = f"Title: t\n\nFADE IN:\n\n\n{heading}\n\n{chunk_file_note(note)}\n"
    (back,) = parse_session_text(text, strict=True).scenes[0].chunk_files
    assert (back.path, back.first, back.last, back.failed, back.levels) == (
        path,
        first,
        first + span,
        span,
        levels,
    )
    assert back.status == "ok" or back.status.startswith("error:")


def test_the_html_page_marks_file_notes_by_status(tmp_path: Path) -> None:
    page = render_html(parse_session(folder_scene(tmp_path / "s.spmd")))
    assert page.count('class="note note-chunk-file"') == 1
    assert page.count('class="note note-chunk-file error"') == 1
    assert 'class="note note-chunk-served"' in page

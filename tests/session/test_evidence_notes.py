"""Format 1.10: every claim of an analysis checkable from the recording — the evidence notes
round-trip, the recorder writes them, the parser and a third-party reader read them, and
the rendered page links each citation to its words."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.analysis.answer import Answer, Citation
from harvey.analysis.evidence import Dropped, Record
from harvey.analysis.quotes import Location
from harvey.session import evidence_notes as ev
from harvey.session.fountain import parse_session, parse_session_text
from harvey.session.recorder import Recorder
from harvey.session.records import TurnRecord
from harvey.session.render import render_html

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=120)


def _body(note: str) -> str:
    assert note.startswith("[[") and note.endswith("]]")
    return note[2:-2]


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT, st.integers(1, 10**6), st.integers(1, 9999), st.integers(0, 50))
def test_an_evidence_note_reads_back_exactly(
    path: str, quote: str, number: int, line: int, more: int
) -> None:
    cite = Location(path, line, line + more).cite()
    note = ev.evidence_note(number, cite, quote)
    parsed = ev.read_evidence(_body(note))
    assert parsed is not None
    assert (parsed.id, parsed.quote, parsed.place.path) == (number, quote, path)
    assert (parsed.place.first_line, parsed.place.last_line) == (line, line + more)
    text = f"Title: T\n\nFADE IN:\n\nINT. CHUNK ANALYSIS — x 2026-12-03 10:00:00\n\n{note}\n"
    (scene,) = parse_session_text(text, strict=True).scenes
    assert scene.evidence == [parsed]


@settings(max_examples=100, deadline=None)
@given(TEXT, TEXT)
def test_dropped_and_unsupported_notes_read_back(quote: str, reason: str) -> None:
    dropped = ev.read_dropped(_body(ev.dropped_note(3, 12, quote, reason)))
    assert dropped == ev.ParsedDropped(3, 12, quote, reason)
    unsupported = ev.read_unsupported(_body(ev.unsupported_note(f"{quote} — {reason}")))
    assert unsupported is not None and unsupported[1] == reason


def test_a_pdf_place_is_its_pages() -> None:
    note = ev.citation_note(4, Location("r.pdf", 10, 12, 3, 4).cite(), True)
    assert note == "[[citation: [4] r.pdf:p3-4 — verified]]"
    parsed = ev.read_citation(_body(note))
    assert parsed is not None and (parsed.place.first_page, parsed.place.last_page) == (3, 4)


def _recording(tmp_path: Path) -> Path:
    rec = Recorder(
        tmp_path / "s.spmd", user="rsdoiel", model="m", backend="local",
        clock=lambda: datetime(2026, 12, 3, 10, 0, 0),
    )  # fmt: skip
    quote = "Harrow Bay opened the Linmore Reservoir on 14 June 1881."
    kept = [Record(quote, Location("sample.md", 83, 83), 1.0, 500, id=1)]
    rec.record_chunk_analysis_start("sample.md", 2, "m", "paragraph", 6000, "List every dam.")
    rec.record_chunk_result(1, 2, "ok, 1 quote, 1 dropped")
    rec.record_chunk_evidence(1, 2, kept, [Dropped("It failed in 1902.", "not in the chunk")])
    rec.record_chunk_result(2, 2, "skipped: nothing here for the instruction")
    citation = Citation(1, Location("sample.md", 83, 83), quote)
    answer_text = f"- {quote} [1]\n\nSources:\n[1] sample.md:L83"
    rec.record_answer(Answer(answer_text, [citation], "evidence"))
    rec.record_chunk_synthesis("m", "ok", answer="evidence")
    rec.record_turn(
        TurnRecord(
            user="rsdoiel", model="m", workspace="/w", user_text=None, reply=answer_text,
            mode="analysis", reply_by_harvey=True,
        )
    )  # fmt: skip
    rec.close()
    return rec.path


def test_the_recording_lets_a_person_check_every_claim(tmp_path: Path) -> None:
    parsed = parse_session(_recording(tmp_path), strict=True)
    analysis, answer = parsed.scenes
    assert [r.status for r in analysis.chunk_results] == [
        "ok, 1 quote, 1 dropped",
        "skipped: nothing here for the instruction",
    ]
    (evidence,) = analysis.evidence
    assert evidence.quote.endswith("on 14 June 1881.") and evidence.place.first_line == 83
    assert [(d.chunk, d.quote) for d in analysis.evidence_dropped] == [(1, "It failed in 1902.")]
    assert [(c.id, c.status) for c in analysis.citations] == [(1, "verified")]
    assert analysis.synthesis is not None and analysis.synthesis.answer == "evidence"
    assert answer.dialogue[-1][0] == "HARVEY"  # no model wrote the evidence answer
    assert answer.reply is not None and answer.reply.startswith("- Harrow Bay")  # resumable
    text = Path(parsed.path or "").read_text()
    assert "[[chunk-result: 2/2 — skipped: nothing here for the instruction]]" in text


def test_a_third_party_fountain_parser_still_agrees(tmp_path: Path) -> None:
    from .test_fountain_interop import our_view, third_party_view

    path = _recording(tmp_path)
    assert third_party_view(path) == our_view(path)
    headings, characters = our_view(path)
    assert headings[0].startswith("INT. CHUNK ANALYSIS — sample.md")
    assert characters == ["RSDOIEL", "HARVEY", "HARVEY"]


def test_the_rendered_page_links_each_citation_to_its_words(tmp_path: Path) -> None:
    page = render_html(parse_session(_recording(tmp_path)))
    assert 'id="evidence-1-1"' in page
    assert '<a class="cite" href="#evidence-1-1" title="Harrow Bay opened' in page
    assert page.count('href="#evidence-1-1"') >= 3  # the answer, its sources, the citation

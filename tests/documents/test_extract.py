"""The document layer on real files made here: text and positions per format, the cache,
and the attacks (bomb, a lying page count, a long report, encrypted, scanned, damaged,
a ZIP bomb, a DOCTYPE, a link to a secret file)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.documents import Document, extract, page_label
from harvey.documents.extraction import estimated_text_bytes
from harvey.documents.model import Heading
from harvey.documents.pdf import PASSWORD_ENV
from harvey.documents.runner import Limits
from harvey.errors import DocumentError, FileRefused
from tests.documents.makers import (
    HTML_PAGE,
    deflate_bomb,
    docx_bytes,
    encrypted_pdf,
    epub_bytes,
    pdf_bytes,
)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_pdf_pages_map_offsets_back_to_their_page(tmp_path: Path) -> None:
    path = _write(tmp_path, "r.pdf", pdf_bytes([["Alpha one"], ["Beta two", "more"], ["Gamma"]]))
    doc = extract(path)
    assert doc.kind == "pdf" and doc.page_count == 3
    beta = doc.text.index("Beta")
    assert doc.page_at(beta) == 2
    assert doc.pages_of(doc.text.index("Alpha"), beta + 4) == (1, 2)
    start, end = doc.span_of_pages(3, 3)
    assert doc.text[start:end].strip() == "Gamma"
    assert page_label(doc.pages_of(beta, beta + 3)) == "p2"
    assert page_label((3, 4)) == "p3-p4"


def test_a_second_read_comes_from_the_cache_keyed_by_content(tmp_path: Path) -> None:
    path = _write(tmp_path, "r.pdf", pdf_bytes([["Cached words"]]))
    first = extract(path)
    cache = Path(os.environ["HARVEY_HOME"]) / "cache" / "documents"
    (entry,) = cache.iterdir()
    assert entry.stat().st_mode & 0o077 == 0 and cache.stat().st_mode & 0o077 == 0
    # The cache answers for the same bytes: doctor it and read again.
    entry.write_text(entry.read_text().replace("Cached words", "From the cache"))
    assert "From the cache" in extract(path).text
    copy = _write(tmp_path, "copy.pdf", path.read_bytes())
    assert "From the cache" in extract(copy).text  # keyed by content, not by name
    assert first.text == "Cached words"


def test_encrypted_pdf_needs_a_password_and_the_password_is_never_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, "locked.pdf", encrypted_pdf([["Top secret plan"]], "s3cret"))
    with pytest.raises(DocumentError, match="encrypted — needs a password") as caught:
        extract(path)
    assert caught.value.reason == "encrypted"
    with pytest.raises(DocumentError, match="password given is wrong"):
        extract(path, password="nope")
    monkeypatch.setenv(PASSWORD_ENV, "s3cret")
    assert "Top secret plan" in extract(path).text
    home = Path(os.environ["HARVEY_HOME"])
    stored = [p.read_bytes() for p in home.rglob("*") if p.is_file()]
    assert not any(b"s3cret" in data or b"Top secret" in data for data in stored)


def test_scanned_pdf_says_it_needs_ocr_with_its_page_count(tmp_path: Path) -> None:
    path = _write(tmp_path, "scan.pdf", pdf_bytes([[], [], []]))
    with pytest.raises(DocumentError, match=r"no text layer — scanned pages need OCR \(3 pages\)"):
        extract(path)


def test_a_pdf_whose_first_pages_have_no_text_is_not_taken_for_a_scan(tmp_path: Path) -> None:
    """A scanned cover and blank pages, then the report: the size estimate samples the
    opening pages, and an empty sample must not refuse the whole file."""
    pages: list[list[str]] = [[], [], [], [], *([["Findings: the pump failed twice."]] * 4)]
    path = _write(tmp_path, "report.pdf", pdf_bytes(pages))
    assert estimated_text_bytes(path) == len(extract(path).text.encode("utf-8")) > 0
    assert extract(path).page_at(extract(path).text.index("Findings")) == 5
    scan = _write(tmp_path, "scan.pdf", pdf_bytes([[]] * 8))  # a real scan still says so
    with pytest.raises(DocumentError, match=r"no text layer .* \(8 pages\)"):
        estimated_text_bytes(scan)


@pytest.mark.parametrize(
    "data", [b"%PDF-1.4\n1 0 obj garbage", pdf_bytes([["cut"]])[:60], b"%PDF-" + os.urandom(500)]
)
def test_damaged_pdf_is_one_line(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(DocumentError, match="damaged") as caught:
        extract(_write(tmp_path, "bad.pdf", data))
    assert "\n" not in str(caught.value)


@pytest.mark.slow
def test_decompression_bomb_is_stopped_by_the_memory_limit(tmp_path: Path) -> None:
    bomb = pdf_bytes([["page text"]], extra_stream=deflate_bomb(320 << 20))
    path = _write(tmp_path, "bomb.pdf", bomb)
    with pytest.raises(DocumentError, match="memory or time limit") as caught:
        extract(path, limits=Limits(memory_bytes=256 << 20))
    assert caught.value.reason == "too-large"


def test_a_file_that_claims_a_million_pages_stops_where_pages_end(tmp_path: Path) -> None:
    path = _write(tmp_path, "liar.pdf", pdf_bytes([["real page"]], claimed_count=1_000_000))
    doc = extract(path)
    assert doc.text == "real page" and doc.page_count == 1_000_000
    assert "claims 1,000,000 pages" in doc.describe()


def test_a_long_report_is_cut_at_the_page_cap_and_says_so(tmp_path: Path) -> None:
    path = _write(tmp_path, "long.pdf", pdf_bytes([[f"page {i}"] for i in range(1, 61)]))
    doc = extract(path, limits=Limits(max_pages=40))
    assert len(doc.page_starts) == 40 and "page 40" in doc.text and "page 41" not in doc.text
    assert "only the first 40 of 60 pages" in doc.describe()


def test_pdf_estimate_scales_a_sample_to_the_page_count(tmp_path: Path) -> None:
    path = _write(tmp_path, "e.pdf", pdf_bytes([["x" * 100] for _ in range(30)]))
    estimate = estimated_text_bytes(path)
    assert 2500 <= estimate <= 3500  # 30 pages of 100 characters, from 3 sampled
    assert not (Path(os.environ["HARVEY_HOME"]) / "cache" / "documents").exists()


def test_pdf_that_is_a_link_to_a_secret_file_is_refused(tmp_path: Path) -> None:
    secret = _write(tmp_path, ".env", b"API_KEY=sk-live-123")
    link = tmp_path / "report.pdf"
    link.symlink_to(secret)
    with pytest.raises(FileRefused):
        extract(link.resolve())


def test_docx_headings_paragraphs_and_table_as_markdown(tmp_path: Path) -> None:
    data = docx_bytes(
        [
            ("Heading1", "Results"),
            ("p", "Sales rose."),
            ("table", [["Region", "Q1"], ["North", "12"]]),
            ("Heading2", "Outlook"),
        ]
    )
    doc = extract(_write(tmp_path, "r.docx", data))
    assert doc.text == (
        "# Results\n\nSales rose.\n\n| Region | Q1 |\n| --- | --- |\n| North | 12 |\n\n## Outlook"
    )
    assert [h.title for h in doc.headings] == ["Results", "Outlook"]
    assert doc.heading_at(doc.text.index("North")) == Heading(0, 1, "Results")


def test_docx_with_a_doctype_or_a_zip_bomb_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evil = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>'
    with pytest.raises(DocumentError, match="DOCTYPE"):
        extract(_write(tmp_path, "e.docx", docx_bytes([], document_xml=evil)))
    big = "<x>" + " " * (2 << 20) + "</x>"
    with pytest.raises(DocumentError, match="inflates past 1 MB"):
        path = _write(tmp_path, "b.docx", docx_bytes([], document_xml=big))
        extract(path, limits=Limits(member_bytes=1 << 20))
    with pytest.raises(DocumentError, match="not a readable ZIP"):
        extract(_write(tmp_path, "d.docx", b"PK\x03\x04 broken"))


def test_html_keeps_headings_and_drops_scripts_and_styles(tmp_path: Path) -> None:
    doc = extract(_write(tmp_path, "p.html", HTML_PAGE))
    assert "# Quarterly report" in doc.text and "## Risks" in doc.text
    assert "Revenue grew by 12%." in doc.text and "- Supply" in doc.text
    for hidden in ("SCRIPT-TEXT", "MORE-SCRIPT", "NOSCRIPT", "color: red"):
        assert hidden not in doc.text


def test_html_with_an_unclosed_head_and_a_latin1_charset(tmp_path: Path) -> None:
    page = '<html><head><meta charset="iso-8859-1"><title>x<body><p>Caf\xe9 ouvert.</p>'
    doc = extract(_write(tmp_path, "p.htm", page.encode("latin-1")))
    assert doc.text == "Café ouvert."


def test_epub_chapters_in_spine_order_each_named(tmp_path: Path) -> None:
    data = epub_bytes(
        [
            ("one.xhtml", "<h1>Chapter One</h1><p>It began.</p>"),
            ("two.xhtml", "<p>No title here.</p>"),
        ]
    )
    doc = extract(_write(tmp_path, "b.epub", data))
    assert doc.text.index("It began.") < doc.text.index("No title here.")
    assert [h.title for h in doc.headings] == ["Chapter One", "two.xhtml"]
    assert doc.heading_at(doc.text.index("No title")).title == "two.xhtml"


def test_unsupported_format_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match=r"unsupported format \.odt") as caught:
        extract(_write(tmp_path, "x.odt", b"PK\x03\x04"))
    assert caught.value.reason == "unsupported"


@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=8))
def test_every_offset_lies_in_the_page_that_span_of_pages_gives(lengths: list[int]) -> None:
    starts, parts, at = [], [], 0
    for n in lengths:
        if parts:
            parts.append("\n\n")
            at += 2
        starts.append(at)
        parts.append("x" * n)
        at += n
    doc = Document("".join(parts), "pdf", tuple(starts), (), len(lengths))
    for page in range(1, len(lengths) + 1):
        start, end = doc.span_of_pages(page, page)
        for offset in range(start, end):
            assert doc.page_at(offset) == page or (doc.page_at(offset) > page and offset >= end)


def test_the_cache_lives_where_config_puts_harvey_home(monkeypatch: pytest.MonkeyPatch) -> None:
    from harvey.config.settings import default_harvey_home
    from harvey.documents.extraction import harvey_home

    assert harvey_home() == default_harvey_home()
    monkeypatch.delenv("HARVEY_HOME")
    assert harvey_home() == default_harvey_home()

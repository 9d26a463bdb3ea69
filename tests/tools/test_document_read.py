"""read_file on documents: text pages with their page numbers, the ``pages`` argument, the
guard on the text's estimated size, and one error line for what cannot be read."""

from __future__ import annotations

import pytest

from harvey.context.budget import ReadBudget
from harvey.errors import FileRefused, ToolError
from harvey.tools.document_read import parse_pages
from harvey.tools.files import ReadFileTool
from harvey.tools.registry import ToolContext
from tests.documents.makers import HTML_PAGE, docx_bytes, encrypted_pdf, pdf_bytes

REPORT = [[f"Page {n} line {i}" for i in range(3)] for n in range(1, 6)]


def _read(ctx: ToolContext, **args: object) -> str:
    return ReadFileTool().run(ctx, {"path": "report.pdf", **args})


def test_a_pdf_reads_as_text_with_its_pages_named(ctx: ToolContext) -> None:
    (ctx.workspace / "report.pdf").write_bytes(pdf_bytes(REPORT))
    whole = _read(ctx, limit=0)
    assert whole.startswith("[report.pdf: PDF, 5 pages; pages 1-5; characters 0-")
    assert "Page 3 line 1" in whole and "%PDF" not in whole and "obj" not in whole
    page = _read(ctx, pages="3")
    header, body = page.split("\n", 1)
    assert "pages 3;" in header and body.strip().splitlines() == [
        "Page 3 line 0",
        "Page 3 line 1",
        "Page 3 line 2",
    ]
    assert "pages 2-3;" in _read(ctx, pages="2-3").split("\n", 1)[0]


def test_offset_and_limit_page_through_the_text(ctx: ToolContext) -> None:
    (ctx.workspace / "report.pdf").write_bytes(pdf_bytes(REPORT))
    first = _read(ctx, offset=0, limit=30)
    assert "to continue reading use offset=30" in first
    second = _read(ctx, offset=30, limit=30)
    whole = _read(ctx, limit=0).split("\n", 1)[1]
    assert first.split("\n", 1)[1] + second.split("\n", 1)[1] == whole[:60]


def test_pages_past_the_end_and_bad_ranges(ctx: ToolContext) -> None:
    (ctx.workspace / "report.pdf").write_bytes(pdf_bytes(REPORT))
    assert _read(ctx, pages="9").startswith("error: report.pdf has 5 pages readable")
    with pytest.raises(ToolError, match="pages"):
        _read(ctx, pages="3-1")
    assert (
        parse_pages(4) == (4, 4) and parse_pages(" 2 - 7 ") == (2, 7) and parse_pages(None) is None
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (encrypted_pdf([["hidden"]], "pw"), "error: report.pdf: encrypted — needs a password"),
        (
            pdf_bytes([[], []]),
            "error: report.pdf: no text layer — scanned pages need OCR (2 pages)",
        ),
        (b"%PDF-1.7\n" + b"\x00garbage" * 50, "error: report.pdf: damaged PDF"),
    ],
)
def test_unreadable_pdfs_are_one_error_line(ctx: ToolContext, data: bytes, expected: str) -> None:
    (ctx.workspace / "report.pdf").write_bytes(data)
    result = _read(ctx)
    assert result.startswith(expected) and "\n" not in result


def test_docx_and_html_read_as_their_text(ctx: ToolContext) -> None:
    (ctx.workspace / "notes.docx").write_bytes(
        docx_bytes([("Heading1", "Plan"), ("p", "Ship it.")])
    )
    (ctx.workspace / "page.html").write_bytes(HTML_PAGE)
    docx = ReadFileTool().run(ctx, {"path": "notes.docx"})
    assert docx.endswith("# Plan\n\nShip it.") and docx.startswith("[notes.docx: DOCX, 1 headings")
    html = ReadFileTool().run(ctx, {"path": "page.html"})
    assert "# Quarterly report" in html and "SCRIPT-TEXT" not in html
    assert "error: notes.docx has no pages" in ReadFileTool().run(
        ctx, {"path": "notes.docx", "pages": "1"}
    )


def test_a_nameless_pdf_is_recognised_by_its_signature(ctx: ToolContext) -> None:
    (ctx.workspace / "download").write_bytes(pdf_bytes([["signed text"]]))
    assert "signed text" in ReadFileTool().run(ctx, {"path": "download"})


def test_a_pdf_link_to_a_secret_file_is_refused(ctx: ToolContext) -> None:
    (ctx.workspace / ".env").write_text("API_KEY=sk-live-123")
    (ctx.workspace / "report.pdf").symlink_to(ctx.workspace / ".env")
    with pytest.raises(FileRefused):
        _read(ctx)


def test_the_guard_counts_the_text_not_the_bytes(ctx: ToolContext) -> None:
    # 20 pages of 200 characters: ~4,000 bytes of text, ~1,000 tokens at 4 bytes a token
    (ctx.workspace / "report.pdf").write_bytes(pdf_bytes([["y" * 200] for _ in range(20)]))
    calls: list[tuple[int, int]] = []

    def on_oversize(source: object, size: int, tokens: int, remaining: int) -> str:
        calls.append((size, tokens))
        return "chunked"

    budget = ReadBudget(600, 4.0)
    guarded = ctx.evolve(read_budget=lambda: budget, on_oversize=on_oversize)
    assert _read(guarded) == "chunked"
    assert 3500 <= calls[0][0] <= 4500  # the text's estimate, not the PDF's bytes
    assert "y" * 200 in _read(guarded, pages="2")  # one page fits: no guard
    roomy = ctx.evolve(read_budget=lambda: ReadBudget(5000, 4.0), on_oversize=on_oversize)
    assert "y" * 200 in _read(roomy) and len(calls) == 1

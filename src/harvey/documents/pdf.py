"""PDF text layer, page by page, with pypdfium2 — run only in the extraction child.

pypdfium2 was chosen by measurement (``bench/bench_documents.py``: an order of
magnitude more pages a second than pypdf and pdfminer.six at the same quality).
PDFium is C++: a content stream that inflates to gigabytes, or a page tree that
claims a million pages, is met inside the library where Python cannot stop it,
which is why this runs in ``child.py`` under the limits of ``runner.py``. Here it
stops on its own at ``max_pages``, ``max_chars`` or its deadline and says so in
the document's notes; a run of unreadable pages ends it (a page tree that lies).
"""

from __future__ import annotations

import time
from typing import Any

from harvey.documents.model import Document, Limits
from harvey.errors import DocumentError

PASSWORD_ENV = "HARVEY_PDF_PASSWORD"
#: A run of pages PDFium cannot load ends the extraction (a page tree that lies).
MAX_UNREADABLE_RUN = 20


def extract_pdf(data: bytes, name: str, limits: Limits, password: str | None) -> Document:
    """The text layer of ``data``, page by page, within ``limits``."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    try:
        doc = pdfium.PdfDocument(data, password=password)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == raw.FPDF_ERR_PASSWORD:
            if password is not None:
                raise DocumentError(
                    f"{name}: encrypted — the password given is wrong", "encrypted"
                ) from None
            raise DocumentError(
                f"{name}: encrypted — needs a password: set {PASSWORD_ENV} for this run",
                "encrypted",
            ) from None
        raise DocumentError(f"{name}: damaged PDF — PDFium cannot open it", "damaged") from None
    try:
        count = len(doc)
        pages, notes = _pages(doc, count, limits, pdfium.PdfiumError)
    finally:
        doc.close()
    if not any(p.strip() for p in pages):
        raise DocumentError(
            f"{name}: no text layer — scanned pages need OCR ({count} "
            f"page{'s' if count != 1 else ''})",
            "no-text",
        )
    return _document(pages, count, notes)


def _pages(
    doc: Any, count: int, limits: Limits, failure: type[Exception]
) -> tuple[list[str], list[str]]:
    deadline = time.monotonic() + limits.seconds
    max_pages, max_chars = limits.max_pages, limits.max_chars
    pages: list[str] = []
    notes: list[str] = []
    total = unreadable = 0
    for index in range(count):
        if unreadable >= MAX_UNREADABLE_RUN:
            notes.append(
                f"the file claims {count:,} pages but pages {index - unreadable + 1:,} to "
                f"{index:,} cannot be read: stopped there"
            )
            del pages[-unreadable:]
            break
        if index >= max_pages:
            notes.append(f"only the first {max_pages:,} of {count:,} pages were extracted")
            break
        if time.monotonic() > deadline:
            notes.append(
                f"extraction stopped at page {index} of {count:,} (time limit "
                f"{limits.seconds:.0f} s)"
            )
            break
        try:
            page = doc[index]
            textpage = page.get_textpage()
            text = textpage.get_text_range()
            textpage.close()
            page.close()
            unreadable = 0
        except failure:
            text = ""
            unreadable += 1
            if unreadable == 1 and not any("unreadable" in n for n in notes):
                notes.append(f"page {index + 1} is unreadable (left empty)")
        text = text.replace("\x00", "")
        if total + len(text) > max_chars:
            pages.append(text[: max(0, max_chars - total)])
            notes.append(f"text cut at {max_chars:,} characters (page {index + 1} of {count:,})")
            break
        total += len(text)
        pages.append(text)
    return pages, notes


def _document(pages: list[str], count: int, notes: list[str]) -> Document:
    parts: list[str] = []
    starts: list[int] = []
    length = 0
    for text in pages:
        if parts:
            parts.append("\n\n")
            length += 2
        starts.append(length)
        body = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
        parts.append(body)
        length += len(body)
    return Document("".join(parts), "pdf", tuple(starts), (), count, tuple(notes))


__all__ = ["PASSWORD_ENV", "extract_pdf"]

"""The child that runs PDFium: stdin is a JSON header line then the PDF's bytes; stdout
one JSON object (``pages``, ``page_count``, ``notes``, or ``error``). Started only by
``documents.pdf`` under resource limits; it never opens a file by name."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

#: A run of pages PDFium cannot load ends the extraction (a page tree that lies).
MAX_UNREADABLE_RUN = 20


def extract(data: bytes, header: dict[str, Any]) -> dict[str, Any]:
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    try:
        doc = pdfium.PdfDocument(data, password=header.get("password"))
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == raw.FPDF_ERR_PASSWORD:
            return {"error": "password"}
        return {"error": "PDFium cannot open it"}
    deadline = time.monotonic() + float(header["seconds"])
    max_pages, max_chars = int(header["max_pages"]), int(header["max_chars"])
    count = len(doc)
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
                f"{header['seconds']:.0f} s)"
            )
            break
        try:
            page = doc[index]
            textpage = page.get_textpage()
            text = textpage.get_text_range()
            textpage.close()
            page.close()
            unreadable = 0
        except pdfium.PdfiumError:
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
    doc.close()
    return {"pages": pages, "page_count": count, "notes": notes}


def main() -> None:
    stream = sys.stdin.buffer
    header = json.loads(stream.readline())
    data = stream.read()
    sys.stdout.write(json.dumps(extract(data, header)))


if __name__ == "__main__":
    main()

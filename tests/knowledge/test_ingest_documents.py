"""``harvey rag ingest`` of PDFs, Word files and HTML: their text is stored with the pages
each passage came from, ``rag query`` names them, unchanged documents are not extracted
again, and unreadable ones are a skipped-file line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harvey.knowledge.ingest import Ingester
from harvey.knowledge.search import Searcher
from harvey.knowledge.store import create_store
from tests.documents.makers import HTML_PAGE, docx_bytes, encrypted_pdf, pdf_bytes
from tests.knowledge.conftest import Harvey

PAGES = [
    ["Introduction to the plant."],
    ["The turbine bearing was replaced in May."],
    ["Cooling water flows at 40 litres a second."],
]


def _reports(ws: Path) -> None:
    reports = ws / "reports"
    reports.mkdir()
    (reports / "plant.pdf").write_bytes(pdf_bytes(PAGES))
    (reports / "budget.docx").write_bytes(
        docx_bytes([("Heading1", "Budget"), ("table", [["Line", "Euros"], ["Turbine", "900"]])])
    )
    (reports / "site.html").write_bytes(HTML_PAGE)
    (reports / "locked.pdf").write_bytes(encrypted_pdf([["x"]], "pw"))
    (reports / "scan.pdf").write_bytes(pdf_bytes([[], []]))


@pytest.mark.slow
def test_ingest_and_query_documents_with_their_pages(harvey: Harvey, notes_ws: Path) -> None:
    _reports(notes_ws)
    assert harvey("rag", "new", "lib", "--embedder", "none").returncode == 0
    ingest = harvey("rag", "ingest", "lib", "reports")
    assert ingest.returncode == 0, ingest.stderr
    out = ingest.stdout + ingest.stderr
    assert "skipped reports/locked.pdf: encrypted — needs a password" in out
    assert "skipped reports/scan.pdf: no text layer — scanned pages need OCR (2 pages)" in out
    assert "Traceback" not in out
    query = harvey("rag", "query", "lib", "turbine bearing", "--json")
    assert query.returncode == 0, query.stderr
    rows = json.loads(query.stdout)
    pdf = next(r for r in rows if r["path"] == "reports/plant.pdf")
    assert "bearing was replaced" in pdf["text"]
    assert pdf["page_start"] <= 2 <= pdf["page_end"]
    # "turbine bearing" only grazes the budget table (the relevance floor keeps it out)
    budget = harvey("rag", "query", "lib", "budget turbine euros", "--json")
    docx = next(r for r in json.loads(budget.stdout) if r["path"] == "reports/budget.docx")
    assert "| Turbine | 900 |" in docx["text"] and docx["page_start"] is None
    plain = harvey("rag", "query", "lib", "cooling water litres")
    assert "reports/plant.pdf:p" in plain.stdout
    html = harvey("rag", "query", "lib", "quarterly revenue", "--json")
    assert all("SCRIPT-TEXT" not in r["text"] for r in json.loads(html.stdout))


@pytest.mark.slow
def test_reingest_does_not_extract_unchanged_documents_again(
    harvey: Harvey, notes_ws: Path
) -> None:
    _reports(notes_ws)
    harvey("rag", "new", "lib", "--embedder", "none")
    harvey("rag", "ingest", "lib", "reports")
    cache = Path(os.environ["HARVEY_HOME"]) / "cache" / "documents"
    stamps = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    for entry in cache.iterdir():  # a re-extraction would be needed if these were read
        entry.unlink()
    again = harvey("rag", "ingest", "lib", "reports")
    assert again.returncode == 0, again.stderr
    assert stamps and not any(cache.iterdir())  # unchanged by size and mtime: not read


def test_a_pdf_passage_is_stored_with_its_pages(tmp_path: Path) -> None:
    """The Ingester alone (fast): chunks of a PDF carry their page range, a scanned PDF is
    skipped with its reason, a re-ingest does not read the unchanged PDF."""
    ws = tmp_path / "ws"
    (ws / "r").mkdir(parents=True)
    (ws / "r" / "plant.pdf").write_bytes(pdf_bytes(PAGES))
    (ws / "r" / "scan.pdf").write_bytes(pdf_bytes([[]]))
    store = create_store(ws, "s", "none", 0)
    report = Ingester(store, ws, None, chunk_size_bytes=60).ingest(["r"])
    assert ("r/scan.pdf", "no text layer — scanned pages need OCR (1 page)") in report.skipped
    (hit,) = Searcher(store, None).search("turbine bearing replaced", k=1)
    assert hit.chunk.path == "r/plant.pdf" and (hit.chunk.page_start, hit.chunk.page_end) == (2, 2)
    again = Ingester(store, ws, None, chunk_size_bytes=60).ingest(["r"])
    scan = (ws / "r" / "scan.pdf").stat().st_size  # a skipped file is tried again
    assert again.unchanged == 1 and again.bytes_read == scan and again.chunks == 0

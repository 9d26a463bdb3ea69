"""``harvey analyze`` on PDFs, Word files and HTML through the real CLI and a loopback
server: the model gets their text (never their bytes), unreadable ones get one line."""

from __future__ import annotations

from pathlib import Path

from harvey.llm.scripted import Reply
from tests.cli.conftest import Run, assert_one_line_error
from tests.documents.makers import HTML_PAGE, docx_bytes, encrypted_pdf, pdf_bytes
from tests.fakes.evidence import records
from tests.fakes.servers import FakeOpenAI

BACKEND = ("--backend", "openai", "--base-url")


def test_analyze_a_pdf_sends_its_text_to_the_model(harvey: Run, workspace: Path) -> None:
    pages = [[f"Finding {n}: margins rose in region {n}."] for n in range(1, 4)]
    (workspace / "report.pdf").write_bytes(pdf_bytes(pages))
    answer = "Margins rose in region 2 [2]."
    replies = [Reply(records(*(p[0] for p in pages))), Reply(answer)]
    with FakeOpenAI(replies) as srv:
        proc = harvey("analyze", "report.pdf", "-i", "List the findings", *BACKEND, srv.url)
        prompts = [r["messages"][-1]["content"] for r in srv.chat_requests]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{answer}\n\nSources:\n[2] report.pdf:p2\n"  # a quote's page
    sent = "\n".join(prompts)
    assert "Finding 2: margins rose in region 2." in sent
    assert "%PDF" not in sent and "endobj" not in sent
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert "INT. CHUNK ANALYSIS — report.pdf" in spmd
    assert "chunk-size=" in spmd and ", pages=1-3]]" in spmd
    from harvey.session.fountain import parse_session

    path = next((workspace / ".harvey" / "sessions").glob("*.spmd"))
    scene = next(s for s in parse_session(path).scenes if s.kind == "chunk_analysis")
    assert scene.chunk is not None and scene.chunk.pages == "1-3"
    assert [(e.id, e.place.first_page) for e in scene.evidence] == [(1, 1), (2, 2), (3, 3)]


def test_analyze_a_locked_pdf_is_one_line_exit_2(harvey: Run, workspace: Path) -> None:
    (workspace / "locked.pdf").write_bytes(encrypted_pdf([["x"]], "pw"))
    proc = harvey("analyze", "locked.pdf", "-i", "x", *BACKEND, "http://127.0.0.1:9/v1")
    assert_one_line_error(
        proc, 2, "locked.pdf: encrypted — needs a password", "HARVEY_PDF_PASSWORD"
    )


def test_analyze_a_scanned_pdf_is_one_line_exit_2(harvey: Run, workspace: Path) -> None:
    (workspace / "scan.pdf").write_bytes(pdf_bytes([[], [], [], []]))
    proc = harvey("analyze", "scan.pdf", "-i", "x", *BACKEND, "http://127.0.0.1:9/v1")
    assert_one_line_error(proc, 2, "no text layer — scanned pages need OCR (4 pages)")


def test_analyze_a_folder_of_documents_skips_the_unreadable_ones(
    harvey: Run, workspace: Path
) -> None:
    docs = workspace / "reports"
    docs.mkdir()
    (docs / "q1.pdf").write_bytes(pdf_bytes([["Q1 revenue was 10."], ["Q1 costs were 4."]]))
    (docs / "plan.docx").write_bytes(
        docx_bytes([("Heading1", "Plan"), ("table", [["Item", "Cost"], ["Rent", "3"]])])
    )
    (docs / "site.html").write_bytes(HTML_PAGE)
    (docs / "locked.pdf").write_bytes(encrypted_pdf([["x"]], "pw"))
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\n\x00\x01 not a pdf")
    (docs / "old.doc").write_bytes(b"\xd0\xcf\x11\xe0 ole")
    with FakeOpenAI([], default_reply=Reply("ok")) as srv:
        proc = harvey(
            "analyze", "reports", "-i", "Summarise", *BACKEND, srv.url, "--per-file", "--yes"
        )
        prompts = "\n".join(r["messages"][-1]["content"] for r in srv.chat_requests)
    assert proc.returncode == 0, proc.stderr
    assert "## reports/q1.pdf" in proc.stdout and "## reports/plan.docx" in proc.stdout
    assert "Q1 costs were 4." in prompts and "| Rent | 3 |" in prompts
    assert "SCRIPT-TEXT" not in prompts and "%PDF" not in prompts
    skipped = next(line for line in proc.stderr.splitlines() if "skipped" in line)
    assert "reports/locked.pdf (encrypted — needs a password" in skipped
    assert "reports/broken.pdf (damaged PDF" in skipped
    assert "reports/old.doc (unsupported format .doc" in skipped
    assert "Traceback" not in proc.stderr
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert "[[chunk-file: reports/q1.pdf — chunks=" in spmd and ", pages=1-2 — " in spmd
    assert "[[chunk-file: reports/plan.docx — " in spmd
    assert "pages=" not in spmd.split("[[chunk-file: reports/plan.docx")[1].split("]]")[0]


def test_harvey_run_reads_a_pdf_page_through_read_file(harvey: Run, workspace: Path) -> None:
    (workspace / "report.pdf").write_bytes(pdf_bytes([["Cover"], ["Headcount: 42 people."]]))
    script = [
        Reply(tool_calls=[("read_file", {"path": "report.pdf", "pages": "2"})]),
        Reply("42 people."),
    ]
    with FakeOpenAI(script) as srv:
        proc = harvey("run", "How many people?", *BACKEND, srv.url)
        second = srv.chat_requests[1]["messages"]
    assert proc.returncode == 0, proc.stderr
    tool = next(m["content"] for m in second if m["role"] == "tool")
    assert tool.startswith("[report.pdf: PDF, 2 pages; pages 2;")
    assert "Headcount: 42 people." in tool and "Cover" not in tool
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert '[[tool: read_file({"path":"report.pdf","pages":"2"}) — ok]]' in spmd


def test_the_password_for_one_run_opens_a_locked_pdf(harvey: Run, workspace: Path) -> None:
    (workspace / "locked.pdf").write_bytes(encrypted_pdf([["The vault code is 1234."]], "s3cret"))
    with FakeOpenAI([], default_reply=Reply("done")) as srv:
        proc = harvey(
            "analyze", "locked.pdf", "-i", "x", *BACKEND, srv.url,
            env={"HARVEY_PDF_PASSWORD": "s3cret"},
        )  # fmt: skip
        sent = "\n".join(r["messages"][-1]["content"] for r in srv.chat_requests)
    assert proc.returncode == 0, proc.stderr
    assert "The vault code is 1234." in sent
    wrong = harvey(
        "analyze", "locked.pdf", "-i", "x", *BACKEND, "http://127.0.0.1:9/v1",
        env={"HARVEY_PDF_PASSWORD": "nope"},
    )  # fmt: skip
    assert_one_line_error(wrong, 2, "encrypted — the password given is wrong")

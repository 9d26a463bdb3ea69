"""Documents through a real Agent turn: read_file on a PDF, a PDF named to a tool-less
model, and a PDF too big for the context going to chunked analysis by its text size."""

from __future__ import annotations

import re
from pathlib import Path

from harvey.chunks.chunking import ChunkConfig
from harvey.chunks.document_chunks import chunk_sections
from harvey.documents import extract
from harvey.llm.scripted import Reply
from harvey.ui import HeadlessUI
from tests.documents.makers import encrypted_pdf, pdf_bytes
from tests.fakes.evidence import part_of, records

from .conftest import AgentFactory


def test_read_file_on_a_pdf_gives_the_model_its_pages(
    make_agent: AgentFactory, workspace: Path
) -> None:
    (workspace / "report.pdf").write_bytes(pdf_bytes([["Intro"], ["Net profit was 7 million."]]))
    agent = make_agent(
        [Reply(tool_calls=[("read_file", {"path": "report.pdf", "pages": "2"})]), "7 million"]
    )
    outcome = agent.turn("What was the profit?")
    result = outcome.tool_results[0].content
    assert result.startswith("[report.pdf: PDF, 2 pages; pages 2;")
    assert "Net profit was 7 million." in result and "Intro" not in result
    assert outcome.reply == "7 million"


def test_a_pdf_named_to_a_tool_less_model_is_attached_as_text(
    make_agent: AgentFactory, workspace: Path
) -> None:
    (workspace / "memo.pdf").write_bytes(pdf_bytes([["Meet at noon on Friday."]]))
    (workspace / "locked.pdf").write_bytes(encrypted_pdf([["never shown"]], "pw"))
    agent = make_agent(["ok"], supports_tools=False)
    agent.turn("What do memo.pdf and locked.pdf say?")
    sent = agent.client.seen[0].messages[-1].content
    assert "--- memo.pdf (PDF, 1 page) ---\nMeet at noon on Friday." in sent
    assert "[locked.pdf: not attached: encrypted — needs a password" in sent
    assert "%PDF" not in sent and "never shown" not in sent


def test_a_pdf_over_the_budget_is_analysed_in_chunks_of_its_text(
    make_agent: AgentFactory, workspace: Path
) -> None:
    line = "The reservoir opened in 1881 and held four hundred million gallons. "
    pages = [[f"Page {n}. " + line * 1] * 30 for n in range(1, 13)]
    (workspace / "history.pdf").write_bytes(pdf_bytes(pages))
    replies: list[Reply | str] = [Reply(tool_calls=[("read_file", {"path": "history.pdf"})])]
    n = len(chunk_sections(extract(workspace / "history.pdf"), ChunkConfig()))
    replies += [records(line.strip())] * n + ["It opened in 1881 [1]."]
    agent = make_agent(replies, context_window=2048, ui=HeadlessUI(auto_yes=True))
    outcome = agent.turn("Summarise history.pdf")
    assert outcome.reply == "It opened in 1881 [1].\n\nSources:\n[1] history.pdf:p1"
    maps = [s.messages[-1].content for s in agent.client.seen[1:-1]]
    assert len(maps) == n > 1 and all(part_of(m) for m in maps)
    assert any("Page 12." in m for m in maps) and not any("%PDF" in m for m in maps)
    assert all(re.search(r"Text:\nPage \d+\.", m) for m in maps)  # chunks start at pages

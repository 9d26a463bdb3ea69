"""Analysis memory does not grow with the file: a size-first chunk check, a streamed file,
a lazy map phase; and an empty file costs no model call."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from harvey.analysis import file_chunks
from harvey.analysis.engine import ChunkAnalysisParams, run_chunked_analysis
from harvey.analysis.progress import NullProgress
from harvey.chat.oversize import CANCELLED_TEXT, ChunkResult, ChunkStatus
from harvey.chunks.chunking import ChunkConfig, chunk_document
from harvey.config.settings import ChunkingSettings, Settings
from harvey.errors import UsageError, WorkspaceError
from harvey.llm.scripted import ScriptedClient
from harvey.ui import HeadlessUI
from harvey.workspace.kinds import DocType
from tests.fakes.evidence import chunk_of, records

from .conftest import AgentFactory
from .test_oversize import PARAGRAPH, RECORD, big_file

CANCELLED = ChunkResult(ChunkStatus.CANCELLED, CANCELLED_TEXT)


class Confirming(HeadlessUI):
    def __init__(self, answer: bool) -> None:
        super().__init__()
        self.answer = answer
        self.questions: list[str] = []

    def confirm(self, question: str) -> bool:
        self.questions.append(question)
        return self.answer


def test_empty_file_is_refused_without_a_model_call(
    make_agent: AgentFactory, workspace: Path
) -> None:
    (workspace / "empty.txt").write_bytes(b"")
    agent = make_agent([])
    with pytest.raises(UsageError, match=r"^empty\.txt is empty: there is nothing to analyse$"):
        agent.chunks.analyze(workspace / "empty.txt", "Summarise")
    assert agent.client.seen == []


def test_more_chunks_than_allowed_is_asked_from_the_size_before_reading(
    make_agent: AgentFactory, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = workspace / "huge.txt"
    with path.open("wb") as f:  # sparse: 100 MB on paper, nothing on disk
        f.write(b"text\n")
        f.truncate(100 * 1024 * 1024)
    opened: list[str] = []
    real_open = os.open

    def spy(p: object, *args: object, **kwargs: object) -> int:
        opened.append(os.fspath(p))  # type: ignore[arg-type]
        return real_open(p, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    ui = Confirming(False)
    agent = make_agent([], ui=ui)
    assert agent.chunks.analyze(path, "Summarise") == CANCELLED
    assert ui.questions == [
        "huge.txt is 104,857,600 bytes: at least 17,477 chunks of 6,000 bytes, more than "
        "max_chunks (20). Process them all?"
    ]
    assert str(path) not in opened  # refused before one byte was read
    assert agent.client.seen == []


def test_a_file_over_one_window_is_streamed_to_the_same_prompts(
    make_agent: AgentFactory, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = big_file(workspace, paragraphs=30)
    text = path.read_text()
    cfg = ChunkConfig()
    expected = chunk_document(text, cfg, DocType.PROSE)
    n = len(expected)
    assert n > 2
    monkeypatch.setattr(file_chunks, "WINDOW_BYTES", 1024)  # this file is now "over a window"
    read_whole = []
    monkeypatch.setattr(file_chunks, "chunk_document", lambda *a, **k: read_whole.append(1))
    settings = Settings(chunking=ChunkingSettings(max_chunks=n, chunk_size_bytes=6000))
    agent = make_agent([RECORD] * n + ["FINAL [1]."], settings=settings)
    assert agent.chunks.analyze(path, "Sum up").text.startswith("FINAL [1].")
    assert read_whole == []
    prompts = [s.messages[-1].content for s in agent.client.seen[:n]]
    assert [chunk_of(p) for p in prompts] == [c.text for c in expected]  # the same chunks
    assert PARAGRAPH.strip() in prompts[0]


def test_the_exact_count_is_still_asked_when_the_size_bound_passes(
    make_agent: AgentFactory, workspace: Path
) -> None:
    path = big_file(workspace, paragraphs=30)
    size = path.stat().st_size
    cfg = ChunkConfig(chunk_size_bytes=1000)
    n = len(chunk_document(path.read_text(), cfg, DocType.PROSE))
    at_least = -(-size // 1000)
    assert n > at_least  # overlap and cuts before the bound make more chunks than size / bound
    ui = Confirming(False)
    settings = Settings(chunking=ChunkingSettings(chunk_size_bytes=1000, max_chunks=at_least))
    agent = make_agent([], ui=ui, settings=settings)
    assert agent.chunks.analyze(path, "Sum up") == CANCELLED
    assert ui.questions == [
        f"history.md splits into {n} chunks, more than max_chunks ({at_least}). Process all {n}?"
    ]
    assert agent.client.seen == []


def test_the_map_phase_pulls_chunks_only_as_call_slots_free() -> None:
    lock = threading.Lock()
    pulled = finished = 0
    ahead: list[int] = []

    def chunks():
        nonlocal pulled
        for i in range(40):
            with lock:
                pulled += 1
                ahead.append(pulled - finished)
            yield f"Chunk {i} holds a line of text."

    class Counting(ScriptedClient):
        def stream_chat(self, messages, tools=None, **kw):  # type: ignore[no-untyped-def]
            nonlocal finished
            events = list(super().stream_chat(messages, tools, **kw))
            with lock:
                finished += 1
            return iter(events)

    client = Counting([records()] * 40, model="m")
    params = ChunkAnalysisParams(
        filename="f",
        chunks=chunks(),
        instruction="Summarise",
        model="m",
        config=ChunkConfig(concurrency=3),
        total=40,
        evidence="model",
    )
    result = run_chunked_analysis(client, params, progress=NullProgress())
    assert len(result.evidence) == 40 and result.failures == [] and len(client.seen) == 40
    assert max(ahead) <= 3  # never more chunks in memory than calls in flight


def test_a_stream_that_yields_fewer_chunks_than_counted_is_an_error() -> None:
    params = ChunkAnalysisParams(
        filename="f.txt", chunks=iter(["a", "b"]), instruction="x", model="m", total=3
    )
    client = ScriptedClient(["1", "2", "3", "4"], model="m")
    with pytest.raises(WorkspaceError, match=r"f\.txt changed while it was being analysed"):
        run_chunked_analysis(client, params, progress=NullProgress())

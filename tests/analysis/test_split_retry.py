"""A map call the server refuses as too long is split at its best boundary and completes."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.analysis.engine import ChunkAnalysisParams, run_chunked_analysis
from harvey.analysis.progress import NullProgress
from harvey.analysis.split_retry import MAX_SPLIT_DEPTH, split_in_two
from harvey.chunks.chunking import ChunkConfig, chunk_document
from harvey.errors import Cancelled, SynthesisError
from harvey.llm.openai import OpenAIClient
from harvey.llm.scripted import Reply
from harvey.workspace.kinds import DocType
from tests.fakes.evidence import chunk_of, records
from tests.fakes.servers import FakeOpenAI


class Notes:
    def __init__(self) -> None:
        self.results: list[tuple[int, int, str]] = []
        self.synthesis: list[str] = []

    def record_chunk_analysis_start(self, *args: Any) -> None:
        pass

    def record_chunk_result(self, i: int, n: int, status: str) -> None:
        self.results.append((i, n, status))

    def record_chunk_evidence(self, *args: Any) -> None:
        pass

    def record_answer(self, *args: Any) -> None:
        pass

    def record_chunk_synthesis(self, model: str, status: str, *args: Any, **kw: Any) -> None:
        self.synthesis.append(status)


def _paragraphs(count: int, size: int = 300) -> str:
    return "\n\n".join(f"Paragraph {i}. " + "word " * (size // 5) for i in range(count))


def test_split_in_two_is_lossless_and_cuts_at_a_blank_line() -> None:
    text = _paragraphs(10)
    halves = split_in_two(text, DocType.PROSE)
    assert halves is not None
    first, second = halves
    assert first + second == text
    assert first.endswith("\n\n") or second.startswith("\n")
    assert 0.3 * len(text) < len(first) < 0.7 * len(text)


def test_split_in_two_refuses_a_tiny_text() -> None:
    assert split_in_two("tiny", DocType.PROSE) is None


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=0, max_size=2000))
def test_split_in_two_never_loses_text(text: str) -> None:
    halves = split_in_two(text, DocType.PROSE)
    if halves is not None:
        assert halves[0] + halves[1] == text
        assert halves[0] and halves[1]


def _params(text: str, instruction: str = "Summarise.") -> ChunkAnalysisParams:
    cfg = ChunkConfig(chunk_size_bytes=max(len(text.encode()), 16), concurrency=2)
    chunks = chunk_document(text, cfg, DocType.PROSE)
    return ChunkAnalysisParams(
        "doc.md", chunks, instruction, "fake-model", config=cfg, evidence="model"
    )


def _map_requests(srv: FakeOpenAI) -> list[str]:
    return [r["messages"][-1]["content"] for r in srv.chat_requests]


def test_a_too_long_chunk_is_split_and_both_halves_are_analysed() -> None:
    text = _paragraphs(12)  # about 3,700 bytes: ~930 estimated tokens
    with FakeOpenAI(
        max_prompt_tokens=700, default_reply=Reply(records("Paragraph 3. word word"))
    ) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        notes = Notes()
        result = run_chunked_analysis(
            client, _params(text), recorder=notes, progress=NullProgress()
        )
        prompts = _map_requests(srv)
        rejected = srv.rejected
    assert rejected == 1  # the whole chunk, once
    assert result.failures == []
    assert notes.results == [
        (1, 1, "ok, 1 quote, 1 dropped (split in 2 parts: the server said the chunk was too long)")
    ]  # the quote is in one half only: the other half's copy of it is dropped
    halves = [chunk_of(p) or "" for p in prompts[1:]]
    assert len(halves) == 2 and halves[0] + halves[1] == text  # nothing lost
    assert [(r.quote, r.location.first_line) for r in result.records] == [
        ("Paragraph 3. word word", 7)
    ]
    assert text.split("\n")[6].startswith("Paragraph 3.")  # located in the file, not the half
    assert notes.synthesis == ["ok"]


def test_a_half_still_too_long_is_split_again() -> None:
    text = _paragraphs(24)  # ~1,850 tokens estimated: needs four pieces under 600
    with FakeOpenAI(max_prompt_tokens=600, default_reply=Reply(records())) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        notes = Notes()
        result = run_chunked_analysis(
            client, _params(text), recorder=notes, progress=NullProgress()
        )
    assert result.failures == []
    status = notes.results[0][2]
    assert status.startswith("ok, 0 quotes (split in ") and int(status.split()[5]) >= 4


def test_a_window_nothing_fits_fails_the_chunk_after_the_depth_limit() -> None:
    text = _paragraphs(8)
    with FakeOpenAI(
        max_prompt_tokens=5, too_long_style="openai", default_reply=Reply("never")
    ) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        notes = Notes()
        with pytest.raises(SynthesisError, match="too long"):
            run_chunked_analysis(client, _params(text), recorder=notes, progress=NullProgress())
        rejected = srv.rejected
        last = srv.chat_requests[-1]["messages"][-1]["content"]
    assert notes.results[0][2].startswith("error: ")
    assert "too long" in notes.results[0][2]
    # the whole chunk and its first piece at each depth (the first piece that cannot be cut
    # further fails the chunk); its only chunk failed, so no synthesis is asked for
    assert rejected == 1 + MAX_SPLIT_DEPTH
    assert "Evidence quoted" not in last


def test_cancel_during_a_split_stops_it() -> None:
    text = _paragraphs(12)
    cancel = threading.Event()

    def count(body: dict[str, Any]) -> int:
        content = str(body["messages"][-1]["content"])
        if len(content) < 3000:
            cancel.set()  # Ctrl-C while the first half is being analysed
        return len(content.encode()) // 4

    with FakeOpenAI(
        max_prompt_tokens=700, count_tokens=count, default_reply=Reply(records())
    ) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        notes = Notes()
        with pytest.raises(Cancelled):
            run_chunked_analysis(
                client, _params(text), recorder=notes, progress=NullProgress(), cancel=cancel
            )
    assert notes.synthesis == ["error: cancelled"]

"""W4: the map-reduce engine — order, failures, synthesis, hierarchy, progress, cancel."""

from __future__ import annotations

import io
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from harvey.analysis.chunking import ChunkConfig, DocType, chunk_document
from harvey.analysis.engine import (
    AnalysisResult,
    ChunkAnalysisParams,
    SynthesisError,
    map_prompt,
    reduce_prompt,
    run_chunked_analysis,
)
from harvey.analysis.progress import NullProgress, PlainProgress, make_progress
from harvey.errors import BackendError, Cancelled
from harvey.llm.base import LLMClient, ModelCapabilities, StreamEvent, TextDelta, Usage
from harvey.llm.scripted import ScriptedClient
from harvey.messages import Message

CHUNK_RE = re.compile(r"Chunk (\d+) of (\d+):\n")


class FnClient:
    """An LLMClient double whose reply is a function of the prompt (thread-safe)."""

    backend = "scripted"
    endpoint = "scripted"

    def __init__(self, reply: Callable[[str], str], model: str = "LLAMA3") -> None:
        self.reply = reply
        self.model = model
        self.prompts: list[str] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    def stream_chat(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None
    ) -> Iterator[StreamEvent]:
        prompt = messages[-1].content
        with self.lock:
            self.prompts.append(prompt)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            text = self.reply(prompt)
        finally:
            with self.lock:
                self.in_flight -= 1
        return iter([TextDelta(text), Usage(10, 10)])

    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(8192, False)

    def list_models(self) -> list[str]:
        return [self.model]

    def with_model(self, model: str) -> LLMClient:
        return FnClient(self.reply, model)

    def close(self) -> None:
        pass


class RecordingDouble:
    """Implements the recorder protocol; keeps the notes it was asked to write."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def record_chunk_analysis_start(
        self,
        filename: str,
        total_chunks: int,
        model: str,
        boundary: str,
        chunk_size_bytes: int,
        user_instruction: str,
    ) -> None:
        self.events.append(
            ("start", filename, total_chunks, model, boundary, chunk_size_bytes, user_instruction)
        )

    def record_chunk_result(self, i: int, n: int, status: str) -> None:
        self.events.append(("result", i, n, status))

    def record_chunk_synthesis(self, model: str, status: str, levels: int = 1) -> None:
        self.events.append(("synthesis", model, status, levels))


def chunk_index(prompt: str) -> int | None:
    m = CHUNK_RE.search(prompt)
    return int(m.group(1)) if m else None


def params(chunks: list[str], concurrency: int = 4, **kw: Any) -> ChunkAnalysisParams:
    return ChunkAnalysisParams(
        filename="doc.md",
        chunks=chunks,
        instruction="Summarize each section.",
        model="LLAMA3",
        boundary="paragraph",
        config=ChunkConfig(concurrency=concurrency, **kw),
    )


def test_prompts_are_the_seeds() -> None:
    assert map_prompt("Do X.", 2, 5, "body") == "Do X.\n\n---\nChunk 2 of 5:\nbody"
    assert reduce_prompt("Do X.", ["a", "b"]) == (
        "Do X.\n\n---\nCombine the following 2 section summaries into a single coherent "
        "response:\n\na\n\n---\nb"
    )


def test_two_chunks_with_the_scripted_backend() -> None:
    client = ScriptedClient(["result1", "result2", "final"], model="LLAMA3")
    rec = RecordingDouble()
    out = run_chunked_analysis(
        client, params(["one", "two"], concurrency=1), recorder=rec, progress=NullProgress()
    )
    assert out == AnalysisResult("final", [], 1, ["result1", "result2"])
    assert [s.messages[0].content for s in client.seen] == [
        "Summarize each section.\n\n---\nChunk 1 of 2:\none",
        "Summarize each section.\n\n---\nChunk 2 of 2:\ntwo",
        reduce_prompt("Summarize each section.", ["result1", "result2"]),
    ]
    assert rec.events == [
        ("start", "doc.md", 2, "LLAMA3", "paragraph", 6000, "Summarize each section."),
        ("result", 1, 2, "ok"),
        ("result", 2, 2, "ok"),
        ("synthesis", "LLAMA3", "ok", 1),
    ]


def test_chunk_error_continues_and_synthesis_sees_the_failure_note() -> None:
    def reply(prompt: str) -> str:
        i = chunk_index(prompt)
        if i == 2:
            raise BackendError("context exceeded\nmore detail")
        return f"result{i}" if i else "final"

    client = FnClient(reply)
    rec = RecordingDouble()
    out = run_chunked_analysis(
        client, params(["a", "b", "c"]), recorder=rec, progress=NullProgress()
    )
    assert out.text == "final"
    assert out.failures == [2]
    assert out.partials == ["result1", "[chunk 2 failed: context exceeded]", "result3"]
    assert client.prompts[-1] == reduce_prompt("Summarize each section.", out.partials)
    assert ("result", 2, 3, "error: context exceeded") in rec.events


def test_synthesis_error_is_raised_and_recorded() -> None:
    def reply(prompt: str) -> str:
        if chunk_index(prompt) is None:
            raise BackendError("server went away")
        return "partial"

    rec = RecordingDouble()
    with pytest.raises(SynthesisError, match="server went away"):
        run_chunked_analysis(
            FnClient(reply), params(["a", "b"]), recorder=rec, progress=NullProgress()
        )
    assert rec.events[-1] == ("synthesis", "LLAMA3", "error: server went away", 1)


def test_nil_recorder() -> None:
    client = FnClient(lambda p: "partial" if chunk_index(p) else "final")
    assert run_chunked_analysis(client, params(["a", "b"]), progress=NullProgress()).text == "final"


def test_progress_lines_in_chunk_order_before_synthesis() -> None:
    out = io.StringIO()
    client = FnClient(lambda p: "partial" if chunk_index(p) else "final")
    run_chunked_analysis(client, params(["a", "b"]), progress=out)
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["Processing chunk 1/2…", "Processing chunk 2/2…"]
    assert lines[2].startswith("Synthesizing 2 partial results")


def test_results_and_notes_in_chunk_order_when_calls_finish_out_of_order() -> None:
    n = 8

    def reply(prompt: str) -> str:
        i = chunk_index(prompt)
        if i is None:
            return "final"
        time.sleep(0.005 * (n - i))  # later chunks finish first
        return f"r{i}"

    client = FnClient(reply)
    rec = RecordingDouble()
    out = run_chunked_analysis(
        client,
        params([str(i) for i in range(n)], concurrency=4),
        recorder=rec,
        progress=NullProgress(),
    )
    assert out.partials == [f"r{i}" for i in range(1, n + 1)]
    assert [e[1] for e in rec.events if e[0] == "result"] == list(range(1, n + 1))
    assert 1 < client.max_in_flight <= 4


def test_concurrency_one_is_sequential() -> None:
    client = FnClient(lambda p: (time.sleep(0.002), "x")[1])
    run_chunked_analysis(client, params(["a"] * 6, concurrency=1), progress=NullProgress())
    assert client.max_in_flight == 1


def test_hierarchical_reduce_when_partials_do_not_fit() -> None:
    def reply(prompt: str) -> str:
        i = chunk_index(prompt)
        if i is not None:
            return f"summary {i} " + "s" * 600
        count = int(re.search(r"Combine the following (\d+)", prompt).group(1))  # type: ignore[union-attr]
        return f"combined {count}"

    client = FnClient(reply)
    rec = RecordingDouble()
    chunks = [f"chunk {i}" for i in range(12)]
    out = run_chunked_analysis(
        client, params(chunks), recorder=rec, progress=NullProgress(), context_window=1024
    )
    # 12 × ~150 tokens do not fit 1024 - 10%: groups first, then one final synthesis.
    assert out.levels == 2
    assert out.text.startswith("combined")
    reduce_prompts = [p for p in client.prompts if chunk_index(p) is None]
    assert len(reduce_prompts) > 2
    assert all(len(p.encode()) / 4 <= 1024 * 0.9 for p in reduce_prompts)
    assert rec.events[-1] == ("synthesis", "LLAMA3", "ok", 2)


def test_hierarchical_reduce_must_shrink() -> None:
    def reply(prompt: str) -> str:
        return "s" * 800 if chunk_index(prompt) else "t" * 2000  # synthesis grows the text

    rec = RecordingDouble()
    with pytest.raises(SynthesisError, match="did not shrink"):
        run_chunked_analysis(
            FnClient(reply),
            params(["a"] * 6),
            recorder=rec,
            progress=NullProgress(),
            context_window=1024,
        )
    assert rec.events[-1][2].startswith("error: level ")
    assert "did not shrink" in rec.events[-1][2]


def test_partial_too_big_for_the_synthesis_context() -> None:
    client = FnClient(lambda p: "s" * 10_000 if chunk_index(p) else "final")
    with pytest.raises(SynthesisError, match="alone does not fit"):
        run_chunked_analysis(
            client, params(["a", "b"]), progress=NullProgress(), context_window=1024
        )


def test_synthesis_client_is_used_for_the_reduce() -> None:
    mapper = FnClient(lambda p: "partial")
    synth = FnClient(lambda p: "final", model="BIGMODEL")
    rec = RecordingDouble()
    out = run_chunked_analysis(
        mapper, params(["a", "b"]), recorder=rec, progress=NullProgress(), synthesis_client=synth
    )
    assert out.text == "final"
    assert len(mapper.prompts) == 2 and len(synth.prompts) == 1
    assert rec.events[-1] == ("synthesis", "BIGMODEL", "ok", 1)


def test_cancel_stops_outstanding_calls_and_records_it() -> None:
    cancel = threading.Event()
    release = threading.Event()
    started = threading.Event()

    def reply(prompt: str) -> str:
        started.set()
        release.wait(5)  # a server that does not answer
        return "late"

    client = FnClient(reply)
    rec = RecordingDouble()
    result: dict[str, BaseException] = {}

    def run() -> None:
        try:
            run_chunked_analysis(
                client,
                params(["a"] * 20, concurrency=2),
                recorder=rec,
                progress=NullProgress(),
                cancel=cancel,
            )
        except BaseException as exc:
            result["exc"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(5)
    cancel.set()
    worker.join(timeout=1.0)  # returns without waiting for the stuck calls
    alive = worker.is_alive()
    release.set()
    worker.join()
    assert not alive
    assert isinstance(result["exc"], Cancelled)
    assert rec.events[-1] == ("synthesis", "LLAMA3", "error: cancelled", 1)
    assert 1 <= len(client.prompts) <= 2  # at most `concurrency` started; queued never did


def test_analysis_of_a_real_chunked_document() -> None:
    text = "\n\n".join(f"Paragraph {i}. " + "words " * 40 for i in range(30))
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=1000), DocType.PROSE)
    client = FnClient(lambda p: f"saw {chunk_index(p)}" if chunk_index(p) else "final")
    p = params([c.text for c in chunks])
    p.chunks = chunks
    out = run_chunked_analysis(client, p, progress=NullProgress())
    assert out.partials == [f"saw {i}" for i in range(1, len(chunks) + 1)]


def test_the_library_prints_plain_lines_even_on_a_terminal() -> None:
    """A live display is the front end's (``cli/progress.py``); a reporter it passes is used."""

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert isinstance(make_progress(io.StringIO()), PlainProgress)
    assert isinstance(make_progress(Tty()), PlainProgress)
    reporter = NullProgress()
    assert make_progress(reporter) is reporter  # type: ignore[arg-type]


class MapVariantClient(FnClient):
    """A backend that offers a separate client for map calls (like the embedded model)."""

    def __init__(self) -> None:
        super().__init__(lambda prompt: "final")
        self.map_variant = FnClient(lambda prompt: f"partial {chunk_index(prompt)}")

    def for_map_calls(self) -> LLMClient:
        return self.map_variant


def test_map_calls_go_to_the_variant_a_backend_offers_and_synthesis_does_not() -> None:
    client = MapVariantClient()
    out = run_chunked_analysis(client, params(["a", "b", "c"]), progress=NullProgress())
    assert out.text == "final"
    assert sorted(chunk_index(p) for p in client.map_variant.prompts) == [1, 2, 3]
    assert [chunk_index(p) for p in client.prompts] == [None]  # only the synthesis


def test_the_embedded_models_map_replies_are_capped_and_its_chat_replies_are_not() -> None:
    from harvey.llm.base import map_client_of
    from harvey.llm.local import MAP_REPLY_TOKENS, LocalClient

    chat = LocalClient(n_ctx=2048, n_threads=1)
    mapper = map_client_of(chat)
    assert isinstance(mapper, LocalClient) and mapper is not chat
    assert (mapper.max_tokens, chat.max_tokens) == (MAP_REPLY_TOKENS, 256)
    assert (mapper.model, mapper.n_ctx, mapper.n_threads) == (chat.model, 2048, 1)
    assert map_client_of(mapper) is mapper  # already capped: itself
    plain = FnClient(lambda prompt: "x")
    assert map_client_of(plain) is plain


def test_when_every_map_call_fails_no_synthesis_is_asked_for() -> None:
    def reply(prompt: str) -> str:
        if chunk_index(prompt) is not None:
            raise BackendError("the server fell over")
        return "an invented answer"

    client = FnClient(reply)
    rec = RecordingDouble()
    with pytest.raises(SynthesisError) as info:
        run_chunked_analysis(client, params(["a", "b", "c"]), recorder=rec, progress=NullProgress())
    assert str(info.value) == (
        "no synthesis: all 3 map calls failed (the first: the server fell over)"
    )
    assert all(chunk_index(p) is not None for p in client.prompts)  # no reduce prompt
    assert rec.events[-1][:3] == ("synthesis", "LLAMA3", f"error: {info.value}")

"""The map-reduce engine: evidence per chunk, notes in order, failures, the answer, cancel."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from harvey.analysis.engine import ChunkAnalysisParams, SynthesisError, run_chunked_analysis
from harvey.analysis.evidence import ChunkEvidence
from harvey.analysis.progress import NullProgress, PlainProgress, make_progress
from harvey.chunks.chunking import ChunkConfig, chunk_document
from harvey.errors import BackendError, Cancelled
from harvey.messages import Message
from harvey.protocols import LLMClient, ModelCapabilities, StreamEvent, TextDelta, Usage
from harvey.workspace.kinds import DocType
from tests.fakes.evidence import chosen, chunk_of, part_of, quote_first_sentence, records

NOTES = "Archivist's note: the {} ledger was rebound in {}."
INSTRUCTION = "List every archivist's note."


def chunk(i: int) -> str:
    return f"Intro {i} is plain. " + NOTES.format(f"blue {i}", 1900 + i) + " An outro follows."


class FnClient:
    """An LLMClient double whose reply is a function of the prompt (thread-safe)."""

    backend = "scripted"
    endpoint = "scripted"

    def __init__(self, reply: Callable[[str], str], model: str = "LLAMA3") -> None:
        self.reply = reply
        self.model = model
        self.prompts: list[str] = []
        self.schemas: list[dict[str, Any] | None] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    def stream_chat(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        response_schema: dict[str, Any] | None = None,
    ) -> Iterator[StreamEvent]:
        prompt = messages[-1].content
        with self.lock:
            self.prompts.append(prompt)
            self.schemas.append(response_schema)
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
        self, filename: str, total: int, model: str, *rest: Any
    ) -> None:
        self.events.append(("start", filename, total, model, *rest))

    def record_chunk_result(self, i: int, n: int, status: str) -> None:
        self.events.append(("result", i, n, status))

    def record_chunk_evidence(self, i: int, n: int, kept: Any, dropped: Any) -> None:
        self.events.append(("evidence", i, [r.id for r in kept], [d.reason for d in dropped]))

    def record_answer(self, answer: Any) -> None:
        self.events.append(("answer", [c.id for c in answer.citations], answer.unsupported))

    def record_chunk_synthesis(
        self, model: str, status: str, levels: int = 1, answer: str = ""
    ) -> None:
        self.events.append(("synthesis", model, status, answer))


def params(chunks: Sequence[str], *, evidence: str = "harvey", answer: str = "evidence",
           concurrency: int = 4) -> ChunkAnalysisParams:  # fmt: skip
    return ChunkAnalysisParams(
        filename="doc.md",
        chunks=list(chunks),
        instruction=INSTRUCTION,
        model="LLAMA3",
        boundary="paragraph",
        config=ChunkConfig(concurrency=concurrency),
        evidence=evidence,  # type: ignore[arg-type]
        answer=answer,  # type: ignore[arg-type]
    )


def test_harvey_finds_the_evidence_without_a_model_call() -> None:
    client = FnClient(lambda p: pytest.fail("no call expected"))
    rec = RecordingDouble()
    out = run_chunked_analysis(
        client, params([chunk(1), "Nothing to see here.", chunk(3)]), recorder=rec,
        progress=NullProgress(),
    )  # fmt: skip
    assert client.prompts == []
    assert [r.quote for r in out.records] == [
        NOTES.format("blue 1", 1901),
        NOTES.format("blue 3", 1903),
    ]
    assert out.evidence[1] == ChunkEvidence(skipped=True)
    assert rec.events == [
        ("start", "doc.md", 3, "LLAMA3", "paragraph", 6000, INSTRUCTION),
        ("result", 1, 3, "ok, 1 quote"),
        ("evidence", 1, [1], []),
        ("result", 2, 3, "skipped: nothing here for the instruction"),
        ("result", 3, 3, "ok, 1 quote"),
        ("evidence", 3, [2], []),
        ("answer", [1, 2], []),
        ("synthesis", "LLAMA3", "ok", "evidence"),
    ]
    assert out.answer.kind == "evidence"
    assert f"- {NOTES.format('blue 1', 1901)} [1]" in out.text
    assert out.text.endswith("Sources:\n[1] doc.md:L1\n[2] doc.md:L1")


def test_model_records_are_verified_and_an_invented_quote_is_dropped_and_recorded() -> None:
    def reply(prompt: str) -> str:
        text = chunk_of(prompt) or ""
        i = int(text.split()[1])
        return records(NOTES.format(f"blue {i}", 1900 + i), "Archivist's note: a quote it made up.")

    client = FnClient(reply)
    rec = RecordingDouble()
    out = run_chunked_analysis(
        client, params([chunk(1), chunk(2)], evidence="model"), recorder=rec,
        progress=NullProgress(),
    )  # fmt: skip
    assert [r.quote for r in out.records] == [NOTES.format(f"blue {i}", 1900 + i) for i in (1, 2)]
    assert all(s is not None and "records" in s["properties"] for s in client.schemas)
    assert ("result", 1, 2, "ok, 1 quote, 1 dropped") in rec.events
    assert ("evidence", 1, [1], ["not in the chunk word for word"]) in rec.events
    assert "made up" not in out.text


def test_choose_takes_the_numbered_candidates_the_model_picks() -> None:
    text = chunk(1) + " " + NOTES.format("red", 1950)
    client = FnClient(lambda p: chosen(2, 7))
    out = run_chunked_analysis(client, params([text], evidence="choose"), progress=NullProgress())
    assert [r.quote for r in out.records] == [NOTES.format("red", 1950)]
    schema = client.schemas[0]
    assert schema is not None
    assert schema["properties"]["chosen"]["items"]["enum"] == [1, 2]  # only the candidates
    assert out.evidence[0] is not None and out.evidence[0].dropped[0].reason == (
        "no such numbered sentence"
    )


def test_a_failed_chunk_does_not_stop_the_map_phase() -> None:
    def reply(prompt: str) -> str:
        found = part_of(prompt)
        if found and found[0] == 2:
            raise BackendError("context exceeded\nmore detail")
        return quote_first_sentence(prompt)

    rec = RecordingDouble()
    chunks = [NOTES.format(f"b{i}", 1900 + i) for i in range(3)]
    out = run_chunked_analysis(
        FnClient(reply), params(chunks, evidence="model"), recorder=rec, progress=NullProgress()
    )
    assert out.failures == [2]
    assert out.evidence[1] is None
    assert ("result", 2, 3, "error: context exceeded") in rec.events
    assert [r.id for r in out.records] == [1, 2]


def test_notes_and_numbers_are_in_chunk_order_when_calls_finish_out_of_order() -> None:
    n = 8

    def reply(prompt: str) -> str:
        found = part_of(prompt)
        assert found is not None
        time.sleep(0.005 * (n - found[0]))  # later chunks finish first
        return quote_first_sentence(prompt)

    client = FnClient(reply)
    rec = RecordingDouble()
    chunks = [NOTES.format(f"c{i}", 1900 + i) for i in range(n)]
    out = run_chunked_analysis(
        client, params(chunks, evidence="model"), recorder=rec, progress=NullProgress()
    )
    assert [e[1] for e in rec.events if e[0] == "result"] == list(range(1, n + 1))
    assert [(r.id, r.quote) for r in out.records] == [(i + 1, chunks[i]) for i in range(n)]
    assert 1 < client.max_in_flight <= 4


def test_concurrency_one_is_sequential() -> None:
    client = FnClient(lambda p: (time.sleep(0.002), records())[1])
    chunks = [NOTES.format("x", 1901)] * 6
    run_chunked_analysis(
        client, params(chunks, evidence="model", concurrency=1), progress=NullProgress()
    )
    assert client.max_in_flight == 1


def test_the_synthesis_is_checked_and_a_sentence_the_evidence_does_not_hold_is_removed() -> None:
    answer = (
        "The blue 1 ledger was rebound in 1901 [1]. "
        "The blue 2 ledger was rebound in 1902 [2]. "
        "It was rebound again in 1999 [1]. "
        "The red ledger burned [9]."
    )
    client = FnClient(lambda p: answer)
    rec = RecordingDouble()
    out = run_chunked_analysis(
        client, params([chunk(1), chunk(2)], answer="synthesis"), recorder=rec,
        progress=NullProgress(),
    )  # fmt: skip
    assert out.answer.kind == "synthesis"
    assert "1999" not in out.text and "red ledger" not in out.text
    assert "The blue 1 ledger was rebound in 1901 [1]." in out.text
    assert [c.id for c in out.answer.citations] == [1, 2]
    assert len(out.answer.unsupported) == 2
    assert any("'1999' is in none of the records it cites" in u for u in out.answer.unsupported)
    assert any("cites [9], which it was not given" in u for u in out.answer.unsupported)
    assert rec.events[-1] == ("synthesis", "LLAMA3", "ok", "synthesis")
    assert "2 sentences stating what the evidence they cite does not say were removed" in out.text


def test_a_synthesis_that_mostly_invents_gives_way_to_the_evidence() -> None:
    client = FnClient(lambda p: "It happened on 4 May 1066 [1]. Nobody knows why.")
    out = run_chunked_analysis(
        client, params([chunk(1)], answer="synthesis"), progress=NullProgress()
    )
    assert out.answer.kind == "evidence"
    assert "synthesis failed Harvey's check" in out.text
    assert "1066" not in out.text and NOTES.format("blue 1", 1901) in out.text


def test_a_failed_synthesis_call_is_raised_and_recorded() -> None:
    def reply(prompt: str) -> str:
        raise BackendError("server went away")

    rec = RecordingDouble()
    with pytest.raises(SynthesisError, match="server went away"):
        run_chunked_analysis(
            FnClient(reply), params([chunk(1)], answer="synthesis"), recorder=rec,
            progress=NullProgress(),
        )  # fmt: skip
    assert rec.events[-1] == ("synthesis", "LLAMA3", "error: server went away", "")


def test_the_synthesis_client_writes_the_answer_and_the_map_client_the_records() -> None:
    mapper = FnClient(quote_first_sentence)
    synth = FnClient(lambda p: "The blue 1 ledger was rebound in 1901 [1].", model="BIG")
    rec = RecordingDouble()
    out = run_chunked_analysis(
        mapper, params([NOTES.format("blue 1", 1901)], evidence="model", answer="synthesis"),
        recorder=rec,
        progress=NullProgress(), synthesis_client=synth,
    )  # fmt: skip
    assert len(mapper.prompts) == 1 and len(synth.prompts) == 1
    assert "Evidence quoted word for word from the source" in synth.prompts[0]
    assert rec.events[-1] == ("synthesis", "BIG", "ok", "synthesis")
    assert out.answer.kind == "synthesis"
    assert out.text.startswith("The blue 1 ledger was rebound in 1901 [1].")


def test_progress_lines_in_chunk_order() -> None:
    out = io.StringIO()
    run_chunked_analysis(FnClient(quote_first_sentence), params([chunk(1), chunk(2)]), progress=out)
    assert out.getvalue().splitlines()[:2] == ["Processing chunk 1/2…", "Processing chunk 2/2…"]


def test_cancel_stops_outstanding_calls_and_records_it() -> None:
    cancel = threading.Event()
    release = threading.Event()
    started = threading.Event()

    def reply(prompt: str) -> str:
        started.set()
        release.wait(5)  # a server that does not answer
        return records()

    client = FnClient(reply)
    rec = RecordingDouble()
    result: dict[str, BaseException] = {}

    def run() -> None:
        try:
            run_chunked_analysis(
                client,
                params([chunk(i) for i in range(20)], evidence="model", concurrency=2),
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
    assert rec.events[-1] == ("synthesis", "LLAMA3", "error: cancelled", "")
    assert 1 <= len(client.prompts) <= 2  # at most `concurrency` started; queued never did


def test_records_are_located_in_the_file_of_a_real_chunked_document() -> None:
    paragraphs = [f"Paragraph {i}. " + "words " * 40 for i in range(30)]
    paragraphs[17] = NOTES.format("green", 1917)
    text = "\n\n".join(paragraphs)
    chunks = chunk_document(text, ChunkConfig(chunk_size_bytes=1000), DocType.PROSE)
    p = params([c.text for c in chunks])
    p.chunks = chunks
    out = run_chunked_analysis(FnClient(lambda _p: ""), p, progress=NullProgress())
    assert [(r.quote, r.location.first_line) for r in out.records] == [
        (NOTES.format("green", 1917), 35)
    ]
    assert text.split("\n")[34] == NOTES.format("green", 1917)


def test_the_library_prints_plain_lines_even_on_a_terminal() -> None:
    """A live display is the front end's (``repl/progress.py``); a reporter it passes is used."""

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
        super().__init__(lambda prompt: "The blue 1 ledger was rebound in 1901 [1].")
        self.map_variant = FnClient(quote_first_sentence)

    def for_map_calls(self) -> LLMClient:
        return self.map_variant


def test_map_calls_go_to_the_variant_a_backend_offers_and_synthesis_does_not() -> None:
    client = MapVariantClient()
    chunks = [NOTES.format(f"b{i}", 1900 + i) for i in range(3)]
    run_chunked_analysis(
        client, params(chunks, evidence="model", answer="synthesis"), progress=NullProgress()
    )
    assert sorted(part_of(p) for p in client.map_variant.prompts) == [(1, 3), (2, 3), (3, 3)]
    assert [part_of(p) for p in client.prompts] == [None]  # only the synthesis


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


def test_when_every_map_call_fails_no_answer_is_made() -> None:
    def reply(prompt: str) -> str:
        if part_of(prompt) is not None:
            raise BackendError("the server fell over")
        return "an invented answer"

    client = FnClient(reply)
    rec = RecordingDouble()
    chunks = [NOTES.format(f"b{i}", 1900 + i) for i in range(3)]
    with pytest.raises(SynthesisError) as info:
        run_chunked_analysis(
            client, params(chunks, evidence="model", answer="synthesis"), recorder=rec,
            progress=NullProgress(),
        )  # fmt: skip
    assert str(info.value) == (
        "no synthesis: all 3 map calls failed (the first: the server fell over)"
    )
    assert all(part_of(p) is not None for p in client.prompts)  # no synthesis prompt
    assert rec.events[-1][:3] == ("synthesis", "LLAMA3", f"error: {info.value}")


class Stored:
    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self.rows.get(key)

    def put(self, key: str, model: str, text: str) -> None:
        self.rows[key] = text


def test_a_second_run_reuses_the_stored_records_and_makes_no_call() -> None:
    stored = Stored()
    chunks = [NOTES.format(f"b{i}", 1900 + i) for i in range(3)]
    first = FnClient(quote_first_sentence)
    one = run_chunked_analysis(
        first, params(chunks, evidence="model"), progress=NullProgress(), results=stored
    )
    assert len(first.prompts) == 3 and len(stored.rows) == 3
    assert all(ChunkEvidence.from_json(v) is not None for v in stored.rows.values())
    again = FnClient(lambda p: pytest.fail("a stored result was asked for again"))
    two = run_chunked_analysis(
        again, params(chunks, evidence="model"), progress=NullProgress(), results=stored
    )
    assert two.reused == 3 and two.text == one.text

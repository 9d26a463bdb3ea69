"""Whole-folder analysis: one map phase over every file's chunks, one answer from all of it."""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest

from harvey.analysis.folder_analysis import FolderRun, per_file_markdown
from harvey.analysis.folder_map import FileChunks
from harvey.analysis.progress import NullProgress, PlainProgress, make_progress
from harvey.chunks.chunking import ChunkConfig
from harvey.errors import Cancelled, SynthesisError, WorkspaceError
from harvey.session.records import ChunkFileNote
from tests.analysis.test_engine import FnClient, Stored
from tests.fakes.evidence import chunk_of, file_of, part_of, records

INSTRUCTION = "List every archivist's note."


def quote_notes(prompt: str) -> str:
    """A model that quotes every archivist's note of the chunk it is shown, and nothing else."""
    chunk = chunk_of(prompt) or ""
    return records(*(line for line in chunk.splitlines() if line.startswith("Archivist")))


def note(tag: str) -> str:
    return f"Archivist's note: the {tag} ledger was rebound."


class Recording:
    """The recorder protocol, keeping every note in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def record_chunk_analysis_start(self, *args: Any, **kw: Any) -> None:
        self.events.append(("start", *args, kw))

    def record_chunk_result(self, i: int, n: int, status: str) -> None:
        self.events.append(("result", i, n, status))

    def record_chunk_evidence(self, i: int, n: int, kept: Any, dropped: Any) -> None:
        self.events.append(("evidence", i, [(r.id, r.location.path) for r in kept]))

    def record_chunk_served(self, served: int, endpoints: int) -> None:
        self.events.append(("served", served, endpoints))

    def record_chunk_file(self, note: ChunkFileNote) -> None:
        self.events.append(("file", note))

    def record_answer(self, answer: Any) -> None:
        self.events.append(("answer", [c.id for c in answer.citations]))

    def record_chunk_synthesis(
        self, model: str, status: str, levels: int = 1, answer: str = ""
    ) -> None:
        self.events.append(("synthesis", model, status, answer))


def files() -> list[FileChunks]:
    return [
        FileChunks("a.md", [note("a1"), note("a2")], 2, "paragraph", 1000),
        FileChunks("b.py", ["x = 1  # see the notes"], 1, "source", 800),
        FileChunks("c.md", iter([note("c1"), "Plain text.", note("c3")]), 3, "paragraph", 1000),
    ]


def run(client: Any, **kw: Any) -> FolderRun:
    kw.setdefault("config", ChunkConfig(concurrency=2))
    return FolderRun(client=client, instruction=INSTRUCTION, model="M", label="docs/", **kw)


def test_one_map_phase_then_one_answer_from_every_files_records() -> None:
    client = FnClient(quote_notes)
    rec = Recording()
    result = run(client, recorder=rec, evidence="model").run(files(), NullProgress())
    called = sorted((file_of(p), part_of(p)) for p in client.prompts)
    assert called == [
        ("a.md", (1, 2)),
        ("a.md", (2, 2)),
        ("b.py", (1, 1)),
        ("c.md", (1, 3)),
        ("c.md", (3, 3)),
    ]  # fmt: skip  (c.md's plain chunk holds no word of the instruction: skipped, no call)
    assert [(a.name, a.first, a.last, [r.quote for r in a.records]) for a in result.files] == [
        ("a.md", 1, 2, [note("a1"), note("a2")]),
        ("b.py", 3, 3, []),
        ("c.md", 4, 6, [note("c1"), note("c3")]),
    ]
    assert [c.id for c in result.answer.citations] == [1, 2, 3, 4]
    assert [c.location.path for c in result.answer.citations] == ["a.md", "a.md", "c.md", "c.md"]
    assert "Harvey: from a.md" in result.text and "Harvey: from c.md" in result.text
    kinds = [e[0] for e in rec.events]
    assert kinds[0] == "start" and kinds[-2:] == ["answer", "synthesis"]
    assert kinds.count("result") == 6 and kinds.count("file") == 3
    assert rec.events[0][1:6] == ("docs/", 6, "M", "mixed", 1000)
    assert rec.events[0][-1] == {"files": 3}
    assert ("result", 5, 6, "skipped: nothing here for the instruction") in rec.events
    assert ChunkFileNote("b.py", 3, 3, "source", 800, 0, "ok") in [e[1] for e in rec.events]
    assert rec.events[-1] == ("synthesis", "M", "ok", "evidence")


def test_per_file_markdown() -> None:
    result = run(FnClient(quote_notes)).run(files(), NullProgress())
    text = per_file_markdown(result)
    assert text.startswith(f"## a.md\n\n- {note('a1')} [1]\n- {note('a2')} [2]\n\n## b.py\n\n")
    assert "nothing in b.py answers the instruction" in text
    assert "## Overall\n\n" in text and text.rstrip().endswith("[4] c.md:L1")


def test_failed_chunks_are_counted_per_file_and_do_not_stop_the_run() -> None:
    def flaky(prompt: str) -> str:
        if part_of(prompt) == (2, 2) or file_of(prompt) == "b.py":
            raise WorkspaceError("boom")
        return quote_notes(prompt)

    rec = Recording()
    result = run(FnClient(flaky), recorder=rec, evidence="model").run(files(), NullProgress())
    assert result.failures == [2, 3]
    a, b, c = result.files
    assert a.failures == [2] and a.status == "ok"
    assert b.status == "error: every chunk failed" and b.text.startswith("[b.py: every chunk")
    assert c.failures == [] and [r.quote for r in c.records] == [note("c1"), note("c3")]
    notes = [e[1] for e in rec.events if e[0] == "file"]
    assert [(n.failed, n.status) for n in notes] == [
        (1, "ok"),
        (1, "error: every chunk failed"),
        (0, "ok"),
    ]


def test_a_failed_synthesis_raises_and_is_noted() -> None:
    def bad(prompt: str) -> str:
        if part_of(prompt) is None:
            raise WorkspaceError("server gone")
        return quote_notes(prompt)

    rec = Recording()
    with pytest.raises(SynthesisError):
        run(FnClient(bad), recorder=rec, answer="synthesis").run(files(), NullProgress())
    assert rec.events[-1] == ("synthesis", "M", "error: server gone", "")


def test_a_second_run_reuses_every_stored_map_result() -> None:
    cache = Stored()
    first = FnClient(quote_notes)
    one = run(first, results=cache, evidence="model").run(files(), NullProgress())
    assert len(cache.rows) == 5
    again = FnClient(lambda p: pytest.fail("asked again"))
    result = run(again, results=cache, evidence="model").run(files(), NullProgress())
    assert result.reused == 5 and result.text == one.text


def test_adding_a_file_keeps_the_other_files_results() -> None:
    cache = Stored()
    run(FnClient(quote_notes), results=cache, evidence="model").run(files(), NullProgress())
    more = [FileChunks("0.md", [note("z")], 1, "paragraph", 1000), *files()]
    again = FnClient(quote_notes)
    result = run(again, results=cache, evidence="model").run(more, NullProgress())
    assert result.reused == 5 and len(again.prompts) == 1  # only the new file's chunk


def test_a_file_that_changes_between_count_and_map_stops_the_run() -> None:
    changed = [FileChunks("a.md", [note("1"), note("2"), note("3")], 2, "paragraph", 1000)]
    rec = Recording()
    with pytest.raises(WorkspaceError, match=r"a\.md changed"):
        run(FnClient(quote_notes), recorder=rec).run(changed, NullProgress())
    assert rec.events[-1][0] == "synthesis" and rec.events[-1][2].startswith("error: a.md")


def test_cancel_stops_the_run() -> None:
    cancel = threading.Event()

    def stop(prompt: str) -> str:
        cancel.set()
        return quote_notes(prompt)

    rec = Recording()
    with pytest.raises(Cancelled):
        run(FnClient(stop), recorder=rec, cancel=cancel, evidence="model").run(
            files(), NullProgress()
        )
    assert rec.events[-1] == ("synthesis", "M", "error: cancelled", "")


def test_plain_progress_counts_files() -> None:
    out = io.StringIO()
    run(FnClient(quote_notes), config=ChunkConfig(concurrency=1)).run(files(), PlainProgress(out))
    lines = out.getvalue().splitlines()
    assert "Processing chunk 6/6…" in lines
    assert [line for line in lines if line.startswith("File ")] == [
        "File 1/3 done: a.md",
        "File 2/3 done: b.py",
        "File 3/3 done: c.md",
    ]


class PoolDouble(FnClient):
    """A client that says it is a pool of three endpoints, of which two complete calls."""

    def __init__(self) -> None:
        super().__init__(quote_notes)
        self.served = [0, 0, 0]
        self.total_capacity = 2

    def stats(self) -> list[Any]:
        from harvey.llm.pool import EndpointStats

        return [EndpointStats(f"u{i}", "ok", 1, 0, n, None) for i, n in enumerate(self.served)]

    def stream_chat(self, messages: Any, tools: Any = None, **kw: Any) -> Any:
        with self.lock:
            self.served[len(self.prompts) % 2] += 1
        return super().stream_chat(messages, tools, **kw)


def test_the_served_note_counts_endpoints_that_completed_calls() -> None:
    rec = Recording()
    run(PoolDouble(), recorder=rec, evidence="model").run(files(), NullProgress())
    assert ("served", 2, 3) in rec.events
    assert rec.events[0][-1] == {"endpoints": 3, "files": 3}


def test_the_rich_bar_shows_files_done_for_a_folder_only() -> None:
    from harvey.repl.progress import progress_for

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    folder, single = Tty(), Tty()
    run(FnClient(quote_notes)).run(files(), make_progress(progress_for(folder)))
    bar = progress_for(single)
    bar.start(2)
    bar.chunk_finished(1, 2, None)
    bar.close()
    assert "3/3 files" in folder.getvalue()
    assert "files" not in single.getvalue()

"""Whole-folder analysis: one map phase over every file, per-file then overall synthesis."""

from __future__ import annotations

import io
import re
import threading
from typing import Any

import pytest

from harvey.analysis.chunking import ChunkConfig
from harvey.analysis.engine import reduce_prompt
from harvey.analysis.folder_analysis import FolderRun, file_instruction, per_file_markdown
from harvey.analysis.folder_map import FileChunks, file_map_prompt
from harvey.analysis.progress import NullProgress, PlainProgress, make_progress
from harvey.errors import Cancelled, SynthesisError, WorkspaceError
from harvey.session.records import ChunkFileNote
from tests.analysis.test_engine import FnClient

FILE_RE = re.compile(r"File (\S+), chunk (\d+) of (\d+):\n(.*)", re.S)
INSTRUCTION = "Summarise."


class Recording:
    """The recorder protocol, keeping every note in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def record_chunk_analysis_start(self, *args: Any, **kw: Any) -> None:
        self.events.append(("start", *args, kw))

    def record_chunk_result(self, i: int, n: int, status: str) -> None:
        self.events.append(("result", i, n, status))

    def record_chunk_served(self, served: int, endpoints: int) -> None:
        self.events.append(("served", served, endpoints))

    def record_chunk_file(self, note: ChunkFileNote) -> None:
        self.events.append(("file", note))

    def record_chunk_synthesis(self, model: str, status: str, levels: int = 1) -> None:
        self.events.append(("synthesis", model, status, levels))


class DictCache:
    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self.rows.get(key)

    def put(self, key: str, model: str, text: str) -> None:
        self.rows[key] = text


def reply(prompt: str) -> str:
    """A map call answers ``map:FILE:i``, a file synthesis ``file:FILE``, the overall ``all``."""
    m = FILE_RE.search(prompt)
    if m:
        return f"map:{m.group(1)}:{m.group(2)}"
    if "(The sections below are parts of the file " in prompt:
        return "file:" + prompt.split("parts of the file ", 1)[1].split(".)", 1)[0]
    return "all"


def files() -> list[FileChunks]:
    return [
        FileChunks("a.md", ["a1", "a2"], 2, "paragraph", 1000),
        FileChunks("b.py", ["b1"], 1, "source", 800),
        FileChunks("c.md", iter(["c1", "c2", "c3"]), 3, "paragraph", 1000),
    ]


def run(client: Any, **kw: Any) -> FolderRun:
    kw.setdefault("config", ChunkConfig(concurrency=2))
    return FolderRun(client=client, instruction=INSTRUCTION, model="M", label="docs/", **kw)


def test_one_map_phase_then_each_file_then_the_files() -> None:
    client = FnClient(reply)
    rec = Recording()
    result = run(client, recorder=rec).run(files(), NullProgress())
    maps = sorted(p for p in client.prompts if FILE_RE.search(p))
    assert maps == sorted(
        file_map_prompt(INSTRUCTION, name, i, n, f"{name[0]}{i}")
        for name, n in (("a.md", 2), ("b.py", 1), ("c.md", 3))
        for i in range(1, n + 1)
    )
    # a file of one chunk is its map result; the others are synthesised
    assert [(a.name, a.text, a.first, a.last) for a in result.files] == [
        ("a.md", "file:a.md", 1, 2),
        ("b.py", "map:b.py:1", 3, 3),
        ("c.md", "file:c.md", 4, 6),
    ]
    assert reduce_prompt(file_instruction(INSTRUCTION, "a.md"), ["map:a.md:1", "map:a.md:2"]) in (
        client.prompts
    )
    sections = ["File a.md:\nfile:a.md", "File b.py:\nmap:b.py:1", "File c.md:\nfile:c.md"]
    assert client.prompts[-1] == reduce_prompt(INSTRUCTION, sections)
    assert result.text == "all" and len(client.prompts) == 6 + 2 + 1
    kinds = [e[0] for e in rec.events]
    assert kinds == ["start", *["result"] * 6, "file", "file", "file", "synthesis"]
    assert rec.events[0][1:6] == ("docs/", 6, "M", "mixed", 1000)
    assert rec.events[0][-1] == {"files": 3}
    assert [e[1:] for e in rec.events[1:7]] == [(i, 6, "ok") for i in range(1, 7)]
    assert rec.events[8][1] == ChunkFileNote("b.py", 3, 3, "source", 800, 0, "ok")
    assert rec.events[-1] == ("synthesis", "M", "ok", 1)


def test_per_file_markdown() -> None:
    result = run(FnClient(reply)).run(files(), NullProgress())
    assert per_file_markdown(result) == (
        "## a.md\n\nfile:a.md\n\n## b.py\n\nmap:b.py:1\n\n## c.md\n\nfile:c.md\n\n"
        "## Overall\n\nall\n"
    )


def test_failed_chunks_are_counted_per_file_and_do_not_stop_the_run() -> None:
    def flaky(prompt: str) -> str:
        if "chunk 2 of 2" in prompt or "b.py, chunk 1" in prompt:
            raise WorkspaceError("boom")
        return reply(prompt)

    rec = Recording()
    result = run(FnClient(flaky), recorder=rec).run(files(), NullProgress())
    assert result.failures == [2, 3]
    a, b, c = result.files
    assert a.failures == [2] and a.status == "ok"
    assert b.status == "error: every chunk failed" and b.text.startswith("[b.py: every chunk")
    assert c.failures == [] and result.text == "all"
    notes = [e[1] for e in rec.events if e[0] == "file"]
    assert [(n.failed, n.status) for n in notes] == [
        (1, "ok"),
        (1, "error: every chunk failed"),
        (0, "ok"),
    ]


def test_a_failed_file_synthesis_is_recorded_and_the_rest_goes_on() -> None:
    def bad_a(prompt: str) -> str:
        if "parts of the file a.md" in prompt:
            raise WorkspaceError("no room")
        return reply(prompt)

    rec = Recording()
    result = run(FnClient(bad_a), recorder=rec).run(files(), NullProgress())
    assert result.files[0].status == "error: no room"
    assert result.files[0].text == "[a.md: synthesis failed: no room]"
    assert result.text == "all"
    assert rec.events[-1] == ("synthesis", "M", "ok", 1)


def test_overall_synthesis_failure_raises_and_is_noted() -> None:
    def bad_all(prompt: str) -> str:
        if reply(prompt) == "all":
            raise WorkspaceError("server gone")
        return reply(prompt)

    rec = Recording()
    with pytest.raises(SynthesisError):
        run(FnClient(bad_all), recorder=rec).run(files(), NullProgress())
    assert rec.events[-1] == ("synthesis", "M", "error: server gone", 1)


def test_a_second_run_reuses_map_results_and_file_syntheses() -> None:
    cache = DictCache()
    first = FnClient(reply)
    run(first, results=cache).run(files(), NullProgress())
    assert len(cache.rows) == 6 + 2  # every map result and both file syntheses
    again = FnClient(reply)
    result = run(again, results=cache).run(files(), NullProgress())
    assert (result.reused, result.reused_files) == (6, 2)
    assert len(again.prompts) == 1 and result.text == "all"  # only the overall synthesis


def test_adding_a_file_keeps_the_other_files_results() -> None:
    cache = DictCache()
    run(FnClient(reply), results=cache).run(files(), NullProgress())
    more = [FileChunks("0.md", ["z"], 1, "paragraph", 1000), *files()]
    again = FnClient(reply)
    result = run(again, results=cache).run(more, NullProgress())
    assert result.reused == 6 and len(again.prompts) == 2  # the new file's chunk, the overall


def test_many_files_reduce_hierarchically() -> None:
    many = [FileChunks(f"f{i:03}.md", [f"t{i}"], 1, "paragraph", 1000) for i in range(60)]

    def long_reply(prompt: str) -> str:
        return reply(prompt) + " " + "x" * 300 if FILE_RE.search(prompt) else "short"

    result = run(FnClient(long_reply), context_window=2048).run(many, NullProgress())
    assert result.levels >= 2 and result.text == "short"


def test_a_file_that_changes_between_count_and_map_stops_the_run() -> None:
    changed = [FileChunks("a.md", ["a1", "a2", "a3"], 2, "paragraph", 1000)]
    rec = Recording()
    with pytest.raises(WorkspaceError, match=r"a\.md changed"):
        run(FnClient(reply), recorder=rec).run(changed, NullProgress())
    assert rec.events[-1][0] == "synthesis" and rec.events[-1][2].startswith("error: a.md")


def test_cancel_stops_the_run() -> None:
    cancel = threading.Event()

    def stop(prompt: str) -> str:
        cancel.set()
        return reply(prompt)

    rec = Recording()
    with pytest.raises(Cancelled):
        run(FnClient(stop), recorder=rec, cancel=cancel).run(files(), NullProgress())
    assert rec.events[-1] == ("synthesis", "M", "error: cancelled", 1)


def test_plain_progress_counts_files() -> None:
    out = io.StringIO()
    run(FnClient(reply), config=ChunkConfig(concurrency=1)).run(files(), PlainProgress(out))
    lines = out.getvalue().splitlines()
    assert "Processing chunk 6/6…" in lines
    assert [line for line in lines if line.startswith("File ")] == [
        "File 1/3 done: a.md",
        "File 2/3 done: b.py",
        "File 3/3 done: c.md",
    ]
    assert "Synthesizing 2 files…" in lines and "Synthesizing 3 partial results…" in lines


class PoolDouble(FnClient):
    """A client that says it is a pool of three endpoints, of which two complete calls."""

    def __init__(self) -> None:
        super().__init__(reply)
        self.served = [0, 0, 0]
        self.total_capacity = 2

    def stats(self) -> list[Any]:
        from harvey.llm.pool import EndpointStats

        return [EndpointStats(f"u{i}", "ok", 1, 0, n, None) for i, n in enumerate(self.served)]

    def stream_chat(self, messages: Any, tools: Any = None) -> Any:
        with self.lock:
            self.served[len(self.prompts) % 2] += 1
        return super().stream_chat(messages, tools)


def test_the_served_note_counts_endpoints_that_completed_calls() -> None:
    rec = Recording()
    run(PoolDouble(), recorder=rec).run(files(), NullProgress())
    assert ("served", 2, 3) in rec.events
    assert rec.events[0][-1] == {"endpoints": 3, "files": 3}


def test_the_rich_bar_shows_files_done_for_a_folder_only() -> None:
    from harvey.cli.progress import progress_for

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    folder, single = Tty(), Tty()
    run(FnClient(reply)).run(files(), make_progress(progress_for(folder)))
    bar = progress_for(single)
    bar.start(2)
    bar.chunk_finished(1, 2, None)
    bar.close()
    assert "3/3 files" in folder.getvalue() and "Synthesizing" in folder.getvalue()
    assert "files" not in single.getvalue()

"""``harvey analyze`` against servers with bad manners: empty replies, streams cut off,
every map call failing. An empty or cut-off answer is never stored as a result."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.evidence import part_of, records
from tests.fakes.quoting import ANSWER
from tests.fakes.servers import FakeOpenAI, Interrupted, Reply

from .conftest import Run

DOC = "\n\n".join(f"Paragraph {i}. " + "Some words here. " * 40 for i in range(4))
ONE = "Paragraph 0. Some words here."  # in chunk 1
THREE = "Paragraph 3. Some words here."  # in chunk 2


def analyze(harvey: Run, srv: FakeOpenAI) -> object:
    return harvey(
        "analyze",
        "doc.md",
        "-i",
        "Summarise",
        "--backend",
        "openai",
        "--base-url",
        srv.url,
        "--chunk-size",
        "2000",
        "--concurrency",
        "1",
    )


def maps_and_syntheses(srv: FakeOpenAI) -> tuple[list[str], list[str]]:
    prompts = [r["messages"][-1]["content"] for r in srv.chat_requests]
    maps = [p for p in prompts if part_of(p)]
    return maps, [p for p in prompts if p not in maps]


def spmd(workspace: Path) -> str:
    return next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()


def test_an_empty_map_reply_is_asked_again_and_never_stored(harvey: Run, workspace: Path) -> None:
    (workspace / "doc.md").write_text(DOC)
    replies = [Reply(""), records(ONE), records(THREE), ANSWER]
    with FakeOpenAI(replies) as srv:
        proc = analyze(harvey, srv)
        maps, syntheses = maps_and_syntheses(srv)
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    assert proc.stdout.startswith(ANSWER)  # type: ignore[attr-defined]
    assert len(maps) == 3 and maps[0] == maps[1]  # chunk 1 asked twice
    assert f"[1] (doc.md:L1) {ONE}" in syntheses[0] and f"[2] (doc.md:L7) {THREE}" in syntheses[0]
    assert "[[chunk-result: 1/2 — ok, 1 quote]]" in spmd(workspace)


def test_a_map_reply_cut_off_twice_is_recorded_as_an_error(harvey: Run, workspace: Path) -> None:
    (workspace / "doc.md").write_text(DOC)
    replies = [Interrupted("The main"), Interrupted(""), records(THREE), ANSWER]
    with FakeOpenAI(replies) as srv:
        proc = analyze(harvey, srv)
        _maps, syntheses = maps_and_syntheses(srv)
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    assert f"[1] (doc.md:L7) {THREE}" in syntheses[0] and ONE not in syntheses[0]
    assert "[[chunk-result: 1/2 — error: stream ended early, before any reply from fake-model" in (
        spmd(workspace)
    )


def test_when_every_map_call_failed_there_is_no_synthesis(harvey: Run, workspace: Path) -> None:
    (workspace / "doc.md").write_text(DOC)
    with FakeOpenAI([], default_reply=Reply("")) as srv:
        proc = analyze(harvey, srv)
        maps, syntheses = maps_and_syntheses(srv)
    assert proc.returncode == 1  # type: ignore[attr-defined]
    last = proc.stderr.splitlines()[-1]  # type: ignore[attr-defined]
    assert last.startswith("harvey: no synthesis: all 2 map calls failed (the first: empty reply")
    assert "Traceback" not in proc.stderr and proc.stdout == ""  # type: ignore[attr-defined]
    assert len(maps) == 4 and syntheses == []  # each chunk asked twice, nothing synthesised
    recording = spmd(workspace)
    assert "[[chunk-result: 2/2 — error: empty reply" in recording
    assert "— error: no synthesis: all 2 map calls failed" in recording

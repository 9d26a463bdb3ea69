"""One skip list for every walk (issue 39, point 6): ``search_files``, ``list_files``, the
workspace walk (knowledge ingest, folder analysis) leave out the same folders, and
``search_files`` never answers from Harvey's own recordings."""

from __future__ import annotations

import pytest

from harvey.analysis.folder_reads import collect_files
from harvey.knowledge.ingest import collect as ingest_collect
from harvey.llm.scripted import Reply
from harvey.messages import ToolCall
from harvey.tools.files import ListFilesTool
from harvey.tools.registry import ToolContext, ToolRegistry
from harvey.tools.search import SearchFilesTool
from harvey.workspace.files import walk_files
from harvey.workspace.skipped import SKIPPED_DIRS
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import invoke_harvey


def run(ctx: ToolContext, name: str, **args: object) -> str:
    registry = ToolRegistry([ListFilesTool(), SearchFilesTool()])
    return registry.execute(ctx, ToolCall("c1", name, dict(args))).content


def test_search_files_never_answers_from_a_session_recording(ctx: ToolContext) -> None:
    ws = ctx.workspace
    (ws / "sockets.md").write_text("# Sockets\nA socket is an endpoint.\n")
    with FakeOpenAI([Reply("It is about sockets.")]) as srv:  # a real recording of a turn
        proc = invoke_harvey(
            "run", "Summarise sockets.md", "--backend", "openai", "--base-url", srv.url, cwd=ws
        )
    assert proc.returncode == 0, proc.stderr
    (recording,) = (ws / ".harvey" / "sessions").glob("*.spmd")
    assert "Summarise sockets.md" in recording.read_text()
    found = run(ctx, "search_files", pattern="[Ss]ockets")
    assert found.splitlines() == ["sockets.md:1: # Sockets"]
    asked = run(ctx, "search_files", pattern="Summarise", path=".harvey/sessions")
    assert asked.startswith("error: .harvey/ holds Harvey's own files")
    assert "Summarise" not in asked


@pytest.mark.parametrize("folder", [*sorted(SKIPPED_DIRS), "env-with-pyvenv-cfg"])
def test_every_walk_leaves_out_the_same_folders(ctx: ToolContext, folder: str) -> None:
    ws = ctx.workspace
    (ws / folder / "pkg").mkdir(parents=True)
    (ws / folder / "pkg" / "inside.txt").write_text("needle inside\n")
    if folder.startswith("env-"):
        (ws / folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (ws / "outside.txt").write_text("needle outside\n")
    assert run(ctx, "search_files", pattern="needle").splitlines() == [
        "outside.txt:1: needle outside"
    ]
    listing = run(ctx, "list_files", depth=3)
    assert f"  {folder}/" in listing.splitlines()  # named, so the model knows it is there
    assert "pkg/" not in listing  # but never entered
    walked = [p.relative_to(ws).as_posix() for p in walk_files(ws, ws)]
    assert walked == ["outside.txt"]
    ingested, _ = ingest_collect(ws, ["."])  # harvey rag ingest
    assert [p.relative_to(ws).as_posix() for p in ingested] == ["outside.txt"]
    analysed = collect_files(ws, [ws]).files  # harvey analyze FOLDER
    assert [p.relative_to(ws).as_posix() for p in analysed] == ["outside.txt"]

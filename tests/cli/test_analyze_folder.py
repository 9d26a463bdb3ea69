"""``harvey analyze PATH...``: folders and several files through the real CLI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from tests.cli.conftest import Run, assert_one_line_error
from tests.fakes.evidence import file_of, part_of
from tests.fakes.quoting import ANSWER, QuotingOpenAI
from tests.fakes.servers import FakeOpenAI

BACKEND = ("--backend", "openai", "--base-url", "http://127.0.0.1:9/v1")


def _tree(workspace: Path) -> None:
    docs = workspace / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("Alpha.\n\n" + "Words about alpha. " * 100)
    (docs / "sub" / "b.py").write_text("def b():\n    return 2\n")
    (docs / "blob.bin").write_bytes(b"\x00\x01\x02" * 50)
    (docs / "empty.txt").write_text("")
    (docs / "skip.log").write_text("ignored by .gitignore\n")
    (docs / "node_modules").mkdir()
    (docs / "node_modules" / "dep.js").write_text("never read\n")
    (workspace / ".gitignore").write_text("*.log\n")


def _nothing_written(workspace: Path) -> None:
    assert not (workspace / ".harvey").exists()
    assert not (Path(os.environ["HARVEY_HOME"]) / "sessions.db").exists()


def test_a_folder_prints_per_file_sections_and_the_overall_answer(
    harvey: Run, workspace: Path
) -> None:
    _tree(workspace)
    with QuotingOpenAI() as srv:
        proc = harvey(
            "analyze", "docs", "-i", "Summarise", "--backend", "openai", "--base-url", srv.url,
            "--per-file", "--chunk-size", "1000", "--yes",
        )  # fmt: skip
        prompts = [r["messages"][-1]["content"] for r in srv.chat_requests]
    assert proc.returncode == 0, proc.stderr
    sections = [line for line in proc.stdout.splitlines() if line.startswith("## ")]
    assert sections == ["## docs/a.md", "## docs/sub/b.py", "## Overall"]
    assert "- Alpha. Words about alpha. [1]" in proc.stdout  # a.md's first quote, cited
    assert f"## Overall\n\n{ANSWER}" in proc.stdout
    assert "skipped 2 files: docs/blob.bin (binary), docs/empty.txt (empty)" in proc.stderr
    named = {file_of(p) for p in prompts if part_of(p)}
    assert named == {"docs/a.md", "docs/sub/b.py"}  # never node_modules/ or *.log
    assert "/2 done: docs/sub/b.py" in proc.stderr
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert spmd.count("INT. CHUNK ANALYSIS") == 1
    assert "INT. CHUNK ANALYSIS — docs/ " in spmd and "files=2, chunks=" in spmd
    assert "[[chunk-file: docs/sub/b.py — chunks=" in spmd


def test_include_exclude_and_several_paths(harvey: Run, workspace: Path) -> None:
    _tree(workspace)
    (workspace / "top.md").write_text("Top level.\n")
    with QuotingOpenAI() as srv:
        proc = harvey(
            "analyze", "docs", "top.md", "-i", "Summarise", "--backend", "openai",
            "--base-url", srv.url, "--include", "*.md", "--include", "*.py",
            "--exclude", "sub/*", "--exclude", "docs/sub/*",
        )  # fmt: skip
        prompts = [r["messages"][-1]["content"] for r in srv.chat_requests]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(ANSWER)
    maps = sorted((file_of(p), part_of(p)) for p in prompts if part_of(p))
    assert maps == [("docs/a.md", (1, 1)), ("top.md", (1, 1))]
    assert "docs/ top.md" in next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()


def test_more_chunks_than_max_chunks_needs_yes(harvey: Run, workspace: Path) -> None:
    _tree(workspace)
    with FakeOpenAI([], default_reply=Reply("r")) as srv:
        args = ("--backend", "openai", "--base-url", srv.url, "--max-chunks", "1")
        proc = harvey("analyze", "docs", "-i", "x", *args)
    assert proc.returncode == 1 and proc.stdout == ""
    assert srv.chat_requests == []  # asked before one call
    assert "the files make more chunks than --max-chunks" in proc.stderr


def _bad(kind: str, ws: Path) -> list[str]:
    """Make the workspace for one kind of bad input; returns the PATH arguments."""
    if kind in ("empty", "binary", "ignored", "globs", "missing", "long-name"):
        (ws / "d").mkdir()
    if kind == "binary":
        (ws / "d" / "x.bin").write_bytes(b"\0" * 9)
    if kind == "ignored":
        (ws / "d" / "a.log").write_text("x")
        (ws / ".gitignore").write_text("*.log\n")
    if kind == "globs":
        (ws / "d" / "a.md").write_text("hi")
        return ["d", "--include", "*.rst"]
    if kind == "missing":
        return ["d", "missing.md"]
    if kind == "long-name":
        return ["d", "n" * 300 + ".md"]
    if kind == "outside":
        return ["/etc", "x"]
    if kind == "one-file":
        (ws / "a.md").write_text("hi")
        return ["a.md", "--per-file"]
    return ["d"]


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ("empty", "d: no files to analyse"),
        ("binary", "no readable text files to analyse (1 binary)"),
        ("ignored", "d: no files to analyse"),
        ("missing", "missing.md: no such file or folder"),
        ("long-name", "file name too long"),
        ("outside", "outside the workspace"),
        ("globs", "--include/--exclude matched none of the 1 files in d"),
        ("one-file", "--per-file are for folders and several files"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    harvey: Run, workspace: Path, kind: str, needle: str
) -> None:
    proc = harvey("analyze", *_bad(kind, workspace), "-i", "x", *BACKEND)
    assert_one_line_error(proc, 2, needle)
    _nothing_written(workspace)


def test_one_file_is_analysed_as_before(harvey: Run, workspace: Path) -> None:
    (workspace / "doc.md").write_text("One paragraph of words.\n\nAnother.\n")
    with QuotingOpenAI() as srv:
        args = ("--backend", "openai", "--base-url", srv.url)
        proc = harvey("analyze", "doc.md", "-i", "Summarise", *args)
        prompts = [r["messages"][-1]["content"] for r in srv.chat_requests]
    assert proc.returncode == 0 and proc.stdout.startswith(ANSWER), proc.stderr
    assert prompts[0].endswith("Text:\nOne paragraph of words.\n\nAnother.\n")
    assert part_of(prompts[0]) == (1, 1) and file_of(prompts[0]) == "doc.md"
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert "files=" not in spmd and "chunk-file" not in spmd

"""Resource bounds of the file tools: no FIFO opened, no backtracking without end, no
read that grows with the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harvey.messages import ToolCall
from harvey.tools.files import MAX_READ_BYTES, ReadFileTool
from harvey.tools.registry import ToolContext, ToolRegistry
from harvey.tools.search import SearchFilesTool
from harvey.workspace.files import open_regular

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")


def run(ctx: ToolContext, name: str, search: SearchFilesTool | None = None, **args: object) -> str:
    registry = ToolRegistry([ReadFileTool(), search or SearchFilesTool()])
    return registry.execute(ctx, ToolCall("c1", name, dict(args))).content


@needs_fifo
def test_search_skips_a_fifo_in_the_tree(ctx: ToolContext) -> None:
    os.mkfifo(ctx.workspace / "pipe.txt")
    (ctx.workspace / "a.txt").write_text("needle here\n")
    # Opening the FIFO would block this test forever; the match proves the search went on.
    assert run(ctx, "search_files", pattern="needle") == "a.txt:1: needle here"


@needs_fifo
def test_search_of_a_fifo_by_name_is_an_error(ctx: ToolContext) -> None:
    os.mkfifo(ctx.workspace / "pipe")
    result = run(ctx, "search_files", pattern="x", path="pipe")
    assert result == "error: pipe is a named pipe (FIFO); search_files reads regular files"


@needs_fifo
def test_read_file_refuses_a_fifo(ctx: ToolContext) -> None:
    os.mkfifo(ctx.workspace / "pipe")
    result = run(ctx, "read_file", path="pipe", limit=0)
    assert result.startswith("error: pipe is a named pipe (FIFO), not a regular file")


@needs_fifo
def test_open_regular_never_opens_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(Exception, match=r"named pipe \(FIFO\), not a regular file"):
        open_regular(tmp_path / "pipe")


def test_open_regular_refuses_a_symlink_swapped_in(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OSError):  # O_NOFOLLOW: the caller resolved the path, a link is a swap
        open_regular(tmp_path / "link")


def test_catastrophic_pattern_on_a_short_line_ends(ctx: ToolContext) -> None:
    """The probe's (a+)+$ on a 28-character line took 33 s with ``re``."""
    (ctx.workspace / "a.txt").write_text("a" * 28 + "!\n")
    result = run(ctx, "search_files", pattern="(a+)+$")
    assert result == "no matches for '(a+)+$'" or result.startswith("error: the search for")


def test_search_over_its_deadline_is_an_error_naming_the_pattern(ctx: ToolContext) -> None:
    # (a|aa)+$ backtracks exponentially in every backtracking engine: against 100 a's it
    # would run for longer than the universe; the deadline stops it.
    (ctx.workspace / "a.txt").write_text("a" * 100 + "!\n")
    result = run(ctx, "search_files", SearchFilesTool(deadline_seconds=0.2), pattern="(a|aa)+$")
    assert result.startswith("error: the search for '(a|aa)+$' was stopped after 0.2 s")
    assert "simpler pattern" in result


def test_search_does_not_follow_a_symlinked_folder_out(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("password=hunter2\n")
    (ctx.workspace / "link").symlink_to(outside, target_is_directory=True)
    assert run(ctx, "search_files", pattern="password") == "no matches for 'password'"


def test_search_skips_files_over_the_cap_without_reading(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = ctx.workspace / "big.txt"
    with big.open("wb") as f:  # sparse: 6 MB that cost nothing to write
        f.seek(6 * 1024 * 1024)
        f.write(b"needle\n")
    (ctx.workspace / "small.txt").write_text("needle\n")
    opened: list[str] = []
    real = os.open

    def spy(path: object, *args: object, **kwargs: object) -> int:
        opened.append(os.fspath(path))  # type: ignore[arg-type]
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    assert run(ctx, "search_files", pattern="needle") == "small.txt:1: needle"
    assert not any(p.endswith("big.txt") for p in opened)


def test_whole_file_read_without_the_guard_is_capped(ctx: ToolContext) -> None:
    """chunking disabled (no read budget): limit=0 must not read gigabytes into memory."""
    size = MAX_READ_BYTES * 3
    (ctx.workspace / "big.txt").write_bytes(b"x" * (size - 1) + b"\n")
    assert ctx.read_budget is None
    result = run(ctx, "read_file", path="big.txt", limit=0)
    body, _, note = result.rpartition("\n\n")
    assert len(body) == MAX_READ_BYTES
    assert f"showing bytes 0-{MAX_READ_BYTES} of {size}" in note
    assert f"use offset={MAX_READ_BYTES}" in note
    assert f"at most {MAX_READ_BYTES:,} bytes" in note


def test_a_name_too_long_for_the_file_system_is_one_error(ctx: ToolContext) -> None:
    for tool in ("read_file", "search_files"):
        args = {"path": "n" * 300 + ".txt"} | ({"pattern": "x"} if tool == "search_files" else {})
        result = run(ctx, tool, **args)
        assert result.startswith("error: file name too long: 'nnnn"), result
        assert "at most 255 bytes a name" in result

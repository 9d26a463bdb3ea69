"""``read_file`` refuses a binary file as ``harvey analyze`` does, before its pre-read guard
could offer it for chunking (issue 39, point 6); a document is still read as its text."""

from __future__ import annotations

import os

from harvey.context.budget import ReadBudget
from harvey.messages import ToolCall
from harvey.tools.files import ReadFileTool
from harvey.tools.registry import ToolContext, ToolRegistry
from harvey.workspace.source import Source, binary_refusal

ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + os.urandom(35 * 1024 - 16)


def test_a_binary_file_is_refused_before_the_guard(ctx: ToolContext) -> None:
    (ctx.workspace / "tool.bin").write_bytes(ELF)
    offered: list[str] = []

    def on_oversize(source: Source, size: int, tokens: int, remaining: int) -> str:
        offered.append(source.name)
        return "offered for chunking"

    guarded = ctx.evolve(read_budget=lambda: ReadBudget(100), on_oversize=on_oversize)
    call = ToolCall("c1", "read_file", {"path": "tool.bin"})
    result = ToolRegistry([ReadFileTool()]).execute(guarded, call).content
    assert result == "error: tool.bin looks like a binary file; read_file reads text files"
    assert offered == []  # never offered for chunking
    paged = ToolCall("c2", "read_file", {"path": "tool.bin", "offset": 20000, "limit": 100})
    assert ToolRegistry([ReadFileTool()]).execute(ctx, paged).content == result


def test_analyze_read_file_and_read_say_the_same_thing() -> None:
    assert binary_refusal("tool.bin", "analyze") == (
        "tool.bin looks like a binary file; analyze reads text files"
    )


def test_text_with_a_nul_past_the_first_8_kb_is_still_text(ctx: ToolContext) -> None:
    (ctx.workspace / "log.txt").write_bytes(b"line\n" * 2000 + b"\x00tail\n")
    call = ToolCall("c1", "read_file", {"path": "log.txt", "limit": 10})
    assert ToolRegistry([ReadFileTool()]).execute(ctx, call).content.startswith("line\nline")

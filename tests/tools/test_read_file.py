"""read_file pagination, UTF-8 boundaries, refusals, and the pre-read budget guard."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.context.budget import ReadBudget, estimate_tokens
from harvey.tools.files import DEFAULT_READ_LIMIT, ReadFileTool
from harvey.tools.registry import ToolContext
from harvey.workspace.source import Source

NEXT = re.compile(
    r"\n\n\[(?:.*; )?showing bytes (\d+)-(\d+) of (\d+); to continue reading use "
    r"offset=(\d+)\.\]\Z"
)


def split_page(result: str) -> tuple[str, int | None]:
    """Separate the page text from the continuation notice; None when nothing remains."""
    match = NEXT.search(result)
    if match is None:
        return result, None
    return result[: match.start()], int(match.group(4))


def read_all(ctx: ToolContext, name: str, limit: int) -> tuple[bytes, int]:
    tool = ReadFileTool()
    offset: int | None = 0
    out = b""
    pages = 0
    while offset is not None:
        text, next_offset = split_page(
            tool.run(ctx, {"path": name, "offset": offset, "limit": limit})
        )
        out += text.encode("utf-8")
        assert next_offset is None or next_offset > offset  # always makes progress
        offset = next_offset
        pages += 1
    return out, pages


@settings(max_examples=100, deadline=None)
@given(
    text=st.text(min_size=0, max_size=400).filter(lambda s: "\x00" not in s),
    limit=st.integers(min_value=1, max_value=64),
)
def test_pages_reassemble_the_file_byte_for_byte(text: str, limit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        data = text.encode("utf-8")
        (root / "f.txt").write_bytes(data)
        ctx = ToolContext(workspace=root)
        if not data:
            assert "nothing to read" in ReadFileTool().run(ctx, {"path": "f.txt"})
            return
        got, _ = read_all(ctx, "f.txt", limit)
        assert got == data


@settings(max_examples=100, deadline=None)
@given(
    text=st.text(alphabet="aé€😀\n", min_size=1, max_size=200),
    limit=st.integers(min_value=1, max_value=16),
)
def test_every_page_is_whole_characters_within_limit(text: str, limit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "f.txt").write_text(text, encoding="utf-8")
        ctx = ToolContext(workspace=root)
        offset: int | None = 0
        while offset is not None:
            page, nxt = split_page(
                ReadFileTool().run(ctx, {"path": "f.txt", "offset": offset, "limit": limit})
            )
            assert "\ufffd" not in page
            assert len(page.encode()) <= max(limit, 4)  # one whole character at least
            offset = nxt


def test_default_limit_pages_and_reports_next_offset(ctx: ToolContext) -> None:
    data = b"x" * (DEFAULT_READ_LIMIT + 10)
    (ctx.workspace / "big.txt").write_bytes(data)
    page, nxt = split_page(ReadFileTool().run(ctx, {"path": "big.txt"}))
    assert page == "x" * DEFAULT_READ_LIMIT
    assert nxt == DEFAULT_READ_LIMIT
    rest = ReadFileTool().run(ctx, {"path": "big.txt", "offset": nxt})
    assert rest == "x" * 10


def test_limit_zero_reads_the_whole_file(ctx: ToolContext) -> None:
    data = "line\n" * 5000
    (ctx.workspace / "big.txt").write_text(data)
    assert ReadFileTool().run(ctx, {"path": "big.txt", "limit": 0}) == data


def test_cut_back_reports_true_next_offset(ctx: ToolContext) -> None:
    (ctx.workspace / "u.txt").write_text("ab€cd", encoding="utf-8")  # € is 3 bytes at 2..4
    page, nxt = split_page(ReadFileTool().run(ctx, {"path": "u.txt", "limit": 3}))
    assert page == "ab"
    assert nxt == 2


def test_limit_smaller_than_a_character_still_progresses(ctx: ToolContext) -> None:
    (ctx.workspace / "u.txt").write_text("😀x", encoding="utf-8")
    page, nxt = split_page(ReadFileTool().run(ctx, {"path": "u.txt", "limit": 1}))
    assert page == "😀"
    assert nxt == 4


def test_offset_inside_a_character_starts_at_the_next(ctx: ToolContext) -> None:
    (ctx.workspace / "u.txt").write_text("€ab", encoding="utf-8")
    result = ReadFileTool().run(ctx, {"path": "u.txt", "offset": 1})
    assert result.startswith("ab")
    assert "started at 3" in result


def test_offset_past_end_is_a_notice_not_an_error(ctx: ToolContext) -> None:
    (ctx.workspace / "f.txt").write_text("hello")
    result = ReadFileTool().run(ctx, {"path": "f.txt", "offset": 5})
    assert not result.startswith("error:")
    assert "offset=5" in result and "5 bytes" in result and "nothing to read" in result


def test_binary_file_is_an_error(ctx: ToolContext) -> None:
    (ctx.workspace / "b.bin").write_bytes(b"\x89PNG\x00\x01\x02")
    result = ReadFileTool().run(ctx, {"path": "b.bin"})
    assert result.startswith("error:") and "binary" in result


def test_directory_is_an_error(ctx: ToolContext) -> None:
    (ctx.workspace / "d").mkdir()
    result = ReadFileTool().run(ctx, {"path": "d"})
    assert result.startswith("error:") and "directory" in result


def test_missing_file_is_an_error(ctx: ToolContext) -> None:
    assert ReadFileTool().run(ctx, {"path": "nope.txt"}).startswith("error:")


def test_negative_offset_is_refused(ctx: ToolContext) -> None:
    from harvey.errors import ToolError

    (ctx.workspace / "f.txt").write_text("x")
    with pytest.raises(ToolError):
        ReadFileTool().run(ctx, {"path": "f.txt", "offset": -1})


# --- the pre-read budget guard -------------------------------------------------------------


def guarded_ctx(
    ctx: ToolContext, budget: int, calls: list[tuple[Path, int, int, int]], ratio: float = 4
) -> ToolContext:
    def on_oversize(source: Source, size: int, tokens: int, remaining: int) -> str:
        calls.append((source.path, size, tokens, remaining))  # the Source read_file decided
        return f"chunked analysis of {source.name}"

    ratios = {"prose": ratio, "source": ratio}
    read_budget = ReadBudget(budget, ratio, sizes=ratios, texts=ratios)
    return ctx.evolve(read_budget=lambda: read_budget, on_oversize=on_oversize)


def test_guard_fires_for_a_whole_file_read_over_budget(ctx: ToolContext) -> None:
    (ctx.workspace / "big.txt").write_text("x" * 4000)
    calls: list[tuple[Path, int, int, int]] = []
    tool = ReadFileTool()
    result = tool.run(guarded_ctx(ctx, 500, calls), {"path": "big.txt", "limit": 0})
    assert result == "chunked analysis of big.txt"
    # close to the budget by its size, so its text was estimated
    assert calls == [(ctx.workspace / "big.txt", 4000, estimate_tokens("x" * 4000), 500)]


def test_guard_lets_a_small_page_of_a_big_file_through(ctx: ToolContext) -> None:
    (ctx.workspace / "big.txt").write_text("x" * 40_000)
    calls: list[tuple[Path, int, int, int]] = []
    tool = ReadFileTool()
    result = tool.run(guarded_ctx(ctx, 2000, calls), {"path": "big.txt", "limit": 4096})
    assert result.startswith("x" * 4096)
    assert calls == []


def test_guard_fires_when_the_page_itself_is_over_budget(ctx: ToolContext) -> None:
    (ctx.workspace / "big.txt").write_text("x" * 40_000)
    calls: list[tuple[Path, int, int, int]] = []
    tool = ReadFileTool()
    result = tool.run(guarded_ctx(ctx, 500, calls), {"path": "big.txt"})  # 4096 B ≈ 1024 tok
    assert result == "chunked analysis of big.txt"
    assert calls[0][1:] == (40_000, 10_000, 500)


def test_no_budget_means_no_check(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    (ctx.workspace / "big.txt").write_text("x" * 4000)

    def explode(self: ReadBudget, path: Path) -> None:
        raise AssertionError("must not be called")

    monkeypatch.setattr(ReadBudget, "check", explode)
    result = ReadFileTool().run(ctx, {"path": "big.txt", "limit": 0})
    assert result == "x" * 4000


def test_exceeding_without_a_handler_reads_normally(ctx: ToolContext) -> None:
    (ctx.workspace / "big.txt").write_text("x" * 4000)
    guarded = ctx.evolve(read_budget=lambda: ReadBudget(10))
    assert ReadFileTool().run(guarded, {"path": "big.txt", "limit": 0}) == "x" * 4000


def test_calibrated_ratio_is_used(ctx: ToolContext) -> None:
    (ctx.workspace / "f.txt").write_text("x" * 4000)  # about 1000 tokens at 4, 2000 at 2
    calls: list[tuple[Path, int, int, int]] = []
    assert ReadFileTool().run(guarded_ctx(ctx, 1500, calls), {"path": "f.txt", "limit": 0}) == (
        "x" * 4000
    )
    result = ReadFileTool().run(guarded_ctx(ctx, 1500, calls, 2), {"path": "f.txt", "limit": 0})
    assert result == "chunked analysis of f.txt"
    assert calls == [(ctx.workspace / "f.txt", 4000, estimate_tokens("x" * 4000, 2), 1500)]


def test_under_budget_reads_normally(ctx: ToolContext) -> None:
    (ctx.workspace / "small.txt").write_text("hello")
    calls: list[tuple[Path, int, int, int]] = []
    tool = ReadFileTool()
    assert tool.run(guarded_ctx(ctx, 500, calls), {"path": "small.txt"}) == "hello"
    assert calls == []


@settings(max_examples=80, deadline=None)
@given(
    size=st.integers(min_value=1, max_value=3000),
    offset=st.integers(min_value=0, max_value=3000),
    limit=st.integers(min_value=0, max_value=3000),
    budget=st.integers(min_value=0, max_value=1000),
)
def test_guard_fires_exactly_when_the_returned_bytes_exceed_the_budget(
    size: int, offset: int, limit: int, budget: int
) -> None:
    from harvey.context.budget import tokens_for_bytes

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "f.txt").write_bytes(b"y" * size)
        calls: list[tuple[Path, int, int, int]] = []
        ctx = guarded_ctx(ToolContext(workspace=root), budget, calls)
        result = ReadFileTool().run(ctx, {"path": "f.txt", "offset": offset, "limit": limit})
        if offset >= size:
            assert "nothing to read" in result and not calls
            return
        returned = size - offset if limit == 0 else min(limit, size - offset)
        fired = tokens_for_bytes(returned) > budget
        assert (result == "chunked analysis of f.txt") == fired
        assert bool(calls) == fired

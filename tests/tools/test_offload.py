"""OffloadHook and remove_offload_dir: threshold, exclusions, safety, fail-open, read-back."""

from __future__ import annotations

import re
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.messages import ToolCall, ToolResult
from harvey.tools.files import ReadFileTool
from harvey.tools.hooks import HookRegistry
from harvey.tools.offload import (
    OFFLOAD_SYSTEM_PROMPT,
    OffloadHook,
    offload_dir,
    remove_offload_dir,
    sanitize_id,
)
from harvey.tools.registry import ToolContext, ToolRegistry

SESSION = "sess-1234abcd"
REF = re.compile(r"saved to (\S+), (\d+) lines / (\d+) bytes total")


class BigTool:
    """Produces whatever output the call asks for; the name is configurable."""

    description = "make output"
    parameters: dict[str, Any] = {"type": "object"}  # noqa: RUF012

    def __init__(self, name: str = "run_shell") -> None:
        self.name = name

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        return str(args["text"])


def executor(workspace: Path, name: str = "run_shell", **kw: Any) -> HookRegistry:
    registry = ToolRegistry([ReadFileTool(), BigTool(name)])
    return HookRegistry(registry, [OffloadHook(workspace, SESSION, **kw)])


def big_text(lines: int = 2000) -> str:
    return "".join(f"line {i:05d} of the output\n" for i in range(lines))


def test_below_threshold_is_unchanged(ctx: ToolContext) -> None:
    text = "x" * 10_000
    result = executor(ctx.workspace).execute(ctx, ToolCall("c1", "run_shell", {"text": text}))
    assert result.content == text
    assert not (ctx.workspace / ".harvey").exists()


def test_above_threshold_is_offloaded(ctx: ToolContext) -> None:
    text = big_text()
    result = executor(ctx.workspace).execute(ctx, ToolCall("c1", "run_shell", {"text": text}))
    match = REF.search(result.content)
    assert match is not None
    rel, lines, size = match.group(1), int(match.group(2)), int(match.group(3))
    assert rel == f".harvey/tool_results/{SESSION}/c1.txt"
    assert (lines, size) == (2000, len(text.encode()))
    assert (ctx.workspace / rel).read_text() == text
    assert result.call_id == "c1" and result.name == "run_shell"
    assert not result.is_error
    assert "line 00000" in result.content and "line 00019" in result.content
    assert "line 00020" not in result.content  # 20 preview lines by default
    assert "read_file" in result.content and "offset" in result.content
    assert len(result.content) < 2000


def test_preview_lines_setting(ctx: ToolContext) -> None:
    ex = executor(ctx.workspace, threshold=1000, preview_lines=3)
    result = ex.execute(ctx, ToolCall("c1", "run_shell", {"text": big_text(50)}))
    assert "line 00002" in result.content and "line 00003" not in result.content
    assert "Preview (first 3 lines)" in result.content


@pytest.mark.parametrize("name", ["read_file", "write_file", "edit_file"])
def test_file_tools_are_excluded(ctx: ToolContext, name: str) -> None:
    text = big_text()
    result = executor(ctx.workspace, name=name).execute(ctx, ToolCall("c1", name, {"text": text}))
    assert result.content == text


def test_empty_call_id_gets_a_generated_name(ctx: ToolContext) -> None:
    ex = executor(ctx.workspace)
    first = ex.execute(ctx, ToolCall("", "run_shell", {"text": big_text()}))
    second = ex.execute(ctx, ToolCall("", "run_shell", {"text": big_text(3000)}))
    paths = [REF.search(r.content).group(1) for r in (first, second)]  # type: ignore[union-attr]
    assert paths[0] != paths[1]
    assert first.call_id == ""  # the result still pairs with the original call
    assert all((ctx.workspace / p).is_file() for p in paths)


def test_write_failure_returns_the_original(ctx: ToolContext) -> None:
    (ctx.workspace / ".harvey").write_text("a file where a folder should be")
    text = big_text()
    result = executor(ctx.workspace).execute(ctx, ToolCall("c1", "run_shell", {"text": text}))
    assert result.content == text


def test_symlinked_harvey_dir_outside_is_not_used(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ctx.workspace / ".harvey").symlink_to(outside)
    text = big_text()
    result = executor(ctx.workspace).execute(ctx, ToolCall("c1", "run_shell", {"text": text}))
    assert result.content == text
    assert not any(p.is_file() for p in outside.rglob("*"))


def test_error_output_stays_an_error(ctx: ToolContext) -> None:
    text = "error: exit status 2\n" + big_text()
    result = executor(ctx.workspace).execute(ctx, ToolCall("c1", "run_shell", {"text": text}))
    assert result.is_error and REF.search(result.content)


def test_permissions_are_private(ctx: ToolContext) -> None:
    executor(ctx.workspace).execute(ctx, ToolCall("c1", "run_shell", {"text": big_text()}))
    folder = offload_dir(ctx.workspace, SESSION)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder.parent).stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "c1.txt").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "hostile", ["../../x", "../escape", "a/b", "/abs/path", "nul\x00byte", "..", ".", "", "ä/ö"]
)
def test_hostile_ids_stay_in_the_session_folder(ctx: ToolContext, hostile: str) -> None:
    hook = OffloadHook(ctx.workspace, hostile, threshold=100)
    ex = HookRegistry(ToolRegistry([BigTool()]), [hook])
    result = ex.execute(ctx, ToolCall(hostile, "run_shell", {"text": big_text(50)}))
    rel = REF.search(result.content).group(1)  # type: ignore[union-attr]
    written = (ctx.workspace / rel).resolve()
    root = (ctx.workspace / ".harvey" / "tool_results").resolve()
    assert written.parent.parent == root
    assert written.is_file()
    files = [p for p in ctx.workspace.parent.rglob("*") if p.is_file()]
    assert files == [written]


@given(raw=st.text(max_size=60))
def test_sanitize_id_is_a_single_safe_name(raw: str) -> None:
    name = sanitize_id(raw)
    assert name and "/" not in name and "\x00" not in name
    assert not name.startswith(".")
    assert re.fullmatch(r"[A-Za-z0-9_-]+", name)
    assert sanitize_id(raw) == name  # deterministic, so clean-up finds the folder


def test_distinct_hostile_ids_do_not_collide() -> None:
    assert sanitize_id("a/b") != sanitize_id("a:b")
    assert sanitize_id("abc-123") == "abc-123"


def test_five_megabytes_stay_out_of_context_and_read_back(ctx: ToolContext) -> None:
    text = "".join(f"{i:08d} ünïcode line of tool output €\n" for i in range(120_000))
    assert len(text.encode()) > 5_000_000
    ex = executor(ctx.workspace)
    result = ex.execute(ctx, ToolCall("big", "run_shell", {"text": text}))
    assert len(result.content) < 3000
    rel = REF.search(result.content).group(1)  # type: ignore[union-attr]
    pages = []
    offset: int | None = 0
    notice = re.compile(
        r"\n\n\[showing bytes \d+-\d+ of \d+; to continue reading use "
        r"offset=(\d+)\.\]\Z"
    )
    while offset is not None:
        page = ex.execute(
            ctx, ToolCall("r", "read_file", {"path": rel, "offset": offset, "limit": 262_144})
        )
        assert not page.is_error
        match = notice.search(page.content)
        pages.append(page.content[: match.start()] if match else page.content)
        offset = int(match.group(1)) if match else None
    assert "".join(pages).encode() == text.encode()


def test_concurrent_offloads_from_threads(ctx: ToolContext) -> None:
    ex = executor(ctx.workspace, threshold=100)
    results: dict[int, ToolResult] = {}

    def work(i: int) -> None:
        results[i] = ex.execute(
            ctx, ToolCall(f"call-{i}", "run_shell", {"text": f"thread {i}\n" * 500})
        )

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    folder = offload_dir(ctx.workspace, SESSION)
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"call-{i}.txt" for i in range(16))
    for i, result in results.items():
        rel = REF.search(result.content).group(1)  # type: ignore[union-attr]
        assert (ctx.workspace / rel).read_text() == f"thread {i}\n" * 500


def test_remove_offload_dir(ctx: ToolContext) -> None:
    executor(ctx.workspace).execute(ctx, ToolCall("c1", "run_shell", {"text": big_text()}))
    other = OffloadHook(ctx.workspace, "other-session", threshold=100)
    HookRegistry(ToolRegistry([BigTool()]), [other]).execute(
        ctx, ToolCall("c2", "run_shell", {"text": big_text()})
    )
    assert remove_offload_dir(ctx.workspace, SESSION) is True
    assert not offload_dir(ctx.workspace, SESSION).exists()
    assert offload_dir(ctx.workspace, "other-session").exists()
    assert remove_offload_dir(ctx.workspace, SESSION) is True  # already gone is fine


@pytest.mark.parametrize("hostile", ["..", "../..", "../../x", "", "/"])
def test_remove_with_hostile_id_touches_nothing_else(ctx: ToolContext, hostile: str) -> None:
    executor(ctx.workspace).execute(ctx, ToolCall("c1", "run_shell", {"text": big_text()}))
    (ctx.workspace / "keep.txt").write_text("k")
    remove_offload_dir(ctx.workspace, hostile)
    assert (ctx.workspace / "keep.txt").exists()
    assert (offload_dir(ctx.workspace, SESSION) / "c1.txt").exists()


def test_remove_is_fail_soft(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "victim"
    outside.mkdir()
    (outside / "f").write_text("x")
    results = ctx.workspace / ".harvey" / "tool_results"
    results.mkdir(parents=True)
    (results / SESSION).symlink_to(outside)
    assert remove_offload_dir(ctx.workspace, SESSION) is False
    assert (outside / "f").exists()
    assert remove_offload_dir(tmp_path / "no-such-workspace", SESSION) is True


def test_system_prompt_explains_retrieval() -> None:
    assert "read_file" in OFFLOAD_SYSTEM_PROMPT
    assert "offset" in OFFLOAD_SYSTEM_PROMPT and "limit" in OFFLOAD_SYSTEM_PROMPT


def test_output_with_nul_bytes_can_be_paged_back(tmp_path: Path) -> None:
    from harvey.messages import ToolCall, ToolResult
    from harvey.tools.files import ReadFileTool
    from harvey.tools.offload import OffloadHook
    from harvey.tools.registry import ToolContext

    ws = tmp_path / "ws"
    ws.mkdir()
    hook = OffloadHook(ws, "s1", threshold=100)
    ctx = ToolContext(workspace=ws, session_id="s1")
    out = "a.txt\x00b.txt\x00" * 100
    result = hook.after_execute(
        ctx, ToolCall("c1", "run_shell", {}), ToolResult("c1", "run_shell", out)
    )
    assert ".harvey/tool_results/s1/c1.txt" in result.content
    page = ReadFileTool().run(ctx, {"path": ".harvey/tool_results/s1/c1.txt", "limit": 0})
    assert page.startswith("a.txt\\0b.txt\\0")


def test_symlinked_harvey_dir_creates_nothing_outside(tmp_path: Path) -> None:
    from harvey.messages import ToolCall, ToolResult
    from harvey.tools.offload import OffloadHook
    from harvey.tools.registry import ToolContext

    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / ".harvey").symlink_to(outside)
    hook = OffloadHook(ws, "s1", threshold=100)
    ctx = ToolContext(workspace=ws, session_id="s1")
    big = "x" * 1000
    result = hook.after_execute(
        ctx, ToolCall("c1", "run_shell", {}), ToolResult("c1", "run_shell", big)
    )
    assert result.content == big  # fail-open: passed through unchanged
    assert list(outside.iterdir()) == []

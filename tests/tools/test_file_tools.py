"""write_file, list_files and search_files, all through the registry like the agent calls them."""

from __future__ import annotations

from pathlib import Path

from harvey.messages import ToolCall
from harvey.tools.files import ListFilesTool, ReadFileTool, WriteFileTool
from harvey.tools.registry import ToolContext, ToolRegistry
from harvey.tools.search import SearchFilesTool


def run(ctx: ToolContext, name: str, **args: object) -> str:
    registry = ToolRegistry([ReadFileTool(), WriteFileTool(), ListFilesTool(), SearchFilesTool()])
    return registry.execute(ctx, ToolCall("c1", name, dict(args))).content


def allow(ctx: ToolContext) -> ToolContext:
    """A context whose person approves every write (the gate itself is tested in tests/security/test_tools_writes.py)."""
    return ctx.evolve(approve_write=lambda _request, write: write())


def test_write_without_an_approver_is_refused(ctx: ToolContext) -> None:
    result = run(ctx, "write_file", path="a.txt", content="x")
    assert result.startswith("error: write refused")
    assert not (ctx.workspace / "a.txt").exists()


def test_write_then_read_round_trip(ctx: ToolContext) -> None:
    result = run(allow(ctx), "write_file", path="notes/a.md", content="héllo\n")
    assert result == "wrote 7 bytes to notes/a.md"
    assert (ctx.workspace / "notes" / "a.md").read_text(encoding="utf-8") == "héllo\n"
    assert run(ctx, "read_file", path="notes/a.md") == "héllo\n"
    assert not list((ctx.workspace / "notes").glob(".*tmp"))


def test_write_outside_is_an_error_result(ctx: ToolContext) -> None:
    result = run(allow(ctx), "write_file", path="../evil.txt", content="x")
    assert result.startswith("error:") and "outside the workspace" in result
    assert not (ctx.workspace.parent / "evil.txt").exists()


def test_write_needs_string_content(ctx: ToolContext) -> None:
    assert run(allow(ctx), "write_file", path="a.txt", content=3).startswith("error:")
    assert run(allow(ctx), "write_file", path="a.txt").startswith("error:")


def test_write_onto_a_directory_is_an_error(ctx: ToolContext) -> None:
    (ctx.workspace / "d").mkdir()
    assert run(allow(ctx), "write_file", path="d", content="x").startswith("error:")


def test_list_files_tree_and_depth(ctx: ToolContext) -> None:
    (ctx.workspace / "src" / "pkg").mkdir(parents=True)
    (ctx.workspace / "src" / "pkg" / "deep.py").write_text("")
    (ctx.workspace / "src" / "top.py").write_text("")
    (ctx.workspace / "README.md").write_text("")
    shallow = run(ctx, "list_files", depth=1)
    assert shallow.splitlines() == ["./", "  src/", "  README.md"]
    deep = run(ctx, "list_files", path="src", depth=2)
    assert deep.splitlines() == ["src/", "  pkg/", "    deep.py", "  top.py"]


def test_list_files_refusals(ctx: ToolContext) -> None:
    (ctx.workspace / "f.txt").write_text("")
    assert run(ctx, "list_files", path="f.txt").startswith("error:")
    assert run(ctx, "list_files", path="missing").startswith("error:")
    assert run(ctx, "list_files", path="..").startswith("error:")
    assert run(ctx, "list_files", depth=0).startswith("error:")


def test_list_files_does_not_follow_symlinks_out(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (ctx.workspace / "link").symlink_to(outside)
    listing = run(ctx, "list_files", depth=3)
    assert "link ->" in listing and "secret.txt" not in listing


def test_search_files_finds_matches_with_line_numbers(ctx: ToolContext) -> None:
    (ctx.workspace / "a.py").write_text("one\nTODO fix\nthree\n")
    (ctx.workspace / "sub").mkdir()
    (ctx.workspace / "sub" / "b.txt").write_text("nothing\nanother TODO\n")
    (ctx.workspace / "bin.dat").write_bytes(b"TODO\x00\x01")
    result = run(ctx, "search_files", pattern="TODO")
    assert result.splitlines() == ["a.py:2: TODO fix", "sub/b.txt:2: another TODO"]
    assert run(ctx, "search_files", pattern="TODO", path="sub") == "sub/b.txt:2: another TODO"


def test_search_files_errors_and_no_match(ctx: ToolContext) -> None:
    (ctx.workspace / "a.txt").write_text("x")
    assert run(ctx, "search_files", pattern="(").startswith("error: invalid regular expression")
    assert run(ctx, "search_files", pattern="zzz") == "no matches for 'zzz'"
    assert run(ctx, "search_files", pattern="x", path="/etc").startswith("error:")


def test_search_skips_symlinked_files_outside(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("password")
    (ctx.workspace / "s.txt").symlink_to(tmp_path / "secret.txt")
    assert run(ctx, "search_files", pattern="password").startswith("no matches")


def test_overwrite_keeps_the_file_mode(ctx: ToolContext) -> None:
    script = ctx.workspace / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    run(allow(ctx), "write_file", path="run.sh", content="#!/bin/sh\necho hi\n")
    assert script.stat().st_mode & 0o777 == 0o755
    assert script.read_text() == "#!/bin/sh\necho hi\n"

"""The write question's text and the write gate's decisions, against a fake UI."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.errors import Cancelled, ToolError
from harvey.messages import ToolCall
from harvey.tools.approval import (
    MAX_COMPARE_BYTES,
    MAX_DIFF_LINES,
    MAX_LINE_CHARS,
    NEW_FILE_HEAD_LINES,
    WriteGate,
    describe_write,
    write_preview,
)
from harvey.tools.files import WriteFileTool
from harvey.tools.registry import ToolContext, ToolRegistry
from harvey.ui import HeadlessUI, WriteChoice, WriteRequest, printable


class FakeUI(HeadlessUI):
    """Answers write questions from a script and remembers what it was asked."""

    interactive = True

    def __init__(self, answers: list[WriteChoice]) -> None:
        super().__init__()
        self.answers = list(answers)
        self.asked: list[WriteRequest] = []

    def approve_write(self, request: WriteRequest) -> WriteChoice:
        self.asked.append(request)
        return self.answers.pop(0)


def gated(ctx: ToolContext, ui: HeadlessUI) -> tuple[ToolContext, list[tuple[str, str]]]:
    decisions: list[tuple[str, str]] = []
    gate = WriteGate(ui, lambda path, status: decisions.append((path, status)))
    return ctx.evolve(approve_write=gate, interactive=ui.interactive), decisions


def write(ctx: ToolContext, path: str, content: str) -> str:
    call = ToolCall("c1", "write_file", {"path": path, "content": content})
    return ToolRegistry([WriteFileTool()]).execute(ctx, call).content


# ---------------------------------------------------------------- the question


def test_new_file_shows_size_and_first_lines() -> None:
    preview = write_preview(WriteRequest("cmds.txt", "echo one\necho two\n"))
    assert preview.title == "Create cmds.txt (new file, 18 bytes, 2 lines)"
    assert preview.lines == ["echo one", "echo two"]
    assert write_preview(WriteRequest("e", "")).title == "Create e (new file, 0 bytes, 0 lines)"
    one = write_preview(WriteRequest("o", "no newline"))
    assert one.title == "Create o (new file, 10 bytes, 1 line)" and one.lines == ["no newline"]
    assert preview.cut is None


def test_long_new_file_says_how_much_is_not_shown() -> None:
    content = "\n".join(f"line {i}" for i in range(NEW_FILE_HEAD_LINES + 7))
    preview = write_preview(WriteRequest("a.txt", content))
    assert preview.lines == [f"line {i}" for i in range(NEW_FILE_HEAD_LINES)]
    assert preview.cut == "[… 7 more lines not shown]"


def test_existing_file_shows_a_unified_diff(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("alpha\nbeta\ngamma\n")
    request = describe_write(path, "notes.md", "alpha\nBETA\ngamma\n")
    assert request.old == "alpha\nbeta\ngamma\n" and request.old_size == 17
    preview = write_preview(request)
    assert preview.title == "Overwrite notes.md (17 bytes → 17 bytes)"
    assert preview.lines[:3] == ["--- a/notes.md", "+++ b/notes.md", "@@ -1,4 +1,4 @@"]
    assert preview.lines[3:] == [" alpha", "-beta", "+BETA", " gamma", " "]
    assert preview.cut is None
    assert "-beta" in preview.text() and preview.text().startswith("Overwrite notes.md")


def test_a_big_diff_is_cut_and_says_so() -> None:
    old = "".join(f"old {i}\n" for i in range(300))
    new = "".join(f"new {i}\n" for i in range(300))
    preview = write_preview(WriteRequest("big.txt", new, old=old, old_size=len(old)))
    assert len(preview.lines) == MAX_DIFF_LINES
    total = 3 + 600 + 1  # headers and hunk line, 300 removed, 300 added, the final empty line
    assert preview.cut == f"[diff cut: {total - MAX_DIFF_LINES} more lines not shown]"


def test_identical_content_says_no_change() -> None:
    preview = write_preview(WriteRequest("a.txt", "same\n", old="same\n", old_size=5))
    assert preview.lines == [] and preview.cut == "[no change: the new content is identical]"


def test_binary_or_huge_current_file_is_described_not_diffed(tmp_path: Path) -> None:
    binary = tmp_path / "b.bin"
    binary.write_bytes(b"\x00\x01\x02")
    preview = write_preview(describe_write(binary, "b.bin", "text"))
    assert preview.title == "Overwrite b.bin (3 bytes → 4 bytes)"
    assert preview.cut == "[the current file is not a text file, or a hard link; no diff shown]"
    huge = tmp_path / "huge.txt"
    huge.write_bytes(b"x" * (MAX_COMPARE_BYTES + 1))
    request = describe_write(huge, "huge.txt", "small")
    assert request.old is None and request.old_size == MAX_COMPARE_BYTES + 1
    assert write_preview(request).cut == "[the current file is too large to compare; no diff shown]"


def test_terminal_tricks_in_content_and_path_are_made_visible() -> None:
    hostile = "safe line\x1b[2K\x1b[1A\rrm -rf ~ \u202eevil\u2028x"
    preview = write_preview(WriteRequest("a\x1b[31m.txt\n", hostile))
    text = preview.text()
    assert "\x1b" not in text and "\r" not in text and "\u202e" not in text
    assert "\u2028" not in text
    assert "^[[2K" in text and "<U+202E>" in text and "^M" in text and "<U+2028>" in text
    assert preview.title.startswith("Create a^[[31m.txt^J ")
    assert printable("tab\tkept") == "tab\tkept"


def test_very_long_lines_are_cut() -> None:
    preview = write_preview(WriteRequest("min.js", "x" * 10_000))
    assert len(preview.lines[0]) == MAX_LINE_CHARS and preview.lines[0].endswith("…")


# ---------------------------------------------------------------- the decisions


def test_yes_writes_and_records_ok(ctx: ToolContext) -> None:
    ui = FakeUI([WriteChoice.YES])
    gctx, decisions = gated(ctx, ui)
    assert write(gctx, "a.txt", "hello\n") == "wrote 6 bytes to a.txt"
    assert (ctx.workspace / "a.txt").read_text() == "hello\n"
    assert decisions == [("a.txt", "ok")]
    assert ui.asked == [WriteRequest("a.txt", "hello\n")]


def test_no_leaves_the_file_and_tells_the_model(ctx: ToolContext) -> None:
    (ctx.workspace / "a.txt").write_text("before\n")
    ui = FakeUI([WriteChoice.NO])
    gctx, decisions = gated(ctx, ui)
    result = write(gctx, "a.txt", "after\n")
    assert result == "error: the user declined the write; a.txt was not written"
    assert (ctx.workspace / "a.txt").read_text() == "before\n"
    assert decisions == [("a.txt", "skipped")]
    assert ui.asked[0].old == "before\n"


def test_all_approves_every_later_write_without_asking(ctx: ToolContext) -> None:
    ui = FakeUI([WriteChoice.NO, WriteChoice.ALL])
    gctx, decisions = gated(ctx, ui)
    write(gctx, "a.txt", "1")
    for name in ("b.txt", "c.txt", "d/e.txt"):
        assert write(gctx, name, "2").startswith("wrote 1 bytes")
    assert len(ui.asked) == 2  # the "no", then the "all"; c and d/e were not asked
    assert not (ctx.workspace / "a.txt").exists()
    assert decisions == [
        ("a.txt", "skipped"),
        ("b.txt", "ok"),
        ("c.txt", "ok"),
        ("d/e.txt", "ok"),
    ]


def test_all_never_covers_protected_files_each_asks_again(ctx: ToolContext) -> None:
    ui = FakeUI([WriteChoice.ALL, WriteChoice.ALL, WriteChoice.NO])
    gctx, decisions = gated(ctx, ui)
    assert write(gctx, "harvey.yaml", "x").startswith("wrote")  # "all" here means this one
    assert write(gctx, "plain.txt", "x").startswith("wrote")  # ... so this one asked
    assert write(gctx, ".git/config", "x").startswith("error:")  # and this asked again
    assert [r.path for r in ui.asked] == ["harvey.yaml", "plain.txt", ".git/config"]
    assert decisions == [("harvey.yaml", "ok"), ("plain.txt", "ok"), (".git/config", "skipped")]


def test_quit_ends_the_turn_and_writes_nothing(ctx: ToolContext) -> None:
    gctx, decisions = gated(ctx, FakeUI([WriteChoice.QUIT]))
    with pytest.raises(Cancelled):
        write(gctx, "a.txt", "x")
    assert not (ctx.workspace / "a.txt").exists()
    assert decisions == []


def test_a_failed_write_is_recorded_as_an_error() -> None:
    decisions: list[tuple[str, str]] = []
    gate = WriteGate(FakeUI([WriteChoice.YES]), lambda p, s: decisions.append((p, s)))

    def failing_write() -> str:
        raise ToolError("cannot write a.txt: No space left on device")

    with pytest.raises(ToolError):
        gate(WriteRequest("a.txt", "x"), failing_write)
    assert decisions == [("a.txt", "error: cannot write a.txt: No space left on device")]


def test_refused_before_asking_when_the_path_is_bad(ctx: ToolContext) -> None:
    ui = FakeUI([])
    gctx, decisions = gated(ctx, ui)
    assert write(gctx, "../out.txt", "x").startswith("error:")
    assert write(gctx, "bad.txt", "\ud800").startswith("error: write_file content is not valid")
    (ctx.workspace / "plain").write_text("a file, not a folder")
    assert write(gctx, "plain/child.txt", "x").startswith("error: cannot stat plain/child.txt")
    assert ui.asked == [] and decisions == []


def test_headless_refuses_unless_allow_writes(ctx: ToolContext, capsys) -> None:  # type: ignore[no-untyped-def]
    gctx, decisions = gated(ctx, HeadlessUI(auto_yes=True))  # --yes does not imply writes
    result = write(gctx, "cmds.txt", "sh\n")
    assert result.startswith("error: write refused: cmds.txt was not written")
    assert "harvey run --allow-writes" in result
    assert not (ctx.workspace / "cmds.txt").exists() and decisions == [("cmds.txt", "skipped")]
    assert "refused to write cmds.txt (pass --allow-writes to allow)" in capsys.readouterr().err
    gctx, decisions = gated(ctx, HeadlessUI(allow_writes=True))
    assert write(gctx, "cmds.txt", "sh\n") == "wrote 3 bytes to cmds.txt"
    assert decisions == [("cmds.txt", "ok")]
    assert "writing cmds.txt (--allow-writes)" in capsys.readouterr().err

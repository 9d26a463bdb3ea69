"""edit_file: exact, unique edits of files the model has not read whole, asked like writes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harvey.errors import FileRefused, WorkspaceError
from harvey.llm.scripted import Reply
from harvey.messages import ToolCall
from harvey.tools.approval import write_preview
from harvey.tools.edit import EditFileTool
from harvey.tools.registry import ToolContext, ToolRegistry
from harvey.ui import WriteRequest
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import invoke_harvey


class Approver:
    """Says yes to every write and keeps what it was shown."""

    def __init__(self) -> None:
        self.asked: list[WriteRequest] = []

    def __call__(self, request: WriteRequest, write: Any) -> str:
        self.asked.append(request)
        return str(write())


@pytest.fixture
def approver() -> Approver:
    return Approver()


@pytest.fixture
def ectx(workspace: Path, tmp_path: Path, approver: Approver) -> ToolContext:
    return ToolContext(
        workspace=workspace,
        session_id="sess-edit",
        approve_write=approver,
        harvey_home=tmp_path / "home",
    )


def edit(ctx: ToolContext, path: str, old: str, new: str, **more: Any) -> str:
    args = {"path": path, "old_string": old, "new_string": new, **more}
    return ToolRegistry([EditFileTool()]).execute(ctx, ToolCall("c1", "edit_file", args)).content


def test_unique_exact_edit_shows_a_diff_with_the_files_line_numbers(
    ectx: ToolContext, workspace: Path, approver: Approver
) -> None:
    lines = [f"line {i}\n" for i in range(1, 51)]
    (workspace / "a.txt").write_text("".join(lines))
    result = edit(ectx, "a.txt", "line 30\n", "line thirty\n")
    assert result == "edited a.txt: replaced 1 occurrence (line 30), now 395 bytes"
    assert (workspace / "a.txt").read_text() == "".join(lines).replace("line 30\n", "line thirty\n")
    preview = write_preview(approver.asked[0])
    assert preview.title == "Edit a.txt (1 change, 391 bytes → 395 bytes)"
    assert preview.lines == [
        "@@ -27,7 +27,7 @@",
        *[f" line {i}" for i in (27, 28, 29)],
        "-line 30",
        "+line thirty",
        *[f" line {i}" for i in (31, 32, 33)],
    ]


def test_second_occurrence_is_an_error_naming_the_lines(
    ectx: ToolContext, workspace: Path, approver: Approver
) -> None:
    (workspace / "a.py").write_text("x = 1\ny = 2\nx = 1\n\nx = 1\n")
    result = edit(ectx, "a.py", "x = 1", "x = 9")
    assert result.startswith("error: old_string occurs 3 times in a.py (lines 1, 3, 5)")
    assert "replace_all=true" in result and not approver.asked
    assert (workspace / "a.py").read_text() == "x = 1\ny = 2\nx = 1\n\nx = 1\n"
    assert edit(ectx, "a.py", "x = 1", "x = 9", replace_all=True).startswith(
        "edited a.py: replaced 3 occurrences (lines 1, 3, 5)"
    )
    assert (workspace / "a.py").read_text() == "x = 9\ny = 2\nx = 9\n\nx = 9\n"
    assert approver.asked[0].changes == 3


def test_a_miss_quotes_the_closest_region_with_line_numbers(
    ectx: ToolContext, workspace: Path, approver: Approver
) -> None:
    body = "".join(f"filler {i}\n" for i in range(40))
    (workspace / "f.py").write_text(body + "def total(xs):\n    s = 0\n    return sum(xs)\n")
    result = edit(ectx, "f.py", "def total(xs):\n    s = 1\n    return s\n", "x")
    assert result.startswith("error: old_string was not found in f.py; nothing was changed.")
    assert "The closest text is at lines 41-43 (as it is now):" in result
    assert "    41 | def total(xs):" in result and "    43 |     return sum(xs)" in result
    assert not approver.asked
    nothing = edit(ectx, "f.py", "zzzzqqqq", "x")
    assert "No similar text either" in nothing


@pytest.mark.parametrize(
    ("old", "why"),
    [
        ("def g():\n  if x:\n    return 1\n", "two-space indentation"),
        ("def g():   \n    if x:\n        return 1", "trailing spaces"),
        ("\tdef g():\n\t    if x:\n\t        return 1\n", "a tab in front"),
    ],
)
def test_whitespace_only_difference_is_matched_and_said(
    ectx: ToolContext, workspace: Path, old: str, why: str
) -> None:
    (workspace / "g.py").write_text("a = 1\ndef g():\n    if x:\n        return 1\nb = 2\n")
    new = old.replace("return 1", "return 2")
    result = edit(ectx, "g.py", old, new)
    assert "ignoring indentation, trailing spaces and line endings" in result, why
    assert (workspace / "g.py").read_text() == (
        "a = 1\ndef g():\n    if x:\n        return 2\nb = 2\n"
    ), why


def test_ambiguous_whitespace_match_is_refused(ectx: ToolContext, workspace: Path) -> None:
    (workspace / "h.py").write_text("  return 1\nx\n\treturn 1\n")
    result = edit(ectx, "h.py", "    return 1\n", "return 2\n")
    assert "ignoring whitespace it matches 2 places (lines 1, 3)" in result
    assert (workspace / "h.py").read_text() == "  return 1\nx\n\treturn 1\n"


def test_crlf_file_keeps_its_line_endings_and_its_bom(ectx: ToolContext, workspace: Path) -> None:
    data = "\ufeffone\r\ntwo\r\nthree\r\n".encode()
    (workspace / "w.txt").write_bytes(data)
    result = edit(ectx, "w.txt", "two\nthree\n", "2\n3\n")
    assert "CRLF" in result
    assert (workspace / "w.txt").read_bytes() == "\ufeffone\r\n2\r\n3\r\n".encode()


def test_latin1_file_is_kept_byte_for_byte(ectx: ToolContext, workspace: Path) -> None:
    (workspace / "l.txt").write_bytes(b"caf\xe9 cr\xe8me\nna\xefve\n")
    assert edit(ectx, "l.txt", "na\xefve", "naive").startswith("edited l.txt")
    assert (workspace / "l.txt").read_bytes() == b"caf\xe9 cr\xe8me\nnaive\n"
    assert "encoding (latin-1)" in edit(ectx, "l.txt", "naive", "na\u0457ve")


def test_file_changed_after_the_models_read_is_edited_as_it_is_now(
    ectx: ToolContext, workspace: Path
) -> None:
    path = workspace / "c.txt"
    path.write_text("def cost():\n    total = price * qty\n    return total\n")
    edited = "def cost():\n    total = price * qty * (1 - discount)\n    return total\n"
    path.write_text(edited)  # the user changed it after the model read it
    result = edit(ectx, "c.txt", "    total = price * qty\n", "    total = price * qty * 2\n")
    assert result.startswith("error: old_string was not found in c.txt")
    assert "     2 |     total = price * qty * (1 - discount)" in result
    assert path.read_text() == edited


def test_file_changed_while_the_edit_waits_for_approval_is_not_written(
    workspace: Path, tmp_path: Path
) -> None:
    path = workspace / "d.txt"
    path.write_text("one\ntwo\n")

    def meanwhile(request: WriteRequest, write: Any) -> str:
        path.write_text("one\ntwo\nthree\n")  # someone else writes while the person reads
        return str(write())

    ctx = ToolContext(workspace=workspace, session_id="s", approve_write=meanwhile)
    result = edit(ctx, "d.txt", "two", "2")
    assert "changed while the edit waited for approval; nothing was written" in result
    assert path.read_text() == "one\ntwo\nthree\n"
    assert [p.name for p in workspace.iterdir()] == ["d.txt"]  # no temporary file left


def test_refusals(ectx: ToolContext, workspace: Path, tmp_path: Path, approver: Approver) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("token = 1\n")
    (workspace / "link.txt").symlink_to(outside)
    (workspace / ".env").write_text("KEY=1\n")
    (workspace / "notes.txt").symlink_to(workspace / ".env")
    (workspace / "hard.txt").write_text("KEY=2\n")
    os.link(workspace / "hard.txt", tmp_path / "other-name")
    assert "outside the workspace" in edit(ectx, "link.txt", "token = 1", "token = 2")
    for name in (".env", "notes.txt", "hard.txt"):
        assert edit(ectx, name, "KEY", "X").startswith("error:"), name
    assert outside.read_text() == "token = 1\n"
    assert (workspace / ".env").read_text() == "KEY=1\n"
    assert (workspace / "hard.txt").read_text() == "KEY=2\n" and not approver.asked
    assert "does not exist; to create it use write_file" in edit(ectx, "new.txt", "a", "b")
    assert "empty" in edit(ectx, "link.txt", "", "b")
    no_gate = ToolContext(workspace=workspace)
    (workspace / "ok.txt").write_text("a\n")
    assert "no one can approve" in edit(no_gate, "ok.txt", "a", "b")


def test_refusal_helpers_raise_the_guard_errors(ectx: ToolContext, workspace: Path) -> None:
    (workspace / "id_rsa").write_text("k\n")
    with pytest.raises(FileRefused):
        EditFileTool().run(ectx, {"path": "id_rsa", "old_string": "k", "new_string": "x"})
    with pytest.raises(WorkspaceError):
        EditFileTool().run(ectx, {"path": "../x", "old_string": "k", "new_string": "x"})


# ------------------------------------------------------------ through harvey run


BIG_LINES = 8000  # 8000 lines of 50 bytes: a 400 KB file


def big_file(workspace: Path) -> bytes:
    data = "".join(
        f"{i:08d} the quick brown fox jumps over it\n".rjust(50) for i in range(BIG_LINES)
    )
    (workspace / "big.txt").write_text(data)
    return data.encode()


def run_edit(workspace: Path, *args: str) -> tuple[Any, list[dict[str, Any]]]:
    call = (
        "edit_file",
        {
            "path": "big.txt",
            "old_string": "00004000 the quick brown fox",
            "new_string": "00004000 THE SLOW RED FOX",
        },
    )
    with FakeOpenAI([Reply(tool_calls=[call]), Reply("done")]) as srv:
        proc = invoke_harvey(
            "run", "fix line 4001", "--backend", "openai", "--base-url", srv.url, *args,
            cwd=workspace,
        )  # fmt: skip
        return proc, list(srv.chat_requests)


@pytest.mark.slow  # two harvey runs in process: about 1.5 s on two cores
def test_harvey_run_edits_a_400_kb_file_only_with_allow_writes(
    workspace: Path, isolated_env: Path
) -> None:
    before = big_file(workspace)
    assert len(before) == 400_000
    proc, requests = run_edit(workspace)
    assert proc.returncode == 0, proc.stderr
    assert "refused to write big.txt (pass --allow-writes to allow)" in proc.stderr
    assert (workspace / "big.txt").read_bytes() == before
    tool = [m for m in requests[-1]["messages"] if m["role"] == "tool"]
    assert tool[0]["content"].startswith("error: write refused: big.txt was not written")
    assert any(t["function"]["name"] == "edit_file" for t in requests[0]["tools"])
    assert "old_string" in requests[0]["messages"][0]["content"]  # the system prompt's guidance

    proc, requests = run_edit(workspace, "--allow-writes")
    assert proc.returncode == 0, proc.stderr
    after = before.replace(b"00004000 the quick brown fox", b"00004000 THE SLOW RED FOX")
    assert (workspace / "big.txt").read_bytes() == after
    tool = [m for m in requests[-1]["messages"] if m["role"] == "tool"]
    assert (
        tool[0]["content"] == "edited big.txt: replaced 1 occurrence (line 4001), now 399,997 bytes"
    )
    assert sum(len(str(m)) for m in requests[-1]["messages"]) < 20_000  # never the whole file
    texts = [r.read_text() for r in (workspace / ".harvey" / "sessions").glob("*.spmd")]
    assert sorted("[[write: big.txt — ok]]" in text for text in texts) == [False, True]
    assert sorted("[[write: big.txt — skipped]]" in text for text in texts) == [False, True]
    assert all("[[tool: edit_file" in text for text in texts)

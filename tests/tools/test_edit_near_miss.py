"""A near-miss edit points at the closest lines again (issue 39, point 6): a typo shares no
word with the file ("betta" for "beta"), so the lines most like it letter by letter are
quoted; text like nothing in the file still says so."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import harvey.tools.edit_stream as es
from harvey.messages import ToolCall
from harvey.tools.edit import EditFileTool
from harvey.tools.registry import ToolContext, ToolRegistry
from harvey.ui import WriteRequest

FILE = "alpha\nbeta\ngamma\ndelta\n"


def test_a_typo_in_every_line_still_finds_the_closest_lines() -> None:
    assert es.LineScan("betta\ngama").run(iter([FILE])).closest == 2
    assert es.LineScan("  gamma\n  deltta\n").run(iter([FILE])).closest == 3  # a line matches
    assert es.LineScan("zzzzqqqq").run(iter([FILE])).closest == 0


def test_a_near_miss_edit_quotes_the_closest_lines(workspace: Path, tmp_path: Path) -> None:
    (workspace / "notes.txt").write_text(FILE)
    asked: list[WriteRequest] = []

    def approve(request: WriteRequest, write: Callable[[], str]) -> str:
        asked.append(request)
        return write()

    ctx = ToolContext(
        workspace=workspace, session_id="s1", approve_write=approve, harvey_home=tmp_path / "home"
    )
    call = ToolCall("c1", "edit_file", {"path": "notes.txt", "old_string": "betta\ngama",
                                         "new_string": "beta\ngamma\nepsilon"})  # fmt: skip
    result = ToolRegistry([EditFileTool()]).execute(ctx, call).content
    assert result.startswith("error: old_string was not found in notes.txt; nothing was changed.")
    assert "The closest text is at lines 2-3 (as it is now):" in result, result
    assert "     2 | beta" in result and "     3 | gamma" in result
    assert "No similar text" not in result
    assert (workspace / "notes.txt").read_text() == FILE
    assert not asked  # nothing to approve: nothing was changed

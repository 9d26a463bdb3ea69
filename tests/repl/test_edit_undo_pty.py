"""The REPL end to end: an edit_file question shows the changed lines, /undo takes it back."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from harvey.llm.scripted import Reply
from harvey.session.fountain import parse_session
from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line

QUESTION = r"write it\? \[y\]es / \[N\]o / \[a\]ll this session / \[q\]uit the turn:"


@pytest.mark.slow
def test_edit_is_asked_with_its_lines_and_undone(spawn: Spawn, workspace: Path) -> None:
    body = "".join(f"row {i}\n" for i in range(1, 200))
    (workspace / "data.txt").write_text(body)
    args = {"path": "data.txt", "old_string": "row 150\n", "new_string": "row one-fifty\n"}
    script = [Reply(tool_calls=[("edit_file", args)]), Reply("Changed row 150.")]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "rename row 150")
        child.expect(r"Edit data\.txt \(1 change")
        child.expect("@@ -147,7 \\+147,7 @@")
        child.expect("-row 150")
        child.expect(r"\+row one-fifty")
        child.expect(QUESTION)
        send_line(child, "y")
        child.expect("Changed row 150")
        child.expect(PROMPT)
        assert "row one-fifty\n" in (workspace / "data.txt").read_text()
        send_line(child, "/undo")
        child.expect("undo: data.txt — ok")
        child.expect(PROMPT)
        assert (workspace / "data.txt").read_text() == body
        send_line(child, "/exit")
        child.expect(pexpect.EOF)
        child.close()
    (recording,) = (workspace / ".harvey" / "sessions").glob("*.spmd")
    parsed = parse_session(recording, strict=True)
    notes = [n for scene in parsed.scenes for n in scene.undo_notes]
    assert [(n.path, n.status) for n in notes] == [("data.txt", "ok")]
    assert [(w.path, w.status) for t in parsed.turns for w in t.write_notes] == [("data.txt", "ok")]

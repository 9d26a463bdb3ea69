"""Writes ask in the REPL: the diff is shown, "n" keeps the file, "a" approves the rest."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from harvey.llm.scripted import Reply
from harvey.session.fountain import parse_session
from harvey.session.records import ParsedWriteNote
from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line

QUESTION = r"write it\? \[y\]es / \[N\]o / \[a\]ll this session / \[q\]uit the turn:"


def write(path: str, content: str) -> Reply:
    return Reply(tool_calls=[("write_file", {"path": path, "content": content})])


@pytest.mark.slow
def test_diff_then_no_then_all(spawn: Spawn, workspace: Path) -> None:
    (workspace / "notes.md").write_text("keep this line\nold ending\n")
    script = [
        write("notes.md", "keep this line\nnew ending\n"),
        Reply("I left notes.md alone."),
        write("a.txt", "first\n"),
        write("b.txt", "second\n"),
        Reply("Both files written."),
    ]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "rewrite the notes")
        child.expect("Overwrite notes.md")
        child.expect("--- a/notes.md")
        child.expect("-old ending")
        child.expect(r"\+new ending")
        child.expect(QUESTION)
        send_line(child, "n")
        child.expect("I left notes.md alone")
        child.expect(PROMPT)
        assert (workspace / "notes.md").read_text() == "keep this line\nold ending\n"

        send_line(child, "now write two files")
        child.expect(r"Create a\.txt \(new file, 6 bytes, 1 line\)")
        child.expect(QUESTION)
        send_line(child, "a")
        child.expect(r'→ write_file\(\{"path":"a\.txt".* — ok')
        child.expect("Both files written")
        # b.txt was written without a question
        assert "write it?" not in child.before and "Create b.txt" not in child.before
        assert '"path":"b.txt"' in child.before
        child.expect(PROMPT)
        send_line(child, "/exit")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0
    assert (workspace / "a.txt").read_text() == "first\n"
    assert (workspace / "b.txt").read_text() == "second\n"
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd"))
    first, second = parse_session(spmd, strict=True).turns
    assert first.write_notes == [ParsedWriteNote("notes.md", "skipped")]
    assert second.write_notes == [ParsedWriteNote("a.txt", "ok"), ParsedWriteNote("b.txt", "ok")]


def test_quit_ends_the_turn(spawn: Spawn, workspace: Path) -> None:
    script = [write("q.txt", "x\n"), Reply("never seen"), Reply("still here")]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "write q")
        child.expect(QUESTION)
        send_line(child, "q")
        child.expect("cancelled")
        child.expect(PROMPT)
        send_line(child, "hello?")
        child.expect("never seen")  # the cancelled turn's reply was never fetched
        child.expect(PROMPT)
        send_line(child, "/exit")
        child.expect(pexpect.EOF)
    assert not (workspace / "q.txt").exists()

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import invoke_harvey, run_harvey

from .conftest import PROMPT, Spawn, send_line
from .test_repl import finish


def run_once(workspace: Path, url: str, prompt: str) -> None:
    proc = invoke_harvey("run", prompt, "--backend", "openai", "--base-url", url, cwd=workspace)
    assert proc.returncode == 0, proc.stderr


def test_continue_resumes_newest_session_with_plan_handover(spawn: Spawn, workspace: Path) -> None:
    (workspace / ".git").mkdir()
    todos = [{"id": "t1", "content": "Check the dam records", "status": "in_progress"}]
    script = [
        Reply(tool_calls=[("todo_write", {"todos": todos})]),
        Reply("Remembered: the code word is heron."),
        Reply("The code word was heron."),
    ]
    with FakeOpenAI(script) as srv:
        run_once(workspace, srv.url, "Remember the code word heron and plan the work")
        child = spawn("--continue", "--backend", "openai", "--base-url", srv.url)
        child.expect("resumed")
        child.expect(PROMPT)
        send_line(child, "What was the code word?")
        child.expect("The code word was heron")
        child.expect(PROMPT)
        finish(child)
        messages = srv.chat_requests[-1]["messages"]
    contents = [m.get("content") or "" for m in messages]
    assert "Remember the code word heron and plan the work" in contents
    system_text = "\n".join(m["content"] for m in messages if m["role"] == "system")
    # the handover rides with the resumed session's first turn, ahead of its words
    (first,) = [m["content"] for m in messages if m["content"].endswith("What was the code word?")]
    assert "<harvey-system>" in first
    assert "The task has an implementation plan:" in first
    assert "Check the dam records" in first
    assert "Plan summary: " not in system_text


@pytest.mark.slow
def test_continue_file_rebuilds_the_conversation(spawn: Spawn, workspace: Path) -> None:
    with FakeOpenAI([Reply("Paris is the capital."), Reply("You asked about France.")]) as srv:
        run_once(workspace, srv.url, "What is the capital of France?")
        recorded = next((workspace / ".harvey" / "sessions").glob("*.spmd"))
        child = spawn(
            "--continue-file", str(recorded), "--backend", "openai", "--base-url", srv.url
        )
        child.expect(PROMPT)
        send_line(child, "What did I ask?")
        child.expect("You asked about France")
        child.expect(PROMPT)
        finish(child)
        messages = srv.chat_requests[-1]["messages"]
    pairs = [(m["role"], m["content"]) for m in messages if m["role"] != "system"]
    assert pairs[:3] == [
        ("user", "What is the capital of France?"),
        ("assistant", "Paris is the capital."),
        ("user", "What did I ask?"),
    ]
    files = sorted((workspace / ".harvey" / "sessions").glob("*.spmd"))
    assert len(files) == 2, "the continued session records into a new file"


def test_continue_file_that_is_corrupt_warns_or_fails_cleanly(
    spawn: Spawn, workspace: Path
) -> None:
    bad = workspace / "bad.spmd"
    bad.write_bytes(b"\xff\xfe not a session \x00\x01")
    with FakeOpenAI([]) as srv:
        proc = run_harvey(
            "--continue-file", str(bad), "--backend", "openai", "--base-url", srv.url,
            cwd=workspace, input="", timeout=60,
        )  # fmt: skip
    assert "Traceback" not in proc.stderr
    assert proc.returncode in (0, 1, 2)

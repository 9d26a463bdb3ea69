"""The REPL says which confinement is active, and without one ``!cmd`` asks first."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line


def test_status_shows_the_confinement(spawn: Spawn) -> None:
    with FakeOpenAI([], context_window=4096) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "/status")
        child.expect("confinement")
        child.expect(r"landlock \(ABI \d+\): workspace read-only")
        child.expect(PROMPT)
        send_line(child, "/exit")
        child.expect(pexpect.EOF)


@pytest.mark.slow
def test_without_confinement_even_an_allowed_command_asks(
    spawn: Spawn, workspace: Path, isolated_env: Path
) -> None:
    (isolated_env / "harvey.yaml").write_text("security:\n  sandbox: none\n")  # the user's own
    (workspace / "hello.txt").write_text("hi there\n")
    with FakeOpenAI([], context_window=4096) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "!cat hello.txt")
        child.expect("no OS confinement available")
        child.expect(r"\[y/N\]")
        send_line(child, "n")
        child.expect("declined")
        child.expect(PROMPT)
        send_line(child, "!cat hello.txt")
        child.expect(r"\[y/N\]")
        send_line(child, "y")
        child.expect("hi there")
        child.expect(PROMPT)
        send_line(child, "/exit")
        child.expect(pexpect.EOF)


def test_an_unasked_git_that_the_repository_would_hijack_asks_instead(
    spawn: Spawn, workspace: Path, isolated_env: Path
) -> None:
    """git is allow-listed (as docs/CONFIGURATION.md shows), but this repository's config
    sets a pager: the model's plain ``git log`` asks, and declining runs nothing."""
    import subprocess

    from harvey.llm.scripted import Reply

    (isolated_env / "harvey.yaml").write_text("security:\n  allowed_commands: [ls, cat, git]\n")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    subprocess.run(
        ["git", "-C", str(workspace), "config", "core.pager", "echo PAGER-RAN; cat"], check=True
    )
    script = [Reply(tool_calls=[("run_shell", {"command": "git log"})]), Reply("all done")]
    with FakeOpenAI(script, context_window=4096) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "show me the history")
        child.expect("core.pager")
        child.expect(r"\[y/N\]")
        send_line(child, "n")
        child.expect("all done")
        child.expect(PROMPT)
        assert "PAGER-RAN" not in (child.before or "")
        send_line(child, "/exit")
        child.expect(pexpect.EOF)
    tool_results = [
        m.get("content", "")
        for request in srv.chat_requests
        for m in request.get("messages", [])
        if m.get("role") == "tool"
    ]
    assert tool_results and all("PAGER-RAN" not in text for text in tool_results)
    assert any("declined" in text for text in tool_results)

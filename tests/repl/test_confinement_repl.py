"""The REPL says which confinement is active, and without one ``!cmd`` asks first."""

from __future__ import annotations

from pathlib import Path

import pexpect

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

"""The REPL loop is an error boundary: whatever a line raises is one line, and the session goes on.

A missing editor is driven through the real ``python -m harvey``. An
``OSError`` or a bug inside a command cannot be provoked from outside on
purpose, so a small driver script adds two commands that raise them to the
real command table and then runs the real ``harvey`` entry point in a
pseudo-terminal: everything from the loop outwards is the product's code.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pexpect
import pytest

from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line

SECRET = "ghp_" + "Zq7" * 12  # token-shaped: the redactor must hide it wherever it is printed

DRIVER = f"""
import sys

from harvey.repl import commands


def bug(repl, arg):
    raise RuntimeError("a bug that mentions {SECRET}")


def disk(repl, arg):
    raise OSError(5, "Input/output error", "notes.txt")


commands.SLASH_COMMANDS = (
    *commands.SLASH_COMMANDS,
    commands.SlashCommand("/bug", "/bug", "raise a bug", bug),
    commands.SlashCommand("/disk", "/disk", "raise an OSError", disk),
)

from harvey.cli import main

main(sys.argv[1:], prog_name="harvey")
"""


def spawn_driver(workspace: Path, tmp_path: Path, url: str, env: dict[str, str]) -> pexpect.spawn:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    full_env = dict(os.environ)
    full_env.update(
        {"TERM": "xterm", "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "120"}
    )
    full_env.update(env)
    child = pexpect.spawn(
        sys.executable,
        [str(driver), "--backend", "openai", "--base-url", url],
        cwd=str(workspace),
        env=full_env,
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 120),
    )
    child.logfile_read = io.StringIO()
    return child


def transcript(child: pexpect.spawn) -> str:
    log = child.logfile_read
    assert isinstance(log, io.StringIO)
    return log.getvalue()


def quit_cleanly(child: pexpect.spawn) -> None:
    send_line(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_bug_and_an_os_error_in_a_command_are_one_line_each(
    workspace: Path, tmp_path: Path
) -> None:
    with FakeOpenAI([]) as srv:
        child = spawn_driver(workspace, tmp_path, srv.url, {"HARVEY_DEBUG": ""})
        try:
            child.expect(PROMPT)
            send_line(child, "/bug")
            child.expect("error: unexpected RuntimeError: a bug that mentions ")
            child.expect(PROMPT)
            send_line(child, "/disk")
            child.expect("error: notes.txt: Input/output error")
            child.expect(PROMPT)
            send_line(child, "/status")  # the session is still there
            child.expect("context window")
            child.expect(PROMPT)
            quit_cleanly(child)
        finally:
            child.terminate(force=True)
    out = transcript(child)
    assert "Traceback" not in out
    assert SECRET not in out and "[REDACTED]" in out


def test_harvey_debug_adds_the_redacted_traceback(workspace: Path, tmp_path: Path) -> None:
    with FakeOpenAI([]) as srv:
        child = spawn_driver(workspace, tmp_path, srv.url, {"HARVEY_DEBUG": "1"})
        try:
            child.expect(PROMPT)
            send_line(child, "/bug")
            child.expect("Traceback \\(most recent call last\\)")
            child.expect("in bug")
            child.expect("error: unexpected RuntimeError")
            child.expect(PROMPT)
            send_line(child, "/disk")
            child.expect("OSError: \\[Errno 5\\]")
            child.expect("error: notes.txt: Input/output error")
            child.expect(PROMPT)
            quit_cleanly(child)
        finally:
            child.terminate(force=True)
    assert SECRET not in transcript(child)


@pytest.mark.parametrize(
    ("editor", "needle"),
    [
        ("/no/such/editor --wait", "cannot start the editor '/no/such/editor'"),
        ("'unclosed", "$EDITOR is not a command line"),
    ],
)
def test_an_editor_that_cannot_start_is_one_line(
    spawn: Spawn, workspace: Path, editor: str, needle: str
) -> None:
    (workspace / ".git").mkdir()  # a git workspace keeps a plan file
    with FakeOpenAI([]) as srv:
        child = spawn(
            "--backend", "openai", "--base-url", srv.url, env={"EDITOR": editor, "VISUAL": ""}
        )
        child.logfile_read = io.StringIO()
        child.expect(PROMPT)
        send_line(child, "/plan edit")
        child.expect_exact(needle)
        child.expect(PROMPT)
        send_line(child, "/plan")  # the plan file was still created, and the REPL goes on
        child.expect(PROMPT)
        quit_cleanly(child)
    assert "Traceback" not in transcript(child)

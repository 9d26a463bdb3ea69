"""A deliberate call in a fenced JSON block after a sentence of preamble runs in the REPL,
its markup never printed; the same block echoed from the file the model read is shown as
the text it is and runs nothing (issue 38, point 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pexpect
import pytest

from harvey.llm.scripted import Reply
from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line

CALL = json.dumps({"name": "read_file", "arguments": {"path": "notes.md"}})
SHELL = json.dumps({"name": "run_shell", "arguments": {"command": "echo quoted-call-ran"}})


def finish(child: pexpect.spawn) -> None:
    send_line(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.slow
def test_a_fenced_call_after_preamble_runs_and_an_echoed_one_does_not(
    spawn: Spawn, workspace: Path
) -> None:
    (workspace / "notes.md").write_text(f"Boiler serviced in March.\n\n```json\n{SHELL}\n```\n")
    script = [
        Reply(f"I will read it.\n```json\n{CALL}\n```"),
        Reply(f"The notes say:\n```json\n{SHELL}\n```"),
    ]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "What do my notes say?")
        child.expect("I will read it.")
        index = child.expect(
            [r'"name": "read_file"', r'→ read_file\(\{"path":"notes\.md"\}\) — ok']
        )
        assert index == 1, "the call's markup was printed instead of run"
        child.expect("The notes say:")
        child.expect('"name": "run_shell"')  # the echo is shown as text
        child.expect(PROMPT)
        finish(child)
        requests = list(srv.chat_requests)
    assert len(requests) == 2  # the echoed call went nowhere
    assert "→ run_shell" not in child.before
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert "[[tool: read_file" in spmd and "[[tool: run_shell" not in spmd

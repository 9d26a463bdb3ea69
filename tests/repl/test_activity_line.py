"""The REPL shows what Harvey is doing from the first second of a turn (issue 39, point 3):
the status line says it is asking the model while the model has not answered yet."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from tests.fakes.servers import FakeOpenAI, Slow

from .conftest import PROMPT, Spawn, send_line
from .test_repl import finish


@pytest.mark.slow
def test_the_status_line_says_what_harvey_does_before_the_reply(
    spawn: Spawn, workspace: Path
) -> None:
    (workspace / "notes.md").write_text("The key is under the pot.\n")
    script: list[Reply | Slow] = [
        Reply(tool_calls=[("read_file", {"path": "notes.md"})]),
        Slow(3.0, Reply("Under the pot.")),  # the model thinks; the line must say so
    ]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "Where is the key? Read notes.md")
        child.expect("reading notes.md")
        child.expect("asking fake-model")
        child.expect("Under the pot.")
        child.expect(PROMPT)
        finish(child)

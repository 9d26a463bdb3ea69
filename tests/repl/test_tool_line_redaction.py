"""The REPL's tool-call line never paints a token from the model's arguments (issue 29)."""

from __future__ import annotations

import pytest

from harvey.llm.scripted import Reply
from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line
from .test_repl import finish

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


@pytest.mark.slow
def test_a_token_in_a_commands_arguments_is_redacted_on_screen(spawn: Spawn) -> None:
    script = [
        Reply(tool_calls=[("run_shell", {"command": f"echo {TOKEN}"})]),
        Reply("All done."),
    ]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "say hello")
        child.expect("run_shell")
        child.expect("All done.")
        seen = child.before
        child.expect(PROMPT)
        finish(child)
    assert TOKEN not in seen and TOKEN[:12] not in seen
    assert "[REDACTED]" in seen or "REDACTED" in seen

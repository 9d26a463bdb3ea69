"""A prompt a server still refuses as too long is said with what to do in the REPL
(issue 39, point 2: ``harvey run`` gets its own advice, never the REPL's ``/clear``)."""

from __future__ import annotations

import pytest

from harvey.llm.scripted import Reply
from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line
from .test_repl import finish


@pytest.mark.slow
def test_a_refused_prompt_says_compact_or_clear(spawn: Spawn) -> None:
    with FakeOpenAI([Reply("never sent")], max_prompt_tokens=50) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "Tell me about sockets, " + "listen and accept " * 40)
        child.expect("rejected the prompt as too long")
        child.expect("/compact or /clear the history")
        child.expect(PROMPT)
        finish(child)

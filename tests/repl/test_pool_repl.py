"""The REPL over an endpoint pool: chat turns use it, ``/status`` lists its endpoints."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from tests.fakes.llamacpp import FakeLlamaCpp

from .conftest import PROMPT, Spawn, send_line


@pytest.mark.slow
def test_chat_and_status_over_a_pool(spawn: Spawn, workspace: Path) -> None:
    with (
        FakeLlamaCpp(slots=2, slot_context=1024, default_reply="pooled reply") as a,
        FakeLlamaCpp(slots=2, slot_context=2048, default_reply="pooled reply") as b,
    ):
        child = spawn("--backend", "openai", "--endpoint", a.url, "--endpoint", b.url)
        child.expect(PROMPT)
        send_line(child, "hello")
        child.expect("pooled reply")
        child.expect(PROMPT)
        send_line(child, "/status")
        child.expect("endpoint")
        child.expect("capacity 2")
        child.expect("1,024")  # the pool's window is its smallest slot
        child.expect(PROMPT)
        send_line(child, "/exit")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
        assert a.calls + b.calls >= 1

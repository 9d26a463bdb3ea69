"""/read-chunks on input that cannot be analysed: one error line, no model call, REPL goes on."""

from __future__ import annotations

from pathlib import Path

import pexpect

from harvey.llm.scripted import Reply
from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line


def test_read_chunks_of_an_empty_file_and_a_too_long_name(spawn: Spawn, workspace: Path) -> None:
    (workspace / "empty.txt").write_bytes(b"")
    with FakeOpenAI(default_reply=Reply("should not be asked")) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "/read-chunks empty.txt summarise it")
        child.expect("empty.txt is empty: there is nothing to analyse")
        child.expect(PROMPT)
        send_line(child, "/read-chunks " + "n" * 300 + ".txt summarise it")
        child.expect("file name too long")
        child.expect(PROMPT)
        send_line(child, "/exit")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
        assert srv.chat_requests == []

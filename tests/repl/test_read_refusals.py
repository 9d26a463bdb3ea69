"""``/read`` and ``read_file`` refuse a binary file as ``harvey analyze`` does, a declined
``/read`` says it added nothing, and a tool's error shows its reason — through the real
REPL on a pseudo-terminal (issue 39, point 6)."""

from __future__ import annotations

import os
from pathlib import Path

import pexpect
import pytest

from harvey.llm.scripted import Reply
from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line

#: A 35 KB file that starts like an ELF executable (NUL bytes in its head).
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + os.urandom(35 * 1024 - 16)


def finish(child: pexpect.spawn) -> None:
    send_line(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def user_texts(server: FakeOpenAI) -> str:
    return "\n".join(
        m["content"] for b in server.chat_requests for m in b["messages"] if m["role"] == "user"
    )


@pytest.mark.slow
def test_read_refuses_a_binary_and_a_declined_read_adds_nothing(
    spawn: Spawn, workspace: Path
) -> None:
    (workspace / "harvey.yaml").write_text("context_window: 2048\n")
    (workspace / "tool.bin").write_bytes(ELF)
    (workspace / "big.md").write_text("A paragraph of text.\n\n" * 2000)
    with FakeOpenAI([Reply("Hello.")]) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "/read tool.bin")
        index = child.expect(["Context overflow", "instruction>", "looks like a binary file"])
        assert index == 2, "a binary file was offered for chunking"
        child.expect("/read reads text files; nothing was added to the conversation")
        child.expect(PROMPT)
        send_line(child, "/read big.md")
        child.expect("Context overflow: big.md is ")
        child.expect("instruction>")
        child.sendcontrol("u")  # clear the pre-filled text
        send_line(child, "no")
        index = child.expect(["added big.md to the conversation", "nothing was added"])
        assert index == 1
        child.expect(r"big\.md was not read \(File read cancelled by user\.\)")
        child.expect(PROMPT)
        send_line(child, "hello")
        child.expect("Hello.")
        child.expect(PROMPT)
        finish(child)
        sent = user_texts(srv)
    assert "tool.bin" not in sent and "File read cancelled" not in sent
    assert "ELF" not in sent


@pytest.mark.slow
def test_a_tool_error_shows_its_reason_and_read_file_refuses_a_binary(
    spawn: Spawn, workspace: Path
) -> None:
    (workspace / "harvey.yaml").write_text("context_window: 2048\n")
    (workspace / "tool.bin").write_bytes(ELF)
    script = [
        Reply(tool_calls=[("read_file", {"path": "nope.md"})]),
        Reply(tool_calls=[("read_file", {"path": "tool.bin"})]),
        Reply("Neither could be read."),
    ]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "read nope.md and tool.bin")
        child.expect(r'→ read_file\(\{"path":"nope\.md"\}\) — error: nope\.md does not exist')
        index = child.expect(
            ["Context overflow", "instruction>", r"→ read_file\(\{\"path\":\"tool"]
        )
        assert index == 2, "a binary file was offered for chunking"
        child.expect("— error: tool.bin looks like a binary file; read_file reads text files")
        child.expect("Neither could be read.")
        child.expect(PROMPT)
        finish(child)
        results = [m["content"] for m in srv.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert results == [
        "error: nope.md does not exist",
        "error: tool.bin looks like a binary file; read_file reads text files",
    ]

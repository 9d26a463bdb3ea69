"""An MCP tool end to end in the REPL, over a pty: its first call asks (yes for the
session, always, or no), a second call this session does not, and both are recorded."""

from __future__ import annotations

from pathlib import Path

import pexpect

from harvey.llm.scripted import Reply
from tests.fakes.openai import FakeOpenAI
from tests.mcp.test_mcp_servers import server_entry, yaml_of
from tests.repl.conftest import PROMPT, Spawn, send_line


def test_the_repl_asks_before_an_mcp_tools_first_call(
    spawn: Spawn, workspace: Path, isolated_env: Path
) -> None:
    (isolated_env / "harvey.yaml").write_text(
        yaml_of({"demo": server_entry()}, "context_window: 16384\n")
    )
    script = [
        Reply(tool_calls=[("mcp__demo__add", {"a": 2, "b": 3})]),
        Reply("The sum is five."),
        Reply(tool_calls=[("mcp__demo__add", {"a": 4, "b": 4})]),
        Reply("The sum is eight."),
        Reply(tool_calls=[("mcp__demo__count", {})]),
        Reply("Not counted."),
    ]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "add 2 and 3")
        child.expect("Run the MCP tool demo:add with")
        send_line(child, "y")
        child.expect("Always allow demo:add")
        send_line(child, "n")  # yes, for this session only
        child.expect("The sum is five.")
        child.expect(PROMPT)
        send_line(child, "add 4 and 4")
        index = child.expect(["Run the MCP tool", "The sum is eight."])
        assert index == 1  # not asked again this session
        child.expect(PROMPT)
        send_line(child, "count")
        child.expect("Run the MCP tool demo:count")
        send_line(child, "n")
        child.expect("Not counted.")
        child.expect(PROMPT)
        send_line(child, "/exit")
        child.expect(pexpect.EOF)
        results = [r["messages"][-1]["content"] for r in srv.chat_requests[1::2]]
    assert "\n5\n" in results[0] and "\n8\n" in results[1]
    assert "declined the MCP tool demo:count" in results[2]
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert '[[tool: demo.add({"a":2,"b":3}) — ok — MCP]]' in spmd
    assert "[[tool: demo.count({}) — error: the user declined" in spmd

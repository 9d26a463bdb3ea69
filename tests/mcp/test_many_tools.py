"""With 120 MCP tools configured, a request to an 8k-window model spends at most 10% of
the window on schemas, and ``find_tools`` still reaches the tool a request needs."""

from __future__ import annotations

import json
from pathlib import Path

from bench.mcp_catalog import catalog

from harvey.config.mcp_settings import McpServerSettings
from harvey.mcp.approvals import Server
from harvey.mcp.connection import ListedTool, Surroundings
from harvey.mcp.identity import server_identity
from harvey.tools.mcp_tools import FindToolsTool, McpGate, McpTool, schema_tokens
from harvey.tools.registry import ToolContext


def tools(tmp_path: Path) -> list[McpTool]:
    found = []
    gate = McpGate()
    for item in catalog():
        settings = McpServerSettings(command=item.server)
        server = Server(item.server, settings, server_identity(settings), "user", True)
        listed = ListedTool(item.name, item.description, item.schema, None)
        found.append(McpTool(server, listed, Surroundings(tmp_path), gate))
    return found


def test_120_tools_cost_an_8k_window_under_a_tenth_through_find_tools(tmp_path: Path) -> None:
    every = tools(tmp_path)
    assert len(every) == 120
    up_front = sum(schema_tokens(t) for t in every)
    finder = FindToolsTool(every)
    assert up_front > 8192  # all of them would not even fit the window
    assert schema_tokens(finder) <= 819  # what each request sends instead


def test_find_tools_reaches_the_tool_each_request_needs(tmp_path: Path) -> None:
    every = tools(tmp_path)
    finder = FindToolsTool(every)
    ctx = ToolContext(workspace=tmp_path)
    reached = 0
    for item, tool in zip(catalog(), every, strict=True):
        answer = finder.run(ctx, {"query": item.request})
        names = [json.loads(line)["name"] for line in answer.splitlines()[1:]]
        reached += tool.name in names
    assert reached / len(every) >= 0.8, reached


def test_harvey_searches_for_a_small_model_each_turn(tmp_path: Path) -> None:
    """In constrained or tool-less mode the nearest tools go after the prompt, in
    find_tools' form, and join the turn's choices; a turn about nothing of theirs gets
    none."""
    from harvey.chat.calls.tool_rounds import found_schemas
    from harvey.messages import Message
    from harvey.protocols import TurnQuery
    from harvey.tools.mcp_tools import McpToolHints

    finder = FindToolsTool(tools(tmp_path))
    hints = McpToolHints(finder)
    hints.push = False  # the three nearest, listed (the push is the next test's)
    assert hints.tool_less_only
    context = hints.for_turn(TurnQuery("please create a meeting for me", 8192, 4.0))
    assert context is not None
    turn = Message("user", "please create a meeting for me\n\n" + context.after)
    offered = [{"type": "function", "function": {"name": "find_tools"}}]
    names = [s["function"]["name"] for s in found_schemas([turn], offered)]
    assert "mcp__calendar__create_event" in names and len(names) == 3
    assert hints.for_turn(TurnQuery("hello, how are you?", 8192, 4.0)) is None


def test_a_request_that_names_nothing_of_the_workspace_is_shown_a_call(tmp_path: Path) -> None:
    """The push (the nearest tool alone, and a call of it shown) goes only to a request
    naming no file, folder or identifier of the workspace; the others get the three
    nearest, listed; a model offered no tools is told of none."""
    from harvey.chat.calls.tool_rounds import found_schemas
    from harvey.messages import Message
    from harvey.protocols import TurnQuery
    from harvey.tools.mcp_tools import PUSH, McpToolHints

    (tmp_path / "src").mkdir()
    hints = McpToolHints(FindToolsTool(tools(tmp_path)), tmp_path)
    offered = [{"type": "function", "function": {"name": "find_tools"}}]

    def after(prompt: str, mode: str = "constrained") -> str | None:
        context = hints.for_turn(TurnQuery(prompt, 8192, 4.0, tool_mode=mode))
        return None if context is None else context.after

    pushed = after("please create a meeting for me")
    assert pushed is not None and pushed.startswith(PUSH)
    assert pushed.endswith(
        'Reply like: {"tool": "mcp__calendar__create_event", "arguments": {...}}'
    )
    turn = Message("user", "please create a meeting for me\n\n" + pushed)
    names = [s["function"]["name"] for s in found_schemas([turn], offered)]
    assert names == ["mcp__calendar__create_event"]  # the nearest alone
    for about_files in (
        "update the meeting notes in notes.md",  # a file
        "update the meeting in the src folder",  # a folder of the workspace
        "create a meeting for parse_date",  # an identifier
        "create a meeting called UserStore",
    ):
        listed = after(about_files)
        assert listed is not None and PUSH not in listed and "Reply like" not in listed, about_files
        turn = Message("user", about_files + "\n\n" + listed)
        assert len(found_schemas([turn], offered)) == 3  # the three nearest, listed alone
    assert after("please create a meeting for me", mode="off") is None
    hints.push = False
    alone = after("please create a meeting for me")
    assert alone is not None and PUSH not in alone

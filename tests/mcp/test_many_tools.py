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

"""MCP tool schemas on a budget: what a request spends on them, up front against behind
``find_tools``, and whether ``find_tools`` still reaches the tool a request needs.

Three servers of forty tools each (``bench/mcp_catalog.py``: descriptions as real servers
write them, requests worded as a person asks, not in the tools' own words). Tokens are
Harvey's estimate of each schema as sent (exact counts need a model's tokenizer; on the
embedded model the two differ by a few percent, ``Token estimator`` above). A request is
*reached* when the tool it needs is among the five ``find_tools`` returns, by name. The
weight of the vectors against the words (``VECTOR_WEIGHT``, 3) was chosen on these same
requests (2: 97%, 3 and 5: 98%): a measure of the mechanism, not of a held-out set.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from bench.mcp_catalog import catalog
from harvey.config.mcp_settings import McpServerSettings
from harvey.mcp.approvals import Server
from harvey.mcp.connection import ListedTool, Surroundings
from harvey.mcp.identity import server_identity
from harvey.tools.mcp_tools import FindToolsTool, McpGate, McpTool, schema_tokens
from harvey.tools.registry import ToolContext

WINDOWS = (4096, 8192, 32768)


def _tools() -> list[McpTool]:
    gate, found = McpGate(), []
    for item in catalog():
        settings = McpServerSettings(command=item.server)
        server = Server(item.server, settings, server_identity(settings), "user", True)
        listed = ListedTool(item.name, item.description, item.schema, None)
        found.append(McpTool(server, listed, Surroundings(Path.cwd()), gate))
    return found


def _reached(finder: FindToolsTool, tools: list[McpTool], ranking: str) -> tuple[int, float]:
    """Requests whose tool is among the five found, and the mean seconds a query took."""
    import re

    reached, spent = 0, 0.0
    for item, tool in zip(catalog(), tools, strict=True):
        words = re.findall(r"\w+", item.request.lower())[:16]
        start = time.perf_counter()
        if ranking == "words":
            names = finder.ranked_by_words(words)[: finder.MAX_FOUND]
        elif ranking == "vectors":
            names = finder._by_vector(item.request)[: finder.MAX_FOUND]
        else:
            answer = finder.run(ToolContext(workspace=Path.cwd()), {"query": item.request})
            names = [json.loads(line)["name"] for line in answer.splitlines()[1:]]
        spent += time.perf_counter() - start
        reached += tool.name in names
    return reached, spent / len(tools)


def run() -> str:
    tools = _tools()
    finder = FindToolsTool(tools)
    up_front = sum(schema_tokens(t) for t in tools)
    deferred = schema_tokens(finder)
    lines = [
        "## MCP schemas on a budget",
        "",
        __doc__.split("\n\n", 1)[1].strip(),
        "",
        f"{len(tools)} tools in 3 servers. Tokens of schemas each request carries:",
        "",
        "| window | `mcp.schema_budget` (10%) | all 120 up front | `find_tools` instead |",
        "| --- | --- | --- | --- |",
    ]
    for window in WINDOWS:
        budget = window // 10
        lines.append(
            f"| {window:,} | {budget:,} | {up_front:,} ({up_front / window:.0%} of it) "
            f"| {deferred:,} ({deferred / window:.1%}) |"
        )
    finder.run(ToolContext(workspace=Path.cwd()), {"query": "warm up"})  # loads the vectors
    lines += [
        "",
        "Does `find_tools` reach the tool each of the 120 requests needs (among five)?",
        "",
        "| ranking | reached | share | per query |",
        "| --- | --- | --- | --- |",
    ]
    for ranking, label in (
        ("words", "FTS5 words alone"),
        ("vectors", "wordllama vectors alone"),
        ("fused", "both, fused (what `find_tools` does)"),
    ):
        reached, seconds = _reached(finder, tools, ranking)
        lines.append(
            f"| {label} | {reached}/{len(tools)} | {reached / len(tools):.0%} "
            f"| {seconds * 1000:.1f} ms |"
        )
    lines += [
        "",
        "Up front, 120 schemas would not fit an 8k window at all; behind `find_tools` a",
        "request carries one small schema, the prompt's prefix never changes, and a found",
        "tool's schema arrives in the answer, after the history.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())

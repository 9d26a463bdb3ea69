"""What the person approved: a workspace's servers by identity, every server's tools by pin.

A server in the user's own ``HARVEY_HOME/harvey.yaml`` is theirs: it runs as written. A
server a workspace's ``harvey.yaml`` brings runs only once that file is trusted *and* the
person approved that server's identity for that workspace (``mcp-servers.json``): trusting
a folder is not a yes to every program it names (the "TrustFall" lesson), and an edit to
the command, its arguments or the variables it gets is a new question.

Every server's tools are pinned (``mcp-tools.json``): the first time a tool is seen it is
new and asks; a tool whose name, description or schema changed since its approval is
*changed* — off until approved again, with the change shown. Both files live beside the
trust store, written whole and private (``config/trust_store.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harvey.config.layers import read_config
from harvey.config.mcp_settings import McpServerSettings
from harvey.config.settings import Paths, Settings
from harvey.config.trust_store import TrustStore
from harvey.mcp.identity import server_identity

SERVERS_STORE = "mcp-servers.json"
TOOLS_STORE = "mcp-tools.json"

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

    @property
    def why_not(self) -> str:
        return (
            ""
            if self.approved
            else (
                f"the workspace's server {self.name!r} was not approved as it is now "
                f"(run `harvey mcp approve {self.name}` after reviewing its command)"
            )
        )


def servers(settings: Settings, paths: Paths) -> list[Server]:
    """Every server of ``mcp.servers``, in name order, with its origin and approval."""
    own = _users_servers(paths)
    store = TrustStore(paths.harvey_home, SERVERS_STORE)
    found = []
    for name, server in sorted(settings.mcp.servers.items()):
        identity = server_identity(server)
        if own.get(name) == identity:
            found.append(Server(name, server, identity, "user", True))
        else:
            approved = store.is_trusted(_server_key(paths.workspace, name), identity)
            found.append(Server(name, server, identity, "workspace", approved))
    return found


def approve_server(paths: Paths, server: Server) -> None:
    TrustStore(paths.harvey_home, SERVERS_STORE).trust(
        _server_key(paths.workspace, server.name), server.identity
    )


def revoke_server(paths: Paths, name: str) -> bool:
    return TrustStore(paths.harvey_home, SERVERS_STORE).revoke(_server_key(paths.workspace, name))


def tool_state(home: Path, server_identity: str, tool: str, pin: str) -> ToolState:
    store = TrustStore(home, TOOLS_STORE)
    key = _tool_key(server_identity, tool)
    if store.is_trusted(key, pin):
        return "approved"
    return "changed" if store.recorded(key) is not None else "new"


#: How much of an approved description is kept, to show what changed.
KEPT_DESCRIPTION = 4000


def approve_tool(
    home: Path, server_identity: str, tool: str, pin: str, description: str = ""
) -> None:
    TrustStore(home, TOOLS_STORE).trust(
        _tool_key(server_identity, tool), pin, description=description[:KEPT_DESCRIPTION]
    )


def approved_description(home: Path, server_identity: str, tool: str) -> str | None:
    """The description a tool had when it was approved (to show a rug pull's change)."""
    return TrustStore(home, TOOLS_STORE).kept(_tool_key(server_identity, tool), "description")


def _users_servers(paths: Paths) -> dict[str, str]:
    """The identities of the servers the user's own file defines, by name."""
    data, _text, _raw = read_config(paths.user_config_file)
    stanza = data.get("mcp", {}) if isinstance(data, dict) else {}
    listed = stanza.get("servers", {}) if isinstance(stanza, dict) else {}
    own = {}
    for name, raw in listed.items() if isinstance(listed, dict) else ():
        try:
            own[str(name)] = server_identity(McpServerSettings.model_validate(raw))
        except ValueError:
            continue  # the settings load already refused an invalid entry
    return own


def _server_key(workspace: Path, name: str) -> str:
    import os

    return f"{os.path.realpath(workspace)}\0{name}"


def _tool_key(server_identity: str, tool: str) -> str:
    return f"{server_identity}\0{tool}"

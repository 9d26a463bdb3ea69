"""What a server and a tool *are*, as hashes: never their names.

A name is a label the repository chose. Claude Code keyed its approval of a project's
server by name, so a ``.mcp.json`` whose command changed under an approved name ran
silently. Here a server is the hash of everything that decides what runs and what it is
handed — command, arguments, the names of the variables it gets, its URL and where its
token comes from, whether it may reach the network or write — and any change is a new
server that asks again. A tool is the hash of its name, description and input schema as
the server lists them: a description changed after approval (a "rug pull") is a new
tool, off until the person sees the change and approves it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harvey.config.mcp_settings import McpServerSettings


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def server_identity(server: McpServerSettings) -> str:
    """The SHA-256 of what the server runs and is handed (not its name, not ``confine``:
    that one is the user's own and only ever narrows)."""
    return _digest(
        {
            "command": server.command,
            "args": list(server.args),
            "env": sorted(set(server.env)),
            "url": server.url,
            "token_env": server.token_env,
            "token_command": server.token_command,
            "network": server.network,
            "reads": sorted(set(server.reads)),
            "writes": sorted(set(server.writes)),
        }
    )


def tool_pin(name: str, description: str | None, schema: Any) -> str:
    """The SHA-256 of a tool as the model would see it."""
    return _digest({"name": name, "description": description or "", "schema": schema})

"""One name, one tool: how an MCP tool is named to the model, and names that collide.

A backend's wire takes a tool name of at most 64 characters of ``[A-Za-z0-9_-]``, so
``mcp__SERVER__TOOL`` replaces every other character with ``_`` and is cut at 64. That
is not one-to-one: ``a`` + ``.b`` and ``a_`` + ``b`` both become ``mcp__a___b``, and a
registry keyed by name would let the later one silently replace the other (the model
calls one, another runs). Readable names are kept, and a name two tools would share is
refused at the start for both, in one line naming them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: What a tool's name may hold on every backend's wire.
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def model_name(server: str, tool: str) -> str:
    """``mcp__SERVER__TOOL``, at most 64 characters of ``[A-Za-z0-9_-]``."""
    return _NAME_CHARS.sub("_", f"mcp__{server}__{tool}")[:64]


def shown(server: str, tool: str) -> str:
    """``SERVER:TOOL`` for a line the person reads (the tool's name is the server's text)."""
    from harvey.terminal_text import for_terminal

    return for_terminal(f"{server}:{tool}", one_line=True)


def collisions(tools: Sequence[tuple[str, str]]) -> tuple[set[int], list[str]]:
    """Of ``(server, tool)`` pairs, the indexes of those whose model name another shares,
    and one line for each shared name, naming every tool that would take it."""
    by_name: dict[str, list[int]] = {}
    for index, (server, tool) in enumerate(tools):
        by_name.setdefault(model_name(server, tool), []).append(index)
    refused: set[int] = set()
    lines = []
    for name, indexes in by_name.items():
        if len(indexes) < 2:
            continue
        refused.update(indexes)
        named = " and ".join(shown(*tools[i]) for i in indexes)
        lines.append(
            f"MCP tools {named} would all be called {name}: none of them is offered "
            "(one name, one tool; rename a server in harvey.yaml to tell them apart)"
        )
    return refused, lines

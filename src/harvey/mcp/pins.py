"""A session's pins: each tool as it was offered when the session started.

What the model was shown at the start is what may run, all session long, approved or
not (a tool run under ``--allow-mcp`` alone has no other pin). A server that says its
tools changed (``notifications/tools/list_changed``), or that was started again, is
listed again before its next call, within the same bounds; a tool whose description or
schema is no longer what was offered, or that is gone, is off for the rest of the
session — its calls refused in one line — and the person is told at once, in one line
naming what changed. New tools a server lists mid-session are not offered: the tools
sent to the model do not change within a session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from harvey.mcp.identity import tool_pin
from harvey.mcp.names import shown

if TYPE_CHECKING:
    from harvey.mcp.base import ListedTool
    from harvey.mcp.connection import Connection

NAMED = 5


class SessionPins:
    """The tools of one server this session offered, and those since turned off."""

    def __init__(self, server: str, warn: Callable[[str], None]) -> None:
        import threading

        self.server, self.warn = server, warn
        self.offered: dict[str, ListedTool] = {}
        self.off: dict[str, str] = {}  # a tool's name → what changed
        self._lock = threading.Lock()

    def offer(self, tool: ListedTool) -> None:
        self.offered[tool.name] = tool

    def refusal(self, tool: str) -> str | None:
        why = self.off.get(tool)
        if why is None:
            return None
        return (
            f"the MCP tool {shown(self.server, tool)} changed during this session ({why}): "
            "it is off until the session ends; the user was told"
        )

    def recheck(self, connection: Connection, deadline: float | None = None) -> None:
        """List the server again when it may have changed (it said so, or it is started
        again for this call), and turn off what did."""
        from harvey.mcp.base import McpError

        with self._lock:
            connection.start(deadline)  # a server started again is listed again, first
            if not connection.relisted:
                return
            try:
                listed = {t.name: t for t in connection.list_tools(deadline)}
            except McpError as exc:
                self._turn_off({n: f"its listing was refused: {exc}" for n in self.offered})
                return
            changed = {}
            for name, before in self.offered.items():
                now = listed.get(name)
                if name in self.off:
                    continue
                if now is None:
                    changed[name] = "it is no longer listed"
                elif _pin(now) != _pin(before):
                    parts = []
                    if now.description != before.description:
                        parts.append("its description")
                    if now.schema != before.schema:
                        parts.append("its schema")
                    changed[name] = " and ".join(parts) or "its name"
            self._turn_off(changed)

    def _turn_off(self, changed: dict[str, str]) -> None:
        fresh = {n: why for n, why in changed.items() if n not in self.off}
        if not fresh:
            return
        self.off.update(fresh)
        items = [f"{shown(self.server, n)} ({why})" for n, why in fresh.items()]
        named = ", ".join(items[:NAMED]) + (
            f" and {len(items) - NAMED} more" if len(items) > NAMED else ""
        )
        self.warn(
            f"MCP server {self.server}: {len(items)} tool{'s' if len(items) > 1 else ''} "
            f"changed during this session, off until it ends: {named}"
        )


def _pin(tool: ListedTool) -> str:
    return tool_pin(tool.name, tool.description, tool.schema)

"""The words the MCP modules meet at: a server's error, a listed tool, and what a
connection needs from the session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvey.errors import HarveyError

if TYPE_CHECKING:
    from harvey.config.settings import LimitsSettings, Paths, Settings

#: What the person is told when the SDK is missing.
INSTALL_HINT = "MCP servers need the optional SDK: pip install 'harvey-agent[mcp]'"


class McpError(HarveyError):
    """A server that cannot start, answer or be confined: one line, never a traceback."""


@dataclass(frozen=True)
class ListedTool:
    """A tool as its server lists it: untrusted text, shown sanitised, pinned by hash."""

    name: str
    description: str
    schema: dict[str, Any]
    read_only_hint: bool | None  # the server's claim, never a permission
    output_schema: bool = False  # whether it declares one (never checked: SCHEMA_NOT_CHECKED)


@dataclass(frozen=True)
class Surroundings:
    """What a connection needs from the session: where, how confined, how limited."""

    workspace: Path
    sandbox: str = "auto"
    limits: LimitsSettings | None = None
    secret_files: tuple[str, ...] = ()
    harvey_home: Path | None = None  # Harvey's own state: no grant of a server reaches it
    max_tools: int = 1000  # mcp.max_tools
    max_listing_bytes: int = 4 << 20  # mcp.max_listing_bytes

    @classmethod
    def of(cls, paths: Paths, settings: Settings) -> Surroundings:
        """A session's: its workspace and home, its ``security:`` and ``mcp:`` settings."""
        security, mcp = settings.security, settings.mcp
        return cls(
            paths.workspace, security.sandbox, security.limits,
            tuple(security.secret_files), paths.harvey_home,
            mcp.max_tools, mcp.max_listing_bytes,
        )  # fmt: skip

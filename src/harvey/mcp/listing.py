"""A server's tool listing, bounded before it is parsed.

A listing is untrusted data whose size the server chooses: 1,000,000 tools over 100 pages
cost Harvey 1.3 GB and more than 100 s before the SDK was done reading it, and the SDK's
own parse of a message into models costs some 55 bytes of memory a byte of JSON. So
every page is counted as it arrives, by the transport, before the SDK sees it: its bytes
against ``mcp.max_listing_bytes`` (every page together), its tools against
``mcp.max_tools`` (Python's own ``json`` counts them, at a tenth of the SDK's cost). Past
either, the server is refused in one line and ended; a listing that runs past
``MAX_PAGES`` pages is refused too. The whole listing is one request to the person: it
ends within the server's ``timeout`` (``connection.py``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harvey.mcp.base import ListedTool
    from mcp import ClientSession

#: The most pages one listing may take.
MAX_PAGES = 100


class ListingGuard:
    """The bounds of one connection's listings, and what the one under way has cost."""

    def __init__(self, max_tools: int = 1000, max_bytes: int = 4 << 20) -> None:
        self.max_tools, self.max_bytes = max_tools, max_bytes
        self.active = False
        self.tools = self.bytes = 0
        self.why: str | None = None  # why the listing under way was refused

    def begin(self) -> None:
        self.active, self.tools, self.bytes, self.why = True, 0, 0, None

    def end(self) -> None:
        self.active = False

    def room(self) -> int:
        """How many more bytes the listing under way may take."""
        return max(0, self.max_bytes - self.bytes)

    def over_bytes(self) -> str:
        self.why = (
            f"its tool listing is over {self.max_bytes:,} bytes (mcp.max_listing_bytes): "
            "Harvey refused the server"
        )
        return self.why

    def over_tools(self, count: int) -> str:
        self.why = (
            f"it lists over {self.max_tools:,} tools ({count:,} so far; mcp.max_tools): "
            "Harvey refused the server"
        )
        return self.why

    def take(self, payload: bytes) -> str | None:
        """Count one message (or an HTTP body) of a listing: why it is refused, or None."""
        self.bytes += len(payload)
        if self.bytes > self.max_bytes:
            return self.over_bytes()
        self.tools += count_tools(payload)
        if self.tools > self.max_tools:
            return self.over_tools(self.tools)
        return None


def count_tools(payload: bytes) -> int:
    """The tools a JSON-RPC message (or a batch, or an event stream's ``data:`` lines)
    lists: ``len(result.tools)`` of each response in it."""
    texts = [payload]
    if payload.lstrip()[:1] not in (b"{", b"["):  # an event stream
        texts, data = [], []
        for line in [*payload.splitlines(), b""]:
            if line.startswith(b"data:"):
                data.append(line[5:].strip())
            elif not line.strip() and data:
                texts.append(b"\n".join(data))
                data = []
    total = 0
    for text in texts:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
            continue
        for message in value if isinstance(value, list) else [value]:
            result = message.get("result") if isinstance(message, dict) else None
            tools = result.get("tools") if isinstance(result, dict) else None
            total += len(tools) if isinstance(tools, list) else 0
    return total


def lists_tools(content: bytes) -> bool:
    """Whether an HTTP request's body is a ``tools/list`` request."""
    try:
        value = json.loads(content)
    except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
        return False
    messages = value if isinstance(value, list) else [value]
    return any(isinstance(m, dict) and m.get("method") == "tools/list" for m in messages)


async def listing(session: ClientSession, guard: ListingGuard) -> list[ListedTool]:
    """Every page of the server's tools, within the guard's bounds."""
    from harvey.mcp.base import ListedTool, McpError
    from mcp import types

    tools: list[ListedTool] = []
    cursor: str | None = None
    guard.begin()
    try:
        for _page in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await session.list_tools(params=params)
            for tool in result.tools:
                hint = getattr(tool.annotations, "read_only_hint", None)
                schema: dict[str, Any] = dict(tool.input_schema)
                tools.append(ListedTool(tool.name, tool.description or "", schema, hint,
                                        tool.output_schema is not None))  # fmt: skip
            if len(tools) > guard.max_tools:  # the transport counts first; this holds anyway
                raise McpError(guard.over_tools(len(tools)))
            cursor = getattr(result, "next_cursor", None)
            if not cursor:
                return tools
        raise McpError(f"its tool listing runs past {MAX_PAGES} pages: Harvey refused the server")
    finally:
        guard.end()

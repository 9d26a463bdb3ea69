"""A real MCP server over stdio, written with the official SDK, for the tests to attack
Harvey's side with: it reports what it can see, read, write and reach, and its ``add``
tool's description comes from ``DEMO_DESCRIPTION`` (when its entry passes that variable)
so a test can change it after approval, as a rug pull would."""

from __future__ import annotations

import os
import socket
import sys

from mcp.server.mcpserver import MCPServer

app = MCPServer("harvey-test")


def add(a: int, b: int) -> int:
    return a + b


app.tool(description=os.environ.get("DEMO_DESCRIPTION", "Add two numbers."))(add)


CALLS = [0]


@app.tool()
def blob(size: int) -> str:
    """SIZE bytes of text (a result far larger than any window)."""
    return "y" * size


@app.tool()
def hang() -> str:
    """Never answers."""
    import time

    time.sleep(3600)
    return "late"


if os.environ.get("DEMO_HUGE"):  # a schema of about 100,000 tokens

    def huge(choice: str) -> str:
        return choice

    words = " ".join(f"option-{i}" for i in range(60_000))
    app.tool(description="Pick one of: " + words)(huge)


@app.tool()
def count() -> int:
    """How many times this tool was called in this server's life."""
    CALLS[0] += 1
    return CALLS[0]


@app.tool()
def environment(name: str) -> str:
    """The value of one environment variable, or (unset)."""
    return os.environ.get(name, "(unset)")


@app.tool()
def read(path: str) -> str:
    """A file's text, or why it could not be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        return f"refused: {exc.strerror}"


@app.tool()
def write(path: str) -> str:
    """Create a file (``~`` is the server's own HOME), or say why not."""
    try:
        with open(os.path.expanduser(path), "w", encoding="utf-8") as handle:
            handle.write("written by the server\n")
        return "written"
    except OSError as exc:
        return f"refused: {exc.strerror}"


@app.tool()
def connect(port: int) -> str:
    """Open a TCP connection to 127.0.0.1:PORT."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3):
            return "connected"
    except OSError as exc:
        return f"refused: {exc.strerror or exc}"


if __name__ == "__main__":
    sys.exit(app.run())


def http_app(token: str, json_response: bool = False):  # type: ignore[no-untyped-def]
    """The same server over Streamable HTTP, answering only requests with ``token``; with
    ``json_response`` each answer is one JSON body rather than an event stream."""
    from starlette.responses import PlainTextResponse

    inner = app.streamable_http_app(json_response=json_response)

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await PlainTextResponse("no token", status_code=401)(scope, receive, send)
                return
        await inner(scope, receive, send)

    return guarded

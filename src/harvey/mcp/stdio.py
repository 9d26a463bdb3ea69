"""The stdio transport to a server, every message bounded.

The SDK's own stdio client keeps a line until its newline arrives, however long, and
joins each piece of it to all that came before: a server that answers with 50 MB on one
line cost Harvey a minute of one core and the call's whole timeout, and would cost more
memory the longer the line. Here a message is read in pieces, kept once, and a message
over ``MAX_MESSAGE_BYTES`` ends the server: the call fails with one line that says so,
after at most that many bytes were held.

Otherwise it does what the SDK's does: the server's stderr is not the person's screen
(it goes nowhere), the environment is the SDK's default one (``PATH``, ``HOME``…) under
what the confinement set, and at the end the server's stdin closes, it gets two seconds
to leave, and its process group is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harvey.mcp.listing import ListingGuard

MAX_MESSAGE_BYTES = 8 << 20  # one JSON-RPC message; a tool's result is cut to 1 MB anyway
_GRACE_SECONDS = 2.0


class Ending:
    """Why Harvey ended a server's connection itself, for the call that then fails."""

    def __init__(self) -> None:
        self.why: str | None = None


class Oversized(Exception):
    """A message longer than the limit: the connection ends."""


class Lines:
    """The messages of a byte stream, one a line, each held once while it arrives (no
    piece joined again to all before it) and none longer than ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The messages ``data`` completes (blank lines skipped); raises ``Oversized``."""
        done: list[bytes] = []
        while data:
            end = data.find(b"\n")
            self.held += data if end < 0 else data[:end]
            if len(self.held) > self.limit:
                raise Oversized
            if end < 0:
                break
            data = data[end + 1 :]
            if self.held.strip():
                done.append(bytes(self.held))
            self.held.clear()
        return done


@contextlib.asynccontextmanager
async def bounded_stdio(
    argv: Sequence[str],
    env: dict[str, str],
    cwd: Path,
    ending: Ending,
    limit: int = MAX_MESSAGE_BYTES,
    guard: ListingGuard | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """``(read, write)`` streams of ``SessionMessage`` for ``ClientSession``; while a
    listing is under way (``guard``), every message counts against its bounds."""
    import anyio
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=str(cwd),
        env=get_default_environment() | env,
        start_new_session=True,  # its own process group: ended whole
    )
    read_in, read_out = anyio.create_memory_object_stream[Any](0)
    write_in, write_out = anyio.create_memory_object_stream[Any](0)

    async def from_server() -> None:
        assert process.stdout is not None
        lines = Lines(limit)
        async with read_in:
            try:
                async for data in process.stdout:
                    listing = guard is not None and guard.active
                    lines.limit = min(limit, guard.room()) if guard and listing else limit
                    for line in lines.feed(data):
                        refused = guard.take(line) if guard and guard.active else None
                        if refused:
                            ending.why = refused
                            _kill(process.pid)
                            return
                        await read_in.send(_parsed(line, SessionMessage))
            except Oversized:
                if guard is not None and lines.limit < limit:
                    ending.why = guard.over_bytes()
                else:
                    ending.why = f"the server sent a message over {limit >> 20} MB: Harvey ended it"
                _kill(process.pid)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                return

    async def to_server() -> None:
        assert process.stdin is not None
        try:
            async with write_out:
                async for message in write_out:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((text + "\n").encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_in.aclose()  # the session sees the end, not a request left hanging

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(from_server)
        tasks.start_soon(to_server)
        try:
            yield read_out, write_in
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
                for stream in (read_out, write_in, read_in, write_out):
                    await stream.aclose()
            tasks.cancel_scope.cancel()


def _parsed(line: bytes, session_message: Any) -> Any:
    """A message, or the parse error as a value (the session reports it, as the SDK's
    transport does)."""
    from mcp import types

    try:
        return session_message(types.jsonrpc_message_adapter.validate_json(line))
    except ValueError as exc:
        return exc


async def _stop(process: Any) -> None:
    """Close its stdin, give it the grace period, then kill its process group."""
    import anyio

    with contextlib.suppress(Exception):
        await process.stdin.aclose()
    with anyio.move_on_after(_GRACE_SECONDS) as waited:
        await process.wait()
    if waited.cancelled_caught:
        _kill(process.pid)
    with anyio.move_on_after(_GRACE_SECONDS), contextlib.suppress(Exception):
        await process.aclose()  # its pipes closed and it reaped, before the loop ends


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)

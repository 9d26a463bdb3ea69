"""Speaking to one MCP server through the official SDK, confined like a command.

A stdio server starts under Harvey's launcher with a policy of its own: it reads the
system folders, the workspace (less its secret files) and the folders its entry lists in
``reads``; it writes only its private scratch folder (its ``HOME`` and ``TMPDIR``) and
the folders in ``writes``; it reaches the network only when its entry says ``network:
true``; its environment is scrubbed to the launcher's few variables plus the ones its
entry names in ``env``; and it and every process it starts end when Harvey's session
does. A server that cannot run confined here is refused unless the user's own file says
``confine: false`` (then it runs with only the limits and the reaping) — ``launch.py``.

The server's ``timeout`` is what the person waits, at most, for one call or listing
(every page of it), its start included: never twice that (a ``deadline`` carries it
through a start, a listing again and the call). Its listings are bounded
before they are parsed (``listing.py``). A result's ``structuredContent`` is not checked
against the tool's output schema: the SDK would do it inside Harvey's process, where a
catastrophic regex in a schema blocks every thread (``re`` holds the interpreter while it
backtracks); Harvey reads the result's text and never trusts its structure, so the check
is skipped (``NoSchemaChecks``) rather than run where it can hang.

The SDK is asynchronous and optional (``harvey-agent[mcp]``): it is imported by this
package only (here and by its bounded transports, ``stdio.py`` and ``http.py``),
when a server is used; a ``Connection`` keeps one event loop in a thread of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from harvey.config.mcp_settings import McpServerSettings
from harvey.mcp.base import INSTALL_HINT, ListedTool, McpError, Surroundings
from harvey.mcp.launch import bearer_token, confined, grant_problem
from harvey.mcp.listing import ListingGuard, listing
from harvey.mcp.stdio import Ending

if TYPE_CHECKING:
    from mcp import ClientSession

T = TypeVar("T")
#: How much later than Harvey's own deadline the SDK gives up on a request: Harvey's
#: fires first, says so in one line and cancels the request, the server kept.
_SDK_GRACE = 5.0

__all__ = [
    "INSTALL_HINT", "Connection", "ListedTool", "McpError", "Surroundings", "bearer_token",
    "call_tool", "confinement_of", "grant_problem", "list_tools",
]  # fmt: skip

#: Why a result's structure is never checked against its output schema (``harvey mcp
#: tools`` says it of each tool that declares one).
SCHEMA_NOT_CHECKED = (
    "its output schema is not checked: Harvey reads the result's text, and the SDK's "
    "check would run the server's regexes in Harvey's process, where one can block it"
)


def confinement_of(server: McpServerSettings, around: Surroundings) -> str:
    """One line on how ``server`` runs here (``harvey doctor``, ``harvey mcp list``)."""
    if server.transport == "http":
        return "HTTP: runs elsewhere; Harvey only sends it requests"
    if not server.confine:
        return "NOT confined (confine: false in your own harvey.yaml): limits and reaping only"
    from harvey.confine import sandbox

    found = sandbox.detect(around.sandbox)
    if not found.active:
        return f"refused: no OS confinement here ({found.reason}); confine: false would run it"
    net = "network" if server.network else "no network"
    writes = (
        f"writes its scratch folder and {len(server.writes)} more"
        if server.writes
        else ("writes only its scratch folder")
    )
    return f"{found.kind}: reads the workspace and system folders, {writes}, {net}"


def list_tools(server: McpServerSettings, around: Surroundings) -> list[ListedTool]:
    """The server's tools, every page of them, from a server started for this alone."""
    connection = Connection(server, around)
    try:
        return connection.list_tools()
    finally:
        connection.close()


def call_tool(
    server: McpServerSettings, around: Surroundings, name: str, arguments: dict[str, Any]
) -> tuple[str, bool]:
    """The text of one call's result, and whether the server called it an error (from a
    server started for this call alone)."""
    connection = Connection(server, around)
    try:
        return connection.call_tool(name, arguments)
    finally:
        connection.close()


class Connection:
    """One server kept for a session: started on first use, its calls made on one event
    loop in a thread of its own, ended (the server and every process it started) by
    ``close`` — a session's servers keep their state between calls, as they expect. A
    server that ended or failed is started again on the next call.

    ``relisted`` is set when what the session was shown may no longer be what the server
    lists: it said its tools changed (``notifications/tools/list_changed``), or it was
    started again; the session then lists them again before a call (``mcp/pins.py``)."""

    def __init__(self, server: McpServerSettings, around: Surroundings) -> None:
        import threading

        self.server, self.around = server, around
        self.guard = ListingGuard(around.max_tools, around.max_listing_bytes)
        self.relisted = False
        self._started_once = False
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._ending = Ending()  # why Harvey itself ended the server, when it did

    def list_tools(self, deadline: float | None = None) -> list[ListedTool]:
        """Every page of its tools; by ``deadline`` (``time.monotonic()``), else within its
        ``timeout`` from now."""
        try:
            tools = self._call(lambda session: listing(session, self.guard), deadline)
        except McpError:
            self.close(wait=False)  # a refused listing refuses the server (afresh if asked)
            raise
        self.relisted = False
        return tools

    def call_tool(
        self, name: str, arguments: dict[str, Any], deadline: float | None = None
    ) -> tuple[str, bool]:
        return self._call(lambda session: _calling(session, name, arguments), deadline)

    def start(self, deadline: float | None = None) -> None:
        """Start the server now if it is not running (then ``relisted`` says whether what
        it lists must be asked again before a call)."""
        with self._lock:
            self._start(self._deadline(deadline))

    def _deadline(self, deadline: float | None) -> float:
        import time

        return time.monotonic() + self.server.timeout if deadline is None else deadline

    def close(self, wait: bool = True) -> None:
        """End the server (and every process it started); ``wait=False`` returns at once,
        its thread ending it in the background (a refusal is said without the grace a
        server gets to leave)."""
        with self._lock:
            loop, stop, thread = self._loop, self._stop, self._thread
            self._loop = self._session = self._stop = self._thread = None
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # its loop already ended
                loop.call_soon_threadsafe(stop.set)
        if thread is not None and wait:
            thread.join(10)

    def _call(
        self, work: Callable[[ClientSession], Coroutine[Any, Any, T]], deadline: float | None
    ) -> T:
        """``work`` on the session, the server's start included, ended by ``deadline``."""
        import time

        deadline = self._deadline(deadline)
        with self._lock:
            self._start(deadline)
            loop, session = self._loop, self._session
        assert loop is not None and session is not None
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(work(session), loop)
        try:
            return future.result(max(0.0, deadline - time.monotonic()))
        except McpError:
            raise
        except TimeoutError:
            future.cancel()
            if self._ending.why:
                raise McpError(self._ending.why) from None
            raise McpError(
                f"the server timed out: no answer within {self.server.timeout:g} s "
                "(its timeout in mcp.servers)"
            ) from None
        except Exception as exc:
            why = self._ending.why or f"the server failed: {_first_line(exc)}"
            self.close(wait=False)  # started afresh next time
            raise McpError(why) from None

    def _start(self, deadline: float) -> None:
        """Start the server and its loop (under ``_lock``), or raise why it cannot; the
        start and its handshake end by ``deadline``."""
        import threading
        import time

        if self._thread is not None and self._thread.is_alive() and self._session is not None:
            return
        _sdk()
        ready, abandoned = threading.Event(), threading.Event()
        self._failure = None
        self._ending = Ending()
        if self._started_once:  # another process: what it lists is asked again
            self.relisted = True
        self._started_once = True

        async def changed(message: Any) -> None:
            from mcp import types

            if isinstance(message, types.ToolListChangedNotification):
                self.relisted = True

        async def serve() -> None:
            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            try:
                async with (
                    _streams(self.server, self.around, self._ending, self.guard) as (read, write),
                    _session_class()(
                        read, write, read_timeout_seconds=self.server.timeout + _SDK_GRACE,
                        message_handler=changed,
                    ) as session,
                ):  # fmt: skip
                    await session.initialize()
                    if abandoned.is_set():  # it started after the person stopped waiting
                        return
                    self._session = session
                    ready.set()
                    await self._stop.wait()
            except BaseException as exc:
                self._failure = exc
            finally:
                self._session = None
                ready.set()

        self._thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
        self._thread.start()
        if not ready.wait(max(0.0, deadline - time.monotonic())):
            abandoned.set()
            loop, stop = self._loop, self._stop
            if loop is not None and stop is not None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(stop.set)
            self._thread = self._loop = self._stop = None
            raise McpError(f"the server did not start within {self.server.timeout:g} s")
        if self._session is None:
            failure = self._failure
            self._thread.join(10)
            self._thread = self._loop = self._stop = None
            if isinstance(failure, McpError):
                raise failure
            raise McpError(f"the server failed: {_first_line(failure or RuntimeError('ended'))}")


def _session_class() -> type[ClientSession]:
    """The SDK's ``ClientSession`` without its output-schema check (``SCHEMA_NOT_CHECKED``)."""
    from mcp import ClientSession, types

    class NoSchemaChecks(ClientSession):
        async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
            return None

    return NoSchemaChecks


async def _calling(
    session: ClientSession, name: str, arguments: dict[str, Any]
) -> tuple[str, bool]:
    import json

    result = await session.call_tool(name, arguments)
    parts = []
    for item in getattr(result, "content", None) or []:
        text = getattr(item, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(item, 'type', '?')}]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:  # its structure, as text, never trusted
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts), bool(getattr(result, "is_error", False))


def _sdk() -> None:
    try:
        import mcp  # noqa: F401 - the optional SDK, here and only here
    except ImportError:
        raise McpError(INSTALL_HINT) from None


def _first_line(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@contextlib.asynccontextmanager
async def _streams(
    server: McpServerSettings, around: Surroundings, ending: Ending, guard: ListingGuard
) -> AsyncIterator[Any]:
    if server.transport == "http":
        from mcp.client.streamable_http import streamable_http_client

        from harvey.mcp.http import bounded_client
        from harvey.mcp.stdio import MAX_MESSAGE_BYTES

        token = bearer_token(server)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            bounded_client(headers, guard=guard, ending=ending) as http,
            streamable_http_client(
                server.url or "", http_client=http, max_sse_event_size=MAX_MESSAGE_BYTES
            ) as streams,
        ):
            yield streams[0], streams[1]
        return
    from harvey.confine import sandbox
    from harvey.mcp.stdio import bounded_stdio

    with sandbox.scratch_folder() as scratch:
        argv, env = confined(server, around, scratch)
        async with bounded_stdio(argv, env, around.workspace, ending, guard=guard) as streams:
            yield streams

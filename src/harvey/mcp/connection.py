"""Speaking to one MCP server through the official SDK, confined like a command.

A stdio server starts under Harvey's launcher with a policy of its own: it reads the
system folders, the workspace (less its secret files) and the folders its entry lists in
``reads``; it writes only its private scratch folder (its ``HOME`` and ``TMPDIR``) and
the folders in ``writes``; it reaches the network only when its entry says ``network:
true``; its environment is scrubbed to the launcher's few variables plus the ones its
entry names in ``env``; and it and every process it starts end when Harvey's session
does. A server that cannot run confined here is refused unless the user's own file says
``confine: false`` (then it runs with only the limits and the reaping).

The SDK is asynchronous and optional (``harvey-agent[mcp]``): it is imported by this
package only (here and by its bounded transports, ``stdio.py`` and ``http.py``),
when a server is used; a ``Connection`` keeps one event loop in a thread of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harvey.config.mcp_settings import McpServerSettings
from harvey.errors import HarveyError
from harvey.mcp.stdio import Ending

if TYPE_CHECKING:
    from harvey.config.settings import LimitsSettings, Paths, Settings
    from harvey.workspace.secret_files import SecretFiles
    from mcp import ClientSession

T = TypeVar("T")

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


@dataclass(frozen=True)
class Surroundings:
    """What a connection needs from the session: where, how confined, how limited."""

    workspace: Path
    sandbox: str = "auto"
    limits: LimitsSettings | None = None
    secret_files: tuple[str, ...] = ()
    harvey_home: Path | None = None  # Harvey's own state: no grant of a server reaches it

    @classmethod
    def of(cls, paths: Paths, settings: Settings) -> Surroundings:
        """A session's: its workspace and home, its ``security:`` settings."""
        security = settings.security
        return cls(
            paths.workspace, security.sandbox, security.limits,
            tuple(security.secret_files), paths.harvey_home,
        )  # fmt: skip


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
    server that ended or failed is started again on the next call."""

    def __init__(self, server: McpServerSettings, around: Surroundings) -> None:
        import threading

        self.server, self.around = server, around
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._ending = Ending()  # why Harvey itself ended the server, when it did

    def list_tools(self) -> list[ListedTool]:
        return self._call(_listing)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        return self._call(lambda session: _calling(session, name, arguments))

    def close(self) -> None:
        with self._lock:
            loop, stop, thread = self._loop, self._stop, self._thread
            self._loop = self._session = self._stop = self._thread = None
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # its loop already ended
                loop.call_soon_threadsafe(stop.set)
        if thread is not None:
            thread.join(10)

    def _call(self, work: Callable[[ClientSession], Coroutine[Any, Any, T]]) -> T:
        with self._lock:
            self._start()
            loop, session = self._loop, self._session
        assert loop is not None and session is not None
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(work(session), loop)
        try:
            return future.result(self.server.timeout * 2)
        except McpError:
            raise
        except TimeoutError:
            future.cancel()
            raise McpError(
                f"the server did not answer within {self.server.timeout * 2:g} s"
            ) from None
        except Exception as exc:
            why = self._ending.why or f"the server failed: {_first_line(exc)}"
            self.close()  # started afresh next time
            raise McpError(why) from None

    def _start(self) -> None:
        """Start the server and its loop (under ``_lock``), or raise why it cannot."""
        import threading

        if self._thread is not None and self._thread.is_alive() and self._session is not None:
            return
        _sdk()
        ready = threading.Event()
        self._failure = None
        self._ending = Ending()

        async def serve() -> None:
            from mcp import ClientSession

            self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
            try:
                async with (
                    _streams(self.server, self.around, self._ending) as (read, write),
                    ClientSession(read, write, read_timeout_seconds=self.server.timeout) as session,
                ):
                    await session.initialize()
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
        if not ready.wait(self.server.timeout * 2):
            raise McpError(f"the server did not start within {self.server.timeout * 2:g} s")
        if self._session is None:
            failure = self._failure
            self._thread.join(10)
            self._thread = self._loop = self._stop = None
            if isinstance(failure, McpError):
                raise failure
            raise McpError(f"the server failed: {_first_line(failure or RuntimeError('ended'))}")


async def _listing(session: ClientSession) -> list[ListedTool]:
    from mcp import types

    tools: list[ListedTool] = []
    cursor: str | None = None
    for _page in range(100):  # a server that pages forever is cut off
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        result = await session.list_tools(params=params)
        for tool in result.tools:
            hint = getattr(tool.annotations, "read_only_hint", None)
            tools.append(
                ListedTool(tool.name, tool.description or "", dict(tool.input_schema), hint)
            )
        cursor = getattr(result, "next_cursor", None)
        if not cursor:
            break
    return tools


async def _calling(
    session: ClientSession, name: str, arguments: dict[str, Any]
) -> tuple[str, bool]:
    result = await session.call_tool(name, arguments)
    parts = []
    for item in getattr(result, "content", None) or []:
        text = getattr(item, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(item, 'type', '?')}]")
    return "\n".join(parts), bool(getattr(result, "is_error", False))


def _sdk() -> None:
    try:
        import mcp  # noqa: F401 - the optional SDK, here and only here
    except ImportError:
        raise McpError(INSTALL_HINT) from None


def bearer_token(server: McpServerSettings) -> str | None:
    """An HTTP server's token, from the variable or the command its entry names; added to
    the redactor, so no output, log or store shows it."""
    if server.token_command:
        from harvey.llm.keys import run_key_command

        return run_key_command(server.token_command)  # redacted from then on
    if not server.token_env:
        return None
    token = os.environ.get(server.token_env, "").strip()
    if not token:
        raise McpError(f"{server.token_env} is not set: the server's token comes from it")
    from harvey.redact import Redactor, active, install

    current = active()
    if token not in current.secrets:
        install(Redactor([*current.secrets, token], tokens=current.tokens))
    return token


def _first_line(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@contextlib.asynccontextmanager
async def _streams(
    server: McpServerSettings, around: Surroundings, ending: Ending
) -> AsyncIterator[Any]:
    if server.transport == "http":
        from mcp.client.streamable_http import streamable_http_client

        from harvey.mcp.http import bounded_client
        from harvey.mcp.stdio import MAX_MESSAGE_BYTES

        token = bearer_token(server)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            bounded_client(headers) as http,
            streamable_http_client(
                server.url or "", http_client=http, max_sse_event_size=MAX_MESSAGE_BYTES
            ) as streams,
        ):
            yield streams[0], streams[1]
        return
    from harvey.confine import sandbox
    from harvey.mcp.stdio import bounded_stdio

    with sandbox.scratch_folder() as scratch:
        argv, env = _confined(server, around, scratch)
        async with bounded_stdio(argv, env, around.workspace, ending) as (read, write):
            yield read, write


def grant_problem(
    grant: str, hidden: Sequence[str], secrets: SecretFiles, harvey_home: Path | None
) -> str | None:
    """Why a folder an entry lets a confined server read or write (``reads``, ``writes``)
    would reach past what the confinement keeps out, or None: a secret file of the
    workspace beneath it (the view leaves those out; a grant would hand them back),
    Harvey's own state (its sessions, the approvals a server could write itself into),
    the home folder or a folder above it, or a secret place in it (``~/.ssh``)."""

    def beneath(path: str, root: str) -> bool:
        return path == root or path.startswith(root.rstrip("/") + "/")

    if any(beneath(h, grant) for h in hidden):
        return "holds a secret file of the workspace"
    home = os.path.realpath(os.path.expanduser("~"))
    if harvey_home is not None:
        own = os.path.realpath(harvey_home)
        if beneath(own, grant) or beneath(grant, own):
            return "holds Harvey's own state (HARVEY_HOME)"
    if beneath(home, grant):
        return "holds the home folder, and its keys"
    inside = os.path.relpath(grant, home)
    if beneath(grant, home) and (secrets.matches(inside) or secrets.matches(inside + "/x")):
        return "is a secret place of the home folder"
    return None


def _confined(
    server: McpServerSettings, around: Surroundings, scratch: Path
) -> tuple[list[str], dict[str, str]]:
    """The argv that starts ``server`` under the launcher, and its scrubbed environment."""
    from harvey.config.settings import LimitsSettings
    from harvey.confine import sandbox
    from harvey.workspace.secret_files import SecretFiles
    from harvey.workspace.view import workspace_view

    env = sandbox.scrubbed_env(scratch)
    env.update({name: os.environ[name] for name in server.env if name in os.environ})
    argv = [server.command or "", *server.args]
    found = sandbox.detect(around.sandbox) if server.confine else sandbox.Confinement("none")
    if server.confine and not found.active:
        raise McpError(
            f"cannot run confined here ({found.reason}); only `confine: false` in your own "
            "harvey.yaml runs it without"
        )
    secrets = SecretFiles(around.secret_files)
    view = workspace_view(around.workspace, secrets) if found.active else None
    reads = tuple(os.path.realpath(r) for r in server.reads)
    writes = tuple(os.path.realpath(w) for w in server.writes)
    if view is not None:
        for grant in (*reads, *writes):
            problem = grant_problem(grant, view.hidden, secrets, around.harvey_home)
            if problem:
                raise McpError(f"the server's folder {grant} {problem}")
    policy = sandbox.Policy(
        os.path.realpath(around.workspace),
        os.path.realpath(scratch),
        read=(*sandbox.SYSTEM_DIRS, *sandbox.SYSTEM_FILES, *reads),
        view=view,
        limits=sandbox.command_limits(around.limits or LimitsSettings()),
        net=server.network,
        writes=writes,
    )
    launch = sandbox.launch(found, policy, argv)
    if launch.pass_fds:
        launch.close()
        raise McpError("the workspace's view is too large to hand the launcher a server's policy")
    return launch.argv, env

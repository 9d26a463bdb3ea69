"""Speaking to one MCP server through the official SDK, confined like a command.

A stdio server starts under Harvey's launcher with a policy of its own: it reads the
system folders, the workspace (less its secret files) and the folders its entry lists in
``reads``; it writes only its private scratch folder (its ``HOME`` and ``TMPDIR``) and
the folders in ``writes``; it reaches the network only when its entry says ``network:
true``; its environment is scrubbed to the launcher's few variables plus the ones its
entry names in ``env``; and it and every process it starts end when Harvey's session
does. A server that cannot run confined here is refused unless the user's own file says
``confine: false`` (then it runs with only the limits and the reaping).

The SDK is asynchronous and optional (``harvey-agent[mcp]``): it is imported here only,
when a server is used, and each call runs one event loop to completion.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harvey.config.mcp_settings import McpServerSettings
from harvey.errors import HarveyError

if TYPE_CHECKING:
    from harvey.config.settings import LimitsSettings
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
    """The server's tools, every page of them."""

    async def listing(session: ClientSession) -> list[ListedTool]:
        tools: list[ListedTool] = []
        cursor: str | None = None
        for _page in range(100):  # a server that pages forever is cut off
            from mcp import types

            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await session.list_tools(params=params)
            for tool in result.tools:
                hint = (
                    getattr(tool.annotations, "read_only_hint", None) if tool.annotations else None
                )
                tools.append(
                    ListedTool(tool.name, tool.description or "", dict(tool.input_schema), hint)
                )
            cursor = getattr(result, "next_cursor", None)
            if not cursor:
                break
        return tools

    return _run(server, around, listing)


def call_tool(
    server: McpServerSettings, around: Surroundings, name: str, arguments: dict[str, Any]
) -> tuple[str, bool]:
    """The text of one call's result, and whether the server called it an error."""

    async def calling(session: ClientSession) -> tuple[str, bool]:
        result = await session.call_tool(name, arguments)
        parts = []
        for item in getattr(result, "content", None) or []:
            text = getattr(item, "text", None)
            parts.append(text if isinstance(text, str) else f"[{getattr(item, 'type', '?')}]")
        return "\n".join(parts), bool(getattr(result, "is_error", False))

    return _run(server, around, calling)


def _run(
    server: McpServerSettings,
    around: Surroundings,
    work: Callable[[ClientSession], Awaitable[T]],
) -> T:
    try:
        import mcp  # noqa: F401 - the optional SDK, here and only here
    except ImportError:
        raise McpError(INSTALL_HINT) from None

    async def session_then_work() -> T:
        from mcp import ClientSession

        async with (
            _streams(server, around) as (read, write),
            ClientSession(read, write, read_timeout_seconds=server.timeout) as session,
        ):
            await session.initialize()
            return await work(session)

    try:
        return asyncio.run(asyncio.wait_for(session_then_work(), server.timeout * 2))
    except McpError:
        raise
    except TimeoutError:
        raise McpError(f"the server did not answer within {server.timeout * 2:g} s") from None
    except Exception as exc:  # the SDK's errors come wrapped in exception groups
        raise McpError(f"the server failed: {_first_line(exc)}") from None


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
async def _streams(server: McpServerSettings, around: Surroundings) -> AsyncIterator[Any]:
    if server.transport == "http":
        from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

        token = bearer_token(server)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(server.url or "", http_client=http) as streams,
        ):
            yield streams[0], streams[1]
        return
    from mcp.client.stdio import stdio_client

    from harvey.confine import sandbox
    from mcp import StdioServerParameters

    with sandbox.scratch_folder() as scratch:
        argv, env = _confined(server, around, scratch)
        params = StdioServerParameters(
            command=argv[0], args=argv[1:], env=env, cwd=str(around.workspace)
        )
        with open(os.devnull, "w") as quiet:  # a server's stderr is not the person's screen
            async with stdio_client(params, errlog=quiet) as (read, write):
                yield read, write


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
    writes = tuple(os.path.realpath(w) for w in server.writes)
    for hidden in view.hidden if view is not None else ():
        if any(hidden == w or hidden.startswith(w.rstrip("/") + "/") for w in writes):
            raise McpError(f"a folder the server may write holds a secret file ({hidden})")
    policy = sandbox.Policy(
        os.path.realpath(around.workspace),
        os.path.realpath(scratch),
        read=(*sandbox.SYSTEM_DIRS, *sandbox.SYSTEM_FILES, *map(os.path.realpath, server.reads)),
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

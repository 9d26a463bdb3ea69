"""``harvey mcp list | tools | approve | revoke | add | remove``: the MCP servers
``mcp.servers`` names.

``list`` shows each server, where it comes from (your own ``harvey.yaml`` or the
workspace's), whether it may start and how it is confined, without starting anything.
``tools`` starts an approved server and shows its tools: each one's state against its
pin (approved, new, changed), the tokens its schema costs, and any flag on a description
that reads as instructions to the model. ``approve`` is the question a workspace's server
and its tools wait for: the command (or URL) in full, then every tool, its description
sanitised, with its flags; ``--yes`` answers it from a script. ``add`` and ``remove``
edit your own ``harvey.yaml`` (``harvey.mcp.user_file``). Everything a server says is
untrusted text and passes the terminal sanitiser.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harvey.cli.errors import handle_errors
from harvey.cli.options import load, workspace_option
from harvey.errors import UsageError

if TYPE_CHECKING:
    from harvey.config.settings import Paths, Settings
    from harvey.mcp.approvals import Server
    from harvey.mcp.connection import ListedTool, Surroundings

#: How much of a description ``tools`` shows.
SHOWN_DESCRIPTION = 200


@click.group()
def mcp() -> None:
    """Model Context Protocol servers: list them, see their tools, approve them."""


@mcp.command("list")
@workspace_option
@handle_errors
def list_servers(workspace: Path | None) -> None:
    """Show the configured servers, where each comes from and how it would run."""
    from harvey.mcp.approvals import servers
    from harvey.mcp.connection import confinement_of

    paths, settings = load(workspace)
    found = servers(settings, paths)
    if not found:
        click.echo("no MCP servers (add them under mcp.servers in harvey.yaml)")
        return
    around = _surroundings(paths, settings)
    for server in found:
        click.echo(f"{_safe(server.name)}  [{_origin(server)}]  {_target(server)}")
        click.echo(f"  {confinement_of(server.settings, around)}")
        for line in _grants(server):
            click.echo(f"  {line}")
        if not server.approved:
            click.echo(f"  not started: {server.why_not}")


@mcp.command("tools")
@click.argument("name", required=False)
@workspace_option
@handle_errors
def list_tools(name: str | None, workspace: Path | None) -> None:
    """Start each approved server (or NAME) and show its tools and what they cost."""
    from harvey.mcp.approvals import tool_state
    from harvey.mcp.connection import SCHEMA_NOT_CHECKED
    from harvey.mcp.identity import tool_pin
    from harvey.mcp.names import collisions
    from harvey.mcp.offering import listed_tokens
    from harvey.mcp.screening import flags

    paths, settings = load(workspace)
    around = _surroundings(paths, settings)
    counting: tuple[Callable[[str], int] | None, str] | None = None
    listed: list[tuple[str, str]] = []  # every (server, tool), for names two would share
    for server in _chosen(paths, settings, name):
        if not server.approved:
            click.echo(f"{_safe(server.name)}: not started: {server.why_not}")
            continue
        tools = _tools(server, around)
        if counting is None:  # the model is reached only when there are schemas to count
            counting = _counter(settings)
        count, how = counting
        mark = "" if count else "~"
        total = sum(listed_tokens(server.name, t, count) for t in tools)
        click.echo(
            f"{_safe(server.name)}: {len(tools)} tools, schemas {mark}{total:,} tokens ({how})"
        )
        names = [t.name for t in tools]
        listed += [(server.name, n) for n in names]
        for tool in tools:
            state = tool_state(paths.harvey_home, server.identity, tool.name,
                               tool_pin(tool.name, tool.description, tool.schema))  # fmt: skip
            cost = listed_tokens(server.name, tool, count)
            click.echo(f"  {_safe(tool.name)}  [{state}]  {mark}{cost:,} tokens")
            click.echo(f"    {_description(tool)}")
            if state == "changed":
                _show_change(paths, server, tool)
            elif state == "new" and server.tools is not None and tool.name not in server.tools:
                click.echo("    new since the server was approved: not offered until approved")
            if tool.output_schema:
                click.echo(f"    {SCHEMA_NOT_CHECKED}")
            for flag in flags(tool.description, [n for n in names if n != tool.name]):
                click.echo(f"    ! {flag}")
    for line in collisions(listed)[1]:  # a session offers none of them
        click.echo(f"! {line}")


def _counter(settings: Settings) -> tuple[Callable[[str], int] | None, str]:
    """The configured model's exact token count when its backend can count (the embedded
    model, a llama.cpp server), else None: the schemas' cost is then Harvey's estimate."""
    from harvey.errors import HarveyError
    from harvey.llm.base import token_counter_of
    from harvey.llm.factory import make_client

    try:
        client = make_client(settings)
        tokenizer = token_counter_of(client)
    except HarveyError:
        return None, "estimated: the model cannot be reached to count"
    if tokenizer is None:
        return None, f"estimated: {client.backend} cannot count"
    return tokenizer.count, f"counted: {tokenizer.method}"


@mcp.command("approve")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Approve without asking (a script that has reviewed it).")
@workspace_option
@handle_errors
def approve(name: str, yes: bool, workspace: Path | None) -> None:
    """Approve server NAME as it is now (its command line and the files it names), and its
    tools as they are listed now: it may start and they may be offered. `harvey run`
    still calls them only under --allow-mcp or mcp.allow."""
    from harvey.mcp.approvals import (
        approve_server,
        approve_tool,
        runs_unasked,
        tool_state,
        what_changed,
    )  # fmt: skip
    from harvey.mcp.identity import tool_pin
    from harvey.mcp.screening import flags

    paths, settings = load(workspace)
    (server,) = _chosen(paths, settings, name)
    home = paths.harvey_home
    click.echo(f"{_safe(server.name)}  [{_origin(server)}]  {_target(server)}")
    for line in _grants(server):
        click.echo(f"  {line}")
    if server.change:
        click.echo(f"  changed since it was approved: {_safe(server.change)}")
    for path in sorted(server.parts.get("files") or {}):
        click.echo(f"  runs the file {_safe(path)} (pinned by its content)")
    if not server.approved and not _confirmed(yes, "Start this server to list its tools?"):
        raise SystemExit(1)
    tools = _tools(server, _surroundings(paths, settings))
    names = [t.name for t in tools]
    for tool in tools:
        click.echo(f"  {_safe(tool.name)}: {_description(tool)}")
        pin = tool_pin(tool.name, tool.description, tool.schema)
        if tool_state(home, server.identity, tool.name, pin) == "changed":
            click.echo(f"    changed: {what_changed(home, server.identity, tool)}")
            _show_change(paths, server, tool)
        for flag in flags(tool.description, [n for n in names if n != tool.name]):
            click.echo(f"    ! {flag}")
    if not _confirmed(yes, f"Approve this server and these {len(tools)} tools as they are now?"):
        raise SystemExit(1)
    approve_server(home, paths.workspace, server, names)  # only once its tools were seen
    for tool in tools:
        pin = tool_pin(tool.name, tool.description, tool.schema)
        unasked = runs_unasked(home, server.identity, tool.name, pin)  # an "always" kept
        approve_tool(home, server.identity, tool.name, pin, tool.description, tool.schema,
                     unasked=unasked)  # fmt: skip
    click.echo(f"approved {_safe(server.name)} and {len(tools)} tools")


@mcp.command("add", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--url", default=None, help="A Streamable HTTP server instead of a command.")
@click.option("--env", "env", multiple=True, metavar="VAR", help="A variable it gets (repeatable).")
@click.option("--token-env", default=None, metavar="VAR", help="The variable holding its token.")
@click.option("--network", is_flag=True, help="A confined stdio server may use the network.")
@handle_errors
def add(
    name: str,
    command: tuple[str, ...],
    url: str | None,
    env: tuple[str, ...],
    token_env: str | None,
    network: bool,
) -> None:
    """Add server NAME to your own harvey.yaml: `harvey mcp add NAME -- COMMAND [ARGS]...`
    or `harvey mcp add NAME --url URL`."""
    from pydantic import ValidationError

    from harvey.config.mcp_settings import McpServerSettings
    from harvey.mcp.user_file import add_server

    paths = _own_paths()
    given = {
        "command": command[0] if command else None, "args": list(command[1:]), "url": url,
        "env": list(env), "token_env": token_env, "network": network,
    }  # fmt: skip
    try:
        server = McpServerSettings.model_validate({k: v for k, v in given.items() if v})
    except ValidationError as exc:
        raise UsageError(f"not a server: {exc.errors()[0]['msg']}") from None
    add_server(paths.user_config_file, name, server, _loads(paths))
    click.echo(f"added {_safe(name)} to {_safe(str(paths.user_config_file))}")


@mcp.command("remove")
@click.argument("name")
@handle_errors
def remove(name: str) -> None:
    """Remove server NAME from your own harvey.yaml."""
    from harvey.mcp.user_file import remove_server

    paths = _own_paths()
    remove_server(paths.user_config_file, name, _loads(paths))
    click.echo(f"removed {_safe(name)} from {_safe(str(paths.user_config_file))}")


def _own_paths() -> Paths:
    """Where the user's own file is: no workspace file is read (or needs trust) to edit it."""
    from harvey.config.settings import resolve_paths

    return resolve_paths(None)


def _loads(paths: Paths) -> Callable[[str], None]:
    """A check that new text for the user's file loads as settings (raises ConfigError)."""
    from harvey.config.settings import Settings
    from harvey.config.yaml_text import parse

    def check(text: str) -> None:
        data = parse(paths.user_config_file, text) or {}
        try:
            Settings.model_validate(data)
        except ValueError as exc:
            raise UsageError(f"the edited file would not load: {exc}") from None

    return check


@mcp.command("revoke")
@click.argument("name")
@workspace_option
@handle_errors
def revoke(name: str, workspace: Path | None) -> None:
    """Forget the approval of this workspace's server NAME."""
    from harvey.mcp.approvals import revoke_server

    paths, _settings = load(workspace)
    if not revoke_server(paths, name):
        raise UsageError(f"no approval of a server {name!r} in this workspace to revoke")
    click.echo(f"revoked {_safe(name)}")


def _chosen(paths: Paths, settings: Settings, name: str | None) -> list[Server]:
    from harvey.mcp.approvals import servers

    found = servers(settings, paths)
    if name is None:
        return found
    chosen = [s for s in found if s.name == name]
    if not chosen:
        raise UsageError(f"no MCP server named {name!r} (see `harvey mcp list`)")
    return chosen


def _tools(server: Server, around: Surroundings) -> list[ListedTool]:
    from harvey.mcp.connection import list_tools as listing

    return listing(server.settings, around)


def _surroundings(paths: Paths, settings: Settings) -> Surroundings:
    from harvey.mcp.connection import Surroundings

    return Surroundings.of(paths, settings)


def _show_change(paths: Paths, server: Server, tool: ListedTool) -> None:
    """A changed tool's description as approved, beside what it says now."""
    from harvey.mcp.approvals import approved_description

    before = approved_description(paths.harvey_home, server.identity, tool.name)
    if before is None or before == tool.description:
        click.echo("    changed since approved: its schema (or a description not kept)")
        return
    click.echo(f"    was: {_safe(' '.join(before.split()))[:SHOWN_DESCRIPTION]}")
    click.echo(f"    now: {_description(tool)}")


def _grants(server: Server) -> list[str]:
    """What an entry hands its server beyond the defaults: the person approving sees all
    of it (a variable whose name looks like a key's, flagged)."""
    entry, lines = server.settings, []
    if entry.env:
        keys = [v for v in entry.env if re.search(r"KEY|TOKEN|SECRET|PASS|CRED|AUTH", v, re.I)]
        flag = f" (! {', '.join(keys)} may hold a key)" if keys else ""
        lines.append(f"gets the variables: {', '.join(entry.env)}{flag}")
    if entry.token_env or entry.token_command:
        source = entry.token_env or "the output of its token_command"
        lines.append(f"is sent a bearer token from {_safe(source)}")
    if entry.reads:
        lines.append(f"may read: {_safe(', '.join(entry.reads))}")
    if entry.writes:
        lines.append(f"may write: {_safe(', '.join(entry.writes))}")
    if entry.network and entry.transport == "stdio":
        lines.append("may use the network")
    return lines


def _confirmed(yes: bool, question: str) -> bool:
    return yes or click.confirm(question, default=False)


def _origin(server: Server) -> str:
    if server.origin == "user":
        return "your harvey.yaml"
    return "workspace, approved" if server.approved else "workspace, NOT approved"


def _target(server: Server) -> str:
    settings = server.settings
    if settings.url is not None:
        return _safe(settings.url)
    return _safe(" ".join([settings.command or "", *settings.args]))


def _description(tool: ListedTool) -> str:
    text = " ".join(tool.description.split())
    shown = text if len(text) <= SHOWN_DESCRIPTION else text[: SHOWN_DESCRIPTION - 1] + "…"
    return _safe(shown) or "(no description)"


def _safe(text: str) -> str:
    from harvey.redact import redact
    from harvey.terminal_text import for_terminal

    return for_terminal(redact(text))

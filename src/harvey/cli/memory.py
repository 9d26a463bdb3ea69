"""``harvey memory``: list, show, edit, flag, forget and count long-term memories.

Every command opens ``HARVEY_HOME/memory.db`` itself (none exists until the
first memory is stored, so reading commands on a fresh home print nothing and
create nothing). ``--json`` prints what scripts need; the plain forms are for
people. An unknown id is a usage error (exit 2), a broken database a store
error (exit 1), both one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from harvey.cli.errors import handle_errors
from harvey.cli.options import inherit, load_for_model, model_options, workspace_option
from harvey.errors import UsageError

MEMORY_TYPES = ("tool_use", "workflow", "user_preference", "workspace_profile", "project_fact")


def _paths(ctx: click.Context, workspace: Path | None) -> tuple[Path, Path]:
    """The workspace (resolved) and HARVEY_HOME; nothing is opened or made."""
    from harvey.config.settings import resolve_paths

    paths = resolve_paths(inherit(ctx, workspace=workspace)["workspace"])
    return paths.workspace, paths.harvey_home


@click.group()
def memory() -> None:
    """Long-term memories mined from recorded sessions (HARVEY_HOME/memory.db)."""


@memory.command("list")
@workspace_option
@click.option(
    "--type", "mtype", type=click.Choice(MEMORY_TYPES), default=None, help="Only this type."
)
@click.option("--all-workspaces", is_flag=True, help="Memories of every workspace, archived too.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.pass_context
@handle_errors
def list_memories(
    ctx: click.Context,
    workspace: Path | None,
    mtype: str | None,
    all_workspaces: bool,
    as_json: bool,
) -> None:
    """This workspace's memories and those for every workspace."""
    from harvey.memory import commands

    ws, home = _paths(ctx, workspace)
    items = commands.list_memories(home, ws, all_workspaces=all_workspaces, mtype=mtype)
    if as_json:
        click.echo(json.dumps([m.to_json() for m in items], indent=2))
        return
    if not items:
        click.echo("no memories", err=True)
    for m in items:
        state = " (archived)" if m.archived else (" (superseded)" if m.superseded_by else "")
        click.echo(f"{m.id}  {m.confidence:.2f}  {m.kind or '-'}  {m.text}{state}")


@memory.command("show")
@click.argument("memory_id")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
@handle_errors
def show(ctx: click.Context, memory_id: str, as_json: bool) -> None:
    """Every field of one memory."""
    from harvey.memory import commands

    data = commands.show(_paths(ctx, None)[1], memory_id)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    for key, value in data.items():
        click.echo(f"{key}: {value}")


@memory.command("edit")
@click.argument("memory_id")
@click.pass_context
@handle_errors
def edit(ctx: click.Context, memory_id: str) -> None:
    """Edit a memory's text in $VISUAL or $EDITOR; an unchanged or empty text changes nothing."""
    import tempfile

    from harvey.memory.commands import clean_text, store_for
    from harvey.repl.commands import open_editor

    ws, home = _paths(ctx, None)
    with store_for(home, memory_id) as store:
        item = store.require(memory_id)
        if not (os.environ.get("VISUAL") or os.environ.get("EDITOR")):
            raise UsageError("set $EDITOR (or $VISUAL) to edit a memory")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{item.id}.txt"
            path.write_text(item.text + "\n", encoding="utf-8")
            open_editor(str(path))
            text = path.read_text(encoding="utf-8").strip()
        if not text or text == item.text:
            click.echo("unchanged", err=True)
            return
        store.set_text(item.id, clean_text(text, ws))
    click.echo(f"{item.id} updated")


@memory.command("flag")
@click.argument("memory_id")
@click.pass_context
@handle_errors
def flag(ctx: click.Context, memory_id: str) -> None:
    """Lower a memory's confidence by 0.1; at or below 0.2 it is archived."""
    from harvey.memory import commands

    click.echo(commands.flag(_paths(ctx, None)[1], memory_id))


@memory.command("forget")
@click.argument("memory_id")
@click.pass_context
@handle_errors
def forget(ctx: click.Context, memory_id: str) -> None:
    """Delete a memory for good."""
    from harvey.memory import commands

    click.echo(commands.forget(_paths(ctx, None)[1], memory_id))


@memory.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
@handle_errors
def status(ctx: click.Context, as_json: bool) -> None:
    """How many memories are active, archived and superseded; how many recordings were mined."""
    from harvey.memory import commands

    counts = commands.counts(_paths(ctx, None)[1])
    if as_json:
        click.echo(json.dumps(counts))
        return
    for key, value in counts.items():
        click.echo(f"{key.replace('_', ' ')}: {value}")


@memory.command("mine")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--all", "all_", is_flag=True, help="Mine every recording of the workspace.")
@click.option("--yes", "-y", is_flag=True, help="Accept every proposal without review.")
@click.option("--force", is_flag=True, help="Mine recordings that were mined before.")
@workspace_option
@model_options
@click.pass_context
@handle_errors
def mine(
    ctx: click.Context,
    files: tuple[Path, ...],
    all_: bool,
    yes: bool,
    force: bool,
    workspace: Path | None,
    backend: str | None,
    base_url: str | None,
    model: str | None,
    endpoints: tuple[str, ...],
) -> None:
    """Propose memories from recorded sessions, review them, store the accepted ones."""
    import sys

    from harvey.inputs import check_input_file
    from harvey.llm.factory import make_client
    from harvey.memory import commands
    from harvey.session.location import recording_files

    if not files and not all_:
        raise UsageError("name recordings to mine (FILE.spmd ...) or use --all")
    for file in files:
        check_input_file(file, "recording")
    if not yes and not sys.stdin.isatty():
        raise UsageError(
            "no terminal to review the proposals on; nothing stored (--yes accepts all)"
        )
    paths, settings = load_for_model(ctx, workspace, backend, base_url, model, endpoints)
    targets = list(files) + (
        recording_files(paths, settings) if all_ else []  # never through a link
    )
    if not targets:
        click.echo("no recordings to mine", err=True)
        return
    client = make_client(settings)
    try:
        window = settings.context_window or client.capabilities().context_window
        report = commands.mine(
            targets,
            harvey_home=paths.harvey_home,
            settings=settings,
            client=client,
            workspace=paths.workspace,
            context_window=window,
            ask=None if yes else (lambda q: click.prompt(q, default="s", show_default=False)),
            echo=click.echo,
            warn=lambda text: click.echo(text, err=True),
            force=force,
        )
    finally:
        client.close()
    click.echo(
        f"{report.accepted} memories stored; {report.rejected} rejected for credentials, "
        f"{report.duplicates} duplicates"
    )

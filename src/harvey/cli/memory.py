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
from typing import TYPE_CHECKING

import click

from harvey.cli.errors import handle_errors
from harvey.cli.options import inherit, load_for_model, model_options, workspace_option
from harvey.errors import UsageError

if TYPE_CHECKING:
    from harvey.memory.store import MemoryStore

MEMORY_TYPES = ("tool_use", "workflow", "user_preference", "workspace_profile", "project_fact")


def _open(ctx: click.Context, workspace: Path | None) -> tuple[Path, MemoryStore | None]:
    """The workspace (resolved) and the store, or None when there is no memory.db yet."""
    from harvey.config import resolve_paths
    from harvey.memory.startup import memory_db
    from harvey.memory.store import MemoryStore

    opts = inherit(ctx, workspace=workspace)
    paths = resolve_paths(opts["workspace"])
    db = memory_db(paths.harvey_home)
    if not db.exists():
        return paths.workspace, None
    return paths.workspace, MemoryStore(db)


def _open_for(ctx: click.Context, memory_id: str) -> tuple[Path, MemoryStore]:
    """The workspace and the store for a command naming ``memory_id``: with no memory.db
    yet there is no such memory, the same usage error as an unknown id (and nothing made)."""
    workspace, store = _open(ctx, None)
    if store is None:
        raise UsageError(f"no memory {memory_id!r} (no memories yet)")
    return workspace, store


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
    ws, store = _open(ctx, workspace)
    items = []
    if store is not None:
        with store:
            items = store.memories(
                workspace=str(ws),
                all_workspaces=all_workspaces,
                mtype=mtype,
                include_inactive=all_workspaces,
            )
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
    _, store = _open_for(ctx, memory_id)
    with store:
        item = store.require(memory_id)
    data = item.to_json()
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

    from harvey.memory.scrub import scrub
    from harvey.repl.commands import open_editor

    ws, store = _open_for(ctx, memory_id)
    with store:
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
        cleaned = scrub(text, workspace=ws)
        if cleaned.rejected:
            raise UsageError(f"not saved: the text {cleaned.rejected}")
        store.set_text(item.id, cleaned.text)
    click.echo(f"{item.id} updated")


@memory.command("flag")
@click.argument("memory_id")
@click.pass_context
@handle_errors
def flag(ctx: click.Context, memory_id: str) -> None:
    """Lower a memory's confidence by 0.1; at or below 0.2 it is archived."""
    _, store = _open_for(ctx, memory_id)
    with store:
        item = store.flag(memory_id)
    note = ", archived" if item.archived else ""
    click.echo(f"{item.id}: confidence {item.confidence:.2f}{note}")


@memory.command("forget")
@click.argument("memory_id")
@click.pass_context
@handle_errors
def forget(ctx: click.Context, memory_id: str) -> None:
    """Delete a memory for good."""
    _, store = _open_for(ctx, memory_id)
    with store:
        store.forget(memory_id)
    click.echo(f"{memory_id} forgotten")


@memory.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.pass_context
@handle_errors
def status(ctx: click.Context, as_json: bool) -> None:
    """How many memories are active, archived and superseded; how many recordings were mined."""
    _, store = _open(ctx, None)
    counts = {"active": 0, "archived": 0, "superseded": 0, "mined_recordings": 0}
    if store is not None:
        with store:
            counts = store.counts()
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

    from harvey.chat.runtime import recording_files
    from harvey.inputs import check_input_file
    from harvey.llm.factory import make_client
    from harvey.memory.mining import concurrency_for
    from harvey.memory.review import mine_files
    from harvey.memory.startup import memory_db
    from harvey.memory.store import MemoryStore
    from harvey.memory.vectors import open_vectors

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
        with MemoryStore(memory_db(paths.harvey_home)) as store:
            report = mine_files(
                targets,
                store=store,
                client=client,
                workspace=paths.workspace,
                context_window=window,
                ask=None if yes else (lambda q: click.prompt(q, default="s", show_default=False)),
                echo=click.echo,
                force=force,
                vectors=open_vectors(store, settings, lambda text: click.echo(text, err=True)),
                concurrency=concurrency_for(settings.chunking, client),
            )
    finally:
        client.close()
    click.echo(
        f"{report.accepted} memories stored; {report.rejected} rejected for credentials, "
        f"{report.duplicates} duplicates"
    )

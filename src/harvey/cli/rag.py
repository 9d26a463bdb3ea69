"""``harvey rag``: make, fill, inspect, query and drop knowledge stores.

Each store is ``<workspace>/.harvey/rag/NAME.db``. Usage errors (a bad or
unknown name, a path outside the workspace, another embedder) exit 2;
failures (a corrupted store, an embedder server that is down) exit 1 — one
line either way, and nothing in this or any other store is lost. The doing is
``harvey.knowledge.commands``, shared with the REPL's ``/rag``; this module renders.
"""

from __future__ import annotations

import json
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harvey.cli.errors import handle_errors
from harvey.cli.options import load, workspace_option

if TYPE_CHECKING:
    from harvey.knowledge.ingest import Progress


@click.group()
def rag() -> None:
    """Knowledge stores: ingest files, retrieve passages into each turn."""


@rag.command("new")
@click.argument("name")
@click.option(
    "--embedder",
    default=None,
    help="none, local, ollama:MODEL or openai:MODEL (default: local if installed, else none).",
)
@workspace_option
@handle_errors
def new(name: str, embedder: str | None, workspace: Path | None) -> None:
    """Create the empty store NAME, bound to an embedder."""
    from harvey.knowledge import commands

    paths, _settings = load(workspace)
    click.echo(commands.create(paths.workspace, name, embedder))


def _progress_bar() -> tuple[AbstractContextManager[Any], Progress | None]:
    """A rich bar (files and bytes) on a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        return nullcontext(), None
    from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress

    from harvey.terminal_text import safe_console

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        DownloadColumn(),
        console=safe_console(stderr=True),
        transient=True,
    )
    files = bar.add_task("files", total=None)
    size = bar.add_task("bytes", total=None)

    def update(done: int, total: int, done_bytes: int, total_bytes: int) -> None:
        bar.update(files, completed=done, total=total)
        bar.update(size, completed=done_bytes, total=total_bytes)

    return bar, update


@rag.command("ingest")
@click.argument("name")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--include", multiple=True, metavar="GLOB", help="Only files matching GLOB (repeatable)."
)
@click.option(
    "--exclude", multiple=True, metavar="GLOB", help="Skip files matching GLOB (repeatable)."
)
@click.option("--embedder", default=None, help="Check the store is bound to this embedder.")
@workspace_option
@handle_errors
def ingest(
    name: str,
    paths: tuple[str, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    embedder: str | None,
    workspace: Path | None,
) -> None:
    """Ingest files and folders (recursively) into NAME; unchanged files are skipped."""
    from harvey.knowledge import commands
    from harvey.knowledge.service import open_knowledge

    paths_, settings = load(workspace)
    knowledge = open_knowledge(paths_.workspace, name, settings, embedder=embedder)
    try:
        bar, update = _progress_bar()
        with bar:
            report = commands.ingest(
                knowledge,
                paths_.workspace,
                paths,
                include=include,
                exclude=exclude,
                progress=update,
            )
    finally:
        knowledge.close()
    for path, why in report.skipped:
        click.echo(f"skipped {path}: {why}", err=True)
    click.echo(f"{name}: {report.summary()}")


@rag.command("list")
@workspace_option
@handle_errors
def list_(workspace: Path | None) -> None:
    """List this workspace's stores."""
    from harvey.knowledge import commands

    paths, settings = load(workspace)
    rows = commands.summaries(paths.workspace)
    if not rows:
        click.echo(commands.NO_STORES, err=True)
    for row in rows:
        active = " (active)" if row.name == settings.rag.active else ""
        click.echo(f"{row.name}{active}  {row.files} files, {row.chunks} chunks, {row.embedder}")


@rag.command("status")
@click.argument("name")
@workspace_option
@handle_errors
def status(name: str, workspace: Path | None) -> None:
    """Files, chunks, bytes, embedder, last ingest and files changed on disk since."""
    from harvey.knowledge import commands

    paths, _settings = load(workspace)
    s = commands.status(paths.workspace, name)
    click.echo(f"store:       {s.name} ({s.path})")
    click.echo(f"embedder:    {s.embedder}")
    click.echo(f"files:       {s.files}")
    click.echo(f"chunks:      {s.chunks}")
    click.echo(f"bytes:       {s.size}")
    click.echo(f"last ingest: {s.last_ingest}")
    click.echo(f"changed:     {s.changed} files changed on disk since")


@rag.command("query")
@click.argument("name")
@click.argument("text")
@click.option(
    "-k", "k", type=click.IntRange(1, 100), default=5, show_default=True, help="How many passages."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, best first.")
@workspace_option
@handle_errors
def query(name: str, text: str, k: int, as_json: bool, workspace: Path | None) -> None:
    """Search NAME for TEXT and print the best passages above the relevance floor.

    When nothing reaches the floor (rag.floor in harvey.yaml) it says "no passage
    above the floor" on stderr (--json prints []).
    """
    from harvey.knowledge import commands

    paths, settings = load(workspace)
    ranked = commands.query_ranked(paths.workspace, name, settings, text, k)
    hits = ranked.hits
    if not hits:
        click.echo(commands.empty_line(ranked), err=True)
    if as_json:
        rows = [commands.hit_row(h) for h in hits]
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    for h in hits:
        click.echo(commands.hit_line(h))
        for line in h.chunk.text.strip().splitlines()[:6]:
            click.echo(f"    {line}")


@rag.command("drop")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask.")
@workspace_option
@handle_errors
def drop(name: str, yes: bool, workspace: Path | None) -> None:
    """Delete the store NAME (asks first)."""
    from harvey.errors import Cancelled
    from harvey.knowledge.commands import existing_store_path
    from harvey.knowledge.store import drop_store

    paths, _settings = load(workspace)
    path = existing_store_path(paths.workspace, name)
    if not yes and not click.confirm(f"delete knowledge store {name} ({path})?", default=False):
        raise Cancelled("not deleted")
    drop_store(paths.workspace, name)
    click.echo(f"dropped store {name}")

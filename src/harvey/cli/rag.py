"""``harvey rag``: make, fill, inspect, query and drop knowledge stores.

Each store is ``<workspace>/.harvey/rag/NAME.db``. Usage errors (a bad or
unknown name, a path outside the workspace, another embedder) exit 2;
failures (a corrupted store, an embedder server that is down) exit 1 — one
line either way, and nothing in this or any other store is lost.
"""

from __future__ import annotations

import json
import os
import sys
import time
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
    from harvey.knowledge.embedders import LocalEmbedder, check_spec, default_spec
    from harvey.knowledge.store import check_name, create_store

    paths, _settings = load(workspace)
    check_name(name)
    spec = check_spec(embedder or default_spec())
    dims = LocalEmbedder.dims if spec == "local" else 0
    if spec == "local":
        LocalEmbedder()  # fail now, not at the first ingest, if its files are missing
    with create_store(paths.workspace, name, spec, dims) as store:
        click.echo(f"created store {name} (embedder {spec}) at {store.path}")


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
    from harvey.knowledge.service import open_knowledge

    paths_, settings = load(workspace)
    knowledge = open_knowledge(paths_.workspace, name, settings, embedder=embedder)
    try:
        bar, update = _progress_bar()
        with bar:
            report = knowledge.ingester(paths_.workspace).ingest(
                paths, include=include, exclude=exclude, progress=update
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
    from harvey.knowledge.store import open_store, store_names

    paths, settings = load(workspace)
    names = store_names(paths.workspace)
    if not names:
        click.echo("no knowledge stores (make one with 'harvey rag new NAME')", err=True)
        return
    for store_name in names:
        active = " (active)" if store_name == settings.rag.active else ""
        with open_store(paths.workspace, store_name) as store:
            files, chunks, _size = store.counts()
            click.echo(
                f"{store_name}{active}  {files} files, {chunks} chunks, {store.embedder_spec}"
            )


@rag.command("status")
@click.argument("name")
@workspace_option
@handle_errors
def status(name: str, workspace: Path | None) -> None:
    """Files, chunks, bytes, embedder, last ingest and files changed on disk since."""
    from harvey.knowledge.store import open_store

    paths, _settings = load(workspace)
    with open_store(paths.workspace, name) as store:
        store.integrity()
        files, chunks, size = store.counts()
        changed = 0
        for row in store.files():
            try:
                st = os.stat(paths.workspace / row.path)
            except OSError:
                changed += 1
                continue
            if (st.st_size, st.st_mtime_ns) != (row.size, row.mtime_ns):
                changed += 1
        last = store.meta("last_ingest")
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(last))) if last else "never"
        click.echo(f"store:       {name} ({store.path})")
        click.echo(f"embedder:    {store.embedder_spec}")
        click.echo(f"files:       {files}")
        click.echo(f"chunks:      {chunks}")
        click.echo(f"bytes:       {size}")
        click.echo(f"last ingest: {when}")
        click.echo(f"changed:     {changed} files changed on disk since")


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
    """Search NAME for TEXT and print the best passages."""
    from harvey.knowledge.service import open_knowledge

    paths, settings = load(workspace)
    knowledge = open_knowledge(paths.workspace, name, settings)
    try:
        hits = knowledge.searcher.search(text, k)
    finally:
        knowledge.close()
    if as_json:
        rows = [
            {
                "path": h.chunk.path,
                "start_line": h.chunk.start_line,
                "end_line": h.chunk.end_line,
                "score": h.score,
                "text": h.chunk.text,
            }
            for h in hits
        ]
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not hits:
        click.echo("no matching passages", err=True)
    for h in hits:
        click.echo(
            f"{h.chunk.path}:L{h.chunk.start_line}-L{h.chunk.end_line} — score {h.score:.2f}"
        )
        for line in h.chunk.text.strip().splitlines()[:6]:
            click.echo(f"    {line}")


@rag.command("drop")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask.")
@workspace_option
@handle_errors
def drop(name: str, yes: bool, workspace: Path | None) -> None:
    """Delete the store NAME (asks first)."""
    from harvey.errors import Cancelled, UsageError
    from harvey.knowledge.store import drop_store, store_names, store_path

    paths, _settings = load(workspace)
    path = store_path(paths.workspace, name)
    if name not in store_names(paths.workspace):  # listed without following a link
        known = ", ".join(store_names(paths.workspace)) or "none"
        raise UsageError(f"no knowledge store {name!r} (stores: {known})")
    if not yes and not click.confirm(f"delete knowledge store {name} ({path})?", default=False):
        raise Cancelled("not deleted")
    drop_store(paths.workspace, name)
    click.echo(f"dropped store {name}")

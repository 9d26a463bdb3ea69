"""``harvey models``: the models the backend offers, and what the chosen one can do."""

from __future__ import annotations

from pathlib import Path

import click

from harvey.cli.errors import handle_errors
from harvey.cli.options import load_for_model, model_options, workspace_option


@click.command()
@workspace_option
@model_options
@click.pass_context
@handle_errors
def models(
    ctx: click.Context,
    workspace: Path | None,
    backend: str | None,
    base_url: str | None,
    endpoints: tuple[str, ...],
    model: str | None,
) -> None:
    """List the models the backend offers.

    stdout lists the names, the current one marked *; stderr says the backend, each
    endpoint of a pool, and the current model's context window and how it gets
    tools (native, text, constrained or off) and where that was found: tools.mode,
    the server's chat template, one probe call (cached in HARVEY_HOME), or assumed.
    """
    from harvey.llm.factory import make_client

    _paths, settings = load_for_model(ctx, workspace, backend, base_url, model, endpoints)
    from harvey.chat.calls.tool_choice import resolve_tool_mode
    from harvey.llm.pool_setup import endpoint_lines

    client = make_client(settings)
    try:
        names = client.list_models()
        caps = client.capabilities()
        pool = endpoint_lines(client)
        tools = resolve_tool_mode(settings.tools, client, lambda: caps)
    finally:
        client.close()
    click.echo(f"# backend: {client.backend} ({client.endpoint})", err=True)
    for line in pool:
        click.echo(f"# endpoint {line}", err=True)
    for name in names:
        marker = "*" if name == client.model else " "
        click.echo(f"{marker} {name}")
    click.echo(
        f"# {client.model}: context window {caps.context_window} tokens "
        f"({caps.context_source}), tools: {tools.mode} ({tools.source})",
        err=True,
    )

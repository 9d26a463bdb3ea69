"""The ``harvey`` group: its options, ``--version``, and the REPL when no command is given.

The commands themselves live one group per module beside this one and are
attached in ``harvey/cli/__init__.py``, so no command module imports this one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import click

from harvey.cli.doctor import confinement
from harvey.cli.errors import handle_errors
from harvey.cli.options import (
    load,
    model_options,
    no_record_option,
    rag_option,
    trust_option,
    with_rag,
    workspace_option,
)
from harvey.errors import UsageError
from harvey.inputs import check_input_file


def skip_httpx_cli() -> None:
    """Keep httpx from importing its own command-line tool into ours.

    ``import httpx`` loads ``httpx._main`` (click, rich, pygments: about 40 ms of
    every ``harvey run``) whenever click is installed, and falls back to a stub
    ``main`` when that import fails. Harvey never runs httpx's tool, so the
    ``harvey`` command takes the fallback: an empty ``httpx._main`` makes
    ``from ._main import main`` fail. Only the running command does this, before
    any backend is imported; ``import harvey`` leaves ``sys.modules`` alone.
    """
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", ModuleType("httpx._main"))


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from harvey.version import installed_version

    click.echo(f"harvey, version {installed_version()}")
    click.echo(f"confinement: {confinement(None)[1]}")
    ctx.exit()


class HarveyGroup(click.Group):
    """The group, keeping the command's own arguments where its callback can see them:
    whether a group option applies depends on the command (``harvey memory mine`` uses
    the model options, ``harvey memory list`` does not)."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        ctx.meta["harvey.command_args"] = list(rest)
        return name, command, rest


@click.group(
    cls=HarveyGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version",
    "-V",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and the OS confinement commands run under, then exit.",
)
@workspace_option
@model_options
@click.option(
    "--continue",
    "-c",
    "continue_",
    is_flag=True,
    help="Resume the newest session of this workspace.",
)
@click.option(
    "--continue-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Resume the conversation recorded in a .spmd session file.",
)
@no_record_option
@rag_option
@trust_option
@click.option("--no-memory", is_flag=True, help="No long-term memory recall this session.")
@click.pass_context
@handle_errors
def main(
    ctx: click.Context,
    workspace: Path | None,
    backend: str | None,
    base_url: str | None,
    endpoints: tuple[str, ...],
    model: str | None,
    continue_: bool,
    continue_file: Path | None,
    no_record: bool,
    rag_store: str | None,
    no_memory: bool,
) -> None:
    """Harvey: a terminal LLM agent for the documents and code in a workspace.

    With no command, starts the interactive REPL. Type a message to chat,
    !CMD to run a command, @NAME PROMPT to route a turn, /help for commands.

    Exit status: 0 success, 1 model/tool/synthesis failure, 2 usage or
    configuration error, 130 interrupted.
    """
    skip_httpx_cli()
    ctx.ensure_object(dict)
    ctx.obj.update(
        workspace=workspace,
        backend=backend,
        base_url=base_url,
        model=model,
        endpoints=endpoints or None,
        rag_store=rag_store,
    )
    ctx.obj.update(no_memory=no_memory, continue_=continue_, no_record=no_record)
    if ctx.invoked_subcommand is not None:
        _check_options(ctx, ctx.invoked_subcommand)
        return
    if continue_ and continue_file:
        raise UsageError("use either --continue or --continue-file, not both")
    if continue_file is not None:  # before anything is created (a tty makes HARVEY_HOME)
        check_input_file(continue_file, "session file")
    paths, settings = load(
        workspace,
        ask=True,  # an untrusted widening harvey.yaml: the REPL asks before it starts
        backend=backend,
        base_url=base_url,
        model=model,
        endpoints=endpoints or None,
    )
    settings = with_rag(settings, rag_store)
    from harvey.repl import run_repl

    sys.exit(
        run_repl(
            paths,
            settings,
            record=not no_record,
            resume_latest=continue_,
            resume_file=continue_file,
        )
    )


def _check_options(ctx: click.Context, name: str) -> None:
    """Every group option given must be one the command uses (``group_options``); a usage
    error comes out as JSON too when the command was asked for JSON output."""
    from harvey.cli.group_options import check_group_options, command_path, given_options

    rest = ctx.meta.get("harvey.command_args", [])
    assert isinstance(ctx.command, click.Group)
    path = command_path(ctx.command, ctx, name, rest)
    try:
        check_group_options(path, given_options(ctx.params, ctx.obj))
    except UsageError as exc:
        from harvey.cli.output import usage_failure

        usage_failure(rest, path, exc)
        raise

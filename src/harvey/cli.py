"""The ``harvey`` command: a thin layer over the library.

Every ``HarveyError`` becomes one line on stderr and an exit status (2 for
usage and configuration, 1 for model and tool failures, 130 for Ctrl-C); a
traceback reaches the user only with ``HARVEY_DEBUG=1``.
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from harvey import __version__
from harvey.config import Paths, Settings, load_settings, resolve_paths
from harvey.errors import Cancelled, HarveyError, UsageError
from harvey.inputs import check_input_file, clean_text, read_stdin
from harvey.llm.backends import backend_names
from harvey.redact import Redactor, install, redact

F = TypeVar("F", bound=Callable[..., Any])

BACKENDS = click.Choice(backend_names(include_auto=True))


def _debug() -> bool:
    return os.environ.get("HARVEY_DEBUG", "") not in ("", "0")


def fail(message: str, code: int) -> None:
    click.echo(f"harvey: {redact(message)}", err=True)
    sys.exit(code)


def show_traceback(exc: BaseException, code: int) -> None:
    """The whole traceback, redacted (it once printed api_key), then exit ``code``:
    for a HarveyError under HARVEY_DEBUG=1, and for a bug, whose traceback Python
    would otherwise print as it is."""
    text = "".join(traceback.format_exception(exc))
    click.echo(redact(text).rstrip("\n"), err=True)
    sys.exit(code)


def handle_errors(func: F) -> F:
    """Translate HarveyError and Ctrl-C into one line and an exit status."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Cancelled as exc:
            fail(str(exc) or "cancelled", 130)
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except HarveyError as exc:
            if _debug():
                show_traceback(exc, exc.exit_code)
            fail(str(exc), exc.exit_code)
        except BrokenPipeError:
            sys.exit(1)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # a bug: its traceback, as Python would print it, but redacted
            show_traceback(exc, 1)

    return wrapper  # type: ignore[return-value]


def workspace_option(func: F) -> F:
    return click.option(
        "--workspace",
        "-w",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Workspace folder (default: the current directory).",
    )(func)


def model_options(func: F) -> F:
    func = click.option("--model", "-m", default=None, help="Model name on the backend.")(func)
    func = click.option("--base-url", default=None, help="Server URL for ollama/openai backends.")(
        func
    )
    func = click.option(
        "--backend",
        type=BACKENDS,
        default=None,
        help="Model backend (default: ollama if it answers, else the embedded model).",
    )(func)
    return func


def load(workspace: Path | None, **overrides: Any) -> tuple[Paths, Settings]:
    paths = resolve_paths(workspace)
    settings = load_settings(paths, overrides)
    install(Redactor.from_settings(settings))  # before anything can print or send a key
    return paths, settings


def _confinement(workspace: Path | None) -> tuple[str, str]:
    """(security.sandbox, the confinement it gives) for this workspace's settings."""
    from harvey.tools.sandbox import detect

    try:
        mode = load(workspace)[1].security.sandbox
    except HarveyError:  # a broken harvey.yaml must not break --version
        mode = "auto"
    return mode, detect(mode).describe()


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"harvey, version {__version__}")
    click.echo(f"confinement: {_confinement(None)[1]}")
    ctx.exit()


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
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
@click.option("--no-record", is_flag=True, help="Do not write a .spmd session file.")
@click.pass_context
@handle_errors
def main(
    ctx: click.Context,
    workspace: Path | None,
    backend: str | None,
    base_url: str | None,
    model: str | None,
    continue_: bool,
    continue_file: Path | None,
    no_record: bool,
) -> None:
    """Harvey: a terminal LLM agent for the documents and code in a workspace.

    With no command, starts the interactive REPL. Type a message to chat,
    !CMD to run a command, @NAME PROMPT to route a turn, /help for commands.

    Exit status: 0 success, 1 model/tool/synthesis failure, 2 usage or
    configuration error, 130 interrupted.
    """
    ctx.ensure_object(dict)
    ctx.obj.update(workspace=workspace, backend=backend, base_url=base_url, model=model)
    if ctx.invoked_subcommand is not None:
        return
    if continue_ and continue_file:
        raise UsageError("use either --continue or --continue-file, not both")
    if continue_file is not None:  # before anything is created (a tty makes HARVEY_HOME)
        check_input_file(continue_file, "session file")
    paths, settings = load(workspace, backend=backend, base_url=base_url, model=model)
    from harvey.terminal import run_repl

    sys.exit(
        run_repl(
            paths,
            settings,
            record=not no_record,
            resume_latest=continue_,
            resume_file=continue_file,
        )
    )


def _inherit(ctx: click.Context, **values: Any) -> dict[str, Any]:
    parent = ctx.find_object(dict) or {}
    return {k: v if v is not None else parent.get(k) for k, v in values.items()}


@main.command()
@click.argument("prompt")
@workspace_option
@model_options
@click.option(
    "--yes",
    "-y",
    is_flag=True,
    help="Answer yes to questions (chunk an oversized file with PROMPT as the instruction).",
)
@click.option(
    "--allow-writes",
    is_flag=True,
    help="Let the model create and overwrite workspace files (refused otherwise; --yes does not "
    "imply it).",
)
@click.option("--no-record", is_flag=True, help="Do not write a .spmd session file.")
@click.pass_context
@handle_errors
def run(
    ctx: click.Context,
    prompt: str,
    workspace: Path | None,
    backend: str | None,
    base_url: str | None,
    model: str | None,
    yes: bool,
    allow_writes: bool,
    no_record: bool,
) -> None:
    """Send one PROMPT (or - for stdin) and print only the reply."""
    from harvey.oneshot import run_once

    opts = _inherit(ctx, workspace=workspace, backend=backend, base_url=base_url, model=model)
    prompt = read_stdin() if prompt == "-" else clean_text(prompt)
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    paths, settings = load(opts.pop("workspace"), **opts)
    sys.exit(
        run_once(
            paths, settings, prompt, auto_yes=yes, record=not no_record, allow_writes=allow_writes
        )
    )


@main.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--instruction", "-i", required=True, help="What to do with each chunk (may contain @ROUTE)."
)
@workspace_option
@model_options
@click.option(
    "--chunk-size", type=click.IntRange(min=200), default=None, help="Target chunk size in bytes."
)
@click.option(
    "--overlap",
    type=click.Choice(["paragraph", "sentence", "none"]),
    default=None,
    help="What each chunk repeats from the one before (default: chunking.overlap).",
)
@click.option(
    "--concurrency", type=click.IntRange(1, 64), default=None, help="Map calls in flight."
)
@click.option(
    "--max-chunks",
    type=click.IntRange(min=1),
    default=None,
    help="Ask (or need --yes) before processing more chunks than this.",
)
@click.option("--yes", "-y", is_flag=True, help="Proceed even beyond --max-chunks.")
@click.option("--no-record", is_flag=True, help="Do not write a .spmd session file.")
@click.pass_context
@handle_errors
def analyze(
    ctx: click.Context,
    file: Path,
    instruction: str,
    workspace: Path | None,
    backend: str | None,
    base_url: str | None,
    model: str | None,
    chunk_size: int | None,
    overlap: str | None,
    concurrency: int | None,
    max_chunks: int | None,
    yes: bool,
    no_record: bool,
) -> None:
    """Analyse FILE chunk by chunk (map-reduce) and print the synthesized result."""
    from harvey.config import ChunkingSettings
    from harvey.oneshot import analyze_once

    opts = _inherit(ctx, workspace=workspace, backend=backend, base_url=base_url, model=model)
    instruction = clean_text(instruction)
    paths, settings = load(opts.pop("workspace"), **opts)
    options = ChunkingSettings.partial(
        chunk_size_bytes=chunk_size, overlap=overlap, concurrency=concurrency, max_chunks=max_chunks
    )
    sys.exit(
        analyze_once(
            paths, settings, file, instruction, options, auto_yes=yes, record=not no_record
        )
    )


@main.command()
@workspace_option
@model_options
@click.pass_context
@handle_errors
def models(
    ctx: click.Context,
    workspace: Path | None,
    backend: str | None,
    base_url: str | None,
    model: str | None,
) -> None:
    """List the models the backend offers."""
    from harvey.llm.factory import make_client

    opts = _inherit(ctx, workspace=workspace, backend=backend, base_url=base_url, model=model)
    _paths, settings = load(opts.pop("workspace"), **opts)
    client = make_client(settings)
    try:
        names = client.list_models()
        caps = client.capabilities()
    finally:
        client.close()
    click.echo(f"# backend: {client.backend} ({client.endpoint})", err=True)
    for name in names:
        marker = "*" if name == client.model else " "
        click.echo(f"{marker} {name}")
    click.echo(
        f"# {client.model}: context window {caps.context_window} tokens "
        f"({caps.context_source}), tools: {'yes' if caps.supports_tools else 'no'}",
        err=True,
    )


@main.command()
@workspace_option
@handle_errors
def doctor(workspace: Path | None) -> None:
    """Show which OS confinement commands run under, and what it allows."""
    mode, line = _confinement(workspace)
    click.echo(f"confinement: {line}")
    click.echo(f"security.sandbox: {mode}")
    if line.startswith("none"):
        click.echo("commands: every one asks in the REPL and is refused in batch mode")
    else:
        click.echo("allow-listed commands: read the workspace and system folders, write only")
        click.echo("  a private temporary folder (HOME and TMPDIR), removed afterwards")
        click.echo("approved commands: may also write the workspace and use the network")
    click.echo("environment: only PATH, LANG, LC_*, TERM (no keys or tokens)")


from harvey.cli_sessions import sessions  # noqa: E402  (registers the group)

main.add_command(sessions)

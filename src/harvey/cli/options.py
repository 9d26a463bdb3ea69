"""The options several commands share, declared once, and the settings they resolve to.

``--workspace`` and the model options (``--backend``, ``--base-url``,
``--model``) are accepted both before the command (``harvey -w DIR run ...``)
and after it; :func:`inherit` lets the command's own value win. Settings are
loaded only inside :func:`load`, so ``harvey --help`` never imports pydantic
or reads ``harvey.yaml``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from harvey.config.choices import backend_names

if TYPE_CHECKING:
    from harvey.config.settings import Paths, Settings
    from harvey.config.trust import Review

F = TypeVar("F", bound=Callable[..., Any])

BACKENDS = click.Choice(backend_names(include_auto=True))


def _group_workspace(ctx: click.Context, _param: click.Parameter, value: Path | None) -> Any:
    """A command's ``--workspace``, else the one given before the command (``harvey -w DIR
    sessions list``); the group's own option finds nothing above it."""
    if value is not None or ctx.parent is None:
        return value
    return (ctx.find_object(dict) or {}).get("workspace")


def workspace_option(func: F) -> F:
    return click.option(
        "--workspace",
        "-w",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        callback=_group_workspace,
        help="Workspace folder (default: the current directory).",
    )(func)


def model_options(func: F) -> F:
    func = click.option("--model", "-m", default=None, help="Model name on the backend.")(func)
    func = click.option(
        "--base-url", default=None, metavar="URL", help="Server URL for ollama/openai backends."
    )(func)
    func = click.option(
        "--endpoint",
        "endpoints",
        multiple=True,
        metavar="URL",
        help="An endpoint of the model's pool (repeat for several; replaces --base-url).",
    )(func)
    func = click.option(
        "--backend",
        type=BACKENDS,
        default=None,
        help="Model backend (default: ollama if it answers, else the embedded model).",
    )(func)
    return func


def no_record_option(func: F) -> F:
    return click.option("--no-record", is_flag=True, help="Do not write a .spmd session file.")(
        func
    )


def _trust_for_this_run(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:  # on the group's dict, which every command's context shares
        ctx.ensure_object(dict)["trust"] = True


def trust_option(func: F) -> F:
    return click.option(
        "--trust",
        is_flag=True,
        expose_value=False,
        callback=_trust_for_this_run,
        help="Apply the workspace's harvey.yaml whole for this run, as if trusted "
        "(`harvey trust` remembers it).",
    )(func)


def with_rag(settings: Settings, name: str | None) -> Settings:
    """``settings`` with ``rag.active`` set to ``name`` (checked), if given."""
    from harvey.knowledge.names import with_active

    return with_active(settings, name)


def rag_option(func: F) -> F:
    return click.option(
        "--rag",
        "rag_store",
        default=None,
        metavar="NAME",
        help="Retrieve passages from knowledge store NAME into every turn (rag.active).",
    )(func)


def inherit(ctx: click.Context, **values: Any) -> dict[str, Any]:
    """The command's own option values, each falling back to the one given before it."""
    parent = ctx.find_object(dict) or {}
    return {k: v if v is not None else parent.get(k) for k, v in values.items()}


def load_for_model(
    ctx: click.Context,
    workspace: Path | None,
    backend: str | None,
    base_url: str | None,
    model: str | None,
    endpoints: tuple[str, ...],
) -> tuple[Paths, Settings]:
    """``load`` for a command that takes the model options: each falls back to the
    value given on the group (``harvey -m X run ...``)."""
    opts = inherit(
        ctx,
        workspace=workspace,
        backend=backend,
        base_url=base_url,
        model=model,
        endpoints=endpoints or None,
    )
    return load(opts.pop("workspace"), **opts)


def load(workspace: Path | None, *, ask: bool = False, **overrides: Any) -> tuple[Paths, Settings]:
    """Resolve the workspace, load its settings, install the redactor they configure.

    An untrusted workspace harvey.yaml that would widen anything is refused
    (one line naming ``harvey trust``), applied under ``--trust``, or — with
    ``ask`` (the REPL) on a terminal — put to the user as a question.
    The redactor is installed before anything can print or send a key.
    """
    from harvey.config.settings import configured_keys, load_settings, resolve_paths
    from harvey.redact import Redactor, install
    from harvey.workspace import secret_files

    paths = resolve_paths(workspace)
    context = click.get_current_context(silent=True)
    shared = (context.find_object(dict) or {}) if context is not None else {}
    settings = load_settings(paths, overrides, decide=_decide(bool(shared.get("trust")), ask))
    if shared.get("no_memory"):
        settings.memory.enabled = False  # `harvey --no-memory ...`
    install(Redactor.from_env(extra=configured_keys(settings)))
    secret_files.install(
        secret_files.for_workspace(
            paths.workspace, paths.harvey_home, settings.security.secret_files
        )
    )
    return paths, settings


def _decide(trusted_for_run: bool, ask: bool) -> Callable[[Review], bool] | None:
    """How an untrusted widening is settled: --trust applies it, the REPL asks, else refused."""
    import sys

    if trusted_for_run:
        return lambda _review: True
    if ask and sys.stdin.isatty() and sys.stdout.isatty():
        from harvey.cli.trust import ask_to_trust

        return ask_to_trust
    return None

"""``harvey trust [PATH] [--revoke] [--list]``, and the REPL's trust question.

Both show what the workspace's ``harvey.yaml`` would change — each key that
widens, with its value made safe to print (secrets and a URL's password never
shown, every value through ``for_terminal``) — so the user trusts a file they
have seen, not a folder name. The store and the screening are ``harvey.config.trust``.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harvey.cli.errors import handle_errors
from harvey.errors import UsageError

if TYPE_CHECKING:
    from harvey.config.settings import Paths
    from harvey.config.trust import Review, Setting
    from harvey.config.trust_store import TrustStore

#: The longest value shown; a longer one ends in an ellipsis.
SHOWN_CHARS = 160


def show_value(value: Any) -> str:
    """``value`` as the question shows it: no secret, no URL password, no control sequence."""
    from pydantic import SecretStr

    from harvey.redact import redact
    from harvey.terminal_text import for_terminal

    if isinstance(value, SecretStr):
        return "(a secret, not shown)"
    if isinstance(value, list):
        text = "[" + ", ".join(show_value(item) for item in value) + "]"
    elif isinstance(value, str):
        text = _without_password(value)
    else:
        text = str(value)
    text = for_terminal(redact(text))
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _without_password(text: str) -> str:
    """``https://user:pw@host/`` → ``https://***@host/``: credentials in a URL stay hidden."""
    scheme, sep, rest = text.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return text
    return f"{scheme}://***@{rest.split('@', 1)[1]}"


def describe(widening: tuple[Setting, ...] | list[Setting]) -> list[str]:
    """One ``  key: value`` line per widening setting."""
    return [f"  {setting.path}: {show_value(setting.value)}" for setting in widening]


def ask_to_trust(review: Review) -> bool:
    """The REPL's question before a session starts: trust (remembered), not now, or quit."""
    from harvey.terminal_text import for_terminal

    click.echo(
        f"{for_terminal(str(review.config_file))} is not trusted, "
        "and it would widen what Harvey may do:"
    )
    for line in describe(review.widening):
        click.echo(line)
    click.echo(
        "Trust applies this file as it is now (an edit asks again); "
        "not now keeps only its narrowing settings (model, chunking, ...) for this session."
    )
    answer = click.prompt(
        "Trust this workspace? [t]rust, [n]ot now, [q]uit",
        type=click.Choice(["t", "n", "q"], case_sensitive=False),
        default="n",
        show_choices=False,
    ).lower()
    if answer == "q":
        click.echo("Nothing started.")
        sys.exit(0)
    if answer == "n":
        return False
    from harvey.config.trust_store import TrustStore

    TrustStore(_home()).trust(review.workspace, review.digest)
    click.echo(f"Trusted {for_terminal(str(review.workspace))}.")
    return True


def _home() -> Path:
    from harvey.config.settings import default_harvey_home

    return default_harvey_home()


@click.command("trust")
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--revoke", is_flag=True, help="Forget the trust given to PATH.")
@click.option("--list", "list_", is_flag=True, help="List trusted workspaces and their state.")
@click.pass_context
@handle_errors
def trust(ctx: click.Context, path: Path | None, revoke: bool, list_: bool) -> None:
    """Trust the workspace PATH (default: the current folder): its harvey.yaml then
    applies whole, as it is now; an edit (a `git pull`) asks again.

    Until a workspace is trusted, its harvey.yaml may only narrow what Harvey does
    or choose a model: no security settings, servers, routes' servers,
    session.directory or key-using embedders.
    """
    from harvey.config.settings import resolve_paths
    from harvey.config.trust_store import TrustStore
    from harvey.terminal_text import for_terminal

    if list_ and (revoke or path is not None):
        raise UsageError("--list takes no PATH and no --revoke")
    store = TrustStore(_home())
    if list_:
        _list(store)
        return
    paths = resolve_paths(path or (ctx.find_object(dict) or {}).get("workspace"))
    shown = for_terminal(str(paths.workspace))
    if revoke:
        gone = store.revoke(paths.workspace)
        click.echo(f"No longer trusted: {shown}" if gone else f"{shown} was not trusted.")
        return
    _trust(store, paths, shown)


def _trust(store: TrustStore, paths: Paths, shown: str) -> None:
    from harvey.config.layers import key_in_workspace, read_config
    from harvey.config.settings import WORKSPACE_RULES, validate
    from harvey.config.trust import digest, screen
    from harvey.errors import ConfigError

    data, text, raw = read_config(paths.config_file)
    if raw is None:
        click.echo(f"Nothing to trust: {shown} has no harvey.yaml.")
        return
    mine, mine_text, _ = read_config(paths.user_config_file)  # whose limits it may not lift
    own = validate(mine, paths.user_config_file, mine_text).model_dump(exclude_unset=True)
    given = validate(data, paths.config_file, text).model_dump(exclude_unset=True)
    screened = screen(given, own, rules=WORKSPACE_RULES)
    if screened.forbidden:  # refused even when trusted: trusting it would change nothing
        raise ConfigError(key_in_workspace(paths, screened, text))
    store.trust(paths.workspace, digest(raw))
    if screened.widening:
        click.echo(f"Trusted {shown}; its harvey.yaml now also sets:")
        for line in describe(screened.widening):
            click.echo(line)
    else:
        click.echo(f"Trusted {shown} (its harvey.yaml widens nothing today).")


def _list(store: TrustStore) -> None:
    from harvey.config.settings import CONFIG_FILENAME
    from harvey.config.trust import digest
    from harvey.config.trust_store import read_bounded
    from harvey.errors import ConfigError
    from harvey.terminal_text import for_terminal

    entries = store.entries()
    if not entries:
        click.echo("No trusted workspaces.")
        return
    for entry in entries:
        try:
            now = digest(read_bounded(Path(entry.workspace) / CONFIG_FILENAME))
        except ConfigError:
            now = "unreadable"
        if not Path(entry.workspace).is_dir():
            state = "missing"
        else:
            state = "trusted" if now == entry.digest else "changed since: asks again"
        when = datetime.datetime.fromtimestamp(entry.trusted_at).strftime("%Y-%m-%d %H:%M")
        click.echo(f"{for_terminal(entry.workspace)}  {entry.digest[:12]}  {when}  {state}")

"""Which of the ``harvey`` group's options each command honours; any other is a usage error.

``harvey --continue run "..."`` used to start a new conversation without a
word: the group took ``--continue`` for the REPL and ``run`` never looked. Now
every option given before the command is either used by that command or
refused in one line (exit 2) that says where it does apply. The table below is
the audit: one row per command (``group sub`` for the commands of a group),
and ``tests/cli/test_group_options.py`` checks it against every command.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from harvey.errors import UsageError

#: The group's options by parameter name, as the person spells them.
FLAGS = {
    "workspace": "--workspace",
    "backend": "--backend",
    "base_url": "--base-url",
    "endpoints": "--endpoint",
    "model": "--model",
    "continue_": "--continue",
    "continue_file": "--continue-file",
    "no_record": "--no-record",
    "rag_store": "--rag",
    "trust": "--trust",
    "no_memory": "--no-memory",
}
_MODEL = frozenset({"backend", "base_url", "endpoints", "model"})
_SESSION = frozenset({"workspace", *_MODEL, "trust"})

#: What each command does with the group's options. ``trust`` is honoured by the
#: commands that read the workspace's harvey.yaml; the model options by those that
#: talk to a model; ``--workspace`` by those that have a workspace.
HONOURED: dict[str, frozenset[str]] = {
    "": frozenset(FLAGS),  # the REPL: every one
    "run": _SESSION | {"continue_", "no_record", "rag_store", "no_memory"},
    "analyze": _SESSION | {"no_record"},
    "models": _SESSION,
    "doctor": frozenset({"workspace", "trust"}),
    "sessions list": frozenset({"workspace"}),
    "sessions show": frozenset({"workspace"}),
    "sessions delete": frozenset({"workspace"}),
    "sessions prune": frozenset({"workspace"}),
    "sessions render": frozenset(),
    "rag new": frozenset({"workspace", "trust"}),
    "rag ingest": frozenset({"workspace", "trust"}),
    "rag list": frozenset({"workspace", "trust"}),
    "rag status": frozenset({"workspace", "trust"}),
    "rag query": frozenset({"workspace", "trust"}),
    "rag drop": frozenset({"workspace", "trust"}),
    "memory list": frozenset({"workspace"}),
    "memory show": frozenset({"workspace"}),
    "memory edit": frozenset({"workspace"}),
    "memory flag": frozenset({"workspace"}),
    "memory forget": frozenset({"workspace"}),
    "memory status": frozenset({"workspace"}),
    "memory mine": _SESSION,
    "trust": frozenset({"workspace"}),
    "mcp list": frozenset({"workspace", "trust"}),
    "mcp tools": frozenset({"workspace", "trust"}),
    "mcp approve": frozenset({"workspace", "trust"}),
    "mcp revoke": frozenset({"workspace", "trust"}),
    "mcp add": frozenset(),
    "mcp remove": frozenset(),
    "undo": frozenset({"workspace"}),
    "cache info": frozenset(),  # HARVEY_HOME's cache: no workspace, no model
    "cache clear": frozenset(),
}


def given_options(params: Mapping[str, Any], shared: Mapping[str, Any]) -> list[str]:
    """The group options given on this command line (by parameter name, in ``FLAGS`` order)."""
    given = [
        name for name in FLAGS if name != "trust" and params.get(name) not in (None, False, ())
    ]
    if shared.get("trust"):
        given.append("trust")
    return given


def command_path(group: click.Group, ctx: click.Context, name: str, rest: Sequence[str]) -> str:
    """``name``, or ``name sub`` when ``name`` is a group and ``rest`` starts with its command."""
    command = group.get_command(ctx, name)
    if (
        isinstance(command, click.Group)
        and rest
        and not rest[0].startswith("-")
        and command.get_command(ctx, rest[0]) is not None
    ):
        return f"{name} {rest[0]}"
    return name


def where_used(option: str) -> str:
    """The commands that honour ``option``, for the error line."""
    names = [path or "the REPL (no command)" for path, used in HONOURED.items() if option in used]
    return ", ".join(names)


def check_group_options(path: str, given: Sequence[str]) -> None:
    """Refuse, in one line, the first group option ``path`` does not use."""
    honoured = HONOURED.get(path)
    if honoured is None:  # `harvey sessions --help`, an unknown command: click says what
        return
    for option in given:
        if option not in honoured:
            flag = FLAGS[option]
            raise UsageError(
                f"{flag} is not used by `harvey {path}`; given before a command it applies "
                f"to: {where_used(option)}"
            )

"""git, unasked: one table of read-only forms; everything else asks.

The shape is Codex's ``is_safe_command``: a subcommand runs unasked only when ``FORMS``
names it, with no global option but a few harmless ones and none of the options that
make git run a program, point it at other files or settings, or print objects no
argument names. Two things git needs beyond that shape, because a cloned repository
and its history are hostile input here:

- the repository's own config may hold only harmless keys (``git_repository``), and the
  command still runs with the program settings overridden (``NEUTRAL``), no system or
  user config, no prompt, no optional locks and no repository above the workspace;
- a form that prints file contents runs with the secret files excluded by pathspec, and
  the objects its arguments name must be commits or files of one (``git_secrets``), so
  no committed secret file is printed unasked.

Everything else asks in the REPL and is refused in ``harvey run``. The command runs
confined by the kernel either way: this is the second line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from harvey.confine import git_repository, git_secrets
from harvey.workspace import secret_files
from harvey.workspace.secret_files import SecretFiles


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_RUNS = "may run a program or read other settings"
_REACHES = "reaches past the secret-file exclusions"
_UNNAMED = "may print objects no argument names"

#: Options that ask on every form: a long option also when abbreviated (git takes any
#: unique prefix), a short one anywhere in a cluster (``-nO``).
REFUSED: Mapping[str, str] = MappingProxyType(
    {
        **dict.fromkeys(
            (
                "--ext-diff", "--textconv", "--open-files-in-pager", "-O", "--output",
                "--exec", "--upload-pack", "--receive-pack", "--show-signature",
                "--git-dir", "--work-tree", "--config-env", "--exec-path", "--paginate",
                "--edit", "--filters",
            ),
            _RUNS,
        ),
        # into submodules (no exclusion there), a whole commit's diff, one path followed
        "--submodule": _REACHES,
        "--recurse-submodules": _REACHES,
        "--full-diff": _REACHES,
        "--follow": _REACHES,
    }
)  # fmt: skip
_SHOWS_UNNAMED = MappingProxyType(
    dict.fromkeys(
        (
            "--all", "--branches", "--tags", "--remotes", "--glob", "--indexed-objects",
            "--alternate-refs", "--stdin", "--exclude", "--exclude-hidden", "--reflog",
        ),
        _UNNAMED,
    )
)  # fmt: skip


@dataclass(frozen=True)
class Form:
    """What one subcommand may be given unasked.

    ``prints_files``: it prints file contents by path (patches, diffs, matches): the
    secret files are excluded and the objects it names checked (``git_secrets``).
    ``one_path``: it follows one path's history, where no exclusion can be added, so a
    secret path asks. ``only``: the sole options of a listing form of a subcommand that
    also writes (an entry ending in ``=`` takes a value). ``refuses``: options that ask
    on this form only, and why.
    """

    prints_files: bool = False
    one_path: bool = False
    only: frozenset[str] | None = None
    refuses: Mapping[str, str] = field(default_factory=dict)


_PRINTS = Form(prints_files=True)

FORMS: Mapping[str, Form] = MappingProxyType(
    {
        "status": Form(refuses=dict.fromkeys(("--verbose", "-v"), "prints the staged diff")),
        "log": _PRINTS,
        "show": Form(prints_files=True, refuses=_SHOWS_UNNAMED),
        "diff": Form(prints_files=True, refuses=_SHOWS_UNNAMED),
        "grep": Form(prints_files=True, refuses=_SHOWS_UNNAMED),
        "diff-tree": _PRINTS,
        "diff-index": _PRINTS,
        "diff-files": _PRINTS,
        "blame": Form(one_path=True),
        **dict.fromkeys(
            (
                "shortlog", "describe", "rev-parse", "ls-files", "ls-tree", "rev-list",
                "show-ref", "count-objects", "name-rev", "merge-base", "check-ignore",
                "check-attr", "version",
            ),
            Form(),
        ),
        "branch": Form(
            only=frozenset(
                _words("-a --all -r --remotes -v -vv --verbose -l --list --show-current")
                + _words("--no-color --color --sort=")
            )
        ),
        "tag": Form(only=frozenset(["-l", "--list", "-n", "--sort="])),
    }
)  # fmt: skip

GLOBAL_OK = frozenset(
    # not --literal-pathspecs or --noglob-pathspecs: they would turn off the exclusions
    # that keep secret files out of what git prints (git_secrets)
    _words("--no-pager -P --no-replace-objects --glob-pathspecs --icase-pathspecs")
    + _words("--no-optional-locks")
)
NEUTRAL = (
    "--no-pager",
    *("-c", "core.fsmonitor=false"),
    *("-c", "core.hooksPath=/dev/null"),
    *("-c", "core.pager=cat"),
    *("-c", "core.editor=false"),
    *("-c", "credential.helper="),
    *("-c", "gpg.program=false"),
    *("-c", "log.showSignature=false"),
    *("-c", "protocol.allow=never"),
)


def git_env(workspace: Path) -> dict[str, str]:
    """Every git run (asked or not): no system or user config, no prompt, no pager, no
    optional locks, and no repository found above the workspace."""
    return {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_LAZY_FETCH": "1",  # a partial clone fetches nothing to answer (git >= 2.45)
        "GIT_CEILING_DIRECTORIES": os.path.dirname(os.path.realpath(workspace)),
    }


def neutralised(argv: Sequence[str], secrets: SecretFiles | None = None) -> list[str]:
    """``git ARGS`` with the program settings overridden and the secret files left out of
    what it prints (``git_secrets``), for a run nobody approved."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 1
    args = list(argv[i + 1 :])
    if i < len(argv) and FORMS.get(argv[i], Form()).prints_files:
        args = git_secrets.with_secrets_excluded(args, secrets or secret_files.active())
    return [argv[0], *NEUTRAL, *argv[1 : i + 1], *args]


def check_git(
    args: Sequence[str], workspace: Path, secrets: SecretFiles | None = None
) -> str | None:
    """Why ``git ARGS`` may not run unasked, or None."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] not in GLOBAL_OK:
            return f"git option {args[i]!r} may change what git runs or where it looks"
        i += 1
    if i == len(args):
        return None  # plain "git": prints usage
    command, rest = args[i], list(args[i + 1 :])
    form = FORMS.get(command)
    if form is None:
        return f"git {command!r} is not a read-only git command (or is an alias)"
    problem = _option_problem(command, form, rest)
    problem = problem or git_repository.repository_config_problem(workspace)
    if problem or not (form.prints_files or form.one_path):
        return problem
    return _history_problem(
        command, rest, workspace, secrets or secret_files.active(), one_path=form.one_path
    )


def _option_problem(command: str, form: Form, args: list[str]) -> str | None:
    """The first argument a listing form does not list, or option (before ``--``; after it
    every word is a path) this form refuses."""
    for arg in args if form.only is not None else ():
        if not _listed(arg, form.only or frozenset()):
            return f"git {command} {arg!r} may change the repository"
    for arg in args[: args.index("--")] if "--" in args else args:
        if not arg.startswith("-"):
            continue
        for option, why in (*REFUSED.items(), *form.refuses.items()):
            if _matches(arg, option):
                return f"git {command} option {arg!r} {why}"
    return None


def _listed(arg: str, options: frozenset[str]) -> bool:
    return arg in options or any(o.endswith("=") and arg.startswith(o) for o in options)


def _matches(arg: str, option: str) -> bool:
    """``arg`` is ``option``: a long one or a prefix git would take for it (four
    characters at least), a short one within a cluster of short options."""
    if option.startswith("--"):
        name = arg.partition("=")[0]
        return name == option or (len(name) >= 4 and option.startswith(name))
    return not arg.startswith("--") and option[1] in arg[1:]


def _history_problem(
    command: str, rest: list[str], workspace: Path, secrets: SecretFiles, *, one_path: bool
) -> str | None:
    """``git_secrets``' checks: the paths named, then what the arguments name, asked of git
    in one call."""
    problem = git_secrets.path_problem(command, rest, secrets, one_path=one_path)
    if problem or one_path:
        return problem
    git = git_repository.trusted_git(workspace)
    if git is None:
        return "no git outside the workspace to check what the arguments name"
    env = {**git_env(workspace), "PATH": os.path.dirname(git), "HOME": os.devnull, "LC_ALL": "C"}
    types = git_secrets.object_types(git, str(workspace), rest, env, NEUTRAL)
    return git_secrets.object_problem(command, rest, types)

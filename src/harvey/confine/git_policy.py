"""git, unasked, only as a reader: no option or repository setting may make it run a program.

git runs programs from many places: ``-c`` and ``--config-env`` on its command
line, ``--exec-path``, aliases (``alias.x=!CMD``), and the repository's own
``.git/config`` — ``core.fsmonitor`` and hooks on a plain ``git status``,
``core.pager`` on ``git log``, ``diff.external``, ``diff.*.textconv`` (picked by
the repository's ``.gitattributes``), ``filter.*``, ``gpg.program`` with
``log.showSignature``, ``include.path`` to pull in any of these. A cloned
repository controls all of that. So, closing the class rather than the list:

- unasked, git runs only a known read-only subcommand (never an alias), with no
  global option but a few harmless ones, and no option that runs a program;
- the repository's config (``.git/config``, or ``./config`` of a bare
  repository; parsed by ``git config --file`` with includes off) may hold only
  keys from ``HARMLESS_KEYS``; anything else — including any include — asks;
- the command then still runs with the known program settings overridden
  (``NEUTRAL``), no system or global config, no prompts, no optional locks
  (so ``status`` writes no index and runs no hook) and a ceiling above the
  workspace (so no parent folder's repository is used).

Everything else asks in the REPL and is refused in ``harvey run``. The command
runs confined by the kernel either way: this is the second line.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from harvey.confine import git_secrets
from harvey.workspace import secret_files
from harvey.workspace.secret_files import SecretFiles


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


READ_ONLY = frozenset(
    _words(
        "status log diff show blame annotate shortlog describe rev-parse ls-files ls-tree "
        "rev-list grep show-ref count-objects name-rev merge-base whatchanged "
        "diff-tree diff-files diff-index for-each-ref check-ignore check-attr version"
    )
)
# Subcommands that also write, allowed unasked only with these listing options.
LISTING = {
    "branch": frozenset(
        _words("-a --all -r --remotes -v -vv --verbose -l --list --show-current --no-color --color")
    ),
    "tag": frozenset(_words("-l --list -n")),
}
GLOBAL_OK = frozenset(
    _words(
        # not --literal-pathspecs or --noglob-pathspecs: they would turn off the
        # exclusions that keep secret files out of what git prints (git_secrets)
        "--no-pager -P --no-replace-objects --glob-pathspecs --icase-pathspecs --no-optional-locks"
    )
)
# Options (or an abbreviation of them) that run a program, open a pager, or point git
# at other files or settings.
RISKY_OPTIONS = (
    "--ext-diff",
    "--textconv",
    "--open-files-in-pager",
    "--output",
    "--exec",
    "--upload-pack",
    "--receive-pack",
    "--show-signature",
    "--git-dir",
    "--work-tree",
    "--config-env",
    "--exec-path",
    "--paginate",
    "--edit",
    "--filters",
)
HARMLESS_KEYS = tuple(
    _words("""
    core.repositoryformatversion core.filemode core.bare core.logallrefupdates
    core.ignorecase core.precomposeunicode core.symlinks core.autocrlf core.eol core.safecrlf
    core.quotepath core.abbrev core.compression core.loosecompression core.bigfilethreshold
    core.commentchar core.untrackedcache core.splitindex core.checkstat core.trustctime
    core.preloadindex core.multipackindex core.commitgraph core.sparsecheckout
    core.sparsecheckoutcone core.whitespace core.longpaths
    remote.*.url remote.*.pushurl remote.*.fetch remote.*.tagopt remote.*.prune
    remote.*.mirror remote.*.promisor remote.*.partialclonefilter
    branch.*.remote branch.*.merge branch.*.rebase branch.*.pushremote branch.*.description
    user.name user.email init.defaultbranch pull.rebase pull.ff fetch.prune fetch.prunetags
    gc.auto gc.autodetach extensions.objectformat extensions.partialclone
    lfs.repositoryformatversion submodule.*.url submodule.*.active submodule.*.branch
    color.* diff.renames diff.algorithm diff.mnemonicprefix diff.noprefix diff.context
    diff.indentheuristic diff.colormoved log.date log.decorate log.abbrevcommit
    status.showuntrackedfiles status.short status.branch merge.conflictstyle rerere.enabled
    advice.* index.version protocol.version feature.manyfiles maintenance.auto
    """)
)
MAX_SUBMODULE_CONFIGS = 50
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
    argv = git_secrets.with_secrets_excluded(argv, secrets or secret_files.active())
    return [argv[0], *NEUTRAL, *argv[1:]]


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
    if command in LISTING:
        extra = [a for a in rest if a not in LISTING[command] and not a.startswith("--sort")]
        if extra:
            return f"git {command} {extra[0]!r} may change the repository"
    elif command not in READ_ONLY:
        return f"git {command!r} is not a read-only git command (or is an alias)"
    for arg in rest:
        if arg == "--":
            break
        problem = _risky_option(arg)
        if problem:
            return problem
    problem = repository_config_problem(workspace)
    if problem:
        return problem
    return _history_problem(command, rest, workspace, secrets or secret_files.active())


def _history_problem(
    command: str, rest: list[str], workspace: Path, secrets: SecretFiles
) -> str | None:
    """``git_secrets``' checks: the paths named, then (for a command that prints contents)
    what the arguments name, asked of git in one call."""
    problem = git_secrets.path_problem(command, rest, secrets)
    if problem or command not in git_secrets.PATH_LIMITED:
        return problem
    git = trusted_git(workspace)
    if git is None:
        return "no git outside the workspace to check what the arguments name"
    env = {**git_env(workspace), "PATH": os.path.dirname(git), "HOME": os.devnull, "LC_ALL": "C"}
    types = git_secrets.object_types(git, str(workspace), rest, env, NEUTRAL)
    return git_secrets.object_problem(command, rest, types)


def _risky_option(arg: str) -> str | None:
    if arg.startswith("--"):
        name = arg.partition("=")[0]
        if any(name == r or (len(name) >= 4 and r.startswith(name)) for r in RISKY_OPTIONS):
            return f"git option {arg!r} may run a program or read other settings"
    elif arg.startswith("-") and "O" in arg[1:]:
        return f"git option {arg!r} may open files in a program"
    return None


def config_files(workspace: Path) -> list[Path] | str:
    """The repository config files git would read in the workspace, or why they
    cannot be checked (a ``.git`` that is a link or a file pointing elsewhere)."""
    dot_git = workspace / ".git"
    if dot_git.is_symlink() or (dot_git.exists() and not dot_git.is_dir()):
        return "the workspace's .git is a link or a file pointing elsewhere"
    found = []
    for folder in (dot_git, workspace):  # the workspace itself may be a bare repository
        if (folder / "HEAD").exists() or folder == dot_git:
            for name in ("config", "config.worktree"):
                path = folder / name
                if path.is_symlink():
                    return f"{path.name} in {folder.name or '.'} is a link"
                if path.exists():
                    found.append(path)
        if (folder / "commondir").exists():
            return "the repository shares its config with another (commondir)"
    # Submodules: a plain "git status" runs git in each, with its own config.
    modules = sorted(dot_git.glob("modules/**/config")) if dot_git.is_dir() else []
    if len(modules) > MAX_SUBMODULE_CONFIGS:
        return "the repository has too many submodules to check their git config"
    return found + modules


def repository_config_problem(workspace: Path) -> str | None:
    """A key of the repository's config outside ``HARMLESS_KEYS``, named, or None."""
    files = config_files(workspace)
    if isinstance(files, str):
        return files
    for path in files:
        keys = _config_keys(path, workspace)
        if isinstance(keys, str):
            return keys
        for key in keys:
            if not any(fnmatch.fnmatchcase(key.lower(), pattern) for pattern in HARMLESS_KEYS):
                return f"the repository's git config sets {key!r}, which git may run or obey"
    return None


#: The hook names git runs (githooks(5)); another file in ``.git/hooks`` is never run.
HOOK_NAMES = frozenset(
    _words("""
    applypatch-msg pre-applypatch post-applypatch pre-commit pre-merge-commit
    prepare-commit-msg commit-msg post-commit pre-rebase post-checkout post-merge pre-push
    pre-receive update proc-receive post-receive post-update reference-transaction
    push-to-checkout pre-auto-gc post-rewrite sendemail-validate fsmonitor-watchman
    p4-changelist p4-prepare-changelist p4-post-changelist p4-pre-submit post-index-change
    """)
)


def repository_hooks(workspace: Path) -> list[str]:
    """The hooks an approved git command may run: the repository's executable
    ``.git/hooks/*`` of a name git runs (never its ``*.sample`` files), and ``core.hooksPath``
    when its config names another folder. An approved command runs them as git would,
    so the question names them."""
    hooks = workspace / ".git" / "hooks"
    found: list[str] = []
    try:
        if hooks.is_dir() and not hooks.is_symlink():
            found = sorted(
                p.name
                for p in hooks.iterdir()
                if p.name in HOOK_NAMES and p.is_file() and os.access(p, os.X_OK)
            )
    except OSError:
        found = ["(the hooks folder cannot be read)"]
    if hooks.is_symlink():
        found = ["(.git/hooks is a link)"]
    files = config_files(workspace)
    for path in files if isinstance(files, list) else []:
        keys = _config_keys(path, workspace)
        if isinstance(keys, list) and any(k.lower() == "core.hookspath" for k in keys):
            found.append("those of core.hooksPath")
    return found


def trusted_git(workspace: Path) -> str | None:
    """The ``git`` Harvey itself runs to read a config file: never one of the workspace's.

    This check runs unconfined, before any command; a cloned repository's
    ``.venv/bin/git`` first on ``PATH`` would otherwise run here, outside the
    sandbox, as the very program asked whether it is safe (``harvey.confine.programs``).
    """
    from harvey.confine.programs import find_program

    return find_program("git", workspace)


def _config_keys(path: Path, workspace: Path) -> list[str] | str:
    """The keys of one config file, read by git's own parser with includes off (from
    outside any repository, so nothing of the workspace's is set up to read it)."""
    git = trusted_git(workspace)
    if git is None:
        return "no git outside the workspace to read the repository's git config with"
    env = {"PATH": os.path.dirname(git), "HOME": os.devnull}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"})
    try:
        done = subprocess.run(
            [git, "config", "--file", str(path), "--no-includes", "--list", "--null"],
            capture_output=True,
            cwd=os.sep,
            env=env,
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot read the repository's git config: {exc}"
    if done.returncode != 0:
        return "the repository's git config cannot be parsed"
    entries = done.stdout.split(b"\0")
    return [e.split(b"\n", 1)[0].decode("utf-8", "replace") for e in entries if e]

"""The repository a cloned workspace brings: may git run unasked in it at all?

A plain ``git status`` obeys the repository's own ``.git/config`` — ``core.fsmonitor``
and hooks, ``core.pager`` on ``git log``, ``diff.external``, ``diff.*.textconv`` picked
by ``.gitattributes``, ``filter.*``, ``gpg.program`` with ``log.showSignature``,
``include.path`` to pull in any of these — and a clone controls all of it. So the
config (``.git/config``, ``./config`` of a bare repository, each submodule's; parsed by
``git config --file`` with includes off, by a git from outside the workspace) may hold
only keys from ``HARMLESS_KEYS``; anything else, a linked or redirected ``.git``, or a
shared ``commondir`` asks. A command the person approves runs the repository's hooks
as git would; the question names them (``repository_hooks``).
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from pathlib import Path


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


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

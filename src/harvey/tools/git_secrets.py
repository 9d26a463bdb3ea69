"""git reads that could print a secret file's content from the repository's history.

Confined commands cannot open ``.env`` (the sandbox's view leaves secret files out), but
git keeps every version of every file it was ever given: ``git show HEAD:.env``,
``git log -p``, ``git diff HEAD~3``, ``git grep KEY HEAD`` or ``git show <blob id>``
print a secret that was committed once, even after it was deleted. So, for the git
commands that run unasked:

- every command that prints file contents by path (``PATH_LIMITED``) gets the secret
  files' patterns as excluded pathspecs, and git itself leaves those files out of its
  diffs, patches and matches (an exclusion wins over any path the model names);
- where git cannot take them (``--follow``, ``-L``, ``blame``), a path naming a secret
  file asks instead, and so does a ``REV:PATH`` or ``-L…:PATH`` argument naming one;
- an argument of ``show``, ``diff`` or ``grep`` that names a blob by its id (a file's
  content, whose path git does not know; ``REV:PATH`` is judged by its path) asks, and
  so do ``cat-file``, which prints any object, and an option that reaches into
  submodules' history;
- so does an argument that names a folder's tree (``HEAD:.ssh``, a tree by its id):
  git then prints paths relative to that folder, where ``.ssh/config`` is ``config``.

A secret file committed under a name that is not a secret file's is out of reach of any
name rule; the file tools have the same limit.
"""

from __future__ import annotations

import posixpath
import subprocess
from collections.abc import Mapping, Sequence

from harvey.secret_files import SecretFiles

#: Subcommands that print file contents (patches, diffs, matches) limited by pathspecs.
PATH_LIMITED = frozenset(
    ["log", "show", "diff", "whatchanged", "diff-tree", "diff-files", "diff-index", "grep"]
)
#: Subcommands whose arguments may name a blob that they print.
SHOW_OBJECTS = frozenset({"show", "diff", "grep"})
#: Subcommands that read one file's history by its path and take no excluded pathspec.
ONE_FILE = frozenset({"blame", "annotate"})
_SUBMODULE_OPTIONS = ("--submodule", "--recurse-submodules")
_GLOB = frozenset("*?[")


def excluded_pathspecs(secrets: SecretFiles) -> list[str]:
    """The secret-file rule as git pathspecs that exclude, case-insensitively."""
    out = [f":(exclude,glob,icase)**/{pattern}" for pattern in (*secrets.names, *secrets.paths)]
    out += [f":(exclude,glob,icase)**/{folder}/**" for folder in secrets.folders]
    return out


def _follows_one_file(args: Sequence[str]) -> bool:
    """``--follow`` and ``-L`` take exactly one path, so no excluded pathspec can be added."""
    return any(a == "--follow" or a.startswith("-L") for a in args)


def with_secrets_excluded(argv: Sequence[str], secrets: SecretFiles) -> list[str]:
    """``git [global options] COMMAND ARGS`` with the excluded pathspecs appended, for a
    command in ``PATH_LIMITED`` that reads history (not ``--no-index``)."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 1
    if i >= len(argv) or argv[i] not in PATH_LIMITED:
        return list(argv)
    rest = argv[i + 1 :]
    if "--no-index" in rest or _follows_one_file(rest):
        return list(argv)
    # after the model's own arguments: git takes an argument that starts with ":(" as a
    # pathspec even without "--", and an exclusion wins over any path named before it
    return [*argv, *excluded_pathspecs(secrets)]


def _names_secret(text: str, secrets: SecretFiles) -> bool:
    path = posixpath.normpath(text.strip())
    return path not in (".", "") and secrets.matches(path.lstrip("/"))


def _positional(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """The arguments that are not options, before and after ``--``."""
    if "--" in args:
        cut = list(args).index("--")
        before, after = args[:cut], list(args[cut + 1 :])
    else:
        before, after = args, []
    return [a for a in before if not a.startswith("-")], after


def history_problem(
    command: str,
    args: Sequence[str],
    secrets: SecretFiles,
    object_type: Mapping[str, str] | None = None,
) -> str | None:
    """Why ``git COMMAND ARGS`` could print a secret file's content, or None.

    ``object_type`` gives the type git reports for each argument that names an object
    (``object_types``); arguments it lacks name none."""
    if command == "cat-file":
        return "git cat-file prints any object by its id, a secret file's content too"
    for arg in args:
        if arg.startswith(_SUBMODULE_OPTIONS):
            return (
                f"git option {arg!r} reads submodules' history, where secret files are not left out"
            )
        # REV:PATH, :PATH, :N:PATH and -L…:PATH: every text after a colon, as a path
        for at, char in enumerate(arg):
            if char == ":" and _names_secret(arg[at + 1 :], secrets):
                return f"git argument {arg!r} names a secret file"
    before, after = _positional(args)
    if command in ONE_FILE or _follows_one_file(args):
        for arg in (*before, *after):
            if _names_secret(arg, secrets) or (command not in ONE_FILE and _GLOB & set(arg)):
                return f"git {command} of {arg!r} may read a secret file's history"
    if command in PATH_LIMITED:
        types = object_type or {}
        for arg in before:
            kind = types.get(arg)
            # REV:PATH was judged by its path above; a blob by id has none to judge
            if kind == "blob" and ":" not in arg and command in SHOW_OBJECTS:
                return f"git {command} of {arg!r} prints a file's content by its id"
            if kind == "tree" and types.get(_commit_of(arg)) != "commit":
                return (
                    f"git {command} of {arg!r} reads a folder's tree, whose paths no longer "
                    "show which files are secret"
                )
    return None


def _commit_of(arg: str) -> str:
    """The revision whose whole tree ``arg`` names when it is ``REV^{tree}``, ``REV:`` or
    ``REV:.``; anything else (a subfolder, a tree by id) gives a text that names nothing."""
    if arg.endswith("^{tree}"):
        return arg[: -len("^{tree}")]
    rev, colon, path = arg.rpartition(":")
    if colon and posixpath.normpath(path or ".") == ".":
        return rev
    return "\0"  # no object has this name


def object_types(
    git: str, workspace: str, args: Sequence[str], env: Mapping[str, str], neutral: Sequence[str]
) -> dict[str, str]:
    """The object type of each argument before ``--`` that is not an option, and of the
    revision of each ``REV^{tree}``/``REV:`` among them, tags peeled (``blob``, ``tree``,
    ``commit``), from ``git cat-file -t`` with the program settings overridden; a name
    of no object is left out. Runs no hook, pager or filter."""
    before, _after = _positional(args)
    names = [*before, *(_commit_of(a) for a in before if _commit_of(a) != "\0")]

    def kind(name: str) -> str | None:
        try:
            done = subprocess.run(
                [git, *neutral, "cat-file", "-t", name],
                capture_output=True,
                cwd=workspace,
                env=dict(env),
                timeout=10,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError):
            return "blob"  # cannot tell: counted as the one that asks
        return done.stdout.decode("ascii", "replace").strip() if done.returncode == 0 else None

    types: dict[str, str] = {}
    for name in dict.fromkeys(names):
        found = kind(name)
        if found == "tag":  # what it points at is what git shows
            found = kind(f"{name}^{{}}")
        if found:
            types[name] = found
    return types

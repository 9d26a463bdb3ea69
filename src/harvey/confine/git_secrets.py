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

from harvey.workspace.secret_files import SecretFiles

#: Subcommands that print file contents (patches, diffs, matches) limited by pathspecs.
PATH_LIMITED = frozenset(
    ["log", "show", "diff", "whatchanged", "diff-tree", "diff-files", "diff-index", "grep"]
)
#: Subcommands whose arguments may name a blob that they print.
SHOW_OBJECTS = frozenset({"show", "diff", "grep"})
#: Subcommands that read one file's history by its path and take no excluded pathspec.
ONE_FILE = frozenset({"blame", "annotate"})
_GLOB = frozenset("*?[")
#: Long options (or an abbreviation git accepts) that ask, and why: they reach past the
#: exclusions: into submodules, a whole diff of a commit the exclusions chose, objects
#: no argument names (``git show --indexed-objects`` prints every blob of the index).
_REACHING = {
    "--submodule": "reads submodules, where secret files are not left out",
    "--recurse-submodules": "reads submodules, where secret files are not left out",
    "--full-diff": "prints the whole diff of a commit, secret files too",
    "--follow": "follows one path through history, where no exclusion can be added",
}
_UNNAMED_OBJECTS = (
    "--all", "--branches", "--tags", "--remotes", "--glob", "--indexed-objects",
    "--alternate-refs", "--stdin", "--exclude", "--exclude-hidden", "--reflog",
)  # fmt: skip
MAX_NAMED_OBJECTS = 64  # more arguments than this ask rather than being looked up


def excluded_pathspecs(secrets: SecretFiles) -> list[str]:
    """The secret-file rule as git pathspecs that exclude, case-insensitively."""
    out = [f":(exclude,glob,icase)**/{pattern}" for pattern in (*secrets.names, *secrets.paths)]
    out += [f":(exclude,glob,icase)**/{folder}/**" for folder in secrets.folders]
    return out


def _options(args: Sequence[str]) -> list[str]:
    """The options: the arguments before ``--`` that begin with ``-`` (after it, git reads
    every word as a path, ``-L`` and ``--no-index`` included)."""
    cut = list(args).index("--") if "--" in args else len(args)
    return [a for a in args[:cut] if a.startswith("-")]


def _is_option(arg: str, name: str) -> bool:
    """``arg`` is the long option ``name`` or an abbreviation of it git would take."""
    given = arg.partition("=")[0]
    return given == name or (len(given) >= 5 and name.startswith(given))


def _follows_one_file(args: Sequence[str]) -> bool:
    """``-L`` takes exactly one path, so no excluded pathspec can be added."""
    return any(a.startswith("-L") for a in _options(args))


def with_secrets_excluded(argv: Sequence[str], secrets: SecretFiles) -> list[str]:
    """``git [global options] COMMAND ARGS`` with the excluded pathspecs appended, for a
    command in ``PATH_LIMITED`` that reads history (not ``--no-index``)."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 1
    if i >= len(argv) or argv[i] not in PATH_LIMITED:
        return list(argv)
    rest = argv[i + 1 :]
    if "--no-index" in _options(rest) or _follows_one_file(rest):
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


def path_problem(command: str, args: Sequence[str], secrets: SecretFiles) -> str | None:
    """Why ``git COMMAND ARGS`` could print a secret file's content by the paths and options
    it names, or None. (``cat-file``, which prints any object, is not a read-only command
    in ``git_policy`` at all.)"""
    for arg in _options(args):
        for name, why in _REACHING.items():
            if _is_option(arg, name):
                return f"git option {arg!r} {why}"
        if command in SHOW_OBJECTS and any(_is_option(arg, n) for n in _UNNAMED_OBJECTS):
            return f"git {command} {arg!r} may print objects no argument names"
        if command == "status" and (_is_option(arg, "--verbose") or _short_flag(arg, "v")):
            return f"git status {arg!r} prints the staged diff, secret files too"
        if command == "for-each-ref" and any(f in arg for f in ("raw)", "contents")):
            return f"git for-each-ref {arg!r} prints the objects refs point at"
    for arg in args:
        # REV:PATH, :PATH, :N:PATH and -L…:PATH: every text after a colon, as a path
        for at, char in enumerate(arg):
            if char == ":" and _names_secret(arg[at + 1 :], secrets):
                return f"git argument {arg!r} names a secret file"
    before, after = _positional(args)
    if command in ONE_FILE or _follows_one_file(args):
        for arg in (*before, *after):
            if _names_secret(arg, secrets) or (command not in ONE_FILE and _GLOB & set(arg)):
                return f"git {command} of {arg!r} may read a secret file's history"
    if command in PATH_LIMITED and len(before) > MAX_NAMED_OBJECTS:
        return f"git {command} with {len(before)} arguments: too many to look up"
    return None


def _short_flag(arg: str, flag: str) -> bool:
    """``arg`` is a cluster of short options (``-sv``) that holds ``flag``."""
    return arg.startswith("-") and not arg.startswith("--") and flag in arg[1:]


def _revision_of(arg: str) -> str | None:
    """The revision part of ``REV:PATH`` (the text before the first colon outside
    ``{…}``, as git splits it); ``""`` for the index forms ``:PATH`` and ``:N:PATH``;
    None when ``arg`` has no such colon."""
    depth = 0
    for at, char in enumerate(arg):
        if char == "{":
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
        elif char == ":" and depth == 0:
            return arg[:at]
    return None


def object_problem(command: str, args: Sequence[str], types: Mapping[str, str]) -> str | None:
    """Why ``git COMMAND ARGS`` could print a secret file's content through the objects its
    arguments name (``types``: what ``object_types`` found), or None."""
    if command not in PATH_LIMITED:
        return None
    before, _after = _positional(args)
    for arg in before:
        kind = types.get(arg)
        revision = _revision_of(arg)
        # REV:PATH is judged by its path (``path_problem``), which is the path in the
        # workspace only when REV is a commit (or the index): under a folder's tree
        # (``<tree of .ssh>:config``) the same path names another file
        if revision and kind is not None and types.get(revision) != "commit":
            return f"git {command} of {arg!r} names a file under a tree, not a commit"
        if kind == "blob" and revision is None and command in SHOW_OBJECTS:
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
    ``commit``): one ``git cat-file --batch-check`` with the program settings overridden,
    which runs no hook, pager or filter; a name of no object is left out, and an answer
    that cannot be read counts every name as a blob (the type that asks)."""
    before, _after = _positional(args)
    revisions = [r for r in (_revision_of(a) for a in before) if r]
    names = list(dict.fromkeys([*before, *(_commit_of(a) for a in before), *revisions]))
    names = [n for n in names if n != "\0"]
    if not names:
        return {}
    if any("\n" in n or "\r" in n for n in names):
        return dict.fromkeys(names, "blob")  # a name git would read as two
    # each name, then the name peeled (a tag to what it points at; else itself)
    asked = "".join(f"{n}\n{n}^{{}}\n" for n in names)
    try:
        done = subprocess.run(
            [git, *neutral, "cat-file", "--batch-check=%(objecttype)"],
            input=asked.encode("utf-8", "surrogateescape"),
            capture_output=True,
            cwd=workspace,
            env=dict(env),
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return dict.fromkeys(names, "blob")
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    if done.returncode != 0 or len(lines) != 2 * len(names):
        return dict.fromkeys(names, "blob")
    types: dict[str, str] = {}
    for i, name in enumerate(names):
        found, peeled = lines[2 * i], lines[2 * i + 1]
        if found == "tag":  # what it points at is what git shows
            found = peeled
        if found in ("blob", "tree", "commit"):
            types[name] = found
    return types

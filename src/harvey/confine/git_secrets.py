"""git reads that could print a secret file's content from the repository's history.

Confined commands cannot open ``.env`` (the sandbox's view leaves secret files out), but
git keeps every version of every file it was ever given: ``git show HEAD:.env``,
``git log -p``, ``git diff HEAD~3``, ``git grep KEY HEAD`` or ``git show <blob id>``
print a secret that was committed once, even after it was deleted. So, for the forms
``git_policy`` runs unasked that print file contents:

- they get the secret files' patterns as excluded pathspecs, and git itself leaves those
  files out of its diffs, patches and matches (an exclusion wins over any path named);
- where git cannot take them (``-L``, ``blame``), a path naming a secret file asks, and
  so does any ``REV:PATH``, ``:PATH`` or ``-L…:PATH`` argument naming one;
- every object an argument names must be a commit (a tag peeled to one) or a file of a
  commit (``REV:PATH``, judged by its path above): a blob by its id, a tree (whose paths
  are relative to a folder, where ``.ssh/config`` is ``config``) or a tag of either asks.
  One ``git cat-file --batch-check`` answers what each names.

A secret file committed under a name that is not a secret file's is out of reach of any
name rule; the file tools have the same limit.
"""

from __future__ import annotations

import posixpath
import subprocess
from collections.abc import Mapping, Sequence

from harvey.workspace.secret_files import SecretFiles

_GLOB = frozenset("*?[")
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


def _follows_one_file(args: Sequence[str]) -> bool:
    """``-L`` takes exactly one path, so no excluded pathspec can be added."""
    return any(a.startswith("-L") for a in _options(args))


def with_secrets_excluded(args: Sequence[str], secrets: SecretFiles) -> list[str]:
    """The arguments of a form that prints file contents, with the excluded pathspecs
    appended when it reads history (not ``--no-index``, not ``-L``)."""
    if "--no-index" in _options(args) or _follows_one_file(args):
        return list(args)
    # after the model's own arguments: git takes an argument that starts with ":(" as a
    # pathspec even without "--", and an exclusion wins over any path named before it
    return [*args, *excluded_pathspecs(secrets)]


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


def path_problem(
    command: str, args: Sequence[str], secrets: SecretFiles, *, one_path: bool = False
) -> str | None:
    """Why ``git COMMAND ARGS`` could print a secret file's content by the paths it names,
    or None; ``one_path``: the form follows one path's history (``blame``)."""
    for arg in args:
        # REV:PATH, :PATH, :N:PATH and -L…:PATH: every text after a colon, as a path
        for at, char in enumerate(arg):
            if char == ":" and _names_secret(arg[at + 1 :], secrets):
                return f"git argument {arg!r} names a secret file"
    before, after = _positional(args)
    if one_path or _follows_one_file(args):
        for arg in (*before, *after):
            if _names_secret(arg, secrets) or (not one_path and _GLOB & set(arg)):
                return f"git {command} of {arg!r} may read a secret file's history"
    if len(before) > MAX_NAMED_OBJECTS:
        return f"git {command} with {len(before)} arguments: too many to look up"
    return None


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
    """The first argument that names an object other than a commit or a file of one
    (``types``: what ``object_types`` found; a name of no object is a path), or None."""
    before, _after = _positional(args)
    for arg in before:
        kind = types.get(arg)
        if kind in (None, "commit"):
            continue
        revision = _revision_of(arg)
        # REV:PATH is judged by its path (``path_problem``), the path in the workspace
        # only when REV is a commit or the index: under a folder's tree
        # (``<tree of .ssh>:config``) the same path names another file
        if kind == "blob" and (revision == "" or (revision and types.get(revision) == "commit")):
            continue
        return f"git {command} of {arg!r} names a {kind}, not a commit or a file of one"
    return None


def object_types(
    git: str, workspace: str, args: Sequence[str], env: Mapping[str, str], neutral: Sequence[str]
) -> dict[str, str]:
    """The object type of each argument before ``--`` that is not an option, and of the
    revision of each ``REV:PATH`` among them, tags peeled (``blob``, ``tree``,
    ``commit``): one ``git cat-file --batch-check`` with the program settings overridden,
    which runs no hook, pager or filter; a name of no object is left out, and an answer
    that cannot be read counts every name as a blob (the type that asks)."""
    before, _after = _positional(args)
    revisions = [r for r in (_revision_of(a) for a in before) if r]
    names = list(dict.fromkeys([*before, *revisions]))
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

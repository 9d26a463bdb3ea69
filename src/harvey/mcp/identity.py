"""What a server and a tool *are*, as hashes: never their names.

A name is a label the repository chose. Claude Code keyed its approval of a project's
server by name, so a ``.mcp.json`` whose command changed under an approved name ran
silently. Here a server is the hash of everything that decides what runs and what it is
handed — command, arguments, the names of the variables it gets, its URL and where its
token comes from, whether it may reach the network or write — *and the content of the
files its command line names*: the program itself (found on ``PATH`` when it is a bare
name), every argument that is a file (a script, ``--config=x.json``) with what a script
imports from its own folder (the files of its kind there; a Python script's packages),
the module of ``python -m MODULE`` (a package: every file in it), a folder run as a
program (``python tools/``), the words of a shell's ``-c`` string and the files a shell
script names (``start.sh`` running ``python3 srv.py``). An edited
``tools/srv.py``, or the ``tools/helper.py`` it imports, is a new server that asks again,
though its command line reads the same. A file the program reaches only by itself (a
module elsewhere on its path, a package ``npx`` fetches) is not pinned: name it as an
argument, or keep it outside the workspace.

A tool is the hash of its name, description and input schema as the server lists them:
a description changed after approval (a "rug pull") is a new tool, off until the person
sees the change and approves it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from harvey.config.mcp_settings import McpServerSettings

#: The most of one file hashed (a larger one is pinned by its size and change time).
MAX_HASHED_BYTES = 256 << 20
#: The most files of one package (``python -m PACKAGE``) hashed.
MAX_PACKAGE_FILES = 2000
_SKIPPED = frozenset({"__pycache__", ".git", "node_modules"})


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def server_parts(
    server: McpServerSettings, workspace: Path | None = None, files: bool = True
) -> dict[str, Any]:
    """What the server runs and is handed, part by part (so a change can be named): each
    part's hash, and ``files``, the content hash of every file its command line names, by
    its path (relative to the workspace when inside it)."""
    return {
        "command": _digest(server.command),
        "arguments": _digest(list(server.args)),
        "variables": _digest(sorted(set(server.env))),
        "url": _digest(server.url),
        "token": _digest([server.token_env, server.token_command]),
        "grants": _digest([server.network, sorted(set(server.reads)), sorted(set(server.writes))]),
        "files": program_files(server, workspace) if files else {},
    }


def server_identity(server: McpServerSettings, workspace: Path | None = None) -> str:
    """The SHA-256 of what the server runs and is handed (not its name, not ``confine``:
    that one is the user's own and only ever narrows)."""
    return identity_of(server_parts(server, workspace))


def identity_of(parts: dict[str, Any]) -> str:
    return _digest(parts)


def changed_parts(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between two ``server_parts``, in words: ``its arguments``, ``the file
    tools/srv.py``, ``a new file x.py``."""
    words = {
        "command": "its command", "arguments": "its arguments",
        "variables": "the variables it gets", "url": "its URL",
        "token": "its token's source", "grants": "the folders or network it may use",
    }  # fmt: skip
    found = [words[k] for k in words if before.get(k) != now.get(k)]
    was, is_now = before.get("files"), now.get("files")
    old: dict[str, Any] = was if isinstance(was, dict) else {}
    new: dict[str, Any] = is_now if isinstance(is_now, dict) else {}
    from harvey.terminal_text import for_terminal

    for path in sorted(set(old) | set(new)):
        name = for_terminal(path, one_line=True)  # a file name the repository chose
        if path not in old:
            found.append(f"a new file {name}")
        elif path not in new:
            found.append(f"the file {name} (gone)")
        elif old[path] != new[path]:
            found.append(f"the file {name}")
    return found


def tool_pin(name: str, description: str | None, schema: Any) -> str:
    """The SHA-256 of a tool as the model would see it."""
    return _digest({"name": name, "description": description or "", "schema": schema})


def schema_pin(schema: Any) -> str:
    """The SHA-256 of a tool's input schema alone (to say a change was of its schema)."""
    return _digest(schema)


def program_files(server: McpServerSettings, workspace: Path | None = None) -> dict[str, str]:
    """The content hash of each file the server's command line names, by path: the
    program, every argument that is a file (and the files beside a script that it would
    import: the same kind in its folder, and a Python script's packages there), the files
    of ``-m MODULE`` and of a folder run as a program (one with ``__main__.py``), the
    words of a shell's ``-c`` string; at most ``MAX_PACKAGE_FILES`` of them."""
    if server.command is None:
        return {}
    root = Path(workspace) if workspace is not None else Path.cwd()
    found: dict[str, str] = {}
    program = _program(server.command, root)
    if program is not None:
        _add(found, program, root)
        if "/" in server.command:  # a script of its own, not a program from PATH
            for beside in [*_beside(program), *_shell_words(program, root)]:
                _add(found, beside, root)
    args = list(server.args)
    for i, arg in enumerate(args):
        if i > 0 and args[i - 1] == "-m":
            named = _module(arg, root)
        else:
            named = []
            for candidate in _candidates(arg):
                path = _file(candidate, root)
                if path is not None:
                    named += [path, *_beside(path), *_shell_words(path, root)]
                elif _runs_as_program(candidate, root):
                    named += _package(_under(candidate, root))
        for path in named:
            if len(found) >= MAX_PACKAGE_FILES:
                return found
            _add(found, path, root)
    return found


#: The kinds of script whose neighbours in its folder it may import.
SCRIPTS = frozenset({".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".lua", ".sh"})


def _candidates(arg: str) -> list[str]:
    """The words of an argument that may name a file: itself, an option's value
    (``--config=x.json``), and the words of a command string (``sh -c "python x.py"``)."""
    import shlex

    found = [arg]
    if arg.startswith("-") and "=" in arg:
        found.append(arg.split("=", 1)[1])
    if any(c.isspace() for c in arg) and len(arg) <= 4096:
        try:
            words = shlex.split(arg)
        except ValueError:
            words = arg.split()
        found += [w.strip(";&|()") for w in words]
    return found


def _beside(script: Path) -> list[Path]:
    """What a script may import from its own folder (first on its path): the files of its
    kind there, and for a Python script the packages there."""
    if script.suffix not in SCRIPTS:
        return []
    folder, files = script.parent, []
    try:
        entries = sorted(folder.iterdir())[:MAX_PACKAGE_FILES]
    except OSError:
        return []
    for entry in entries:
        if entry.suffix == script.suffix and entry != script and _file(str(entry), folder):
            files.append(entry)
        elif script.suffix == ".py" and entry.name not in _SKIPPED and _is_package(entry):
            files += _package(entry)
    return files


#: The most of a shell script read for the files it names.
MAX_SHELL_SCRIPT = 64 << 10


def _shell_words(script: Path, root: Path) -> list[Path]:
    """The files a shell script names (``start.sh`` running ``python3 srv.py``), with
    what each imports beside it; one level deep, from its first ``MAX_SHELL_SCRIPT``
    bytes."""
    try:
        with open(script, "rb") as handle:
            head = handle.read(MAX_SHELL_SCRIPT)
    except OSError:
        return []
    first = head.split(b"\n", 1)[0]
    if script.suffix not in (".sh", ".bash") and not (first.startswith(b"#!") and b"sh" in first):
        return []
    files: list[Path] = []
    for line in head.decode("utf-8", "replace").splitlines():
        if line.lstrip().startswith("#"):
            continue
        for word in _candidates(line.strip() + " "):
            for base in (root, script.parent):
                named = _file(word, base)
                if named is not None and named != script:
                    files += [named, *_beside(named)]
                    break
        if len(files) >= MAX_PACKAGE_FILES:
            break
    return files


def _is_package(folder: Path) -> bool:
    try:
        return folder.is_dir() and (folder / "__init__.py").is_file()
    except OSError:
        return False


def _under(text: str, root: Path) -> Path:
    return Path(text) if os.path.isabs(text) else root / text


def _runs_as_program(text: str, root: Path) -> bool:
    """A folder an interpreter runs (``python tools/``: its ``__main__.py``)."""
    if not text or "\0" in text or len(text) > 4096:
        return False
    try:
        return (_under(text, root) / "__main__.py").is_file()
    except (OSError, ValueError):
        return False


def _program(command: str, root: Path) -> Path | None:
    if "/" in command:
        return _file(command, root)
    located = shutil.which(command)
    return None if located is None else Path(located)


def _file(text: str, root: Path) -> Path | None:
    """``text`` as a regular file (relative to the workspace, the server's folder), or None."""
    if not text or "\0" in text or len(text) > 4096:
        return None
    path = Path(text) if os.path.isabs(text) else root / text
    try:
        return path if stat.S_ISREG(path.stat().st_mode) else None
    except (OSError, ValueError):
        return None


def _module(name: str, root: Path) -> list[Path]:
    """The files of ``python -m name``: looked for in the workspace (the server's folder,
    first on its path), else on Harvey's own path, without importing anything."""
    parts = [p for p in name.split(".") if p]
    if not parts or any(not p.isidentifier() for p in parts):
        return []
    bases: list[Path] = [root, *(Path(p) for p in _import_path())]
    for base in bases:
        target = base.joinpath(*parts)
        single = target.with_suffix(".py")
        if _file(str(single), root) is not None:
            return [single]
        marked = (target / "__init__.py").exists() or (target / "__main__.py").exists()
        if target.is_dir() and marked:
            return _package(target)
    return []


def _import_path() -> list[str]:
    import sys

    return [p for p in sys.path if p and os.path.isdir(p)]


def _package(folder: Path) -> list[Path]:
    files: list[Path] = []
    for here, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED)
        for name in sorted(names):
            path = Path(here) / name
            if _file(str(path), folder) is not None:
                files.append(path)
            if len(files) >= MAX_PACKAGE_FILES:
                return files
    return files


def _add(found: dict[str, str], path: Path, root: Path) -> None:
    real = os.path.realpath(path)
    base = os.path.realpath(root)
    shown = os.path.relpath(real, base) if real.startswith(base.rstrip("/") + "/") else real
    found[shown] = file_hash(Path(real))


def file_hash(path: Path) -> str:
    """The SHA-256 of a regular file's content, read without blocking on a FIFO; a file
    over ``MAX_HASHED_BYTES`` by its size and change time; one that cannot be read, by
    why."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size > MAX_HASHED_BYTES:
            return f"size {info.st_size}, changed {info.st_mtime_ns}"
        digest = hashlib.sha256()
        while piece := os.read(fd, 1 << 20):
            digest.update(piece)
        return digest.hexdigest()
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    finally:
        os.close(fd)

"""What a person's words name of the workspace: files (``notes.md``), folders (``src``),
and names that are identifiers rather than English words (``parse_date``, ``UserStore``).

A constrained turn chooses a path or a search word only among what was named
(``chat/calls/turn_names.py``), and a request that names nothing of the workspace is
the one an MCP tool may be for (``tools/mcp_tools.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]+\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/])")
WORD = re.compile(r"[A-Za-z_][\w]*(?:[./][A-Za-z_]\w*)*")
MAX_FOLDER_WORDS = 64


def named_paths(text: str) -> list[str]:
    """The file names a prompt mentions (``notes.md``, ``src/app.py``), in order."""
    return list(dict.fromkeys(p.rstrip(".") for p in PATH.findall(text)))


def is_name(word: str) -> bool:
    """An identifier or a path rather than an English word: ``_``, ``.``, ``/``, a digit,
    or a capital after the first letter."""
    return any(c in "_./" or c.isdigit() for c in word) or any(c.isupper() for c in word[1:])


def named_folders(words: Sequence[str], workspace: Path) -> list[str]:
    """The ``words`` that name a folder of the workspace (``src``, ``docs/api``). A word
    has no ``..`` or leading ``/`` (``WORD``); a link is not offered (and a tool would
    check it as any read)."""
    found = []
    root = workspace.resolve()
    for word in words:
        if word.startswith("/") or ".." in word.split("/"):
            continue
        try:
            folder = workspace / word
            # a link anywhere on the way (``docs -> /etc``, then ``docs/ssh``) leads out:
            # the folder must be itself once every link is followed
            if folder.is_dir() and folder.resolve() == root / word:
                found.append(word)
        except (OSError, RuntimeError):
            continue
    return found


def names_the_workspace(text: str, workspace: Path | None) -> bool:
    """Whether ``text`` names a file, an identifier (three letters or more) or, given
    the ``workspace``, one of its folders: a request about the workspace's own files."""
    if named_paths(text):
        return True
    words = [w.rstrip("./") for w in WORD.findall(text)]
    if any(len(w) >= 3 and is_name(w) for w in words):
        return True
    # a folder is looked for among the first words only: a pasted page costs no stat each
    return workspace is not None and bool(named_folders(words[:MAX_FOLDER_WORDS], workspace))

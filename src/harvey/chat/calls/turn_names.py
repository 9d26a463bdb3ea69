"""What a constrained turn may name: the files and the search words its messages gave.

A 135M model copies well and invents badly: asked where ``parse_date`` is defined, SmolLM2
searched for ``parseDate`` and a date pattern, read the system prompt's example
``plan.txt``, and listed a folder ``src.txt`` (BENCHMARKS.md). So in a constrained turn
a path, a search pattern and a folder to list are chosen from what the turn has named:
the user's newest message, and the results of the tools called since.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harvey.retrieval.words import STOPWORDS
from harvey.workspace.mentions import WORD, is_name, named_paths

if TYPE_CHECKING:
    from harvey.messages import Message

MAX_TURN_PATHS = 50  # the paths a constrained call may choose from, the prompt's first
MAX_TURN_WORDS = 20
# Words that say what to do rather than what to look for ("find the file that defines
# the class UserStore"): a search for them finds everything.
_COMMAND_WORDS = frozenset(
    [
        "find",
        "file",
        "files",
        "define",
        "defines",
        "defined",
        "definition",
        "list",
        "folder",
        "folders",
        "directory",
        "class",
        "function",
        "method",
        "show",
        "tell",
        "read",
        "says",
        "say",
        "look",
        "search",
        "where",
        "which",
        "one",
    ]
)
_LISTED = re.compile(r"^((?:  )+)(\S.*?)(  \[[^\]]*: not read\])?$")


def listing_paths(text: str) -> list[str]:
    """The files of a ``list_files`` result as workspace paths: its tree shows each name
    under its folder (``src/`` then ``  dates.py``), and a model asked to read one by the
    bare name gets an error. Files the tools will not read (a secret file) are left out."""
    lines = text.splitlines()
    if not lines or not lines[0].endswith("/"):
        return []
    root = lines[0].rstrip("/")
    base = [] if root in (".", "") else [root]
    folders: list[str] = []
    found: list[str] = []
    for line in lines[1:]:
        match = _LISTED.match(line)
        if match is None:
            continue
        depth = len(match.group(1)) // 2 - 1
        name = match.group(2)
        if name.startswith("[") or match.group(3):  # "[cannot list: …]", a file not read
            continue
        if " -> " in name:  # a link: its own name, never where it leads
            name = name.split(" -> ", 1)[0]
        del folders[depth:]
        if name.endswith("/"):
            folders.append(name.rstrip("/"))
        else:
            found.append("/".join([*base, *folders, name]))
    return found


def turn_paths(messages: Sequence[Message], asked: str | None = None) -> list[str]:
    """The files this turn has named: the newest user message's (``asked``, the person's
    own words, when given: not the plan or passages sent with them), then those named by
    the tool results after it (a search hit's ``src/dates.py:1:``, a listing's files)."""
    named: dict[str, None] = {}
    for message in _this_turn(messages):
        if message.role == "user":
            text = message.content if asked is None else asked
            named.update(dict.fromkeys(named_paths(text)))
        elif message.name == "list_files":
            named.update(dict.fromkeys(listing_paths(message.content)))
        else:
            named.update(dict.fromkeys(named_paths(message.content)))
    # a file's text can name any number of paths: the grammar's list stays small
    return list(named)[:MAX_TURN_PATHS]


def turn_words(messages: Sequence[Message], asked: str | None = None) -> list[str]:
    """The words the newest user message (``asked``, when given) asks about, names first
    (``parse_date``, ``UserStore``, ``config/app``), then plain words; no stopwords or
    command words."""
    users = [m.content for m in messages if m.role == "user"]
    text = asked if asked is not None else (users[-1] if users else "")
    words = [w.rstrip("./") for w in WORD.findall(text)]
    topical = [
        w
        for w in dict.fromkeys(words)
        if len(w) >= 3 and w.lower() not in STOPWORDS and w.lower() not in _COMMAND_WORDS
    ]
    names = [w for w in topical if is_name(w)]
    return [*names, *(w for w in topical if w not in names)][:MAX_TURN_WORDS]


def _this_turn(messages: Sequence[Message]) -> list[Message]:
    last = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    return [m for m in messages[max(last, 0) :] if m.role in ("user", "tool")]

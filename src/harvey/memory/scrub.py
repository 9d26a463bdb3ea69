"""Scrubbing: what a proposed memory may contain before anyone is asked to keep it.

A memory outlives its session and is injected into every later one, so a
credential in it would be replayed to every model forever. Masking is not
enough (``sk-[REDACTED]`` still says "there is a key here, ask for it"), so a
proposal holding one is **rejected**, and the caller counts the rejections.
The token shapes are harvey.redact's (one list for the whole program), plus
the configured secrets of the active redactor and the assignments
(``password=…``) that only make sense to refuse, not to redact, in prose.

Paths are made portable instead: the workspace becomes ``<workspace>`` and the
home folder ``~``, so a memory does not leak the user's directory layout.

Control characters are made visible (``terminal_text.for_terminal``) before a
memory is shown for review, so what the person sees is exactly what is stored:
a conceal sequence (``ESC [8m``) cannot hide the end of a proposal that is then
kept and recalled in every workspace, and tag characters cannot carry a hidden
sentence. The credential check also runs with the controls taken out, so a key
split by invisible characters is still refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harvey.redact import active, token_shapes
from harvey.terminal_text import for_terminal, remove_controls

_NAMES = r"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)"
# "password=hunter2", "api_key = abc123": an assignment, not the word in prose. After a
# colon ("the secret: write tests first") only a value with a digit or a symbol counts.
_ASSIGNMENT = re.compile(_NAMES + r"\s*=\s*[\"']?[^\s\"',;]{4,}")
_COLON = re.compile(_NAMES + r"\s*:\s*[\"']?(?=[^\s\"',;]*[^A-Za-z\s\"',;])[^\s\"',;]{4,}")


@dataclass(frozen=True)
class Scrubbed:
    """The portable text, or the reason it was rejected (``text`` is then empty)."""

    text: str
    rejected: str | None = None


def credential_shapes(text: str) -> list[str]:
    """Every credential shape found in ``text``; empty when it may be stored."""
    found = token_shapes(text)
    if _ASSIGNMENT.search(text) or _COLON.search(text):
        found.append("password-assignment")
    redactor = active()
    if any(secret in text for secret in redactor.secrets):
        found.append("configured-secret")
    return found


def scrub(text: str, *, workspace: Path | None = None, home: Path | None = None) -> Scrubbed:
    """Reject ``text`` if it holds a credential, else shorten its paths and make its
    controls visible: the result is what the review shows and what is stored."""
    shapes = credential_shapes(text)
    bare = remove_controls(text)
    if bare != text:
        shapes += credential_shapes(bare)
    if shapes:
        return Scrubbed("", f"contains a credential ({', '.join(sorted(set(shapes)))})")
    home = Path.home() if home is None else home
    for folder, name in ((workspace, "<workspace>"), (home, "~")):  # workspace first: inside ~
        if folder is not None and str(folder) not in ("", "/"):
            text = re.sub(re.escape(str(folder)) + r"(?=/|\b|$)", name, text)
    return Scrubbed(for_terminal(text).strip())

"""A compaction summary that cannot invent: built from the conversation, or checked against it.

A model too small to summarise faithfully (``analysis.sizes.is_small``) wrote "Expecting
value, expected 'None'" for four thousand tokens of conversation, and "The conversation
above is summarised in 940 words." — both recorded as ``ok``. So:

* for a small model the summary is built here from the conversation itself, no model
  asked: each turn's request and the first line of its answer, quoted and numbered by
  turn, and the files its tools touched (:func:`built_summary`);
* a larger model's summary is checked with the analysis's own string matching
  (``analysis.matching``, ``analysis.atoms``): its names, dates and figures, and its
  content words, must be in the conversation (:func:`grounded`). One that is not is
  never recorded: the built summary stands in for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from harvey.messages import Message

BUILT_BY = "Harvey"  # the model= a built summary's note names
HEADING = "From the conversation itself (quoted; no model wrote this):"
LINE_CHARS = 160
# Words any summary of any conversation may use: they show nothing of this one.
_ABOUT_ANY_CONVERSATION = frozenset(
    re.findall(
        r"\w+",
        "conversation conversations summary summarised summarized summarise summarize user "
        "users assistant asked asks answered discussed discussion above below words turns "
        "turn earlier previous message messages said talked",
    )
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")


@dataclass(frozen=True)
class Check:
    """How much of a summary the conversation holds."""

    atoms_found: int
    atoms: int
    words_found: int
    words: int

    @property
    def ok(self) -> bool:
        """At least half its names and figures, and some of its own words, are in the
        conversation: a paraphrase passes, a summary of something else does not."""
        atoms_ok = self.atoms == 0 or self.atoms_found * 2 >= self.atoms
        return atoms_ok and self.words_found > 0

    def said(self) -> str:
        return (
            f"{self.atoms - self.atoms_found} of {self.atoms} names and figures and "
            f"{self.words - self.words_found} of {self.words} words are not in the conversation"
        )


def conversation_text(turns: Sequence[Sequence[Message]]) -> str:
    """Everything said in ``turns``: requests, answers, tool calls and their results."""
    parts: list[str] = []
    for turn in turns:
        for message in turn:
            parts.append(message.content)
            for call in message.tool_calls or ():
                parts.append(f"{call.name} {call.arguments}")
    return "\n".join(parts)


def grounded(summary: str, conversation: str) -> Check:
    """How much of ``summary`` is in ``conversation``, by the analysis's string matching."""
    from harvey.analysis.atoms import Source, grounded_share
    from harvey.analysis.matching import find_words, normalise
    from harvey.retrieval.words import STOPWORDS, stem, words_of

    source = Source(conversation)
    atoms_found, atoms = grounded_share(summary, source)
    text = normalise(conversation)
    stems = {stem(w) for w in words_of(text)}
    words = [
        w
        for w in dict.fromkeys(w.lower() for w in _WORD.findall(summary))
        if w not in STOPWORDS and w not in _ABOUT_ANY_CONVERSATION
    ]
    found = sum(1 for w in words if find_words(normalise(w), text) >= 0 or stem(w) in stems)
    return Check(atoms_found, atoms, found, len(words))


def built_summary(turns: Sequence[Sequence[Message]], chars: int, first: int = 1) -> str:
    """The summary of ``turns`` (numbered from ``first``) built from their own words, within
    ``chars``: the newest turns are kept when they do not all fit."""
    lines: list[str] = []
    files: dict[str, None] = {}
    for number, turn in enumerate(turns, start=first):
        asked = next((m.content for m in turn if m.role == "user"), "")
        answers = [m.content for m in turn if m.role == "assistant" and m.content.strip()]
        for message in turn:
            for call in message.tool_calls or ():
                path = call.arguments.get("path") if isinstance(call.arguments, dict) else None
                if isinstance(path, str) and path:
                    files[f"{path} ({call.name})"] = None
        if asked.strip():
            lines.append(f"- turn {number}, asked: {_quoted(asked)}")
        if answers:
            lines.append(f"- turn {number}, answered: {_quoted(answers[-1])}")
    tail = [f"- files touched: {', '.join(files)}"] if files else []
    kept: list[str] = []
    room = chars - len(HEADING) - sum(len(t) + 1 for t in tail)
    for line in reversed(lines):  # the newest first: what later turns most likely need
        if room - len(line) - 1 < 0:
            break
        kept.insert(0, line)
        room -= len(line) + 1
    if len(kept) < len(lines):
        kept.insert(
            0, f"- [{len(lines) - len(kept)} older lines left out; recall_turns reads them]"
        )
    return "\n".join([HEADING, *kept, *tail])


def _quoted(text: str) -> str:
    """``text`` on one line in quotes; a long one cut at a word's end, with "…"."""
    line = " ".join(text.split())
    if len(line) <= LINE_CHARS:
        return f'"{line}"'
    return f'"{line[:LINE_CHARS].rsplit(" ", 1)[0]}…"'


__all__ = ["BUILT_BY", "HEADING", "Check", "built_summary", "conversation_text", "grounded"]

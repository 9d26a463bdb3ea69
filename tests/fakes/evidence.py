"""Map replies in the evidence formats, for scripted and loopback model doubles.

A ``model``-style map call asks for ``{"records": [{"fact", "quote"}]}``; a ``choose``
call for ``{"chosen": [numbers]}``. These build such replies, and read back which
chunk a map prompt carries, so a double can quote the chunk it was shown.
"""

from __future__ import annotations

import json
import re

_PART = re.compile(r"Below is part (\d+) of (\d+) of (.+?) \(lines")
_CHOOSE_PART = re.compile(r"Numbered sentences from (.+?) \(part (\d+) of (\d+)\)")


def records(*quotes: str, fact: str = "") -> str:
    """A ``model``-style map reply quoting ``quotes`` (each with ``fact``)."""
    return json.dumps({"records": [{"fact": fact, "quote": q} for q in quotes]})


def chosen(*numbers: int) -> str:
    """A ``choose``-style map reply."""
    return json.dumps({"chosen": list(numbers)})


def chunk_of(prompt: str) -> str | None:
    """The chunk text a ``model``-style map prompt carries (``None``: not a map prompt)."""
    marker = "\n\nText:\n"
    at = prompt.find(marker)
    return prompt[at + len(marker) :] if at >= 0 and _PART.search(prompt) else None


def part_of(prompt: str) -> tuple[int, int] | None:
    """``(i, n)`` of a map prompt of either style (``None``: not a map prompt)."""
    found = _PART.search(prompt)
    if found:
        return int(found.group(1)), int(found.group(2))
    found = _CHOOSE_PART.search(prompt)
    return (int(found.group(2)), int(found.group(3))) if found else None


def file_of(prompt: str) -> str | None:
    """The file a map prompt names."""
    found = _PART.search(prompt)
    if found:
        return found.group(3)
    found = _CHOOSE_PART.search(prompt)
    return found.group(1) if found else None


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (the first two when the first is too short to quote)."""
    parts = re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=2)
    return " ".join(parts[:2]) if len(parts[0]) < 20 else parts[0]


def quote_first_sentence(prompt: str) -> str:
    """A ``model``-style reply quoting the first sentence of the chunk it was shown, or an
    empty record list for any other prompt."""
    chunk = chunk_of(prompt)
    return records(first_sentence(chunk)) if chunk else records()


__all__ = [
    "chosen",
    "chunk_of",
    "file_of",
    "first_sentence",
    "part_of",
    "quote_first_sentence",
    "records",
]

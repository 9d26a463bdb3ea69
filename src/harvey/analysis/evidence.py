"""What a map call returns: evidence records, each a verified quote with its place.

A ``Record`` is the source's own words (``quote``, re-cut from the chunk, never
the model's copy of them), where they are (``Location``: lines of the file,
pages of a PDF), how relevant Harvey's finder or the model judged them, and the
record's number in the run (``id``, given in chunk order as the records are
recorded, the number an answer cites). A model that wrote a record may add a
one-line ``fact`` (kept only when its dates, numbers and names are in the quote).
A ``Dropped`` record is one whose quote did not verify: it never reaches the
reduce, and it is counted and recorded.

``ChunkEvidence`` is one chunk's outcome, the map result that ``sessions.db``
stores for resume (``to_json``/``from_json``): a stored result is the verified
records, never prose.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from harvey.analysis.quotes import Location

#: The stored map result's format; part of every stored-result key (a result made
#: for another format is never reused).
FORMAT = "evidence-2"


@dataclass(frozen=True)
class Record:
    quote: str
    location: Location
    relevance: float = 1.0
    offset: int = 0  # where the quote starts in its file's text (order and duplicates)
    fact: str = ""
    id: int = 0
    closest: bool = False  # nothing clearly answered: the nearest passage, shown as such

    def numbered(self, number: int) -> Record:
        return replace(self, id=number)

    @property
    def place(self) -> tuple[str, int]:
        """What makes two records the same words of the same file."""
        return self.location.path, self.offset

    def to_dict(self) -> dict[str, Any]:
        loc = self.location
        out: dict[str, Any] = {
            "quote": self.quote,
            "path": loc.path,
            "lines": [loc.first_line, loc.last_line],
            "relevance": round(self.relevance, 4),
            "offset": self.offset,
        }
        if loc.first_page:
            out["pages"] = [loc.first_page, loc.last_page]
        if self.fact:
            out["fact"] = self.fact
        if self.closest:
            out["closest"] = True
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        lines = data["lines"]
        pages = data.get("pages") or [0, 0]
        location = Location(str(data["path"]), int(lines[0]), int(lines[1]), *map(int, pages))
        return cls(
            str(data["quote"]),
            location,
            float(data.get("relevance", 1.0)),
            int(data.get("offset", 0)),
            str(data.get("fact", "")),
            closest=bool(data.get("closest", False)),
        )


@dataclass(frozen=True)
class Dropped:
    """A record that did not verify, and why (``not in the chunk``, ``too short``, …)."""

    quote: str
    reason: str


@dataclass
class ChunkEvidence:
    """One chunk's map result: its verified records, the dropped ones, and whether it was
    skipped (nothing in it for the instruction, so no call was made)."""

    records: list[Record] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    skipped: bool = False

    def status(self) -> str:
        """The ``[[chunk-result:]]`` status: ``ok, 5 quotes, 1 dropped`` or ``skipped: …``."""
        if self.skipped:
            return "skipped: nothing here for the instruction"
        quotes = len(self.records)
        text = f"ok, {quotes} quote{'' if quotes == 1 else 's'}"
        if self.dropped:
            text += f", {len(self.dropped)} dropped"
        return text

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": FORMAT,
                "records": [r.to_dict() for r in self.records],
                "dropped": [[d.quote, d.reason] for d in self.dropped],
                "skipped": self.skipped,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> ChunkEvidence | None:
        """A stored result, or ``None`` when it is not one of this format (then the call
        is made again rather than trusting it)."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                return None
            return cls(
                [Record.from_dict(r) for r in data["records"]],
                [Dropped(str(q), str(why)) for q, why in data["dropped"]],
                bool(data["skipped"]),
            )
        except (ValueError, KeyError, TypeError, IndexError):
            return None


__all__ = ["FORMAT", "ChunkEvidence", "Dropped", "Record"]

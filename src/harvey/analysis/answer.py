"""The answer of an analysis: its evidence merged, cited, and (when no model writes one) shown.

Before any model rewrites anything, the records of every chunk are merged
deterministically (``merge``): numbered in chunk order, the same words found in
two overlapping chunks kept once, the most relevant kept when there are more
than the instruction asks for (every match for "list every …", the best few for
a question), the source's own order and locations kept. What is left is either
the answer itself (``evidence_answer``: the quotes grouped by file, each citing
its record, and one line that says why there is no synthesis) or what a model
synthesises from (``synthesis.py``).

An answer's sources are listed after it (``Sources:``, one line per cited
record: ``[3] sample.md:L120-128``); ``claims_of`` gives back what an answer
claims without Harvey's framing, for the checks and the quality benchmark.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from harvey.analysis.evidence import Record
from harvey.analysis.matching import find_words, normalise
from harvey.analysis.quotes import Location

#: Records compared word for word with each other for pieces of one another (quadratic).
_COMPARED = 400
#: A question keeps its best few records; "list every …" keeps all its matches.
TOP_RECORDS = 8
#: An answer keeps only records at least this share as relevant as the best one.
RELATIVE_FLOOR = 0.6
FRAMING = "Harvey: "  # the first words of every line Harvey adds to an answer
SOURCES = "Sources:"
_MARKER = re.compile(r"\s*\[(\d+(?:\s*,\s*\d+)*)\]")


@dataclass(frozen=True)
class Intent:
    """What an instruction asks of its answer, as the finder that read it says: every
    match ("list every …"), or the best ``keep``, each at least ``relative_floor`` as
    relevant as the best (a finder that chose and floored its records itself says 0)."""

    exhaustive: bool = False
    keep: int = TOP_RECORDS
    relative_floor: float = RELATIVE_FLOOR


@dataclass(frozen=True)
class Citation:
    """One record an answer cites: its number, place and words; ``verified`` says its
    words were found, by string match, in the chunk that place is in."""

    id: int
    location: Location
    quote: str
    verified: bool = True

    def as_dict(self) -> dict[str, object]:
        loc = self.location
        return {
            "id": self.id,
            "path": loc.path,
            "lines": [loc.first_line, loc.last_line],
            "pages": [loc.first_page, loc.last_page] if loc.first_page else None,
            "quote": self.quote,
            "verified": self.verified,
        }


@dataclass
class Answer:
    """What an analysis answers: the text, the records it cites, how it was made."""

    text: str
    citations: list[Citation]
    kind: Literal["evidence", "synthesis"]
    note: str = ""  # the line that says how the answer was made (also in ``text``)
    unsupported: list[str] = field(default_factory=list)  # synthesis sentences removed


@dataclass(frozen=True)
class Merged:
    """The records an answer is made from, and how many more the map phase found."""

    records: list[Record]
    left_out: int = 0


def _union(first: Record, second: Record) -> Record:
    """Two records of one file whose words overlap (two overlapping chunks found them) as
    one: both quotes are the file's own text, so the union is exact."""
    end = first.offset + len(first.quote)
    quote = first.quote + second.quote[end - second.offset :]
    a, b = first.location, second.location
    location = replace(
        a,
        last_line=max(a.last_line, b.last_line),
        last_page=max(a.last_page, b.last_page),
    )
    return replace(
        first, quote=quote, location=location, relevance=max(first.relevance, second.relevance)
    )


def _deduplicated(records: Sequence[Record]) -> list[Record]:
    """One record per place, and the same words quoted once: the same words found in two
    overlapping chunks kept once, overlapping records joined (nothing of either is lost),
    under the first one's number; words a file repeats elsewhere (a sentence every
    function's docs share) quoted once, and a sentence's start (cut at a chunk's end) not
    beside the whole sentence."""
    kept = _one_per_place(records)
    seen: dict[str, set[str]] = {}  # a file's words quoted so far (two files may agree)
    out: list[Record] = []
    for record in sorted(kept, key=lambda r: (-len(r.quote), -r.relevance, r.id, r.offset)):
        words = normalise(record.quote)
        said = seen.setdefault(record.location.path, set())
        cut = len(kept) <= _COMPARED and any(find_words(words, w) == 0 for w in said)
        if words in said or cut:
            continue  # said already: whole, or its start (the sentence cut at a chunk's end)
        said.add(words)
        out.append(record)
    return sorted(out, key=lambda r: (r.location.path, r.offset))


def _one_per_place(records: Sequence[Record]) -> list[Record]:
    kept: list[Record] = []
    for record in sorted(records, key=lambda r: (r.location.path, r.offset, -len(r.quote))):
        last = kept[-1] if kept else None
        if (
            last is not None
            and last.location.path == record.location.path
            and record.offset < last.offset + len(last.quote)
        ):
            if record.offset + len(record.quote) > last.offset + len(last.quote):
                kept[-1] = _union(last, record)
            continue
        kept.append(record)
    return kept


def merge(
    records: Sequence[Record],
    *,
    exhaustive: bool,
    budget_chars: int | None = None,
    order: Sequence[str] = (),
    keep: int = TOP_RECORDS,
    relative_floor: float = RELATIVE_FLOOR,
) -> Merged:
    """The records an answer rests on (see the module docstring), in the files' ``order``
    (the run's) and each file's own; ``budget_chars`` bounds their quotes' length."""
    unique = _deduplicated(records)
    if not unique:
        return Merged([])
    best = max(r.relevance for r in unique)
    chosen = [r for r in unique if r.relevance >= relative_floor * best]
    if not exhaustive:
        chosen = sorted(chosen, key=lambda r: (-r.relevance, r.id))[:keep]
    if budget_chars is not None:
        ranked = sorted(chosen, key=lambda r: (-r.relevance, r.id))
        fitted: list[Record] = []
        used = 0
        for record in ranked:
            cost = len(record.quote) + 40
            if used + cost > budget_chars:
                continue  # a smaller, less relevant one may still fit
            fitted.append(record)
            used += cost
        chosen = fitted
    rank = {path: i for i, path in enumerate(order)}
    chosen.sort(key=lambda r: (rank.get(r.location.path, len(rank)), r.location.path, r.offset))
    return Merged(chosen, len(unique) - len(chosen))


def one_line(text: str) -> str:
    return " ".join(text.split())


def sources_block(citations: Sequence[Citation]) -> str:
    lines = [SOURCES] + [f"[{c.id}] {c.location.cite()}" for c in citations]
    return "\n".join(lines)


def citations_of(records: Sequence[Record]) -> list[Citation]:
    return [Citation(r.id, r.location, r.quote) for r in records]


def evidence_answer(merged: Merged, why: str, dropped: int = 0) -> Answer:
    """The evidence itself as the answer: quotes grouped by file, each with its number,
    the line ``why`` first (it says why no model wrote the answer). ``dropped``: the
    records the map phase dropped, said when nothing is left."""
    records = merged.records
    note = f"{FRAMING}{why}"
    if not records:
        reason = "no sentence of it matched"
        if dropped:
            reason = (
                f"no quote was found word for word in its chunk ({dropped} dropped; "
                "the session's recording lists them)"
            )
        text = f"{FRAMING}nothing in the text answers the instruction: {reason}."
        return Answer(text, [], "evidence", text)
    lines = [note]
    if all(r.closest for r in records):
        lines.append(
            f"{FRAMING}no sentence clearly answers the instruction; the closest passages "
            "are below, cited, as the nearest the text comes, not as its answer."
        )
    if merged.left_out:
        lines.append(
            f"{FRAMING}{merged.left_out} less relevant quotes are left out; "
            "the session's recording has every one."
        )
    paths = list(dict.fromkeys(r.location.path for r in records))
    for path in paths:
        lines.append("")
        if len(paths) > 1:
            lines.append(f"{FRAMING}from {path}")
        for r in records:
            if r.location.path == path:
                lines.append(f"- {one_line(r.quote)} [{r.id}]")
    citations = citations_of(records)
    text = "\n".join(lines) + "\n\n" + sources_block(citations)
    return Answer(text, citations, "evidence", note)


def cited_ids(sentence: str) -> list[int]:
    """The record numbers a sentence cites (``[3]``, ``[1][4]``, ``[2, 5]``), in order."""
    ids: list[int] = []
    for match in _MARKER.finditer(sentence):
        ids.extend(int(part) for part in match.group(1).split(","))
    return list(dict.fromkeys(ids))


def without_markers(text: str) -> str:
    return _MARKER.sub("", text)


def claims_of(answer: str) -> str:
    """What ``answer`` claims: its text without Harvey's framing lines, its sources list
    and its citation markers (what the grounding of an answer is measured on)."""
    body = answer
    at = body.find("\n" + SOURCES + "\n")
    if at >= 0:
        body = body[:at]
    elif body.startswith(SOURCES + "\n"):
        body = ""
    kept = [line for line in body.splitlines() if not line.startswith(FRAMING)]
    return without_markers("\n".join(kept)).strip()


__all__ = [
    "FRAMING",
    "SOURCES",
    "Answer",
    "Citation",
    "Intent",
    "Merged",
    "citations_of",
    "cited_ids",
    "claims_of",
    "evidence_answer",
    "merge",
    "sources_block",
    "without_markers",
]

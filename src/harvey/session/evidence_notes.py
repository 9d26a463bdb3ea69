"""The notes that let a person check an analysis's every claim from the recording alone.

Per map call, after its ``[[chunk-result:]]``: one ``[[evidence:]]`` note per record
kept — its number, where it is, and the source's own words — and one
``[[evidence-dropped:]]`` note per record whose quote was not in the chunk. After
the reduce: one ``[[citation:]]`` per record the answer cites, one
``[[unsupported:]]`` per sentence of a synthesis that was removed because its
facts were in none of the records it cited. The answer itself (HARVEY's line)
cites the numbers; the evidence notes give their words.

Writers and readers sit side by side, as in ``notes.py``; every free-text field is
escaped (``encode_field``), so a quote with ``—`` or ``]]`` in it reads back exactly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from harvey.redact import redact
from harvey.session.escape import decode_inline, encode_field, format_note, split_unescaped

SEP = " — "
_SPAN = re.compile(r"^(.*):(L(\d+)(?:-(\d+))?|p(\d+)(?:-(\d+))?)$", re.DOTALL)
_ID = re.compile(r"^\[(\d+)\] (.*)$", re.DOTALL)
_CHUNK = re.compile(r"^(\d+)/(\d+)$")


# What the recorder reads of an analysis's records and answer (``analysis/evidence.py``,
# ``analysis/answer.py`` have the real ones): named by shape, so the session layer below
# ``analysis/`` records them without importing it.


class Cited(Protocol):
    def cite(self) -> str:
        """``path:Lstart-Lend`` or ``path:p3``: where the words are."""
        ...


class KeptRecord(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def location(self) -> Cited: ...
    @property
    def quote(self) -> str: ...
    @property
    def fact(self) -> str: ...


class DroppedRecord(Protocol):
    @property
    def quote(self) -> str: ...
    @property
    def reason(self) -> str: ...


class AnswerCitation(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def location(self) -> Cited: ...
    @property
    def verified(self) -> bool: ...


class CheckedAnswer(Protocol):
    @property
    def citations(self) -> Sequence[AnswerCitation]: ...
    @property
    def unsupported(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class ParsedPlace:
    """``sample.md:L120-128`` read back: the path, its lines or its pages."""

    path: str
    first_line: int = 0
    last_line: int = 0
    first_page: int = 0
    last_page: int = 0


@dataclass(frozen=True)
class ParsedEvidence:
    id: int
    place: ParsedPlace
    quote: str
    fact: str = ""


@dataclass(frozen=True)
class ParsedDropped:
    chunk: int
    total: int
    quote: str
    reason: str


@dataclass(frozen=True)
class ParsedCitation:
    id: int
    place: ParsedPlace
    status: str


def _place(cite: str) -> str:
    path, _, span = cite.rpartition(":")
    return f"{encode_field(path, '—[]')}:{span}"


def evidence_note(number: int, cite: str, quote: str, fact: str = "") -> str:
    """``[[evidence: [3] sample.md:L120-128 — QUOTE]]`` (``— fact: …`` when a model wrote one)."""
    body = f"evidence: [{number}] {_place(redact(cite))}{SEP}{encode_field(redact(quote))}"
    if fact:
        body += f"{SEP}fact: {encode_field(redact(fact))}"
    return format_note(body)


def dropped_note(i: int, n: int, quote: str, reason: str) -> str:
    """``[[evidence-dropped: 3/12 — QUOTE — REASON]]``: a record that did not verify."""
    shown = encode_field(redact(quote) or "(no quote)")
    return format_note(f"evidence-dropped: {i}/{n}{SEP}{shown}{SEP}{encode_field(reason)}")


def citation_note(number: int, cite: str, verified: bool) -> str:
    """``[[citation: [3] sample.md:L120-128 — verified]]``: a record the answer cites."""
    status = "verified" if verified else "not verified"
    return format_note(f"citation: [{number}] {_place(redact(cite))}{SEP}{status}")


def unsupported_note(sentence_and_reason: str) -> str:
    """``[[unsupported: SENTENCE — REASON]]``: a synthesis sentence Harvey removed."""
    sentence, _, reason = sentence_and_reason.rpartition(" — ")
    return format_note(
        f"unsupported: {encode_field(redact(sentence))}{SEP}{encode_field(redact(reason))}"
    )


# ------------------------------------------------------------------ readers


def read_place(raw: str) -> ParsedPlace | None:
    m = _SPAN.match(raw)
    if not m:
        return None
    path = decode_inline(m.group(1))
    if m.group(3):
        first = int(m.group(3))
        return ParsedPlace(path, first, int(m.group(4) or first))
    page = int(m.group(5))
    return ParsedPlace(path, first_page=page, last_page=int(m.group(6) or page))


def read_evidence(body: str) -> ParsedEvidence | None:
    if not body.startswith("evidence: "):
        return None
    parts = split_unescaped(body[len("evidence: ") :], SEP)
    head = _ID.match(parts[0]) if len(parts) in (2, 3) else None
    place = read_place(head.group(2)) if head else None
    if head is None or place is None:
        return None
    fact = ""
    if len(parts) == 3:
        if not parts[2].startswith("fact: "):
            return None
        fact = decode_inline(parts[2][len("fact: ") :])
    return ParsedEvidence(int(head.group(1)), place, decode_inline(parts[1]), fact)


def read_dropped(body: str) -> ParsedDropped | None:
    if not body.startswith("evidence-dropped: "):
        return None
    parts = split_unescaped(body[len("evidence-dropped: ") :], SEP)
    chunk = _CHUNK.match(parts[0]) if len(parts) == 3 else None
    if chunk is None:
        return None
    return ParsedDropped(
        int(chunk.group(1)), int(chunk.group(2)), decode_inline(parts[1]), decode_inline(parts[2])
    )


def read_citation(body: str) -> ParsedCitation | None:
    if not body.startswith("citation: "):
        return None
    parts = split_unescaped(body[len("citation: ") :], SEP)
    head = _ID.match(parts[0]) if len(parts) == 2 else None
    place = read_place(head.group(2)) if head else None
    if head is None or place is None:
        return None
    return ParsedCitation(int(head.group(1)), place, decode_inline(parts[1]))


def read_unsupported(body: str) -> tuple[str, str] | None:
    if not body.startswith("unsupported: "):
        return None
    parts = split_unescaped(body[len("unsupported: ") :], SEP)
    if len(parts) != 2:
        return None
    return decode_inline(parts[0]), decode_inline(parts[1])


__all__ = [
    "ParsedCitation",
    "ParsedDropped",
    "ParsedEvidence",
    "ParsedPlace",
    "citation_note",
    "dropped_note",
    "evidence_note",
    "read_citation",
    "read_dropped",
    "read_evidence",
    "read_place",
    "read_unsupported",
    "unsupported_note",
]

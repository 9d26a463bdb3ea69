"""One chunk's map step: what to ask the model (if anything), and what its answer proves.

Three ways to find a chunk's evidence, one per ``analysis.evidence`` setting:

* ``harvey`` — Harvey's finder (``finder.py``) picks the sentences the instruction
  asks about; no model call. The default for models too small to judge
  relevance (``sizes.py``), because the benchmark says so.
* ``choose`` — the finder's candidates are numbered and the model picks among
  them, constrained by a JSON schema whose only values are those numbers (the
  embedded model's grammar, llama.cpp's ``json_schema``, Ollama's ``format``,
  OpenAI's ``response_format``): it cannot invent a quote, only choose.
* ``model`` — the model reads the whole chunk and writes records, each a short
  fact and the exact words that support it; every quote is verified against the
  chunk (``quotes.verify``) and one that is not there word for word is dropped.

In every way a chunk in which no word of the instruction occurs (and no asked
kind of fact) is skipped without a call: ``[[chunk-result: … — skipped: …]]``.
A reply that is not the asked JSON is read as no records, never as prose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harvey.analysis.atoms import Source, atoms
from harvey.analysis.evidence import ChunkEvidence, Dropped, Record
from harvey.analysis.finder import Candidate, Finder, WordFinder
from harvey.analysis.piece import Piece
from harvey.analysis.quotes import verify

Style = Literal["harvey", "choose", "model"]
#: The most candidates a ``choose`` call is shown, and records a ``model`` call may write.
MAX_CHOICES = 24
MAX_RECORDS = 16
#: A quote longer than this is not evidence of one thing: a model that quotes it is
#: dropped, and Harvey's own run of neighbouring sentences starts a new record.
MAX_QUOTE_CHARS = 1200


@dataclass(frozen=True)
class MapRequest:
    """A model call to make for one chunk: its prompt and the JSON schema of its answer."""

    prompt: str
    schema: dict[str, Any]


class EvidenceMapper:
    """Plans each chunk's map step and reads its answer (see the module docstring)."""

    def __init__(
        self,
        instruction: str,
        style: Style = "harvey",
        names: Sequence[str] = (),
        finder: Finder | None = None,
    ):
        self.instruction = instruction
        self.style = style
        self.finder: Finder = finder or WordFinder(instruction, names)
        self.query = self.finder.query

    def _candidates(self, piece: Piece) -> list[Candidate]:
        return self.finder.candidates(piece)

    def plan(self, piece: Piece) -> ChunkEvidence | MapRequest:
        """The chunk's evidence when no call is needed (``harvey``, or nothing to find),
        else the call to make."""
        if self.style == "model":
            if self._worth_reading(piece) or self._candidates(piece):
                return _records_request(self.instruction, piece)
            return ChunkEvidence(skipped=True)
        found = self._candidates(piece)
        if not found:
            return ChunkEvidence(skipped=True)
        if self.style == "harvey":
            return ChunkEvidence(records=_merged(piece, found))
        return _choose_request(self.instruction, piece, found[:MAX_CHOICES])

    def _worth_reading(self, piece: Piece) -> bool:
        """``model``: a chunk is read when its finder says so (the model may see what the
        finder's own floor leaves out)."""
        return self.finder.worth_reading(piece)

    def read(self, piece: Piece, reply: str) -> ChunkEvidence:
        """The records a model's ``reply`` to this chunk's request proves."""
        data = _json_object(reply)
        if self.style == "choose":
            return _chosen(piece, self._candidates(piece)[:MAX_CHOICES], data)
        return _written(piece, data)


# ----------------------------------------------------------------- harvey


def _merged(piece: Piece, found: Sequence[Candidate]) -> list[Record]:
    """Candidates as records; neighbouring units (nothing but space between) become one."""
    records: list[Record] = []
    run: list[Candidate] = []
    text = piece.chunk.text

    def flush() -> None:
        if run:
            best = max(c.relevance for c in run)
            closest = all(c.closest for c in run)
            records.append(
                piece.record(run[0].unit.start, run[-1].unit.end, best, closest=closest)
            )
            run.clear()

    for cand in found:
        apart = bool(run) and bool(text[run[-1].unit.end : cand.unit.start].strip())
        apart = apart or (bool(run) and run[-1].closest != cand.closest)
        if apart or (run and cand.unit.end - run[0].unit.start > MAX_QUOTE_CHARS):
            flush()
        run.append(cand)
    flush()
    return records


# ----------------------------------------------------------------- choose


def _numbered(found: Sequence[Candidate]) -> str:
    return "\n".join(f"{i}. {' '.join(c.unit.text.split())}" for i, c in enumerate(found, 1))


def _choose_request(instruction: str, piece: Piece, found: Sequence[Candidate]) -> MapRequest:
    prompt = (
        f"Numbered sentences from {piece.path} (part {piece.index} of {piece.total}):\n"
        f"{_numbered(found)}\n\n"
        f"Instruction: {instruction}\n"
        "Which of the numbered sentences answer the instruction? Give their numbers, "
        "or an empty list if none does."
    )
    numbers = list(range(1, len(found) + 1))
    schema = {
        "type": "object",
        "properties": {
            "chosen": {
                "type": "array",
                "items": {"type": "integer", "enum": numbers},
                "maxItems": len(numbers),
            }
        },
        "required": ["chosen"],
    }
    return MapRequest(prompt, schema)


def _chosen(piece: Piece, found: Sequence[Candidate], data: dict[str, Any] | None) -> ChunkEvidence:
    chosen = data.get("chosen") if data is not None else None
    if not isinstance(chosen, list):
        return ChunkEvidence(dropped=[Dropped("", "the answer was not the asked JSON")])
    picked: list[Candidate] = []
    dropped: list[Dropped] = []
    for number in dict.fromkeys(chosen):
        if isinstance(number, int) and 1 <= number <= len(found):
            picked.append(found[number - 1])
        else:
            dropped.append(Dropped(str(number)[:80], "no such numbered sentence"))
    picked.sort(key=lambda c: c.unit.start)
    return ChunkEvidence(records=_merged(piece, picked), dropped=dropped)


# ----------------------------------------------------------------- model


def _records_request(instruction: str, piece: Piece) -> MapRequest:
    c = piece.chunk
    prompt = (
        f"Instruction: {instruction}\n\n"
        f"Below is part {piece.index} of {piece.total} of {piece.path} "
        f"(lines {c.start_line}-{c.end_line}). Copy out what in it answers the instruction, "
        'as JSON: {"records": [{"fact": "...", "quote": "..."}]}. Each quote must be copied '
        "word for word from the text (one or two sentences); each fact says in a few words "
        'what the quote shows. Answer {"records": []} if the text holds nothing for the '
        "instruction. Do not explain.\n\n"
        f"Text:\n{c.text}"
    )
    record = {
        "type": "object",
        "properties": {
            "fact": {"type": "string", "maxLength": 300},
            "quote": {"type": "string", "maxLength": 600},
        },
        "required": ["fact", "quote"],
    }
    schema = {
        "type": "object",
        "properties": {"records": {"type": "array", "items": record, "maxItems": MAX_RECORDS}},
        "required": ["records"],
    }
    return MapRequest(prompt, schema)


def _written(piece: Piece, data: dict[str, Any] | None) -> ChunkEvidence:
    items = data.get("records") if data is not None else None
    if not isinstance(items, list):
        return ChunkEvidence(dropped=[Dropped("", "the answer was not the asked JSON")])
    text = piece.chunk.text
    out = ChunkEvidence()
    seen: set[int] = set()
    for item in items[:MAX_RECORDS]:
        quote = str(item.get("quote", "")) if isinstance(item, dict) else str(item)
        fact = str(item.get("fact", "")) if isinstance(item, dict) else ""
        if len(quote) > MAX_QUOTE_CHARS:
            out.dropped.append(Dropped(quote[:600], f"longer than {MAX_QUOTE_CHARS:,} characters"))
            continue
        found = verify(quote, text)
        if found is None:
            out.dropped.append(Dropped(quote[:600], "not in the chunk word for word"))
            continue
        if found.start in seen:
            continue
        seen.add(found.start)
        out.records.append(piece.record(found.start, found.end, 1.0, _supported(fact, found.text)))
    out.records.sort(key=lambda r: r.offset)
    return out


def _supported(fact: str, quote: str) -> str:
    """The model's fact when every date, number and name in it is in its quote, else ""."""
    fact = " ".join(fact.split())[:300]
    where = Source(quote)
    return fact if all(where.holds(a) for a in atoms(fact)) else ""


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _json_object(reply: str) -> dict[str, Any] | None:
    """The reply's JSON object: the whole reply, else the outermost braces in it (a
    backend that ignored the schema may wrap it in prose or a code fence)."""
    for candidate in (reply.strip(), *(m.group() for m in _OBJECT.finditer(reply))):
        try:
            value = json.loads(candidate, strict=False)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


__all__ = ["EvidenceMapper", "MapRequest", "Piece", "Style"]

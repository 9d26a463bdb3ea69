"""A chunk and where it is: what a finder and a map step look at, and how a record of it
is placed (its file's lines and a PDF's pages)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harvey.analysis.evidence import Record
from harvey.analysis.quotes import Locator
from harvey.chunks.chunking import Chunk


@dataclass(frozen=True)
class Piece:
    """A chunk and where it is: its file's name, its number in that file, a PDF's pages."""

    chunk: Chunk
    path: str
    index: int = 1
    total: int = 1
    page_starts: Sequence[int] = ()
    source: bool = False  # code: a unit is a line

    def locator(self) -> Locator:
        c = self.chunk
        return Locator(self.path, c.text, c.start_line, c.start, self.page_starts)

    def record(
        self, start: int, end: int, relevance: float, fact: str = "", *, closest: bool = False
    ) -> Record:
        text = self.chunk.text[start:end]
        return Record(
            text,
            self.locator().locate(start, end),
            relevance,
            self.chunk.start + start,
            fact,
            closest=closest,
        )


__all__ = ["Piece"]

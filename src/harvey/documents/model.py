"""A document as text with positions: where each page begins, where each heading is.

Every reader downstream (``read_file``, analysis chunks, knowledge passages)
works on character offsets into ``Document.text``; this value turns an offset
range back into the pages it came from, so provenance can say ``p3-p4`` without
the reader knowing what a PDF is. ``notes`` say what extraction cut (pages past
the cap, a time limit) so the cut is shown, never silent.
"""

from __future__ import annotations

import bisect
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Limits:
    """What one extraction may take (``runner.py``); ``notes`` on the document say what
    was cut. The package sizes bound what a DOCX or EPUB inflates: one member, and all
    members together (an EPUB whose spine names one compressed chapter thousands of
    times)."""

    max_pages: int = 2000
    max_chars: int = 20_000_000
    seconds: float = 60.0
    memory_bytes: int = 1536 * 1024 * 1024
    member_bytes: int = 64 * 1024 * 1024
    package_bytes: int = 128 * 1024 * 1024
    members: int = 2000

    @property
    def output_bytes(self) -> int:
        """The child's result at most: JSON escapes a character in at most 12 bytes."""
        return self.max_chars * 12 + (1 << 20)


@dataclass(frozen=True)
class Heading:
    offset: int
    level: int
    title: str


@dataclass(frozen=True)
class Document:
    """Extracted text; ``page_starts[i]`` is the offset where page ``i + 1`` begins."""

    text: str
    kind: str
    page_starts: tuple[int, ...] = ()
    headings: tuple[Heading, ...] = ()
    page_count: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def paged(self) -> bool:
        return bool(self.page_starts)

    def page_at(self, offset: int) -> int:
        """The 1-based page holding ``offset`` (0 for an unpaged document)."""
        if not self.page_starts:
            return 0
        return max(1, bisect.bisect_right(self.page_starts, offset))

    def pages_of(self, start: int, end: int) -> tuple[int, int] | None:
        """The first and last page of ``text[start:end]``, or None when unpaged; the blank
        lines between pages count for neither (a chunk that starts with them is of the
        page after)."""
        if not self.page_starts:
            return None
        text = self.text
        while start < end - 1 and text[start].isspace():
            start += 1
        while end - 1 > start and text[end - 1].isspace():
            end -= 1
        last = self.page_at(max(start, end - 1))
        return self.page_at(start), last

    def span_of_pages(self, first: int, last: int) -> tuple[int, int]:
        """Offsets of pages ``first``..``last`` (1-based, clamped to what was extracted)."""
        count = len(self.page_starts)
        first = min(max(first, 1), count)
        last = min(max(last, first), count)
        start = self.page_starts[first - 1]
        end = self.page_starts[last] if last < count else len(self.text)
        return start, end

    def heading_at(self, offset: int) -> Heading | None:
        """The last heading at or before ``offset``."""
        offsets = [h.offset for h in self.headings]
        index = bisect.bisect_right(offsets, offset)
        return self.headings[index - 1] if index else None

    def describe(self) -> str:
        """A few words for a header line: ``PDF, 12 pages`` / ``DOCX, 3 headings``."""
        if self.kind == "pdf":
            count, read = self.page_count, len(self.page_starts)
            shown = f"PDF, {count:,} page{'s' if count != 1 else ''}"
            if read < count:
                shown = f"PDF, {read:,} of {count:,} pages read"
        else:
            shown = self.kind.upper()
            if self.headings:
                shown += f", {len(self.headings)} headings"
        return shown + "".join(f"; {note}" for note in self.notes)

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "kind": self.kind,
            "page_starts": list(self.page_starts),
            "headings": [[h.offset, h.level, h.title] for h in self.headings],
            "page_count": self.page_count,
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Document:
        return cls(
            text=str(data["text"]),
            kind=str(data["kind"]),
            page_starts=tuple(int(x) for x in data["page_starts"]),
            headings=tuple(Heading(int(o), int(lv), str(t)) for o, lv, t in data["headings"]),
            page_count=int(data["page_count"]),
            notes=tuple(str(n) for n in data["notes"]),
        )


def page_label(pages: tuple[int, int] | None) -> str:
    """``p3`` or ``p3-p4`` (empty for an unpaged document): the form notes and rows use."""
    if pages is None or pages[0] <= 0:
        return ""
    first, last = pages
    return f"p{first}" if first == last else f"p{first}-p{last}"


class TextFull(Exception):
    """The builder reached its limit: the reader stops where it is (never leaves here
    but through ``TextBuilder.reading``)."""


class TextBuilder:
    """Accumulates text while recording page starts and headings at their offsets.

    With a ``limit`` it keeps at most that many characters and raises ``TextFull``
    at the first one past it, so a reader stops expanding as it happens; run the
    reader inside ``reading()`` and the cut becomes a note on the document."""

    def __init__(self, limit: int | None = None) -> None:
        self._parts: list[str] = []
        self._length = 0
        self.page_starts: list[int] = []
        self.headings: list[Heading] = []
        self.limit = limit
        self.notes: list[str] = []

    def __len__(self) -> int:
        return self._length

    def add(self, text: str) -> None:
        if not text:
            return
        if self.limit is not None and self._length + len(text) > self.limit:
            text = text[: self.limit - self._length]
            self._parts.append(text)
            self._length += len(text)
            raise TextFull
        self._parts.append(text)
        self._length += len(text)

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Where a reader fills this builder: reaching the limit ends it with a note."""
        try:
            yield
        except TextFull:
            self.notes.append(f"text cut at {self.limit:,} characters")

    def block(self, text: str) -> None:
        """A paragraph: separated from what came before by one blank line."""
        text = text.strip()
        if not text:
            return
        if self._length:
            self.add("\n\n")
        self.add(text)

    def heading(self, level: int, title: str) -> None:
        title = " ".join(title.split())
        if not title:
            return
        if self._length:
            self.add("\n\n")
        self.headings.append(Heading(self._length, level, title))
        self.add("#" * min(max(level, 1), 6) + " " + title)

    def page(self) -> None:
        if self._length:
            self.add("\n\n")
        self.page_starts.append(self._length)

    def build(self, kind: str, page_count: int = 0) -> Document:
        return Document(
            "".join(self._parts),
            kind,
            tuple(self.page_starts),
            tuple(self.headings),
            page_count,
            tuple(self.notes),
        )

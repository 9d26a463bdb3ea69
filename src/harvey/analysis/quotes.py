"""Verify a quote against the text it claims to come from, and say where it is.

A map record is only as good as its supporting text. ``verify`` finds the quote in
its chunk by string match under the tolerances of ``matching.py`` (case, whitespace,
typographic quotes and dashes, ``…`` for ``...``), and nothing more: no fuzzy match,
no skipped words. A compatibility form such as the ``ﬁ`` ligature is not folded
here, since the chunk is searched as written. ``Locator`` turns the match into lines
of the file and, for a PDF, its pages. A quote that is not found is dropped before
the reduce; one that is found is re-cut from the original, so the record keeps the
source's own spelling, not the model's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from harvey.analysis.matching import normalise

#: A quote shorter than this (normalised) proves nothing: "the", "1902".
MIN_QUOTE_CHARS = 12
_TRIM = " \t\n\"'.,;:!?…-*•([{)]}"
_CLOSING = frozenset(".!?\"')]\u201d\u2019")


@dataclass(frozen=True)
class Found:
    """Where a verified quote is in its chunk: ``chunk_text[start:end]`` is its original text."""

    start: int
    end: int
    text: str


_SPACE = "[\\s\u00ad\u200b\u200c\u200d\u2060\ufeff]+"
_CLASSES = {
    " ": _SPACE,
    '"': '["\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033\u301d\u301e]',
    "'": "['\u2018\u2019\u201a\u201b\u2032\u00b4`]",
    "-": "[-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d]",
}
_INVISIBLE = "[\u00ad\u200b\u200c\u200d\u2060\ufeff]*"
_ELLIPSIS = "(?:\\.\\.\\.|\u2026)"


def quote_pattern(quote: str) -> re.Pattern[str] | None:
    """A pattern that finds ``quote`` in a chunk as written, under ``matching.py``'s
    tolerances (case, whitespace, quote marks, dashes, ``…``), and nothing more; ``None``
    for a quote too short to prove anything. The chunk is searched as it is (C speed, no
    copy of it), so a 2 MB chunk costs one regular-expression scan."""
    wanted = normalise(quote).strip(_TRIM)
    if len(wanted) < MIN_QUOTE_CHARS:
        return None
    parts = []
    for piece in wanted.split("..."):  # a soft hyphen or zero-width space may sit anywhere
        parts.append(_INVISIBLE.join(_CLASSES.get(c) or re.escape(c) for c in piece))
    body = _ELLIPSIS.join(parts)
    left = r"(?<![\w])" if wanted[:1].isalnum() else ""
    right = r"(?![\w])" if wanted[-1:].isalnum() else ""
    return re.compile(left + body + right, re.IGNORECASE)


def verify(quote: str, chunk_text: str) -> Found | None:
    """The quote's place in ``chunk_text``, or ``None`` when it is not there word for word
    (under the tolerances of ``matching.py``) or is too short to prove anything."""
    pattern = quote_pattern(quote)
    found = pattern.search(chunk_text) if pattern is not None else None
    if found is None:
        return None
    start, end = found.span()
    while end < len(chunk_text) and chunk_text[end] in _CLOSING:  # the sentence's own end
        end += 1
    return Found(start, end, chunk_text[start:end])


@dataclass(frozen=True)
class Location:
    """Lines (1-based, inclusive) of the file and, for a PDF, its pages."""

    path: str
    first_line: int
    last_line: int
    first_page: int = 0
    last_page: int = 0

    def cite(self) -> str:
        """``sample.md:L120-128``, ``sample.md:L7``, ``report.pdf:p3``, ``report.pdf:p3-4``."""
        if self.first_page:
            span = f"p{self.first_page}"
            if self.last_page > self.first_page:
                span += f"-{self.last_page}"
            return f"{self.path}:{span}"
        span = f"L{self.first_line}"
        if self.last_line > self.first_line:
            span += f"-{self.last_line}"
        return f"{self.path}:{span}"


@dataclass(frozen=True)
class Locator:
    """Maps offsets of one chunk's text to lines of its file (and pages of a PDF).

    ``start_line`` is the file line of the chunk's first character; ``offset`` the
    chunk's start in the document's text, and ``page_starts`` the text offsets where
    a PDF's pages begin (empty for every other file)."""

    path: str
    text: str
    start_line: int = 1
    offset: int = 0
    page_starts: Sequence[int] = ()

    def locate(self, start: int, end: int) -> Location:
        first = self.start_line + self.text.count("\n", 0, start)
        last = first + self.text.count("\n", start, max(start, end - 1))
        if not self.page_starts:
            return Location(self.path, first, last)
        return Location(
            self.path,
            first,
            last,
            self._page(self.offset + start),
            self._page(self.offset + end - 1),
        )

    def _page(self, offset: int) -> int:
        from bisect import bisect_right

        return max(1, bisect_right(self.page_starts, offset))


__all__ = ["MIN_QUOTE_CHARS", "Found", "Location", "Locator", "verify"]

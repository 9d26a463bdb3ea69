"""Text compared as a reader would compare it: one normalisation for quotes and facts.

Everything that decides whether words "are in" a source goes through here: a
map record's supporting quote against its chunk (``quotes.py``), a sentence's
dates, numbers and names against the records it cites (``synthesis.py``), and
the quality benchmark's string matching. What is tolerated, and nothing more:

* case (``Harrow`` = ``harrow``) and Unicode compatibility forms (NFKC: ``ﬁ`` = ``fi``,
  a non-breaking space = a space);
* any run of whitespace, line breaks included, = one space;
* typographic quotes and apostrophes = ``"`` and ``'``; every dash and the minus
  sign = ``-``; ``…`` = ``...``;
* soft hyphens and zero-width characters are dropped.

A hyphen that a PDF or a man page put at a line end (``ex-\\npression``) is *not*
joined: the words differ, so a quote that joins them does not verify.
``quotes.py`` searches a chunk as written with a pattern that allows the same
differences, so a match is located in the original without a copy of it.
"""

from __future__ import annotations

import re
import unicodedata

_QUOTES = dict.fromkeys(map(ord, "\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033\u301d\u301e"), '"')
_APOSTROPHES = dict.fromkeys(map(ord, "\u2018\u2019\u201a\u201b\u2032\u00b4`"), "'")
_DASHES = dict.fromkeys(
    map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-"
)
_DROPPED = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"), None)
_TABLE: dict[int, str | None] = {**_QUOTES, **_APOSTROPHES, **_DASHES, **_DROPPED, 0x2026: "..."}


_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    """``text`` as compared (see the module docstring), at C speed: a source of megabytes
    is folded in one pass of each step."""
    folded = text.translate(_TABLE)
    if not folded.isascii():
        folded = unicodedata.normalize("NFKC", folded).translate(_TABLE)
    return _SPACES.sub(" ", folded.lower()).strip()


def _bounded(needle: str) -> re.Pattern[str]:
    """``needle`` where it is not glued to a longer word or number on either side."""
    left = r"(?<![\w])" if needle[:1].isalnum() else ""
    right = r"(?![\w])" if needle[-1:].isalnum() else ""
    return re.compile(left + re.escape(needle) + right)


def find_words(needle: str, haystack: str) -> int:
    """Where normalised ``needle`` occurs in normalised ``haystack`` as whole words
    (``-1``: nowhere). Both must already be normalised."""
    if not needle:
        return -1
    match = _bounded(needle).search(haystack)
    return match.start() if match else -1


__all__ = ["find_words", "normalise"]

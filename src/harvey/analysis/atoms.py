"""Checkable atoms: the dates, numbers, versions, names and quoted words of a text.

A sentence's atoms are what can be checked against a source by string matching
alone, with no model judging another: "18 August 1902", "3.5%", "4.3-4.1",
"Percy Aldous", "a halfpenny a bucket" in quotation marks. An answer whose atoms
are all in the evidence it cites may still be wrong in its connective words, but
it has invented no date, figure or name; one with an atom in no cited record
has. The same extractor scores the analysis-quality benchmark (grounding: the
share of an answer's atoms found in the source; coverage: the share of a gold
list found in the answer) and checks a synthesis's sentences (``citations.py``).

Rules, in the order they claim text (a longer atom is never also counted as
its parts): quoted text of two words or more; dates (``18 August 1902``,
``August 1902``, ``Sat, 10 Apr 2021``, ``2021-04-10``); versions (``4.3-4.1``,
``3.11``); numbers (``6,400``, ``3.5%``, ``1902``); names — runs of capitalised
words, or a single capitalised word that does not begin its sentence (``The``
at a sentence's start is not a name; ``Embery`` in its middle is), month and
weekday names and a few capitalised function words excepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

import regex

from harvey.analysis.matching import find_words, normalise


def _words(text: str) -> list[str]:
    return text.split()


class Kind(Enum):
    QUOTE = "quote"
    DATE = "date"
    VERSION = "version"
    NUMBER = "number"
    NAME = "name"


@dataclass(frozen=True)
class Atom:
    kind: Kind
    text: str  # as written
    start: int  # offset in the text it was found in

    @property
    def key(self) -> str:
        """The atom as compared: normalised, a number's thousands commas dropped."""
        return _comparable(self.text)


_MONTHS = _words(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday mon tue wed thu fri sat sun"
_MONTH = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:1[0-9]|20|21)\d\d"
_WEEKDAY = "(?:" + "|".join(_WEEKDAYS.split()) + r"),?\s+"

_QUOTED = re.compile(r"[\"\u201c]([^\"\u201c\u201d\n]{3,240}?)[\"\u201d]")
_DATE = re.compile(
    rf"(?i)\b(?:{_WEEKDAY})?(?:{_DAY}\s+{_MONTH},?\s+{_YEAR}|{_MONTH}\s+{_DAY},?\s+{_YEAR}"
    rf"|{_MONTH}\s+{_YEAR}|{_YEAR}-[01]\d-[0-3]\d|{_DAY}\s+{_MONTH})\b"
)
_VERSION = re.compile(
    r"(?<![\w.])v?\d+(?:\.\d+)+(?:[a-z]+\d*)?(?:[-~+][0-9A-Za-z](?:[0-9A-Za-z.~+]*[0-9A-Za-z])?)*(?![\w%])(?!\.\d)"
)
_TIME = re.compile(r"(?<![\w:])[0-2]?\d:[0-5]\d(?::[0-5]\d)?(?:\s*[+-]\d{4})?(?![\w:])")
_NUMBER = re.compile(
    r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|(?<![\w.,])\d+(?:\.\d+)?%?(?![\w])(?!\.\d)"
)
_CAP_WORD = r"\p{Lu}[\p{L}'\u2019\-]*\p{L}|\p{Lu}"
_NAME = regex.compile(
    rf"(?<![\w'\u2019])(?:{_CAP_WORD})(?:\s+(?:(?:of|de|da|van|von|der|la|le|du|and|&)\s+)?"
    rf"(?:{_CAP_WORD}))*(?![\w])"
)
_NOT_NAMES = frozenset(
    _words(
        "i a an the this that these those it its in on at of for to and or but if as by from with "
        "is are was were be he she they we you his her their our my no not yes so then there "
        "when where what which who why how all any each every some one two"
    )
    + _MONTHS
    + _WEEKDAYS.split()
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]\s*|[\-*\u2022>#]\s+|^\s*[\"'(\[]?)$")


def _comparable(text: str) -> str:
    folded = normalise(text)
    return re.sub(r"(?<=\d),(?=\d{3})", "", folded)


def _starts_sentence(text: str, start: int) -> bool:
    before = text[max(0, start - 4) : start]
    if start == 0 or not before.strip():
        line_start = text.rfind("\n", 0, start) + 1
        return not text[line_start:start].strip(" \t\"'([*-#>\u2022")
    return bool(_SENTENCE_START.search(before))


def _names(text: str, taken: list[tuple[int, int]]) -> Iterable[Atom]:
    for match in _NAME.finditer(text):
        if _overlaps(match.start(), match.end(), taken):
            continue
        words = match.group().split()
        while words and words[0].lower() in _NOT_NAMES:  # "The Harrow Bay" → "Harrow Bay"
            words.pop(0)
        if not words:
            continue
        if len(words) == 1 and words[0].lower() in _NOT_NAMES:
            continue
        start = match.start() + match.group().index(words[0])
        single = len(words) == 1
        if single and (len(words[0]) < 2 or _starts_sentence(text, start)):
            continue
        yield Atom(Kind.NAME, " ".join(words), start)


def _overlaps(start: int, end: int, taken: list[tuple[int, int]]) -> bool:
    return any(start < b and a < end for a, b in taken)


def atoms(text: str) -> list[Atom]:
    """Every checkable atom of ``text``, in order of position (see the module docstring)."""
    found: list[Atom] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in (
        (Kind.QUOTE, _QUOTED),
        (Kind.DATE, _DATE),
        (Kind.NUMBER, _TIME),
        (Kind.VERSION, _VERSION),
        (Kind.NUMBER, _NUMBER),
    ):
        for match in pattern.finditer(text):
            if kind is Kind.QUOTE:
                inner = match.group(1).strip()
                if len(inner.split()) < 2 or _overlaps(match.start(), match.end(), taken):
                    continue
                found.append(Atom(kind, inner, match.start(1)))
                taken.append((match.start(), match.end()))
                continue
            if _overlaps(match.start(), match.end(), taken):
                continue
            found.append(Atom(kind, match.group(), match.start()))
            taken.append((match.start(), match.end()))
    found.extend(_names(text, taken))
    return sorted(found, key=lambda a: a.start)


class Source:
    """A text atoms are looked up in, normalised once."""

    def __init__(self, text: str) -> None:
        self.text = _comparable(text)

    def holds(self, atom: Atom | str) -> bool:
        key = atom.key if isinstance(atom, Atom) else _comparable(atom)
        return find_words(key, self.text) >= 0


def grounded_share(answer: str, source: str | Source) -> tuple[int, int]:
    """``(found, total)``: how many of ``answer``'s atoms ``source`` holds."""
    where = source if isinstance(source, Source) else Source(source)
    items = unique(atoms(answer))
    return sum(1 for a in items if where.holds(a)), len(items)


def unique(items: Iterable[Atom]) -> list[Atom]:
    """The atoms once each, by what they compare as (first spelling kept)."""
    seen: dict[str, Atom] = {}
    for atom in items:
        seen.setdefault(atom.key, atom)
    return list(seen.values())


__all__ = ["Atom", "Kind", "Source", "atoms", "grounded_share", "unique"]

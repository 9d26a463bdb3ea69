"""Which sentences of a chunk an instruction asks about: Harvey's own evidence finder.

A small model cannot be trusted to pick the sentences that answer an
instruction (SmolLM2-135M, shown 40 numbered sentences, answers "1, 2, 3, …";
asked yes or no about each, it says yes to every one: BENCHMARKS.md, "Faithful
analysis"). Words can. The instruction is read once into a ``Query``:

* **kinds** — the kinds of fact it asks for: "when", "date", "year" ask for
  dates; "how many", "figures", "cost" for numbers; "who", "people", "names" for
  names; "version", "release" for versions; "quote" for quoted words;
* **terms** — its topical words (not stopwords, not command words like "list"
  or "every", not the kind words);
* **exhaustive** — "list", "every", "all", "each": the answer is every match,
  not the best few.

A unit (``units.py``) is a candidate when it holds at least half of the terms'
weight — each term weighted by how rare it is among the chunk's units, so the
rare word of "archivist's note" counts for more than the common one — or, for an
instruction with kinds and no terms, when it holds an atom of an asked kind.
An instruction with neither ("summarise this") gets the chunk's outline: each
heading with the sentence that follows it, else the chunk's first sentence.
A chunk with no candidate holds nothing for the instruction and is skipped
without a model call (and recorded as skipped).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from harvey.analysis.answer import Intent
from harvey.analysis.atoms import Kind, atoms
from harvey.analysis.piece import Piece
from harvey.chunks.units import Unit, split_units
from harvey.retrieval.words import STOPWORDS, holds, index

_WORD = re.compile(r"\w+", re.UNICODE)
_GLOSS = re.compile(r"(?<=\w)\s+\([^()]{3,80}\)")
#: A candidate holds at least this share of what the instruction names (its topical words,
#: and each kind of fact it asks for); "list every …" asks for more than half.
MIN_COVERAGE = 0.5
MIN_COVERAGE_EVERY = 0.6
#: What holding an asked kind of fact adds to a unit's relevance.
KIND_BONUS = 0.5


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_KIND_WORDS: dict[Kind, frozenset[str]] = {
    Kind.DATE: _set("date dates dated dating when year years day days month months"),
    Kind.NUMBER: _set(
        "number numbers figure figures amount amounts cost costs price prices count counts "
        "total totals percent percentage percentages statistic statistics quantity quantities "
        "many much"
    ),
    Kind.NAME: _set(
        "who whom whose people person persons name names named individual individuals "
        "everyone anyone somebody someone"
    ),
    Kind.VERSION: _set("version versions release releases released"),
    Kind.QUOTE: _set("quote quotes quoted quotation quotations verbatim"),
}
_EXHAUSTIVE = _set("every all each list enumerate")
#: Words that ask for a document's structure ("the section headings") rather than a topic.
_STRUCTURE = _set(
    "section sections heading headings title titles chapter chapters outline contents toc "
    "headline headlines part parts"
)
#: "when did …" asks for a date; "when should …" for a condition.
_WHEN_CONDITION = _set("should would can could to must may might need using you we one")
_COMMAND_WORDS = _set(
    """list lists listing every all each show give find tell extract mention mentioned mentions
    mentioning summarise summarize summary summarised summarized describe describes explain
    document documents text texts file files key main important short bullet bullets point
    points briefly brief following please including include includes about say says part parts
    write answer question detail details anything everything thing things information info
    enumerate there here also other any kind kinds sort type types given happen happened
    happens occur occurred took place changelog manual license licence report book article
    paper guide readme documentation docs doc page pages sum up overview gist recap tldr
    condense shorten analyse analyze examine review read look go through"""
)


@dataclass(frozen=True)
class Query:
    """What an instruction asks for, read once (see the module docstring)."""

    terms: tuple[str, ...]
    kinds: frozenset[Kind]
    exhaustive: bool
    headings: bool = False  # only the structure is asked for: the section titles

    @classmethod
    def of(cls, instruction: str, names: Sequence[str] = ()) -> Query:
        """``names``: the files analysed, whose own words ("make", "changelog") name the
        document rather than a topic in it."""
        # "(Python Enhancement Proposal)" glosses the word before it: not more to look for
        plain = _GLOSS.sub(" ", instruction)
        words = [w for w in _WORD.findall(plain.lower()) if len(w) > 1 or w.isdigit()]
        naming = {w for name in names for w in _WORD.findall(name.lower())}
        asked = set(words)
        if "when" in asked and not _when_asks_a_date(words):
            asked.discard("when")
        kinds = frozenset(k for k, vocabulary in _KIND_WORDS.items() if vocabulary & asked)
        if "how" in words and ({"many", "much"} & set(words)):
            kinds |= {Kind.NUMBER}
        every_kind_word = frozenset().union(*_KIND_WORDS.values())
        terms: list[str] = []
        for word in words:
            if word in STOPWORDS or word in _COMMAND_WORDS or word in every_kind_word:
                continue
            if word in naming:
                continue
            if word not in terms:
                terms.append(word)
        headings = bool(terms) and all(t in _STRUCTURE for t in terms) and not kinds
        return cls(tuple(terms), kinds, bool(_EXHAUSTIVE & set(words)), headings)

    @property
    def outline(self) -> bool:
        """Nothing to look for: the chunk's outline stands in (module docstring)."""
        return not self.terms and not self.kinds


def _when_asks_a_date(words: Sequence[str]) -> bool:
    at = words.index("when")
    return at + 1 >= len(words) or words[at + 1] not in _WHEN_CONDITION


@dataclass(frozen=True)
class Candidate:
    """A unit the instruction asks about, and how much (higher is more)."""

    unit: Unit
    relevance: float
    kinds: frozenset[Kind] = field(default_factory=frozenset)
    closest: bool = False  # not an answer: the nearest passage when nothing clears the floor


def _weights(terms: Sequence[str], found: list[list[bool]]) -> list[float]:
    """Each term's weight: how rare it is among the units (absent: as rare as can be)."""
    n = len(found)
    weights = []
    for t in range(len(terms)):
        df = sum(1 for row in found if row[t])
        weights.append(math.log((n + 1) / (df + 0.5)))
    return weights


_YEAR = re.compile(r"(?:1[0-9]|20|21)\d\d")


def kinds_of(text: str) -> frozenset[Kind]:
    """The kinds of fact ``text`` holds; a year on its own (``in 1881``) is a date too."""
    found = atoms(text)
    kinds = {a.kind for a in found}
    if any(a.kind is Kind.NUMBER and _YEAR.fullmatch(a.text) for a in found):
        kinds.add(Kind.DATE)
    return frozenset(kinds)


def _outline(units: Sequence[Unit], *, lead: bool) -> list[Candidate]:
    """Each heading (and with ``lead`` the unit after it); without a heading, the first unit."""
    picked: list[Candidate] = []
    for i, unit in enumerate(units):
        if unit.heading:
            picked.append(Candidate(unit, 1.0))
            if lead and i + 1 < len(units) and not units[i + 1].heading:
                picked.append(Candidate(units[i + 1], 1.0))
    if not picked and units and lead:
        picked.append(Candidate(units[0], 1.0))
    return picked


def candidates(query: Query, units: Sequence[Unit]) -> list[Candidate]:
    """The units of one chunk the query asks about, in order, with their relevance.

    A unit must hold at least ``MIN_COVERAGE`` (``MIN_COVERAGE_EVERY`` for "list every")
    of the query's items — each topical word, and each asked kind of fact, counted
    once. Relevance ranks a question's candidates: the share of the words' weight
    (a rare word weighs more) plus ``KIND_BONUS`` for an asked kind; for "list
    every" it is the plain share, since every match is wanted."""
    if query.headings or query.outline:
        return _outline(units, lead=not query.headings)
    indexed = [index(u.text) for u in units]
    found = [[holds(t, words, heads) for t in query.terms] for words, heads in indexed]
    weights = _weights(query.terms, found)
    total = sum(weights)
    items = len(query.terms) + len(query.kinds)
    floor = MIN_COVERAGE_EVERY if query.exhaustive else MIN_COVERAGE
    out: list[Candidate] = []
    for unit, row in zip(units, found, strict=True):
        asked = kinds_of(unit.text) & query.kinds
        if not query.terms:  # kinds alone: any asked kind of fact
            if asked:
                out.append(Candidate(unit, 1.0 + KIND_BONUS * (len(asked) - 1), asked))
            continue
        share = (sum(row) + len(asked)) / items
        if share < floor:
            continue
        if query.exhaustive:
            relevance = share
        else:
            weighted = sum(w for w, hit in zip(weights, row, strict=True) if hit) / total
            relevance = weighted + (KIND_BONUS if asked else 0.0)
        out.append(Candidate(unit, relevance, asked))
    return out


#: A non-exhaustive instruction keeps at most this many of a chunk's candidates.
MAX_PER_CHUNK = 8


class Finder(Protocol):
    """What finds a chunk's evidence for one instruction: its reading of the instruction
    (``query``), the units of a piece it asks about, and what the answer should keep of
    them (``intent``, told to the reduce: the finder that chose them knows how it scored
    them)."""

    query: Query

    @property
    def intent(self) -> Intent: ...

    def candidates(self, piece: Piece) -> list[Candidate]: ...

    def worth_reading(self, piece: Piece) -> bool:
        """Whether a model that reads whole chunks should read this one."""
        ...


class WordFinder:
    """The instruction's own words, and the kinds of fact it asks for (module docstring):
    every unit that holds enough of them, the best ``MAX_PER_CHUNK`` of a chunk for a
    question."""

    def __init__(self, instruction: str, names: Sequence[str] = ()) -> None:
        self.query = Query.of(instruction, names)

    @property
    def intent(self) -> Intent:
        """Every match for "list every …", else the best few, as relevant as the best."""
        return Intent(self.query.exhaustive)

    def candidates(self, piece: Piece) -> list[Candidate]:
        found = candidates(self.query, split_units(piece.chunk.text, source=piece.source))
        if self.query.exhaustive or len(found) <= MAX_PER_CHUNK:
            return found
        best = sorted(found, key=lambda c: -c.relevance)[:MAX_PER_CHUNK]
        return sorted(best, key=lambda c: c.unit.start)

    def worth_reading(self, piece: Piece) -> bool:
        """A word of the instruction occurs in the chunk, or it names no word to look for
        ("summarise"); one pass, not the finder's."""
        if self.query.outline:
            return True
        text = piece.chunk.text.lower()
        return any(term in text for term in self.query.terms) or bool(self.candidates(piece))


__all__ = [
    "KIND_BONUS",
    "MAX_PER_CHUNK",
    "MIN_COVERAGE",
    "MIN_COVERAGE_EVERY",
    "Candidate",
    "Finder",
    "Query",
    "WordFinder",
    "candidates",
    "kinds_of",
]

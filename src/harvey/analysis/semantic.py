"""Evidence found by meaning: what a finder keeps of a document's ranked units.

Readers ask in their own words, not the document's ("how do I make a pattern
ignore case?" for a sentence about ``re.IGNORECASE``), so a unit cannot be
required to hold the question's words. Each document's units are ranked by words
and by two embedders (``ranking.py``), over its whole text when the caller can give
it (each file read once, its index kept by content hash: ``doc_index.py``), else
chunk by chunk. Then, by what the instruction asks (its ``Query``):

* a **question** gets each ranker's best few (``ranking.QUOTAS``), all marked
  ``closest`` when none clears the floor — the answer then says that no sentence
  clearly answers and shows the closest passages, never a false "nothing";
* **"list every …"** gets every unit that holds what it names (its words and kinds
  of fact, as the word finder counts them) or is near it in meaning
  (``EVERY_FLOOR``, ``NEAR_FLOOR``), whatever words a sentence uses for the thing;
* **nothing to look for** ("summarise this") gets each section's most central
  sentence (LexRank-style: nearest, on average, to the others of its section), not
  its headings or its markup.

A model that chooses (``breadth``) is offered a chunk's best units by the fused
ranking, in the chunks that hold a chosen one; the others are skipped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harvey.analysis.answer import Intent
from harvey.analysis.doc_index import DocumentIndex, IndexCache, build_index, index_key
from harvey.analysis.finder import MIN_COVERAGE_EVERY, Candidate, Query, kinds_of
from harvey.analysis.piece import Piece
from harvey.analysis.ranking import DEEP_ALL, KEEP, POOL, Models, Ranking, Scored
from harvey.chunks.units import Unit
from harvey.retrieval.words import holds, index

if TYPE_CHECKING:
    from harvey.workspace.source import Source as WorkspaceSource


#: A file too big to index whole is ranked chunk by chunk, each chunk's best this many
#: units sent to the deep embedder (a 10 MB file: about 400 chunks, 5,000 sentences).
CHUNK_POOL = 12
#: A chunk ranked alone gets quick vectors up to this size (a 2 MB chunk of short lines
#: would take wordllama most of a minute; BM25 alone picks its pool).
MAX_QUICK_CHUNK = 256 * 1024
#: "List every …": a unit holding this share of the instruction's words and kinds is one
#: of the things listed; one holding ``SOME_SHARE`` is when its deep cosine clears
#: ``EVERY_FLOOR``; one whose cosine clears ``NEAR_FLOOR`` is whatever words it holds.
STRONG_SHARE = 0.8
SOME_SHARE = 0.4
EVERY_FLOOR = 0.40
NEAR_FLOOR = 0.53
#: A summary keeps this many central sentences a section, and this many in all.
PER_SECTION = 1
SUMMARY_UNITS = 12
#: Units shorter than this many words are not summary material ("Yes.", a directive).
_MIN_SUMMARY_WORDS = 6


def question(ranking: Ranking) -> list[Scored]:
    """A question's answer: each ranker's best few (``QUOTAS``), the strongest ranker
    first; all marked ``closest`` when none of them is a clear answer."""
    units = ranking.index.units
    picked = ranking.quota_fused()
    closest = not any(ranking.clear(i) for i in picked)
    return [Scored(units[i], score, closest=closest) for i, score in picked.items()]


def every(ranking: Ranking, query: Query) -> list[Scored]:
    """Every unit that is one of the things listed (module docstring): it holds what the
    instruction names, by its words and kinds of fact (``_listed_by_words``), or it is
    near in meaning and holds some of it (``EVERY_FLOOR``, ``SOME_SHARE``), or it is very
    near (``NEAR_FLOOR``)."""
    units = ranking.index.units
    items = len(query.terms) + len(query.kinds)
    kept: dict[int, float] = {}
    for i, unit in enumerate(units):
        share = _item_share(query, unit.text, items)
        if unit.heading and share < STRONG_SHARE:
            continue  # a title is listed only when it names the thing asked for
        deep = ranking.deep.get(i)
        near = deep is not None and deep >= EVERY_FLOOR and share >= SOME_SHARE
        very_near = deep is not None and deep >= NEAR_FLOOR
        if _listed_by_words(query, unit.text, share, deep) or near or very_near:
            kept[i] = max(share, ranking.fused.get(i, 0.0))
    if not kept:
        return question(ranking)
    return [Scored(units[i], score) for i, score in sorted(kept.items())]


def _listed_by_words(query: Query, text: str, share: float, deep: float | None) -> bool:
    """The word finder's rule for "list every": an asked kind of fact when that is all the
    instruction names ("every version and date"); else most of what it names — and, when
    it names more than two words, a unit the deep model finds near (``EVERY_FLOOR``: "a
    new estate built above the reservoir" holds the words, and is not a reservoir)."""
    if not query.terms:
        return bool(kinds_of(text) & query.kinds)
    if share >= STRONG_SHARE:
        return True
    if share < MIN_COVERAGE_EVERY:
        return False
    return len(query.terms) <= 2 or deep is None or deep >= EVERY_FLOOR


def _item_share(query: Query, text: str, items: int) -> float:
    """The share of the instruction's words (by stem) and asked kinds of fact ``text``
    holds, as the word finder counts it."""
    if not items:
        return 0.0
    words, heads = index(text)
    held = sum(1 for t in query.terms if holds(t, words, heads))
    return (held + len(kinds_of(text) & query.kinds)) / items


def _summary_material(unit: Unit) -> bool:
    text = unit.text.strip()
    if unit.heading or text.startswith(("..", ":", "|", "+-", "=", "#")):
        return False
    return len(text.split()) >= _MIN_SUMMARY_WORDS


def central(index: DocumentIndex, models: Models, per_section: int = PER_SECTION) -> list[Scored]:
    """Each section's most central sentences (their mean cosine to the section's others),
    ``per_section`` of each, in the document's order."""
    units = index.units
    sections: dict[int, list[int]] = {}
    for i, unit in enumerate(units):
        if _summary_material(unit):
            sections.setdefault(int(index.section[i]), []).append(i)
    if not sections:
        return [Scored(u, 1.0) for u in units if u.heading][:SUMMARY_UNITS]
    picked: list[tuple[float, int]] = []
    for ids in sections.values():
        vectors = _section_vectors(index, ids, models)
        if vectors is None or len(ids) < 3:
            centrality = np.ones(len(ids), dtype=np.float32)
        else:  # each unit's mean cosine to the others: v·(Σv) − 1, with no n×n matrix
            centrality = (vectors @ vectors.sum(axis=0) - 1.0) / (len(ids) - 1)
        order = np.argsort(-centrality, kind="stable")[:per_section]
        picked += [(float(centrality[k]), ids[k]) for k in order]
    return [Scored(units[i], max(0.01, score)) for score, i in sorted(picked, key=lambda p: p[1])]


def _section_vectors(index: DocumentIndex, ids: list[int], models: Models) -> np.ndarray | None:
    """The deep vectors of a document small enough to embed whole, else the quick ones."""
    if models.deep is not None and len(index) <= DEEP_ALL:
        return index.ensure_deep(ids, models.deep)
    if index.quick is not None:
        return np.asarray(index.quick[ids])
    return None


def headings(index: DocumentIndex) -> list[Scored]:
    return [Scored(u, 1.0) for u in index.units if u.heading]


class SemanticFinder:
    """The finder by meaning (module docstring), over each file's whole text when the
    caller can give it (``documents``), else over each chunk alone."""

    def __init__(
        self,
        instruction: str,
        names: Sequence[str] = (),
        *,
        documents: Callable[[str], str | None] = lambda _name: None,
        cache: IndexCache | None = None,
        models: Models | None = None,
        breadth: int = 0,
    ) -> None:
        self.instruction = instruction
        self.query = Query.of(instruction, names)
        self.documents = documents
        self.cache = cache or IndexCache(None)
        self.models = models or Models(None, None)
        self.breadth = breadth  # > 0: a model chooses; each chunk offers its best this many
        self._chosen: dict[str, Choice] = {}
        self._lock = threading.Lock()
        #: Part of a stored map result's key: candidates numbered by another finder differ.
        self.signature = f"meaning-{self.models.tag}-{POOL}-{KEEP}-{breadth}"

    # -- the index and the choice, once per document

    @property
    def intent(self) -> Intent:
        """Every match for "list every …", and every sentence a summary or an outline
        chose (bounded per section already, in the document's order); else the best
        ``KEEP`` of what it chose: it floored and bounded them itself (``ranking.QUOTAS``),
        so the reduce adds no floor."""
        query = self.query
        return Intent(query.exhaustive or query.outline or query.headings, KEEP, 0.0)

    def index_of(self, text: str, source: bool) -> DocumentIndex:
        key = index_key(text, source, self.models.tag)
        found = self.cache.get(key, text, source)
        if found is None:
            found = build_index(text, source=source, quick=self.models.quick, key=key)
            self.cache.put(found)
        return found

    def choose(self, index: DocumentIndex, *, pool: int = POOL, keep: bool = True) -> Choice:
        query = self.query
        if query.headings:
            chosen = Choice(headings(index))
        elif query.outline:
            picked = central(index, self.models, per_section=3 if self.breadth else PER_SECTION)
            if not self.breadth and len(picked) > SUMMARY_UNITS:  # the most central sections'
                best = sorted(picked, key=lambda p: -p.relevance)[:SUMMARY_UNITS]
                picked = sorted(best, key=lambda p: p.unit.start)
            chosen = Choice(picked)
        else:
            deep_all = DEEP_ALL if pool == POOL else pool
            ranking = Ranking(
                index, self.instruction, query, self.models, pool=pool, deep_all=deep_all
            )
            listing = query.exhaustive or not query.terms  # "dates, please": every date
            selected = every(ranking, query) if listing else question(ranking)
            offered: list[Scored] = []
            if self.breadth:  # a model chooses: the chunks that hold an answer offer more
                offered = [Scored(index.units[i], ranking.fused[i]) for i in ranking.best(POOL)]
            chosen = Choice(selected, offered)
        if keep:
            self.cache.save(index)  # the deep vectors this question added
        return chosen

    def _chosen_for(self, piece: Piece) -> tuple[Choice, int]:
        """The document's choice and the offset its units' starts are counted from."""
        with self._lock:
            kept = self._chosen.get(piece.path)
        if kept is not None:
            return kept, 0
        whole = self.documents(piece.path)
        if whole is None:  # a file too big to hold whole: each chunk is its own document,
            # ranked and dropped (kept, a 100 MB file's indexes would be gigabytes)
            key = index_key(piece.chunk.text, piece.source, self.models.tag)
            quick = self.models.quick if len(piece.chunk.text) <= MAX_QUICK_CHUNK else None
            index = build_index(piece.chunk.text, source=piece.source, quick=quick, key=key)
            return self.choose(index, pool=CHUNK_POOL, keep=False), piece.chunk.start
        with self._lock:
            kept = self._chosen.get(piece.path)
            if kept is None:
                kept = self.choose(self.index_of(whole, piece.source))
                self._chosen[piece.path] = kept
        return kept, 0

    def candidates(self, piece: Piece) -> list[Candidate]:
        """The chosen units in ``piece``; for a model that chooses, the piece's best
        ``breadth`` of the ranking when it holds a chosen one (else nothing: skipped)."""
        choice, base = self._chosen_for(piece)
        found = _within(piece, choice.selected, base)
        if not self.breadth or not choice.offered or not found:
            return found
        offered = _within(piece, choice.offered, base)
        best = sorted(offered, key=lambda c: -c.relevance)[: self.breadth]
        return sorted(best, key=lambda c: c.unit.start)

    def worth_reading(self, piece: Piece) -> bool:
        """A model that reads whole chunks reads those holding a chosen unit (every chunk
        of a summary: nothing needs ranking for that)."""
        return self.query.outline or bool(self.candidates(piece))


@dataclass(frozen=True)
class Choice:
    """What a finder chose in one document: the answer's units (``selected``), and what a
    model choosing is offered in the chunks that hold them (``offered``)."""

    selected: list[Scored]
    offered: list[Scored] = field(default_factory=list)


def _within(piece: Piece, chosen: Sequence[Scored], base: int) -> list[Candidate]:
    """The units of ``chosen`` that start in ``piece``, as candidates of its chunk (cut
    at its end; never when the text indexed is not the text chunked)."""
    chunk = piece.chunk
    lo, hi = chunk.start, chunk.start + len(chunk.text)
    out: list[Candidate] = []
    for scored in chosen:
        start, end = base + scored.unit.start, base + scored.unit.end
        if not lo <= start < hi:
            continue
        a, b = start - lo, min(end, hi) - lo
        if chunk.text[a:b] != scored.unit.text[: b - a]:
            continue
        unit = Unit(a, b, chunk.text[a:b], scored.unit.heading)
        out.append(Candidate(unit, scored.relevance, closest=scored.closest))
    out.sort(key=lambda c: c.unit.start)
    return out


#: A file whose text is over this is indexed chunk by chunk, not whole: a file bigger
#: than the chunker's window is streamed so memory does not grow with it, and so is this.
MAX_WHOLE_BYTES = 4 * 1024 * 1024


def whole_text(source: WorkspaceSource) -> str | None:
    """The text a file's chunks are cut from, whole (``None`` past ``MAX_WHOLE_BYTES``):
    a document's extracted text, else the file decoded as the chunker decodes it."""
    from harvey.documents.extraction import extract_source

    if source.is_document:
        return extract_source(source).text
    if source.size > MAX_WHOLE_BYTES:
        return None
    from harvey.chunks.stream_chunking import WINDOW_BYTES

    return source.data(max(WINDOW_BYTES, MAX_WHOLE_BYTES)).decode("utf-8", errors="replace")


def finder_for(
    instruction: str,
    sources: Sequence[WorkspaceSource],
    *,
    style: str,
    harvey_home: Path | None,
) -> SemanticFinder:
    """The finder by meaning for one run over ``sources`` (each read whole once, when its
    first chunk is looked at), its indexes kept under ``harvey_home``'s cache."""
    from harvey.analysis.mapper import MAX_CHOICES

    by_name = {s.name: s for s in sources}

    def documents(name: str) -> str | None:  # asked once a file: its choice is kept
        source = by_name.get(name)
        return whole_text(source) if source is not None else None

    from harvey.llama_native import cache_folder

    return SemanticFinder(
        instruction,
        [s.name for s in sources],
        documents=documents,
        cache=IndexCache(harvey_home),
        models=Models.shared(cache_folder()),  # the converted weights: one copy a user
        breadth=0 if style == "harvey" else MAX_CHOICES,
    )


__all__ = ["Choice", "SemanticFinder", "every", "finder_for", "question", "whole_text"]

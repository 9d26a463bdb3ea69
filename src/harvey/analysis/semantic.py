"""Evidence found by meaning: a document's units ranked by words and by vectors, fused.

Readers ask in their own words, not the document's ("how do I make a pattern
ignore case?" for a sentence about ``re.IGNORECASE``), so a unit cannot be
required to hold the question's words. Each unit of the whole document
(``doc_index``) is scored three ways and the scores fused (``retrieval.fusion``):

* **lexical** — BM25 over stemmed words (exact names, numbers, rare terms);
* **quick** — wordllama's static vectors, for every unit (cheap: the cascade's
  first stage with BM25);
* **deep** — all-MiniLM-L6-v2 on llama.cpp, for the ``POOL`` units the first two
  rank best (about 60 sentences a second on two cores, so never the whole of a big
  document; its vectors are kept with the index for the next question).

A question gets its best ``KEEP`` units. "List every …" keeps every unit the word
finder (``finder.py``) takes plus the units whose deep similarity clears
``EVERY_FLOOR``: exhaustive, whatever words a sentence uses for the thing. An
instruction with nothing to look for ("summarise this") gets each section's most
central sentences (LexRank-style: the sentence nearest, on average, to the others
of its section), not its headings. When no unit clears ``CLEAR_FLOOR`` (and none
holds the question's words), the nearest few are kept and marked ``closest``: the
answer says no sentence clearly answers and shows them as the closest passages,
never a false "nothing".
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from harvey.analysis.doc_index import DocumentIndex, IndexCache, build_index, index_key
from harvey.analysis.finder import MIN_COVERAGE_EVERY, Candidate, Query, kinds_of
from harvey.analysis.piece import Piece
from harvey.chunks.units import Unit
from harvey.retrieval.embedders import Embedder, shared_local, shared_minilm
from harvey.retrieval.fusion import combine
from harvey.retrieval.words import holds, index

if TYPE_CHECKING:
    from harvey.workspace.source import Source as WorkspaceSource

#: A document of at most this many units has every unit's deep vector (about ten seconds
#: on two cores the first time, kept for the next question); a longer one sends the
#: ``POOL`` units the cheap stages rank best.
DEEP_ALL = 2500
POOL = 600
#: A file too big to index whole is ranked chunk by chunk, each chunk's best this many
#: units sent to the deep embedder (a 10 MB file: about 400 chunks, 5,000 sentences).
CHUNK_POOL = 12
#: A chunk ranked alone gets quick vectors up to this size (a 2 MB chunk of short lines
#: would take wordllama most of a minute; BM25 alone picks its pool).
MAX_QUICK_CHUNK = 256 * 1024
#: A question's answer: the deep ranker's best 6, the lexical ranker's best 2 and the quick
#: ranker's best 2 (measured on the reader questions: BENCHMARKS.md, "Reader questions").
QUOTAS = (6, 2, 2)
KEEP = sum(QUOTAS)
#: The characters a question's quotes may take, best first (the same hits at 1,000 as
#: unbounded on the reader questions, the median answer 1,140 characters with sources).
QUOTE_BUDGET = 1000
#: Trailing characters that do not change what an instruction asks ("?" does, to MiniLM).
STRIPPED = " .;:!"
#: Weights of the fused scores: lexical, quick, deep (measured: BENCHMARKS.md, "Reader
#: questions").
WEIGHTS = (1.0, 0.5, 2.0)
#: A deep cosine at or above this is a clear answer; below, a unit is only "closest".
CLEAR_FLOOR = 0.30
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


@dataclass(frozen=True)
class Models:
    """The embedders a finder uses; either may be missing (then its stage is skipped)."""

    quick: Embedder | None
    deep: Embedder | None

    @property
    def tag(self) -> str:
        return f"{getattr(self.quick, 'spec', 'none')}+{getattr(self.deep, 'spec', 'none')}"

    @classmethod
    def shared(cls, cache_dir: Path | None) -> Models:
        deep = shared_minilm(cache_dir) if cache_dir is not None else None
        return cls(shared_local(), deep)


@dataclass(frozen=True)
class Scored:
    """One chosen unit: its relevance (0–1, fused) and whether it is only the closest."""

    unit: Unit
    relevance: float
    closest: bool = False


def _cosines(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    return np.asarray(vectors @ query, dtype=np.float32)


def _top(scores: np.ndarray, count: int, positive: bool = False) -> list[int]:
    if not len(scores):
        return []
    count = min(count, len(scores))
    ids = np.argpartition(-scores, count - 1)[:count]
    ids = ids[np.argsort(-scores[ids], kind="stable")]
    return [int(i) for i in ids if not positive or scores[i] > 0]


class Ranking:
    """One question's scores over one document's units (the pool the deep stage saw)."""

    def __init__(
        self,
        index: DocumentIndex,
        instruction: str,
        query: Query,
        models: Models,
        *,
        pool: int = POOL,
        deep_all: int = DEEP_ALL,
    ):
        self.index = index
        # the same ask, the same vector: "… opened." and "… opened" are one instruction
        instruction = " ".join(instruction.split()).rstrip(STRIPPED)
        lexical_text = " ".join(query.terms) or instruction
        self.bm25 = index.lexical.scores(lexical_text)
        self.share = index.lexical.share(lexical_text)
        n = len(index)
        self.quick = np.zeros(n, dtype=np.float32)
        if models.quick is not None and index.quick is not None and n:
            self.quick = _cosines(index.quick, models.quick.embed([instruction])[0])
        if n <= deep_all:
            self.pool = list(range(n))
        else:
            ranked = _top(self.bm25, pool // 3, positive=True) + _top(self.quick, pool)
            self.pool = list(dict.fromkeys(ranked))[:pool]
        self.deep: dict[int, float] = {}
        if models.deep is not None and self.pool:
            vectors = index.ensure_deep(self.pool, models.deep)
            cos = _cosines(vectors, models.deep.embed([instruction])[0])
            self.deep = {i: float(c) for i, c in zip(self.pool, cos, strict=True)}
        lists = [
            {i: float(self.bm25[i]) for i in self.pool},
            {i: float(self.quick[i]) for i in self.pool},
            self.deep,
        ]
        self.fused = combine(lists, WEIGHTS)

    def quota_fused(self) -> dict[int, float]:
        """Each ranker's best ``QUOTAS`` units (deep, lexical, quick; without the deep
        model the quick one takes its share), scored by where they came: the first
        ranker's best scores 1, each next unit a little less."""
        rankers: list[tuple[dict[int, float], int]] = []
        deep, lexical, quick = QUOTAS
        scores_of = {
            "lexical": {i: float(self.bm25[i]) for i in self.pool if self.bm25[i] > 0},
            "quick": {i: float(self.quick[i]) for i in self.pool},
        }
        if self.deep:
            rankers = [(self.deep, deep), (scores_of["lexical"], lexical)]
            rankers.append((scores_of["quick"], quick))
        else:
            rankers = [(scores_of["quick"], deep), (scores_of["lexical"], lexical + quick)]
        units = self.index.units
        picked: dict[int, float] = {}
        used = 0
        for scores, quota in rankers:
            ranked = [i for i in sorted(scores, key=lambda i: (-scores[i], i))]
            ranked = [i for i in ranked if not units[i].heading and i not in picked]
            for i in ranked[:quota]:
                cost = len(units[i].text)
                if picked and used + cost > QUOTE_BUDGET:
                    continue  # a shorter one further down may still fit
                used += cost
                # absolute where it can be (a chunk's picks meet other chunks' in the reduce)
                picked[i] = self.deep.get(i, 1.0 - 0.01 * len(picked))
        return picked

    def best(self, count: int) -> list[int]:
        """The ``count`` best units by fused score; a heading answers nothing by itself."""
        units = self.index.units
        ranked = sorted(self.fused, key=lambda i: (-self.fused[i], i))
        return [i for i in ranked if not units[i].heading][:count]

    def clear(self, i: int) -> bool:
        """A clear answer: near in meaning, or holding most of the question's words."""
        if self.deep:
            return self.deep.get(i, 0.0) >= CLEAR_FLOOR or self.share[i] >= 0.75
        return self.share[i] >= 0.5


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
    if models.deep is not None and len(ids) <= POOL:
        return index.ensure_deep(ids, models.deep)
    if index.quick is not None:
        return np.asarray(index.quick[ids])
    return None


def headings(index: DocumentIndex) -> list[Scored]:
    return [Scored(u, 1.0) for u in index.units if u.heading]


class SemanticFinder:
    """The finder by meaning (module docstring), over each file's whole text when the
    caller can give it (``documents``), else over each chunk alone."""

    keep = KEEP
    relative_floor = 0.0  # the finder chose and floored; the reduce keeps what it chose

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

    from harvey.llm.local_weights import cache_folder

    return SemanticFinder(
        instruction,
        [s.name for s in sources],
        documents=documents,
        cache=IndexCache(harvey_home),
        models=Models.shared(cache_folder()),  # the converted weights: one copy a user
        breadth=0 if style == "harvey" else MAX_CHOICES,
    )


__all__ = ["CLEAR_FLOOR", "KEEP", "POOL", "Models", "Ranking", "SemanticFinder", "finder_for"]

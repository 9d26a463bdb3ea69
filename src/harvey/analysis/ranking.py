"""One question's scores over one document's units: words, quick vectors, deep vectors.

Each unit of a document (``doc_index``) is scored three ways:

* **lexical** — BM25 over stemmed words (exact names, numbers, rare terms);
* **quick** — wordllama's static vectors, for every unit (cheap: with BM25, the
  cascade's first stage);
* **deep** — all-MiniLM-L6-v2 on llama.cpp, for every unit of a document of up to
  ``DEEP_ALL`` units, else for the ``POOL`` units the first two rank best (its vectors
  are kept with the index for the next question).

The three are fused (``retrieval.fusion``) for the finder's wider choices (what a model
choosing is offered, "list every …"); a question's answer takes each ranker's best few
(``QUOTAS``), the deep ranker first: measured on the reader questions, that beat every
weighting of the fused score and the union of the three (BENCHMARKS.md, "Reader
questions").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harvey.analysis.doc_index import DocumentIndex
from harvey.analysis.finder import Query
from harvey.chunks.units import Unit
from harvey.retrieval.embedders import Embedder, shared_local, shared_minilm
from harvey.retrieval.fusion import combine

#: A document of at most this many units has every unit's deep vector (about ten seconds
#: on two cores the first time, kept for the next question); a longer one sends the
#: ``POOL`` units the cheap stages rank best: each question embeds at most those it has
#: not embedded before, about a second, so a second question on a megabyte stays quick.
#: (On the reader questions, MiniLM's best 6 of a cheap pool of 200 found 18 of 30, of
#: 400 18, of every unit 19-20.)
DEEP_ALL = 2500
POOL = 240
#: A later question embeds at most this many units it had not embedded before.
NEW_DEEP = 40
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


def _affordable(index: DocumentIndex, pool: list[int]) -> list[int]:
    """The pool, less the units past ``NEW_DEEP`` that have no deep vector yet, once the
    document has some: a later question on a big document embeds at most that many (its
    cost is what a second question waits), keeping every unit embedded before."""
    has = index.has_deep
    if has is None or not has.any():
        return pool  # the first question: the whole pool
    fresh = [i for i in pool if not has[i]]
    dropped = set(fresh[NEW_DEEP:])
    return [i for i in pool if i not in dropped]


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
            self.pool = _affordable(index, list(dict.fromkeys(ranked))[:pool])
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
        # a heading answers nothing by itself, unless the text is nothing but short lines
        titles = all(units[i].heading for i in self.pool)
        picked: dict[int, float] = {}
        used = 0
        for scores, quota in rankers:
            ranked = [i for i in sorted(scores, key=lambda i: (-scores[i], i))]
            ranked = [i for i in ranked if (titles or not units[i].heading) and i not in picked]
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


__all__ = [
    "CLEAR_FLOOR",
    "DEEP_ALL",
    "KEEP",
    "POOL",
    "QUOTAS",
    "QUOTE_BUDGET",
    "Models",
    "Ranking",
    "Scored",
]

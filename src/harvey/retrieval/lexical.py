"""BM25 over a list of short texts (a document's sentences), stemmed, held in memory.

A knowledge store ranks with SQLite's FTS5; a document asked about once or twice
has no store, and its units are few enough (a megabyte of prose is about 8,000
sentences) that postings in a dict rank them in milliseconds. Words are stemmed
(``words.stem``) so ``compiled`` finds ``compile``; stopwords are left out of the
query, as every search here leaves them out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harvey.retrieval.words import STOPWORDS, stem, words_of

#: BM25's usual constants: term-frequency saturation and length normalisation.
K1 = 1.2
B = 0.75


def terms_of(text: str) -> list[str]:
    """``text``'s stemmed words, stopwords left out: what the index and a query share."""
    return [stem(w) for w in words_of(text) if w not in STOPWORDS]


class LexicalIndex:
    """Postings of stemmed terms over ``texts``; ``scores`` ranks them for a query."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.size = len(texts)
        self.postings: dict[str, dict[int, int]] = {}
        lengths = np.zeros(self.size, dtype=np.float32)
        for i, text in enumerate(texts):
            terms = terms_of(text)
            lengths[i] = len(terms)
            for term in terms:
                row = self.postings.setdefault(term, {})
                row[i] = row.get(i, 0) + 1
        self.lengths = lengths
        self.mean_length = float(lengths.mean()) if self.size else 0.0

    def idf(self, term: str) -> float:
        """How rare ``term`` is among the texts (BM25's, floored at a small positive)."""
        df = len(self.postings.get(term, ()))
        return max(0.05, math.log(1 + (self.size - df + 0.5) / (df + 0.5)))

    def scores(self, query: str) -> np.ndarray:
        """BM25 of every text for ``query`` (0 for a text holding none of its terms)."""
        out = np.zeros(self.size, dtype=np.float32)
        if not self.size:
            return out
        norm = K1 * (1 - B + B * self.lengths / max(self.mean_length, 1e-6))
        for term in dict.fromkeys(terms_of(query)):
            row = self.postings.get(term)
            if not row:
                continue
            ids = np.fromiter(row.keys(), dtype=np.int64, count=len(row))
            tf = np.fromiter(row.values(), dtype=np.float32, count=len(row))
            out[ids] += self.idf(term) * tf * (K1 + 1) / (tf + norm[ids])
        return out

    def share(self, query: str) -> np.ndarray:
        """The share of the query's rarity-weighted terms each text holds (0–1): BM25 on an
        absolute scale, so texts of two documents can be compared."""
        out = np.zeros(self.size, dtype=np.float32)
        terms = list(dict.fromkeys(terms_of(query)))
        if not terms or not self.size:
            return out
        weights = [self.idf(t) for t in terms]
        total = sum(weights)
        for term, weight in zip(terms, weights, strict=True):
            row = self.postings.get(term)
            if row:
                out[np.fromiter(row.keys(), dtype=np.int64, count=len(row))] += weight / total
        return out


__all__ = ["LexicalIndex", "terms_of"]

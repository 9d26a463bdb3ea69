"""Matching free text against memories: the words a query uses, and how well a memory covers them.

FTS5 finds the candidates; these functions decide what a query is made of
(no stop words, no FTS syntax from the user's text) and score a hit by the
share of the query's words it contains, a scale that does not depend on how
many memories the store holds (bm25's does).
"""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "how",
        "what",
        "why",
        "when",
        "who",
        "can",
        "you",
        "are",
        "was",
        "this",
        "that",
        "from",
        "into",
        "not",
        "have",
        "has",
        "had",
        "does",
        "did",
        "out",
        "our",
        "your",
        "their",
        "there",
        "then",
        "than",
        "them",
        "they",
        "its",
    ]
)


def query_words(text: str) -> list[str]:
    """The words of ``text`` a search uses: three letters or more, no stop words, unique."""
    words = re.findall(r"[a-z0-9_]{3,}", text.lower())
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))[:32]


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression from free text: its words OR-ed, each quoted (no syntax)."""
    return " OR ".join(f'"{w}"' for w in query_words(text))


def coverage(words: list[str], text: str) -> float:
    """The share of the query's words that ``text`` contains: bm25's scale depends on the
    size of the store (two memories give near-zero scores), this one does not."""
    if not words:
        return 0.0
    have = set(re.findall(r"[a-z0-9_]{3,}", text.lower()))
    return sum(1 for w in words if w in have) / len(words)

"""Words as every search in Harvey reads them: one stopword list, one stem, one coverage.

Knowledge search, memory recall, the analysis finder and a constrained turn's search
words all leave the same words out of what they look for, count ``note`` and ``notes``
as one word, and build an FTS5 query the same safe way: a feature that read words its
own way would rank differently for no reason anyone chose.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    WORD.findall(
        """a an and are as at be but by can could do does doing did for from how i if in into is
        it its me my of on or so than that the their them then there these this those to was we
        were what when where which who why will with would you your should shall may might must
        get got make want need use using not have has had out our they"""
    )
)

#: The most words a query keeps (a pasted paragraph is not a query of 300 words).
MAX_QUERY_WORDS = 32


def words_of(text: str) -> list[str]:
    """The lowercased words of ``text``, in order."""
    return WORD.findall(text.lower())


def same_word(query_word: str, word: str) -> bool:
    """The word, or one sharing its stem roughly as the porter tokenizer would match it
    (``note``/``notes``, ``configure``/``configuration``): both of at least four letters,
    sharing all but the shorter one's last two."""
    if query_word == word:
        return True
    short = min(len(query_word), len(word))
    if short < 4:
        return False
    pairs = zip(query_word, word, strict=False)  # up to the shorter word
    shared = next((i for i, (a, b) in enumerate(pairs) if a != b), short)
    return shared >= max(4, short - 2)


_SUFFIXES = (
    "ational",
    "ization",
    "ations",
    "ation",
    "ments",
    "ment",
    "ings",
    "ing",
    "ness",
    "ies",
    "ied",
    "ers",
    "est",
    "ed",
    "es",
    "er",
    "ly",
    "s",
)


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A crude English stem for lexical ranking: ``compiles``/``compiled``/``compiling`` →
    ``compil``. Only the ranking sees it; what is quoted is always the source's words.
    Kept per word: a megabyte's 90,000 words are a few thousand distinct ones."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) >= 5 else word


def query_words(text: str, *, min_len: int = 1) -> list[str]:
    """The topical words of ``text``, unique, in order: no stopwords (unless nothing else
    is left), at least ``min_len`` letters, at most ``MAX_QUERY_WORDS``."""
    words = [w for w in dict.fromkeys(words_of(text)) if len(w) >= min_len]
    topical = [w for w in words if w not in STOPWORDS]
    return (topical or words)[:MAX_QUERY_WORDS]


def fts_terms(text: str) -> list[str]:
    """The query's words, each double-quoted (a safe FTS5 phrase), stopwords left out."""
    return [f'"{w}"' for w in query_words(text)]


def fts_query(text: str) -> str:
    """``text`` as a safe FTS5 query: each word quoted, joined by OR ("" when none), so no
    user text (hyphens, quotes, ``AND``, a lone ``*``) is FTS syntax."""
    return " OR ".join(fts_terms(text))


def _by_head(words: Iterable[str]) -> dict[str, list[str]]:
    heads: dict[str, list[str]] = {}
    for word in words:
        if len(word) >= 4:
            heads.setdefault(word[:4], []).append(word)
    return heads


def holds(term: str, words: set[str], heads: dict[str, list[str]]) -> bool:
    """Is ``term`` (or a word of its stem) among ``words`` (``heads``: ``index(words)``)?"""
    return term in words or any(same_word(term, w) for w in heads.get(term[:4], ()))


def index(text: str) -> tuple[set[str], dict[str, list[str]]]:
    """``text``'s words, and the same words by their first four letters: two words of one
    stem share those, so a term is compared only with the words that begin as it does."""
    words = set(words_of(text))
    return words, _by_head(words)


def coverage(query: Sequence[str], text: str) -> float:
    """The share of ``query``'s words found in ``text`` (0–1), a word matching its stem:
    a scale that does not depend on how many texts a store holds (BM25's does)."""
    if not query:
        return 0.0
    words, heads = index(text)
    return sum(1 for q in query if holds(q, words, heads)) / len(query)


__all__ = [
    "MAX_QUERY_WORDS",
    "STOPWORDS",
    "WORD",
    "coverage",
    "fts_query",
    "fts_terms",
    "holds",
    "index",
    "query_words",
    "same_word",
    "stem",
    "words_of",
]

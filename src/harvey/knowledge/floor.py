"""The absolute relevance floor: whether a passage is worth sending at all.

Fusion (``search.fuse``) scales BM25 and cosine to 0–1 within each query's own
candidates, so the best candidate of any query scores at least 0.5, even of
"zzqx qqxz" or "hello". That score orders passages; it cannot say whether any
of them is relevant. The floor does, from two scales that do not depend on the
other candidates:

* the embedder's cosine between the query and the chunk;
* BM25 on its own scale: the chunk's FTS5 BM25 as a share of the most BM25 the
  query's words could give (each word's IDF times ``k1 + 1``, FTS5's constants),
  so 1.0 would be every query word, each saturated; a chunk holding each word
  once, in a chunk of average length, scores about 0.45; a query word no chunk
  holds (gibberish, a place name) counts against every chunk as a rare word.

A chunk passes when its cosine is at least ``cosine`` and either its BM25 share
is at least ``bm25`` or its cosine alone is at least ``cosine_alone``. The cosine
is the chunk's own (the passage sent must itself be about the prompt); the BM25
share is its file's best among the candidates, as fusion pools a file's evidence,
since the words of a question are often spread over a file's passages (pooling
the cosine too lost 1.6 points of hit@5 on the benchmark, for no more silence).

*Words the store does not know.* In a store of at least ``MIN_VOCABULARY_CHUNKS``
chunks, whose words cover its subject, a prompt of which at least ``unknown_share`` of
the topical words are in no chunk at all ("sourdough", "calories", "iphone", "zzqx") is,
at least in part, about something else: its passages need a cosine of
``unknown_word_cosine``. A static embedder puts small talk and general knowledge close
to everything (every text sits in one narrow cone), so their cosines reach real
questions' levels; their words do not. On the benchmark's store (9,269 chunks) this
silences 27 of 30 unanswerable questions, against 25 without it, for no answerable one
lost, and it also silences more on the held-out lists and on the 10,182-chunk code
store without losing an answer there. In smaller stores everyday words are missing
("biggest" is in no chunk of a 2,257-chunk slice of the same docs), so there it lost
one answerable question of 29 for three more silenced: hence the size. A misspelt word
("confgure") is in no chunk either; one edit from a term the store holds, it counts as
known (``knowledge.vocabulary``), or every typo would read as another subject.

With the background levels set, a store of at least ``MIN_BACKGROUND_CHUNKS`` chunks
has a *background*: the direction of its mean chunk vector, which every text in it
shares (the mean chunk vector of the benchmark's store has length 0.65). Its cosines
are then read with that direction taken out of the query and the chunk
(``relative``), so a prompt that is "close to everything" no longer reaches real
questions' levels; those cosines have their own levels (``background_cosine``,
``background_cosine_alone``), and a prompt with any word the store does not know needs
a background cosine of ``unknown_word_cosine``. A smaller
store is floored on the plain cosine. Nothing is stored for the background
(``search.VectorIndex`` works it out from the vectors it loads anyway), so a store made
by any Harvey has one and it is never stale.

The background levels are 0 (not used) in every level a person can choose: chosen on
the benchmark's store's in-sample questions, they fit that store, and on stores they were
not tuned on they kept fewer answerable questions than the plain floor (``BENCHMARKS.md``).
``BACKGROUND`` keeps them for the benchmark.

A person chooses one of ``FLOORS`` (``rag.floor``): ``default``, the calibrated levels;
``strict``, the same levels with the unknown-word check made in a store of any size
(it silences more on small stores, for one or two answerable questions there); ``off``,
no floor. Below the floor, a passage whose fused score is under ``MIN_SCORE`` is dropped.

A store without an embedder, or with one other than the calibrated ``local``
(wordllama), is floored on the BM25 share alone. The defaults were calibrated by
``bench/bench_rag.py`` on its 61 answerable and 30 unanswerable questions and checked on
held-out ones (see ``BENCHMARKS.md``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# FTS5's bm25() constants (fts5_aux.c): k1 = 1.2, b = 0.75; an IDF at or under 0 is 1e-6.
K1 = 1.2
_MIN_IDF = 1e-6
# The embedder whose cosines the levels were calibrated on; other models' cosines are on
# other scales (an OpenAI model's related texts sit near 0.3, a nomic model's near 0.6),
# so their stores are floored on the BM25 share alone.
CALIBRATED_EMBEDDER = "local"
# Fewer chunks than this and the mean chunk vector is the store's own subject, not a
# background every text shares: taking it out would take out what the questions ask about.
MIN_BACKGROUND_CHUNKS = 100
# Fewer chunks than this and a store's words do not cover its own subject (everyday words
# are missing), so a word it lacks says little about the prompt (measured in BENCHMARKS.md).
MIN_VOCABULARY_CHUNKS = 5_000


@dataclass(frozen=True)
class Floor:
    """The levels a passage must reach (one of ``FLOORS``); the first three all 0 turns the
    floor off (the other levels only refine a floor that is on)."""

    cosine: float = 0.26
    bm25: float = 0.2
    cosine_alone: float = 0.38
    # off by default: they fit the store they were tuned on (BENCHMARKS.md)
    background_cosine: float = 0.0
    background_cosine_alone: float = 0.0
    # a prompt with at least this share of its words unknown to a large store needs this
    # cosine; either at 0 turns the check off
    unknown_word_cosine: float = 0.5
    unknown_share: float = 0.25
    # the store size from which the unknown-word check is made (a smaller store's words
    # do not cover its own subject)
    vocabulary_chunks: int = MIN_VOCABULARY_CHUNKS

    @property
    def off(self) -> bool:
        return self.cosine <= 0 and self.bm25 <= 0 and self.cosine_alone <= 0

    @property
    def uses_background(self) -> bool:
        """The background floor rests on ``background_cosine``: while it is 0 every store is
        floored on the plain cosine, whatever the other two background levels say (alone,
        they would judge a chunk against a floor of 0 and let almost anything through)."""
        return self.background_cosine > 0

    def off_subject(self, evidence: Evidence) -> bool:
        """The prompt holds words the store does not know, enough that ``evidence``'s
        cosine must reach ``unknown_word_cosine``, and it does not. The plain floor asks
        it of a store that knows its subject's words (``MIN_VOCABULARY_CHUNKS``) and a
        prompt at least ``unknown_share`` of whose words are unknown; the background
        floor, whose levels were chosen with it, of any unknown word."""
        cos = evidence.cosine
        if cos is None or self.unknown_share <= 0 or self.unknown_word_cosine <= 0:
            return False  # either level at 0: no such check
        if cos >= self.unknown_word_cosine:
            return False
        if evidence.background:
            return evidence.unknown_share > 0
        return evidence.vocabulary and evidence.unknown_share >= self.unknown_share


# The background levels the benchmark's in-sample grid chose (not a level a person picks).
BACKGROUND = Floor(background_cosine=0.29, background_cosine_alone=0.32)

#: The levels ``rag.floor`` names (``config.choices.RagFloor``), measured in BENCHMARKS.md.
FLOORS: dict[str, Floor] = {
    "default": Floor(),
    "strict": Floor(vocabulary_chunks=0),
    "off": Floor(0.0, 0.0, 0.0, unknown_word_cosine=0.0, unknown_share=0.0),
}
#: Passages whose fused score (0–1) is under this are dropped after the floor.
MIN_SCORE = 0.1


@dataclass(frozen=True)
class Evidence:
    """A chunk's absolute relevance: cosine (``None`` without an embedder) and BM25 share;
    ``background``: the cosine is read against the store's background (``relative``);
    ``unknown_share``: the share of the query's topical words that no chunk of that store
    holds; ``vocabulary``: the store has at least ``MIN_VOCABULARY_CHUNKS`` chunks."""

    cosine: float | None
    bm25: float
    background: bool = False
    unknown_share: float = 0.0
    vocabulary: bool = False


def idf(chunks: int, matching: int) -> float:
    """FTS5's IDF of a word ``matching`` of ``chunks`` chunks hold."""
    value = math.log((chunks - matching + 0.5) / (matching + 0.5))
    return value if value > 0 else _MIN_IDF


def bm25_ceiling(chunks: int, counts: Iterable[int]) -> float:
    """The most BM25 a chunk could score for a query whose words match ``counts`` chunks.

    A word no chunk holds weighs as one a single chunk holds: in a store of a few notes
    the IDF of an absent word is several times a present one's, and one everyday word
    missing ("how *often* should I...") would outweigh every word that matched."""
    return (K1 + 1) * sum(idf(chunks, max(1, n)) for n in counts)


def bm25_share(bm25: float, ceiling: float) -> float:
    """FTS5's BM25 (more negative is better) as a 0–1 share of ``ceiling``."""
    if ceiling <= 0:
        return 0.0
    return min(1.0, max(0.0, -bm25) / ceiling)


def admits(evidence: Evidence, floor: Floor) -> bool:
    """Whether a chunk with ``evidence`` is sent."""
    if floor.off:
        return True
    cos = evidence.cosine
    if cos is None:
        return evidence.bm25 >= floor.bm25
    if floor.off_subject(evidence):
        return False
    if not evidence.background:
        return cos >= floor.cosine and (evidence.bm25 >= floor.bm25 or cos >= floor.cosine_alone)
    return cos >= floor.background_cosine and (
        evidence.bm25 >= floor.bm25 or cos >= floor.background_cosine_alone
    )


def relative(cosine: float, query_along: float, chunk_along: float) -> float:
    """The cosine of a query and a chunk once the background direction is taken out of
    both: ``query_along`` and ``chunk_along`` are their cosines with that (unit) direction.

    With q = a·b + q' and c = d·b + c' (b the background, q' and c' orthogonal to it),
    q·c = a·d + q'·c', |q'| = √(1 − a²), |c'| = √(1 − d²)."""
    rest = math.sqrt(max(0.0, 1.0 - query_along**2) * max(0.0, 1.0 - chunk_along**2))
    if rest <= 1e-6:
        return 0.0  # all background: no subject of its own to compare
    return (cosine - query_along * chunk_along) / rest


def pooled(
    cosines: Mapping[int, float] | None,
    shares: Mapping[int, float],
    files: Mapping[int, str],
    *,
    background: bool = False,
    unknown_share: float = 0.0,
    vocabulary: bool = False,
) -> dict[int, Evidence]:
    """Each candidate's evidence: its own cosine (``None`` for a store floored on BM25
    alone; a chunk without a vector counts as -1; ``background``: read against the
    store's background) and its file's best BM25 share."""
    ids = set(shares) | set(cosines or {})
    best_bm25: dict[str, float] = {}
    for c in ids:
        f = files.get(c, f"#{c}")
        best_bm25[f] = max(best_bm25.get(f, 0.0), shares.get(c, 0.0))
    return {
        c: Evidence(
            cosines.get(c, -1.0) if cosines is not None else None,
            best_bm25[files.get(c, f"#{c}")],
            background and cosines is not None,
            unknown_share,
            vocabulary,
        )
        for c in ids
    }


def floored(
    ranked: list[tuple[int, float]], evidence: Mapping[int, Evidence], floor: Floor
) -> list[tuple[int, float]]:
    """The ranked candidates the floor admits, in the same order (fusion only orders);
    a candidate without evidence is not admitted unless the floor is off."""
    if floor.off:
        return list(ranked)
    return [(c, s) for c, s in ranked if c in evidence and admits(evidence[c], floor)]


def unknown_share(counts: list[int]) -> float:
    """The share of a query's words (``counts``: how many chunks hold each) no chunk holds."""
    return counts.count(0) / len(counts) if counts else 0.0

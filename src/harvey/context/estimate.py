"""A token estimate from character classes, when the backend cannot count.

Why not bytes: bytes per token varies far more than tokens per *piece*. A
BPE tokenizer first cuts text into pieces — a word with its leading space,
one digit, a run of punctuation, a newline with its indentation — and most
pieces are one token. Prose and plain code sit near 4 and 3.6 bytes/token,
but a table of hex numbers (``stringprep.py``) is 1.3, so a ratio safe for
the table over-counts the typical file by two thirds (BENCHMARKS.md). The
pieces of the table are digits, each one token, which a count of classes
sees and a count of bytes cannot.

``text_units`` is one linear pass with one regular expression: every match
is a piece of a class (short, medium or long word; a digit; a newline with
its indentation; a run of spaces; a run of punctuation; a run of non-ASCII
letters, by its bytes),
weighted by a per-``DocType`` coefficient — fitted once, by non-negative
least squares, against the embedded SmolLM2 tokenizer on the calibration
split of ``bench/corpora.py``. The result is scaled by ``UNITS_PER_TOKEN``
so it reads like bytes: 4 units per estimated token, the figure of the old
bytes heuristic, which keeps the uncalibrated ratio at 4 and lets the
per-model calibration (a low quantile of units/token, ``budget.py``) absorb
how a different tokenizer differs from SmolLM2's.

Safe by construction: non-negative weights (so the estimate never goes
negative), and never more units than ``UNITS_PER_TOKEN`` per UTF-8 byte (a
byte-level BPE never makes more tokens than bytes).
"""

from __future__ import annotations

import re
from functools import lru_cache

UNITS_PER_TOKEN = 4  # the scale: units read like bytes at the old 4 bytes/token heuristic

_PIECES = re.compile(
    r"(?P<short>[A-Za-z]{1,4}(?![A-Za-z]))"
    r"|(?P<medium>[A-Za-z]{5,8}(?![A-Za-z]))"
    r"|(?P<long>[A-Za-z]{9,})"
    r"|(?P<digit>[0-9])"
    r"|(?P<newline> ?\n[ \t]*)"
    r"|(?P<spaces>[ \t]{2,})"
    r"|(?P<space>[ \t])"
    r"|(?P<punct>[^\w\s]+|_+)"
    r"|(?P<wide>[^\W\x00-\x7f]+)"
    r"|(?P<other>.)",
    re.DOTALL,
)

# Tokens per piece of each class, per extra character (``long_chars``, ``punct_chars``)
# and per non-ASCII byte (``wide_bytes``), per DocType value.
# Fitted against SmolLM2's tokenizer on bench/corpora.py's calibration split (see the
# module docstring); a class a fit left at zero is one whose cost the others absorb;
# ``other`` (control characters and the like, too rare to fit) is one token each.
_WEIGHTS: dict[str, dict[str, float]] = {
    "prose": {
        "short": 1.023,
        "medium": 1.118,
        "long": 1.097,
        "long_chars": 0.246,
        "digit": 1.087,
        "newline": 0.221,
        "spaces": 0.445,
        "space": 0.0,
        "punct": 1.249,
        "punct_chars": 0.126,
        "wide": 2.45,
        "wide_bytes": 0.0,
        "other": 1.0,
    },
    "source": {
        "short": 0.3,
        "medium": 0.925,
        "long": 0.0,
        "long_chars": 0.465,
        "digit": 1.509,
        "newline": 0.759,
        "spaces": 2.658,
        "space": 0.426,
        "punct": 1.352,
        "punct_chars": 0.143,
        "wide": 0.035,
        "wide_bytes": 2.186,
        "other": 1.0,
    },
}


def piece_counts(text: str) -> dict[str, int]:
    """How many pieces of each class ``text`` holds, plus ``long_chars`` and
    ``punct_chars`` (characters beyond the first of long words and punctuation runs)
    and ``wide_bytes`` (the UTF-8 bytes of non-ASCII runs). For fitting and tests."""
    counts = dict.fromkeys(_PIECES.groupindex, 0)
    counts.update(long_chars=0, punct_chars=0, wide_bytes=0)
    for match in _PIECES.finditer(text):
        kind = match.lastgroup or "other"
        counts[kind] += 1
        if kind == "long":
            counts["long_chars"] += match.end() - match.start() - 8
        elif kind == "punct":
            counts["punct_chars"] += match.end() - match.start() - 1
        elif kind == "wide":
            counts["wide_bytes"] += len(match.group().encode("utf-8", "surrogatepass"))
    return counts


def piece_tokens(text: str, doc_type: str = "prose") -> float:
    """The weighted count of ``text``'s pieces, before scaling, rounding and the cap."""
    weights = _WEIGHTS.get(doc_type, _WEIGHTS["prose"])
    return sum(weights[kind] * n for kind, n in piece_counts(text).items())


CACHED_CHARS = 16_384  # longer texts are estimated afresh: the cache must not hold big texts


def text_units(text: str, doc_type: str = "prose") -> int:
    """``text``'s estimated tokens × ``UNITS_PER_TOKEN``, from its character classes.

    Cached for texts up to ``CACHED_CHARS``: a history is estimated every round
    and its messages do not change; a long text is not kept alive by the cache
    (a map prompt may be megabytes), and its pass is cheap next to its use.
    """
    if not text:
        return 0
    if len(text) <= CACHED_CHARS:
        return _cached_units(text, doc_type)
    return _units(text, doc_type)


@lru_cache(maxsize=1024)  # at most 1024 texts of CACHED_CHARS: a few MB
def _cached_units(text: str, doc_type: str) -> int:
    return _units(text, doc_type)


def _units(text: str, doc_type: str) -> int:
    size = len(text.encode("utf-8", "surrogatepass"))
    tokens = piece_tokens(text, doc_type)
    return max(1, min(UNITS_PER_TOKEN * size, round(UNITS_PER_TOKEN * tokens)))

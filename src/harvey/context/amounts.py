"""Amounts said to a person: a size in bytes as bytes, a token estimate as an estimate.

A file's size is known exactly and said in its unit ("5.0 MB"); its tokens are
estimated, and said so, rounded to what an estimate is worth ("about 1.3 million
tokens", "about 3,300 tokens") — never "approximately 5,242,880 tokens", which
reads as a count. ``above`` keeps a rounded estimate from reading as less than the
figure it is compared with ("about 3,000 tokens, more than 3,020" would contradict).
"""

from __future__ import annotations

_UNITS = (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024))


def size_text(size: int) -> str:
    """``size`` bytes in the largest unit that keeps it at least 1: ``"5.0 MB"``."""
    for unit, scale in _UNITS:
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size:,} byte{'' if size == 1 else 's'}"


def _two_figures(n: int) -> int:
    """``n`` rounded to two significant figures (below 100: as it is)."""
    if n < 100:
        return n
    step = 10 ** (len(str(n)) - 2)
    return (n + step // 2) // step * step


def tokens_text(tokens: int, above: int | None = None) -> str:
    """An estimate of ``tokens``, said as one: ``"about 1.3 million tokens"``; with
    ``above``, never a rounded figure at or below it (the exact one then)."""
    rounded = _two_figures(tokens)
    if above is not None and rounded <= above < tokens:
        return f"about {tokens:,} tokens"
    if rounded >= 1_000_000:
        return f"about {rounded / 1_000_000:.1f}".removesuffix(".0") + " million tokens"
    return f"about {rounded:,} tokens"


__all__ = ["size_text", "tokens_text"]

"""The character-class token estimate: cheap, never negative, additive within a piece."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.context.budget import estimate_tokens
from harvey.context.estimate import UNITS_PER_TOKEN, piece_counts, piece_tokens, text_units

TYPES = st.sampled_from(["prose", "source"])
TEXT = st.text(st.characters(exclude_categories=()), max_size=300)
# the most one piece weighs (source "spaces": 2.66 tokens), in units, for a seam's change
SEAM = 2 * 3 * UNITS_PER_TOKEN + 1


@given(TEXT, TYPES)
def test_never_negative_and_zero_only_for_nothing(text: str, doc_type: str) -> None:
    units = text_units(text, doc_type)
    assert units >= 0
    assert (units == 0) == (text == "")


@given(TEXT, TYPES)
def test_never_more_tokens_than_bytes(text: str, doc_type: str) -> None:
    # a byte-level BPE never makes more tokens than UTF-8 bytes: neither does the estimate
    size = len(text.encode("utf-8", "surrogatepass"))
    assert text_units(text, doc_type) <= UNITS_PER_TOKEN * size
    assert estimate_tokens(text, UNITS_PER_TOKEN, doc_type) <= size


@given(TEXT, TEXT, TYPES)
def test_concatenation_is_additive_up_to_the_seam(a: str, b: str, doc_type: str) -> None:
    # joining two texts changes only the pieces at the seam (a word continued, a space run)
    joined, parts = text_units(a + b, doc_type), text_units(a, doc_type) + text_units(b, doc_type)
    assert joined >= parts - SEAM
    # the cap (one token a byte) binds per text, so the upper bound is on the uncapped counts
    raw = UNITS_PER_TOKEN * (piece_tokens(a, doc_type) + piece_tokens(b, doc_type))
    assert joined <= raw + SEAM


@given(st.text(min_size=1, max_size=200), TYPES, st.integers(2, 6))
def test_repeating_a_text_never_lowers_the_estimate(text: str, doc_type: str, k: int) -> None:
    assert text_units(text * k, doc_type) >= text_units(text, doc_type)


@given(st.floats(1.0, 8.0), st.floats(1.0, 8.0), TEXT)
def test_a_lower_ratio_never_estimates_fewer_tokens(r1: float, r2: float, text: str) -> None:
    low, high = sorted((r1, r2))
    assert estimate_tokens(text, low) >= estimate_tokens(text, high)


@pytest.mark.parametrize("doc_type", ["prose", "source"])
def test_a_digit_is_a_token_whatever_its_bytes(doc_type: str) -> None:
    # the failure of bytes/token: a table of numbers is one token per digit, not per 4 bytes
    table = "0x1F600, 0x1F601, 0x1F602,\n" * 100
    assert estimate_tokens(table, UNITS_PER_TOKEN, doc_type) > len(table) / 2


def test_indentation_is_one_piece_however_deep() -> None:
    shallow = piece_counts("def f():\n    return 1\n")
    deep = piece_counts("def f():\n" + " " * 24 + "return 1\n")
    assert shallow == deep
    assert text_units("x\n" + " " * 64 + "y", "source") == text_units("x\n y", "source")


def test_code_and_prose_weigh_differently() -> None:
    code = "    def __init__(self, a, b):\n        self._a = a\n        self._b = b\n" * 20
    assert text_units(code, "source") != text_units(code, "prose")


def test_a_long_text_is_estimated_but_not_kept_by_the_cache() -> None:
    from harvey.context import estimate

    before = estimate._cached_units.cache_info().currsize
    big = "a map prompt of a large file " * 40_000  # over a megabyte
    assert text_units(big) == text_units(big) > 0
    assert estimate._cached_units.cache_info().currsize == before

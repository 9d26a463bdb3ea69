"""The verifier: a quote from the chunk always verifies, a changed one never does; and a
verified quote is located in its file, down to the page of a PDF."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harvey.analysis.matching import normalise
from harvey.analysis.quotes import MIN_QUOTE_CHARS, Location, Locator, verify

WORDS = [
    "harbour",
    "dam",
    "reservoir",
    "opened",
    "council",
    "engineer",
    "water",
    "pump",
    "ledger",
    "valve",
    "brick",
]
SPACES = st.sampled_from([" ", "  ", "\n", " \n  ", "\t"])


@st.composite
def texts(draw: st.DrawFn) -> tuple[list[str], str]:
    """A chunk as words joined by arbitrary whitespace (the words kept for slicing)."""
    words = draw(st.lists(st.sampled_from(WORDS), min_size=4, max_size=60))
    text = ""
    for word in words:
        text += word + draw(SPACES)
    return words, text


@settings(max_examples=200, deadline=None)
@given(texts(), st.data())
def test_a_quote_taken_from_the_chunk_always_verifies(
    chunk: tuple[list[str], str], data: st.DataObject
) -> None:
    words, text = chunk
    a = data.draw(st.integers(0, len(words) - 1))
    b = data.draw(st.integers(a + 1, len(words)))
    quote = " ".join(words[a:b])
    assume(len(quote) >= MIN_QUOTE_CHARS)
    found = verify(quote, text)
    assert found is not None
    assert text[found.start : found.end] == found.text
    assert normalise(found.text) == normalise(quote)


@settings(max_examples=200, deadline=None)
@given(texts(), st.data())
def test_a_quote_with_one_changed_word_never_verifies(
    chunk: tuple[list[str], str], data: st.DataObject
) -> None:
    words, text = chunk
    a = data.draw(st.integers(0, len(words) - 1))
    b = data.draw(st.integers(a + 1, len(words)))
    changed = list(words[a:b])
    k = data.draw(st.integers(0, len(changed) - 1))
    changed[k] = data.draw(st.sampled_from(["cistern", "aqueduct", "sluice", "1902"]))
    assert verify(" ".join(changed), text) is None


def test_the_tolerances_and_nothing_more() -> None:
    text = "He said \u201ca halfpenny a bucket\u201d \u2014 twice.\nThe  LEDGER was rebound\u2026 in 1901."
    assert verify('"A halfpenny a bucket" - twice', text) is not None  # quotes, dash, case
    assert verify("the ledger was rebound... in 1901", text) is not None  # … and spaces
    found = verify("the ledger was rebound... in 1901", text)
    assert found is not None and found.text.endswith("1901.")  # its own full stop kept
    assert verify("halfpenny a buck", text) is None  # no part of a word
    assert verify("the ledger was rebound in 1901", text) is None  # no skipped words
    assert verify("ledger", text) is None  # too short to prove anything
    assert verify("So the water was cold today", "So the wa\u00adter was cold today.") is not None


def test_a_quote_is_located_on_its_lines_and_a_pdf_on_its_pages() -> None:
    text = "one\ntwo\nthree four five six\nseven eight nine ten\n"
    found = verify("four five six seven eight", text)
    assert found is not None
    located = Locator("notes.md", text, start_line=10).locate(found.start, found.end)
    assert located == Location("notes.md", 12, 13)
    assert located.cite() == "notes.md:L12-13"
    # a PDF's chunk starting at offset 100 of its text, whose page 2 starts at offset 108
    pdf = Locator("report.pdf", text, start_line=5, offset=100, page_starts=(0, 108, 200))
    assert pdf.locate(found.start, found.end).cite() == "report.pdf:p2"
    assert pdf.locate(0, 12).cite() == "report.pdf:p1-2"
    assert Location("a.md", 7, 7).cite() == "a.md:L7"

"""A chunk cut into the smallest pieces a claim can rest on: sentences and lines.

Evidence is quoted by the unit: a sentence of prose, a line of a list, a
changelog, a table or code. Wrapped prose (a man page, a changelog entry's
continuation lines, an RFC) is joined across its line breaks before it is cut at
sentence ends, so a sentence that spans three lines is one unit; a line that
starts a list item, a heading, a definition or code starts a unit of its own.
Every unit keeps ``text[start:end]`` exact, so a quote made of units is the
source's own words, and a unit's place is its place in the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A unit longer than this is cut at its sentence ends, else at a space (a minified file).
MAX_UNIT_CHARS = 600

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]\u201d\u2019]*\s+(?=[\"'(\[\u201c\u2018]?[A-Z0-9])")


def _split(text: str) -> list[str]:
    return text.split()


_ABBREVIATIONS = frozenset(
    _split(
        "st mr mrs ms dr prof rev sr jr mt ft no nos vol vols fig figs pp p ch sec art co ltd inc "
        "corp bros dept est approx ca cf vs etc e.g i.e al viz gen col capt lt sgt hon"
    )
)
_WORD_BEFORE = re.compile(r"([\w.]+)[.!?][\"')\]\u201d\u2019]*$")
_ITEM = re.compile(
    r"^\s*(?:[-*+\u2022]\s|\d+[.)]\s|[a-z][.)]\s|#{1,6}\s|--\s|\.\.\s|"
    r":\w[\w -]*:(?!`)|"  # a field list's ":param x:", not a role's ":exc:`...`" mid-sentence
    r"[|>]|=+$|-+$|~+$|\w[\w.-]*\s*\(|[A-Z][A-Z0-9 _-]{2,}$)"
)


@dataclass(frozen=True)
class Unit:
    """One sentence or line: ``chunk_text[start:end] == text``; ``heading`` when it heads
    a section (a Markdown ``#`` line, an underlined reStructuredText title, or a short
    line standing alone between blank lines: ``  0. Definitions.``, ``OPTIONS``)."""

    start: int
    end: int
    text: str
    heading: bool = False


_RULE = re.compile(r"^\s*([=\-~*^#+])\1{2,}\s*$")
_TITLE = re.compile(r"^\s*(?:#{1,6}\s+\S|(?:\d+(?:\.\d+)*\.?\s+)?[A-Z0-9][^\n]{0,78}$)")


def _standalone(text: str, start: int, end: int) -> bool:
    """A one-line block between blank lines (or the text's edges) that reads as a title."""
    line = text[start:end]
    if "\n" in line or len(line.strip()) > 80 or line.rstrip().endswith((",", ";", ":")):
        return False
    before = text[max(0, start - 2) : start]
    after = text[end : end + 2]
    alone = (start == 0 or before.endswith("\n\n") or before == "\n") and (
        end >= len(text) or after.startswith("\n\n") or after == "\n"
    )
    return alone and bool(_TITLE.match(line)) and len(line.split()) <= 12


def _is_heading(text: str, start: int, end: int, next_line: str) -> bool:
    line = text[start:end].strip()
    if line.startswith("#") and line.lstrip("#").startswith(" "):
        return True
    if _RULE.match(next_line) and 0 < len(line) <= len(next_line.strip()) + 2:
        return True
    return _standalone(text, start, end)


def _lines(text: str) -> list[tuple[int, int]]:
    spans = []
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        spans.append((pos, pos + len(body)))
        pos += len(line)
    return spans


def _continues(previous: str, line: str, source: bool) -> bool:
    """Does ``line`` carry on the sentence of ``previous`` (wrapped prose)?"""
    if source or not previous.strip() or not line.strip() or _ITEM.match(line):
        return False
    last = previous.rstrip()
    if last.endswith((":", "::")) and line.startswith((" ", "\t")) != previous.startswith(
        (" ", "\t")
    ):
        return False
    indent_prev = len(previous) - len(previous.lstrip())
    indent = len(line) - len(line.lstrip())
    # wrapped text keeps its indent (or a list item's hanging indent); code-like lines do not
    return abs(indent - indent_prev) <= 8 and len(last) >= 30


def _blocks(text: str, source: bool) -> list[tuple[int, int]]:
    """Runs of lines that read as one piece of text (wrapped prose), or single lines."""
    blocks: list[tuple[int, int]] = []
    previous = ""
    for start, end in _lines(text):
        line = text[start:end]
        if not line.strip():
            previous = ""
            continue
        if blocks and previous and _continues(previous, line, source):
            blocks[-1] = (blocks[-1][0], end)
        else:
            blocks.append((start, end))
        previous = line
    return blocks


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    cut = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if _abbreviation(text, max(cut, match.start() - 24), match.start()):
            continue
        spans.append((cut, match.start()))
        cut = match.end()
    spans.append((cut, end))
    out: list[tuple[int, int]] = []
    for a, b in spans:
        while b - a > MAX_UNIT_CHARS:  # no sentence end: cut at the last space that fits
            space = text.rfind(" ", a, a + MAX_UNIT_CHARS)
            cut_at = space if space > a else a + MAX_UNIT_CHARS
            out.append((a, cut_at))
            a = cut_at
        out.append((a, b))
    return out


def _abbreviation(text: str, start: int, end: int) -> bool:
    """Does the period before ``end`` end an abbreviation ("St.", "Dr.", "e.g.") or an
    initial ("J. Smith") rather than a sentence?"""
    found = _WORD_BEFORE.search(text, start, end)
    if found is None:
        return False
    word = found.group(1)
    return word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper())


def _next_line(text: str, end: int) -> str:
    start = text.find("\n", end)
    if start < 0:
        return ""
    stop = text.find("\n", start + 1)
    return text[start + 1 : stop if stop >= 0 else len(text)]


def split_units(text: str, *, source: bool = False) -> list[Unit]:
    """The units of ``text`` in order (``source``: code, a line each), none blank."""
    units: list[Unit] = []
    for block_start, block_end in _blocks(text, source):
        if not source and _is_heading(text, block_start, block_end, _next_line(text, block_end)):
            body = text[block_start:block_end].strip()
            offset = block_start + text[block_start:block_end].index(body)
            units.append(Unit(offset, offset + len(body), body, heading=True))
            continue
        pieces = [(block_start, block_end)] if source else _sentences(text, block_start, block_end)
        for a, b in pieces:
            while a < b and text[a].isspace():
                a += 1
            while b > a and text[b - 1].isspace():
                b -= 1
            if b > a and any(c.isalnum() for c in text[a:b]):
                units.append(Unit(a, b, text[a:b]))
    return units


__all__ = ["MAX_UNIT_CHARS", "Unit", "split_units"]

"""Where a chunk may end and where the next one starts: the cut rules of ``chunking.py``.

The rules themselves are described in ``chunking.py``'s docstring; this module
holds their byte-level patterns and ``Cutter``, which applies them to one
document (``chunking.chunk_document``) or to a sliding window of a stream
(``stream_chunking.py``). It knows bytes and a size, not documents, so both
callers share it without importing each other.
"""

from __future__ import annotations

import re
from bisect import bisect_right

# --- boundary patterns (on bytes) ------------------------------------------------------------

_SPACE = rb"[ \t\r\f\v]"
# A paragraph break is a blank line: empty, or holding only whitespace, followed by a
# non-blank line; the cut lands at the start of the paragraph. Empty lines are found with
# ``bytes.find``/``rfind`` (C speed, no match objects); whitespace-only ones are rare, so
# one ``_SPACED_BLANK`` search rules them out before ``_PARA_FULL`` rescans a stretch.
# Headings and definition starts are recognised after an empty line only: a
# whitespace-only line before them still counts as a paragraph break.
_PARA_FULL = re.compile(rb"\n" + _SPACE + rb"*\n(?!" + _SPACE + rb"*(?:\n|\Z))")
_SPACED_BLANK = re.compile(rb"\n" + _SPACE + rb"+\n")
_BLANK_AHEAD = re.compile(_SPACE + rb"*(?:\n|\Z)")
_BLANK_BYTES = frozenset(b" \t\r\f\v\n")  # what a blank line may start with
# A heading: an ATX line (``# Title``; the boundary is the line start), or, after a blank
# line, a title underlined (maybe also overlined) by a run of one punctuation character
# (setext/reStructuredText; the boundary is group ``t``).
_RULE = rb"(?P<%s>[=\-~^*+#\"'`:.])(?P=%s){2,}[ \t\r]*"
_SETEXT = re.compile(
    rb"\n\n(?P<t>(?P<o>" + _RULE % (b"oc", b"oc") + rb"\n)?"
    rb"[ \t]*[^\s][^\n]*\n" + _RULE % (b"uc", b"uc") + rb"(?:\n|\Z))"
)
# A line that may underline a title, or an ATX heading: the candidates ``_last_heading`` checks.
_HEAD_CANDIDATE = re.compile(
    rb"\n(?:(?P<rule>([=\-~^*+#\"'`:.])\2{2,}[ \t\r]*(?:\n|\Z))|(?P<atx>#{1,6}[ \t]))"
)
# Source: after a blank line, (1) a top-level definition — a keyword line at column 0, with
# its decorators and the comment lines directly above it; (2) the same indented (a method);
# (3) any line that starts flush with neither } nor ) (the seed's heuristic).
_DEF_WORD = (
    rb"(?=[a-z@#])(?:(?:async|export|pub(?:\([^)\n]*\))?|public|private|protected|static|final|abstract"
    rb"|inline|unsafe|default)[ \t]+)*"
    rb"(?:def|class|func|fn|function|impl|struct|enum|trait|interface|type|module|namespace"
    rb"|object|record|union|template|macro_rules!|sub|proc)\b|@[A-Za-z_]|#\["
)
_COMMENT = rb"(?:#(?!\[)|//|/\*|\*|--|;)[^\n]*\n"
_TOP = re.compile(rb"(?:" + _COMMENT + rb")*(?:" + _DEF_WORD + rb")")
_INNER = re.compile(rb"[ \t]+(?:" + _COMMENT + rb"[ \t]+)*(?:" + _DEF_WORD + rb")")
# First bytes: of an indented line; of a top-level definition or its comments; of a line
# that is neither flush text nor a definition (whitespace, closing brackets).
_INDENT = frozenset(b" \t")
_TOP_FIRST = frozenset(b"abcdefghijklmnopqrstuvwxyz@#/*-;")
_NOT_FLUSH = frozenset(b" \t\r\n\f\v})]")
# A sentence ends at . ! or ?, maybe closed by quotes or brackets (curly ones too), then
# whitespace; the boundary is the start of the next sentence.
_CLOSERS = rb"[\"')\]\x99\x9d\x80\xe2]"
_SENTENCE = re.compile(rb"[.!?]" + _CLOSERS + rb"*\s+")
# The same, one pattern per terminator: a pattern that starts with a literal byte is
# searched several times faster than one that starts with a class. No match can hold a
# second terminator, so the three sets of matches together are exactly ``_SENTENCE``'s.
_SENTENCE_BY_END = tuple(
    (t, re.compile(re.escape(t) + _CLOSERS + rb"*\s+")) for t in (b".", b"!", b"?")
)
# Bytes a match may span before its boundary: a search for boundaries ≥ pos starts before them.
_BACKUP = frozenset(b" \t\r\n\f\v\"')].!?\xe2\x80\x99\x9d")
# How far past a window's end a search may read (lookaheads, a title's underline).
_LOOKAHEAD = 1024
# ``_SENTENCE`` ends with a greedy ``\s+`` and looks no further: a search that may read one
# byte past ``hi`` sees whether a match ends by ``hi`` (a run cut at the search's end ends
# past ``hi``), and the bytes it would read beyond are often a kilobyte of code with no
# sentence in it.
_SENTENCE_AHEAD = 1
_HEADING_LOOKAHEAD = 256  # a title plus its underline; comments above a definition
_TAIL = 512
# A top-level definition ends a chunk once the chunk holds 1/_TOP_FRACTION of the target.
_TOP_FRACTION = 12
_HEADING_BLOCK = 2048
# Every byte that may make up an underline, mapped to ``=`` (see ``_last_heading``).
_RULE_BYTES = b"=-~^*+#\"'`:."
_RULE_MAP = bytes.maketrans(_RULE_BYTES, b"=" * len(_RULE_BYTES))


def _search_start(data: bytes, pos: int) -> int:
    """An earliest start for a search whose matches must *end* at ≥ ``pos``.

    Every pattern here matches only whitespace, closers and terminators before
    its boundary, so backing over a run of those (plus one byte) is enough.
    """
    i = pos - 1
    while i > 0 and data[i - 1] in _BACKUP:
        i -= 1
    return max(0, i)


def _first_end(
    pattern: re.Pattern[bytes], data: bytes, lo: int, hi: int, ahead: int = _LOOKAHEAD
) -> int:
    """The smallest boundary (match end) in ``[lo, hi]``, or -1.

    The search reads ``ahead`` bytes past ``hi`` (see ``_SENTENCE_AHEAD``).
    """
    for m in pattern.finditer(data, _search_start(data, lo), hi + ahead):
        e = m.end()
        if e >= lo:
            return e if e <= hi else -1
    return -1


def _last_end(
    pattern: re.Pattern[bytes], data: bytes, lo: int, hi: int, ahead: int = _LOOKAHEAD
) -> int:
    """The largest boundary (match end) in ``[lo, hi]``, or -1.

    Scans a short tail of the range first: the last boundary is usually near
    the end, so most calls read a few hundred bytes, not a whole chunk.
    """
    cut = max(lo, hi - _TAIL)
    while True:
        best = -1
        for m in pattern.finditer(data, _search_start(data, cut), hi + ahead):
            e = m.end()
            if e > hi:
                break
            if e >= cut:
                best = e
        if best >= 0 or cut <= lo:
            return best
        cut, hi = lo, cut - 1


def _blank_at(data: bytes, i: int) -> bool:
    """True when the line starting at ``i`` is blank (or the text ends there).

    The first byte settles almost every case without a regex call.
    """
    return i >= len(data) or (data[i] in _BLANK_BYTES and _BLANK_AHEAD.match(data, i) is not None)


def _first_sentence(data: bytes, lo: int, hi: int) -> int:
    """The smallest sentence boundary in ``[lo, hi]``, or -1 (``_first_end`` of ``_SENTENCE``).

    Searches per terminator, each only up to the best boundary found so far;
    ``bytes.find`` (``memchr``) skips the search for a terminator absent from
    the range. With the search ending at ``limit``, a match that ends before
    ``limit`` is exact (see ``_SENTENCE_AHEAD``).
    """
    start = _search_start(data, lo)
    best, limit = -1, hi + _SENTENCE_AHEAD
    for t, pattern in _SENTENCE_BY_END:
        if data.find(t, start, limit) < 0:
            continue
        for m in pattern.finditer(data, start, limit):
            e = m.end()
            if e >= lo:
                if e < limit and (best < 0 or e < best) and e <= hi:
                    best = limit = e
                break
    return best


def _last_empty(data: bytes, lo: int, hi: int) -> int:
    """The largest boundary in ``[lo, hi]`` after an *empty* line, or -1 (``bytes.rfind``)."""
    start = max(0, lo - 2)
    p = data.rfind(b"\n\n", start, hi)
    while p >= 0 and _blank_at(data, p + 2):
        p = data.rfind(b"\n\n", start, p + 1)  # the next line is blank too: look earlier
    return p + 2 if p >= 0 else -1


def _first_empty(data: bytes, lo: int, hi: int) -> int:
    """The smallest boundary in ``[lo, hi]`` after an *empty* line, or -1 (``bytes.find``)."""
    p = data.find(b"\n\n", max(0, lo - 2), hi)
    while p >= 0 and _blank_at(data, p + 2):
        p = data.find(b"\n\n", p + 1, hi)
    return p + 2 if p >= 0 else -1


def _no_spaced_blank(data: bytes, lo: int, hi: int) -> bool:
    """True when no whitespace-only (non-empty) blank line can end in ``[lo, hi]``.

    Such lines are rare; one C-level search rules them out, and only when one
    is there is the full paragraph pattern rescanned.
    """
    return _SPACED_BLANK.search(data, _search_start(data, lo), hi) is None


def _last_para(data: bytes, lo: int, hi: int) -> int:
    """The largest paragraph boundary in ``[lo, hi]``, or -1.

    Empty lines are found at C speed; only the stretch after the last of them
    (the last paragraph: what the overlap repeats) is rescanned for
    whitespace-only blank lines. That stretch starts on a non-blank line, so
    no such line can straddle its start and the search needs no backing up.
    """
    e = _last_empty(data, lo, hi)
    if e < 0:
        if _no_spaced_blank(data, lo, hi):
            return e
    elif e == hi or _SPACED_BLANK.search(data, e, hi) is None:
        return e
    return max(e, _last_end(_PARA_FULL, data, max(lo, e + 1), hi))


def _first_para(data: bytes, lo: int, hi: int) -> int:
    """The smallest paragraph boundary in ``[lo, hi]``, or -1."""
    e = _first_empty(data, lo, hi)
    hi = e - 1 if e > 0 else hi
    if e == lo or _no_spaced_blank(data, lo, hi):
        return e
    first = _first_end(_PARA_FULL, data, lo, hi)
    return first if first > 0 else e


def _setext_start(data: bytes, rule: int) -> int:
    """The title start of a setext/reST heading underlined by the line at ``rule``, or -1.

    The title (maybe overlined) must follow an empty line; an overline must
    repeat the underline. Checked with the full ``_SETEXT`` pattern at the
    only two places such a match can begin.
    """
    title = data.rfind(b"\n", 0, rule - 1) + 1
    if title < 2:
        return -1
    over = data.rfind(b"\n", 0, title - 1) + 1
    for at in (over - 2, title - 2):
        if at < 0 or data[at : at + 2] != b"\n\n":
            continue
        m = _SETEXT.match(data, at)
        if m is None or m.start("uc") != rule:
            continue
        if m.start("o") >= 0 and (
            data[m.start("o") : m.end("oc") + 1].rstrip() != data[m.start("uc") : m.end()].rstrip()
        ):
            return -1  # an overline that differs from the underline: not a title
        return m.start("t")
    return -1


def _last_heading(data: bytes, lo: int, hi: int) -> int:
    """The largest heading start in ``[lo, hi]``, or -1.

    ATX headings (``# Title``) are found from the ``#`` bytes (``memrchr``:
    there are few in prose). A title's underline is a line of three or more
    punctuation bytes: mapping every such byte to ``=`` (``bytes.translate``)
    turns the search for candidate underlines into one ``rfind`` of
    ``\n===``, several times faster than a regex over every line. The rare
    candidates are checked one by one, from the end, in blocks: a later
    underline belongs to a later title, so the first heading found is the
    last one.
    """
    # A title starting by ``hi`` has its underline at most two lines further on.
    stop = end = hi + _HEADING_LOOKAHEAD
    nl = data.find(b"\n", hi, end)
    if nl >= 0:
        nl = data.find(b"\n", nl + 1, end)
        if nl >= 0:
            stop = nl + 2
    best = -1
    q = data.rfind(b"#", lo, hi + 1)
    while q > 0:
        if data[q - 1] == 10:
            m = _HEAD_CANDIDATE.match(data, q - 1)
            if m is not None and m.lastgroup == "atx":
                best = q
                break
        q = data.rfind(b"#", lo, q)
    # Underlines start in (floor, stop): a title starts before its underline.
    floor = max(lo, best)
    while stop > floor + 1:
        begin = max(floor + 1, stop - _HEADING_BLOCK)
        window = data[begin - 1 : stop + 3].translate(_RULE_MAP)
        j = window.rfind(b"\n===", 0, stop - begin + 3)  # an underline at begin + j < stop
        while j >= 0:
            rule = begin + j
            m = _HEAD_CANDIDATE.match(data, rule - 1)
            if m is not None and m.lastgroup == "rule":
                t = _setext_start(data, rule)
                if t >= 0:
                    if t < lo or t <= best:
                        return best  # every earlier title starts earlier still
                    if t <= hi:
                        return t
            j = window.rfind(b"\n===", 0, j + 3)
        stop = begin
    return best


def _last_char_before(data: bytes, chars: bytes, lo: int, hi: int) -> int:
    """The largest boundary in ``[lo, hi]`` just after one of ``chars``, or -1."""
    best = max(data.rfind(c, lo - 1, hi) for c in (chars[i : i + 1] for i in range(len(chars))))
    return best + 1 if best >= lo - 1 else -1


Defs = tuple[list[int], list[int]]  # definition starts: (top-level, all)


class Cutter:
    """The cut-point rules for one document (bytes, chunk size, prose or source, def starts)."""

    def __init__(self, data: bytes, size: int, prose: bool, defs: Defs | None):
        self.data = data
        self.size = size
        self.prose = prose
        self.defs = defs  # (top-level, all) definition starts from tree-sitter, or None

    def _source_preferred(self, cb: int, s: int, hi: int) -> int:
        """A definition start: top-level past a twelfth of the chunk, else nested or any
        flush line past half; the last of the best kind found."""
        early, half = max(s + 1, cb + self.size // _TOP_FRACTION), max(s + 1, cb + self.size // 2)
        if self.defs is not None:
            for starts, lo in zip(self.defs, (early, half), strict=True):
                k = bisect_right(starts, hi) - 1
                if k >= 0 and starts[k] >= lo:
                    return starts[k]
            return -1
        # Walk the empty lines back from the window's end: the first top-level
        # definition met is the last one, and usually near the end. The first byte
        # of the line decides which pattern can apply, so most lines cost no match.
        data = self.data
        inner = flush = -1
        start = max(0, early - 2)
        p = data.rfind(b"\n\n", start, hi)
        while p >= 0:
            b = p + 2
            c = data[b] if b < len(data) else 10
            if c in _INDENT:
                if inner < 0 and b >= half and _INNER.match(data, b) is not None:
                    inner = b
            elif c in _TOP_FIRST and _TOP.match(data, b) is not None:
                return b
            elif flush < 0 and b >= half and c not in _NOT_FLUSH:
                flush = b
            p = data.rfind(b"\n\n", start, p + 1)
        return inner if inner >= 0 else flush

    def end(self, cb: int, s: int, hi: int) -> int:
        """Where the chunk starting at ``cb`` (new text from ``s``) ends, given end ≤ ``hi``.

        A smaller unit is tried only when the larger one cannot end the chunk at
        half the target or more, so fallbacks never leave tiny chunks.
        """
        data, size = self.data, self.size
        half = max(s + 1, cb + size // 2)
        e = _last_heading(data, half, hi) if self.prose else self._source_preferred(cb, s, hi)
        if e > 0:
            return e
        e = _first_para(data, max(s + 1, cb + (3 * size + 3) // 4), hi)
        if e > 0:
            return e
        e = _last_para(data, half, hi)
        if e > 0:
            return e
        if self.prose:
            e = _last_end(_SENTENCE, data, half, hi, _SENTENCE_AHEAD)
            if e > 0:
                return e
        e = _last_char_before(data, b"\n", half, hi)
        if e > 0:
            return e
        e = _last_char_before(data, b" \t", half, hi)
        if e > 0:
            return e
        e = hi
        while e > s + 1 and (data[e] & 0xC0) == 0x80:  # never inside a character
            e -= 1
        return e

    def overlap_start(self, cb: int, e: int, mode: str) -> int:
        """Where chunk N+1 starts given chunk N = ``[cb, e)``; ``e`` means no overlap."""
        if mode == "none":
            return e
        # Strictly after ``cb``: an overlap that began at N's start would repeat N whole.
        lo = max(cb + 1, e - self.size // 4)
        if mode == "paragraph":
            # The last paragraph of chunk N starts at its last paragraph boundary,
            # or at ``cb`` when there is none inside the chunk. The common case
            # inlines ``_last_para``: one ``rfind`` for the last empty line, then a
            # check of the last paragraph alone for whitespace-only lines — work
            # in proportion to the overlap, not to the chunk.
            data, first_ok, hi = self.data, lo, e - 1
            start = max(0, first_ok - 2)
            p = data.rfind(b"\n\n", start, hi)
            while p >= 0 and data[p + 2] == 10:  # blank lines before a title: look earlier
                p = data.rfind(b"\n\n", start, p + 1)
            if p >= 0:
                b = p + 2  # b <= hi < len(data)
                if (data[b] not in _BLANK_BYTES or _BLANK_AHEAD.match(data, b) is None) and (
                    _SPACED_BLANK.search(data, b, hi) is None
                ):
                    return b
                last = _last_para(data, first_ok, hi)
            elif _no_spaced_blank(data, first_ok, hi):
                last = -1  # not a blank line in the last quarter (no empty one: see above)
            else:
                last = _last_end(_PARA_FULL, data, first_ok, hi)
            if last > 0:
                return last
            first = -1  # no paragraph starts in [lo, e): the sentences decide
        else:
            first = _first_para(self.data, lo, e - 1)
        # Sentence starts, counting paragraph starts as ones.
        sent = _first_sentence(self.data, lo, e - 1)
        starts = [x for x in (sent, first) if x >= 0]
        return min(starts) if starts else e

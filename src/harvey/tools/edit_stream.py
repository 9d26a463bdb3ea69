"""The streaming matcher behind ``edit_file``: find and replace in a file of any size.

A file is read in blocks of decoded text and never held whole: ``Replacer`` keeps
only the last ``len(needle) - 1`` characters of one block to meet an occurrence
split across two, so a 500 MB file is searched in the memory of one block. The
same pass that writes is the one that counted, so what is written is exactly
``str.replace`` on the whole text (``tests/tools/test_edit_stream.py`` checks it
for random texts and block sizes) and ``Replacer`` also remembers where each
occurrence is (line numbers) and a few lines around the first ones, which is
what the person approving the edit sees.

When the exact text is not there, ``LineScan`` looks again line by line: the
same lines with other indentation or trailing blanks are a *whitespace* match
(applied when there is exactly one), and otherwise the window of lines that
shares most lines with the one asked for is the *closest* text, quoted in the
error so the model can correct itself instead of reading the whole file.
"""

from __future__ import annotations

import codecs
import difflib
import hashlib
import re
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import IO

BLOCK_BYTES = 1 << 20
#: Lines of context shown around a change, and at most this many changes shown.
CONTEXT = 3
MAX_SHOWN = 5
#: Line numbers listed for an ambiguous match.
MAX_LISTED = 20
#: Characters kept of the text before a match, and collected after it, for the preview.
_RECENT = 2000
#: A whitespace match's lines are compared at most this long (longer ones never match).
_MAX_VOTES = 100_000
_WORD = re.compile(r"\w+")


def detect_encoding(head: bytes) -> str:
    """``utf-8-sig`` for a UTF-8 file with a BOM (kept on write), else ``utf-8``;
    a file that is not valid UTF-8 is re-read as ``latin-1`` by the caller."""
    return "utf-8-sig" if head.startswith(codecs.BOM_UTF8) else "utf-8"


def text_blocks(
    handle: IO[bytes], encoding: str, block: int | None = None, digest: Hashed | None = None
) -> Iterator[str]:
    """The file's text, block by block (``BLOCK_BYTES``), decoded strictly (line endings
    untouched)."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
    while data := handle.read(block or BLOCK_BYTES):
        if digest is not None:
            digest.update(data)
        text = decoder.decode(data)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


@dataclass
class Hashed:
    """The SHA-256 and size of the bytes read, to tell whether the file changed since."""

    sha: hashlib._Hash = field(default_factory=hashlib.sha256)
    size: int = 0

    def update(self, data: bytes) -> None:
        self.sha.update(data)
        self.size += len(data)

    def hexdigest(self) -> str:
        return self.sha.hexdigest()


@dataclass(frozen=True)
class Hunk:
    """One change with its context: ``before`` + old/new text + ``after``, from ``line``."""

    line: int  # the first line of the excerpt (1-based)
    before: str
    old: str
    new: str
    after: str


@dataclass
class _Open:
    """A change met whose context after it is still being read."""

    line: int
    before: str
    after: str = ""


class Replacer:
    """``str.replace(needle, replacement)`` over text fed in pieces, with what it met.

    ``feed`` returns the output for the text that can no longer be part of an
    occurrence; ``finish`` the rest. Occurrences never overlap and are taken from
    the left, exactly as ``str.replace`` takes them.
    """

    def __init__(self, needle: str, replacement: str, *, context: bool = True) -> None:
        if not needle:
            raise ValueError("the text to replace is empty")
        self.needle = needle
        self.replacement = replacement
        self.count = 0
        self.lines: list[int] = []  # 1-based line of each occurrence (the first MAX_LISTED)
        self.hunks: list[Hunk] = []
        self._context = context
        self._buf = ""
        self._newlines = 0  # newlines consumed so far
        self._recent = ""
        self._pending: list[_Open] = []  # changes still collecting the lines after them

    def feed(self, text: str) -> str:
        buf = self._buf + text
        out: list[str] = []
        pos = 0
        needle = self.needle
        while (i := buf.find(needle, pos)) >= 0:
            self._consume(buf[pos:i])
            out.append(buf[pos:i])
            self._met()
            out.append(self.replacement)
            pos = i + len(needle)
        keep = max(pos, len(buf) - len(needle) + 1)
        self._consume(buf[pos:keep])
        out.append(buf[pos:keep])
        self._buf = buf[keep:]
        return "".join(out)

    def finish(self) -> str:
        rest, self._buf = self._buf, ""
        self._consume(rest)
        for pending in self._pending:
            self._close(pending)
        self._pending = []
        return rest

    def _met(self) -> None:
        self.count += 1
        line = self._newlines + 1
        if len(self.lines) < MAX_LISTED:
            self.lines.append(line)
        if self._context and len(self.hunks) + len(self._pending) < MAX_SHOWN:
            before = "\n".join(self._recent.split("\n")[-(CONTEXT + 1) :])
            self._pending.append(_Open(line, before))
        self._newlines += self.needle.count("\n")
        self._recent = (self._recent + self.needle)[-_RECENT:]

    def _consume(self, text: str) -> None:
        if not text:
            return
        self._newlines += text.count("\n")
        if not self._context:
            return
        self._recent = (self._recent + text)[-_RECENT:]
        still: list[_Open] = []
        for pending in self._pending:
            pending.after += text
            if pending.after.count("\n") > CONTEXT or len(pending.after) >= _RECENT:
                self._close(pending)
            else:
                still.append(pending)
        self._pending = still

    def _close(self, pending: _Open) -> None:
        after = "\n".join(pending.after[:_RECENT].split("\n")[: CONTEXT + 1])
        start = pending.line - pending.before.count("\n")
        self.hunks.append(Hunk(start, pending.before, self.needle, self.replacement, after))
        self.hunks.sort(key=lambda h: h.line)


def replace_stream(
    blocks: Iterator[str], needle: str, replacement: str, *, context: bool = False
) -> tuple[Iterator[str], Replacer]:
    """The replaced text of ``blocks`` as an iterator, and the ``Replacer`` that counts."""
    replacer = Replacer(needle, replacement, context=context)

    def run() -> Iterator[str]:
        for block in blocks:
            out = replacer.feed(block)
            if out:
                yield out
        rest = replacer.finish()
        if rest:
            yield rest

    return run(), replacer


def iter_lines(blocks: Iterator[str]) -> Iterator[str]:
    """Lines with their endings kept (``\\n``; a ``\\r\\n`` stays whole)."""
    carry = ""
    for block in blocks:
        parts = (carry + block).split("\n")
        carry = parts.pop()
        for part in parts:
            yield part + "\n"
    if carry:
        yield carry


def _body(line: str) -> str:
    """A line without its ending."""
    return line[:-2] if line.endswith("\r\n") else line.rstrip("\n")


@dataclass
class LineScan:
    """Where ``old`` is, line by line, ignoring each line's leading and trailing blanks.

    ``matches`` holds the first line of each whitespace match, ``region`` the file's
    own text of the first (its lines, without the last line's ending); ``closest``
    the first line of the window most like ``old`` when nothing matched.
    """

    old: str
    matches: list[int] = field(default_factory=list)
    count: int = 0
    region: str = ""
    closest: int = 0

    def run(self, blocks: Iterator[str]) -> LineScan:
        wanted = [line.strip() for line in self.old.rstrip("\r\n").split("\n")]
        while len(wanted) > 1 and not wanted[0]:
            wanted.pop(0)
        if not any(wanted):
            return self  # only blanks: every blank line would "match"; nothing is close
        k = len(wanted)
        index: dict[str, list[int]] = {}
        for j, text in enumerate(wanted):
            if len(text) >= 3:
                index.setdefault(text, []).append(j)
        votes: Counter[int] = Counter()
        # No line in common: the line sharing most words with old_string's longest line,
        # else the one most like it letter by letter (a typo shares no word: "betta")
        probe = max(wanted, key=len).lower()
        at = [w.lower() for w in wanted].index(probe)
        words = set(_WORD.findall(probe))
        best_score, best_line = 0, 0
        like = _Likeness(probe)
        window: deque[str] = deque(maxlen=k)
        limit = max(len(t) for t in wanted) * 4 + 256
        for number, line in enumerate(iter_lines(blocks), start=1):
            stripped = line.strip() if len(line) <= limit else "\x00"
            window.append(line)
            for j in index.get(stripped, ()):
                if len(votes) < _MAX_VOTES or (number - j) in votes:
                    votes[number - j] += 1
            if words and not votes and stripped:
                lowered = stripped.lower()
                score = len(words.intersection(_WORD.findall(lowered)))
                if score > best_score:
                    best_score, best_line = score, number - at
                if best_score * 2 < len(words):  # shared words, when enough, decide
                    like.see(lowered, number - at)
            if stripped == wanted[-1] and len(window) == k and _same(window, wanted):
                self.count += 1
                if len(self.matches) < MAX_LISTED:
                    self.matches.append(number - k + 1)
                if self.count == 1:
                    self.region = "".join(window)[: -len(line) or None] + _body(line)
        if votes:
            top = max(votes.values())
            self.closest = max(1, min(start for start, n in votes.items() if n == top))
        elif best_score * 2 >= len(words) > 0:
            self.closest = max(1, best_line)
        elif like.best >= _LIKE_ENOUGH:
            self.closest = max(1, like.line)
        return self


#: How alike (Dice's coefficient of letter pairs) a line must be to be pointed at.
_LIKE_ENOUGH = 0.5


class _Likeness:
    """The line most like ``probe`` by its letter pairs (Dice's coefficient, a line's
    pairs counted as they come), among lines of a similar length only: one pass over
    each such line's pairs, no set made for it."""

    def __init__(self, probe: str) -> None:
        probe = " ".join(probe.split())
        self.pairs = frozenset(_pairs(probe))
        self.size = max(len(probe) - 1, 1)
        self.low, self.high = (len(probe) * 2) // 3, (len(probe) * 3) // 2 + 2
        self.best, self.line = 0.0, 0

    def see(self, lowered: str, line: int) -> None:
        if not self.pairs or not self.low <= len(lowered) <= self.high:
            return
        if "  " in lowered or "\t" in lowered:
            lowered = " ".join(lowered.split())
        shared = len(self.pairs.intersection(pairwise(lowered)))
        score = 2 * shared / (self.size + len(lowered) - 1)
        if score > self.best:
            self.best, self.line = score, line


def _pairs(text: str) -> set[tuple[str, str]]:
    return set(pairwise(text))


def _same(window: deque[str], wanted: list[str]) -> bool:
    return all(line.strip() == text for line, text in zip(window, wanted, strict=True))


def excerpt(blocks: Iterator[str], first: int, count: int, width: int = 240) -> list[str]:
    """Lines ``first`` .. ``first + count - 1`` as ``"  N | text"`` (each cut to ``width``)."""
    shown: list[str] = []
    for number, line in enumerate(iter_lines(blocks), start=1):
        if number >= first + count:
            break
        if number >= first:
            body = _body(line)
            body = body if len(body) <= width else body[: width - 1] + "…"
            shown.append(f"{number:>6} | {body}")
    return shown


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def reindent(new: str, old: str, region: str, eol: str) -> str:
    """``new`` moved to the region's indentation and line endings: each indentation the
    model gave an ``old`` line becomes the one the file's matching line has (the longest
    such prefix of a new line's indentation is replaced; other lines are kept), without
    trailing blanks."""
    old_lines = [line for line in old.replace("\r\n", "\n").split("\n") if line.strip()]
    file_lines = [line for line in region.replace("\r\n", "\n").split("\n") if line.strip()]
    mapping: dict[str, str] = {}
    for mine, theirs in zip(old_lines, file_lines, strict=False):
        mapping.setdefault(_indent(mine), _indent(theirs))
    ordered = sorted(mapping.items(), key=lambda pair: len(pair[0]), reverse=True)
    out = []
    for line in new.rstrip("\r\n").replace("\r\n", "\n").split("\n"):
        line = line.rstrip(" \t")  # trailing blanks copied from old_string are not kept
        if line.strip():
            have = _indent(line)
            for mine, theirs in ordered:
                if have.startswith(mine):
                    line = theirs + line[len(mine) :]
                    break
        out.append(line)
    return eol.join(out)


_HEADER = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def hunk_diff(hunks: list[Hunk], scrub: Callable[[str], str]) -> list[str]:
    """A unified diff of the shown changes, with the file's own line numbers; each
    excerpt passes through ``scrub`` (redaction) whole, before it is split into lines."""
    lines: list[str] = []
    shift = 0  # lines the earlier changes added (or removed) before this one
    for hunk in hunks:
        old = scrub(hunk.before + hunk.old + hunk.after).split("\n")
        new = scrub(hunk.before + hunk.new + hunk.after).split("\n")
        for row in difflib.unified_diff(old, new, n=CONTEXT, lineterm=""):
            if row.startswith(("---", "+++")):
                continue
            head = _HEADER.match(row)
            if head:
                a, b = int(head.group(1)), int(head.group(3))
                row = (
                    f"@@ -{a + hunk.line - 1}{head.group(2) or ''} "
                    f"+{b + hunk.line - 1 + shift}{head.group(4) or ''} @@"
                )
            lines.append(row)
        shift += hunk.new.count("\n") - hunk.old.count("\n")
    return lines

"""The loop guard: a streamed reply that starts repeating itself is stopped and shown once.

Small models loop: SmolLM2-135M printed the same 60-word paragraph three times
and stopped mid-sentence at its token cap (issue 21). ``ReplyGuard`` reads a
reply as it streams and decides what may be shown:

* **What is held back.** Text is released a whole line or sentence at a
  time, and a line or sentence that repeats an earlier one is held until
  something new follows it: a loop's second copy is held while it is being
  written, so it is never shown when the guard cuts.
* **When it trips.** The same line or sentence (40+ characters, compared
  without case, spacing or a list marker) for the third time; or a repeated
  block — 120+ characters, two or more units, written again word for word;
  or the end of the reply being one stretch repeated three times over (a loop
  without line or sentence breaks: the longest repeated suffix, found with
  ``str.find``, gives its period). In a fenced code block only the last rule
  applies, at five copies: code repeats lines on purpose.
* **The token cap.** A reply the server ended for length ends at its last
  whole sentence or line, with ``(cut at N tokens)``.

The caller (``harvey.llm.base.chat``) stops reading the stream when ``looping``
turns true and closes it, so the server stops generating. Pure text logic: no
I/O, no imports from the rest of Harvey.
"""

from __future__ import annotations

import re

MIN_UNIT = 40  # characters a line or sentence needs to count as repeated
TIMES = 3  # a unit seen this often is a loop
MIN_BLOCK = 120  # characters of verbatim repetition that make a repeated block
PERIODIC_SPAN = 300  # a stretch repeated back to back over this many characters loops
LOOP_NOTICE = "(stopped: the reply began repeating itself)"

_BOUNDARY = re.compile(r"(\n)|(?<=[.!?])([\"')\]]*)[ \t]+")
_MARKER = re.compile(r"^(?:[-*+•]|\d{1,3}[.)]|#+)\s+")
_MARKER_ONLY = re.compile(r"\s*(?:\d{1,3}|[A-Za-z]|[ivx]{1,4})[.)]")  # "3." opens an item
_SPACE = re.compile(r"\s+")


def unit_key(unit: str) -> str:
    """A line or sentence as compared: no list marker or number, one space, lower case."""
    text = _MARKER.sub("", unit.strip())
    return _SPACE.sub(" ", text).strip().lower()


def cap_note(tokens: int | None) -> str:
    return f"(cut at {tokens} tokens)" if tokens else "(cut at the token cap)"


def last_whole(text: str) -> str:
    """``text`` up to its last whole sentence or line (all of it when it has neither);
    a code fence left open is closed so the rest does not render as code."""
    ends = [m.end() for m in re.finditer(r"\n|[.!?][\"')\]]*(?=\s|$)", text)]
    cut = text[: ends[-1]] if ends else text
    cut = cut.rstrip()
    if cut.count("```") % 2:
        cut += "\n```"
    return cut


def note_separator(before: str) -> str:
    """What goes between a reply and its notice: a blank line (nothing before an
    empty reply or after one that ends in a blank line)."""
    if not before.strip() or before.endswith("\n\n"):
        return ""
    return "\n" if before.endswith("\n") else "\n\n"


class ReplyGuard:
    """One reply's loop guard: ``feed`` each delta, show what it returns, then ``close``."""

    def __init__(self) -> None:
        self.text = ""  # everything received
        self.released = 0  # text[:released] has been handed out
        self.looping = False
        self._scanned = 0  # text[:_scanned] is split into units
        self._unit_start = 0  # where the unit being written began
        self._last_end = 0  # where the last whole unit ended: output stops at unit ends
        self._counts: dict[str, int] = {}
        self._units: list[tuple[int, str]] = []  # (start, key) of each whole unit
        self._held_from = 0  # units[_held_from:] repeat earlier ones: held back
        self._repeat = 0  # text[_repeat:] occurs earlier in the text
        self._fence = False  # the scan is inside a ``` block

    def feed(self, delta: str) -> str:
        """Take one delta; the text that may be shown now ("" while held or once looping)."""
        if self.looping or not delta:
            return ""
        self.text += delta
        self._track_repeat()
        boundary = self._scan()
        if self.looping:
            return ""
        first_copy_end = self._periodic()
        if first_copy_end is not None:
            self.looping = True
            return self._release(first_copy_end)
        if self._held_from < len(self._units):
            boundary = min(boundary, self._units[self._held_from][0])
        return self._release(boundary)

    def close(self, *, capped: bool = False, tokens: int | None = None) -> tuple[str, str]:
        """Once the stream is over: ``(rest, note)``, the text still to show and the
        notice after it. A normal end shows what was held and no note; a cut loop
        shows nothing more and ``LOOP_NOTICE``; a capped reply shows up to its last
        whole sentence and the cap note."""
        shown = self.text[: self.released]
        if self.looping:
            return "", LOOP_NOTICE
        if capped:
            whole = last_whole(self.text)
            return (whole[len(shown) :] if whole.startswith(shown) else ""), cap_note(tokens)
        return self._release(len(self.text)), ""

    def _release(self, upto: int) -> str:
        if upto <= self.released:
            return ""
        out = self.text[self.released : upto]
        self.released = upto
        return out

    def _track_repeat(self) -> None:
        """Move ``_repeat`` to the start of the longest suffix that also occurs earlier.

        If ``text[i:]`` occurs earlier, so does ``text[i+1:]``: the start only moves on,
        so a reply costs a number of ``find`` calls linear in its length."""
        text = self.text
        end = len(text)
        i = max(self._repeat, 0)
        while i < end and text.find(text[i:], 0, end - 1) < 0:
            i += 1
        self._repeat = i

    def _scan(self) -> int:
        """Split newly whole units off, count them, trip on a loop; the last unit end."""
        text = self.text
        while True:
            match = _BOUNDARY.search(text, self._scanned)
            if match is None:
                return self._last_end
            self._scanned = match.end()
            start, unit = self._unit_start, text[self._unit_start : match.start()]
            if match.group() != "\n" and _MARKER_ONLY.fullmatch(unit):
                continue  # "3. " numbers an item; it does not end a sentence
            self._unit_start = self._scanned
            self._last_end = match.end(1) if match.group(1) else match.end(2)  # not the space
            if unit.lstrip().startswith("```"):
                self._fence = not self._fence
                continue
            if self._fence:
                continue
            key = unit_key(unit)
            if not key:
                continue
            if key not in self._counts:
                self._held_from = len(self._units) + 1  # something new: release what was held
            self._units.append((start, key))
            self._counts.setdefault(key, 0)
            if len(key) >= MIN_UNIT:
                self._counts[key] = self._counts.get(key, 0) + 1
                if self._counts[key] >= TIMES:
                    self.looping = True
                    return self._last_end
            if self._repeated_block():
                self.looping = True
                return self._last_end

    def _repeated_block(self) -> bool:
        """Whether the held units are a block written before: two or more, ``MIN_BLOCK``
        characters, in the same order as an earlier run of units."""
        held = self._units[self._held_from :]
        if len(held) < 2 or self._scanned - held[0][0] < MIN_BLOCK:
            return False
        keys = [key for _start, key in held]
        earlier = [key for _start, key in self._units[: self._held_from]]
        n = len(keys)
        return any(earlier[i : i + n] == keys for i in range(len(earlier) - n + 1))

    def _periodic(self) -> int | None:
        """Where the first copy ends when the end of the reply is one stretch written
        three times back to back (40+ characters each), or a short one repeated over
        ``PERIODIC_SPAN`` characters; else ``None``."""
        text = self.text
        if len(text) - self._repeat < MIN_UNIT:
            return None
        earlier = text.rfind(text[self._repeat :], 0, len(text) - 1)
        if earlier < 0:
            return None
        period = self._repeat - earlier
        begin = earlier
        while begin > 0 and text[begin - 1] == text[begin - 1 + period]:
            begin -= 1
        span = len(text) - begin
        piece = text[begin : begin + period]
        if period < 4 or sum(c.isalpha() for c in piece) < 3:
            return None  # a run of one character, a rule of dashes, a table border: no words
        times = TIMES + 2 if self._fence else TIMES  # code repeats a line more often on purpose
        if span >= (times * period if period >= MIN_UNIT else PERIODIC_SPAN):
            return max(self.released, begin + period)
        return None

"""The loop guard: a streamed reply that starts repeating itself is stopped and shown once.

Small models loop: SmolLM2-135M printed the same 60-word paragraph three times
and stopped mid-sentence at its token cap (issue 21). ``ReplyGuard`` reads a
reply as it streams and decides what may be shown:

* **What is held back.** Text is released a whole line or sentence at a
  time, and a line or sentence that repeats an earlier one is held until
  something new follows it: a loop's second copy is held while it is being
  written, so it is never shown when the guard cuts. A line that never ends
  (a server's, not a model's) is still shown as it comes, ``WINDOW``
  characters behind: every loop the periodic rule can see lies in that tail.
* **When it trips.** The same line or sentence (40+ characters, compared
  without case, spacing or a list marker) for the third time; or a repeated
  block — 120+ characters, two or more units, written again word for word;
  or the end of the reply being one stretch repeated three times over (a loop
  without line or sentence breaks: the longest repeated suffix, found with
  ``str.find``, gives its period). In a fenced code block only the last rule
  applies, at five copies: code repeats lines on purpose.
* **The token cap.** A reply the server ended for length ends at its last
  whole sentence or line, with ``(cut at N tokens)``.
* **What it costs.** A hostile server can stream megabytes in one-character
  deltas, and a guard that searches the whole reply on every delta is quadratic:
  750 KB without a break once took 30 s. So nothing is searched twice over the
  whole reply. A boundary search resumes where the last one stopped; a unit is
  read once, when it ends; held units are compared with the earlier ones once per
  run of repeats (the run only grows, so the first comparison decides). Repeats
  of the reply's end are searched for only in the *window*, its last ``WINDOW`` to
  ``2 * WINDOW`` characters: about once every ``MIN_UNIT`` characters while nothing
  repeats, and once a repeat is found, each delta is only compared with the text
  a period before it. A reply of n characters costs O(n · WINDOW) character steps
  at the very worst, nearly all in ``str.find`` and in copying the window once a
  delta; text that does not repeat costs a few hundred a character (``_searched``
  counts them for the tests). The reply itself is kept whole, as before: a capped
  reply ends at its last whole sentence, however far back that is.
* **What the window changes.** Replies up to ``2 * WINDOW`` characters are
  judged exactly as without it. Past that, a loop whose period is longer than a
  third of the window (``WINDOW // 3``, 1,365 characters) may not be caught by
  the periodic rule, only by the line and sentence rules (at its third copy);
  and a repeated block counts only when its earlier copy is in the window.

The caller (``harvey.llm.base.chat``) stops reading the stream when ``looping``
turns true and closes it, so the server stops generating. Pure text logic: no
I/O, no imports from the rest of Harvey.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

MIN_UNIT = 40  # characters a line or sentence needs to count as repeated
TIMES = 3  # a unit seen this often is a loop
MIN_BLOCK = 120  # characters of verbatim repetition that make a repeated block
PERIODIC_SPAN = 300  # a stretch repeated back to back over this many characters loops
WINDOW = 4096  # the periodic and block rules look this far back (up to twice as far)
LOOP_NOTICE = "(stopped: the reply began repeating itself)"

_BOUNDARY = re.compile(r"(\n)|(?<=[.!?])([\"')\]]*)[ \t]+")
_CLOSERS = re.compile(r"[\"')\]]*")  # what may come between a sentence's stop and its space
_BLANKS = re.compile(r"[ \t]*")
_MARKER = re.compile(r"^(?:[-*+•]|\d{1,3}[.)]|#+)\s+")
_MARKER_ONLY = re.compile(r"\s*(?:\d{1,3}|[A-Za-z]|[ivx]{1,4})[.)]")  # "3." opens an item
_SPACE = re.compile(r"\s+")
# The shortest repeated end of a reply that can trip the periodic rule: a period of
# MIN_UNIT or more needs TIMES copies, a shorter one PERIODIC_SPAN characters.
_LOOP_TAIL = min((TIMES - 1) * MIN_UNIT, PERIODIC_SPAN - (MIN_UNIT - 1))


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


def _skip(run: re.Pattern[str], text: str, at: int) -> int:
    """Where a run of ``run`` (which may be empty) starting at ``at`` ends."""
    match = run.match(text, at)
    return match.end() if match else at


def _has_words(piece: str) -> bool:
    """Three letters at least: a run of one character, a rule of dashes or a table
    border repeats without being a loop of words."""
    letters = 0
    for char in piece:
        if char.isalpha():
            letters += 1
            if letters == 3:
                return True
    return False


class ReplyGuard:
    """One reply's loop guard: ``feed`` each delta, show what it returns, then ``close``.

    Positions are offsets into the whole reply; the reply's text lives in ``_window``
    (from ``_base`` on, what is searched) and ``_older`` (before it, in pieces, only
    read when a release or a long unit reaches back)."""

    def __init__(self, *, window: int = WINDOW) -> None:
        self.released = 0  # the reply's first ``released`` characters have been handed out
        self.looping = False
        self._size = max(window, 1)  # the tests shrink it to reach past the window quickly
        self._window = ""  # the reply from ``_base`` on
        self._base = 0
        self._end = 0  # characters received
        self._older: list[str] = []  # the reply before ``_base``, in pieces
        self._older_starts: list[int] = []  # where each piece begins
        self._scanned = 0  # the reply up to here is split into units
        self._search_at = 0  # no boundary begins before this, but at ``_pending``
        self._pending = -1  # a stop with closing quotes up to the end: a space makes a boundary
        self._unit_start = 0  # where the unit being written began
        self._last_end = 0  # where the last whole unit ended: output stops at unit ends
        self._counts: dict[str, int] = {}
        self._keys: list[str] = []  # each whole unit's key, from the window's first on
        self._starts: list[int] = []  # and where it began
        self._held_from = 0  # _keys[_held_from:] repeat earlier ones: held back
        self._block_judged = False  # the held units were compared with the earlier ones
        self._fence = False  # the scan is inside a ``` block
        self._repeat = 0  # no suffix beginning before this occurs earlier in the window
        self._period = 0  # if set: the reply from _repeat on is its longest repeated suffix,
        self._period_at = 0  # last seen _period back, as of the reply's length _period_at
        self._words: bool | None = None  # whether that period's piece has words (None: not asked)
        self._quiet_until = 0  # no periodic loop can end the reply before it is this long
        self._searched = 0  # characters read by searches, copies and comparisons: the cost

    @property
    def text(self) -> str:
        """Everything received, joined anew on each call: for ``close`` and tests."""
        return "".join(self._older) + self._window

    def feed(self, delta: str) -> str:
        """Take one delta; the text that may be shown now ("" while held or once looping)."""
        if self.looping or not delta:
            return ""
        self._window += delta
        self._end += len(delta)
        boundary = self._scan()
        if self.looping:
            return ""
        if self._period or self._end >= self._quiet_until:  # else no loop can show yet
            first_copy_end = self._periodic()
            if first_copy_end is not None:
                self.looping = True
                return self._release(first_copy_end)
        if self._held_from < len(self._keys):
            boundary = min(boundary, self._starts[self._held_from])
        else:  # a line with no end still streams, a window behind (loops are caught in it)
            boundary = max(boundary, self._end - max(self._size, WINDOW))
        out = self._release(boundary)
        if len(self._window) > 2 * self._size:
            self._trim()
        return out

    def close(self, *, capped: bool = False, tokens: int | None = None) -> tuple[str, str]:
        """Once the stream is over: ``(rest, note)``, the text still to show and the
        notice after it. A normal end shows what was held and no note; a cut loop
        shows nothing more and ``LOOP_NOTICE``; a capped reply shows up to its last
        whole sentence and the cap note."""
        if self.looping:
            return "", LOOP_NOTICE
        if capped:
            text = self.text
            shown = text[: self.released]
            whole = last_whole(text)
            return (whole[len(shown) :] if whole.startswith(shown) else ""), cap_note(tokens)
        return self._release(self._end), ""

    def _release(self, upto: int) -> str:
        if upto <= self.released:
            return ""
        out = self._slice(self.released, upto)
        self.released = upto
        return out

    def _slice(self, start: int, end: int) -> str:
        """The reply from ``start`` to ``end``: one slice of the window, or pieces of the
        older text joined when a held run or a long unit began before the window."""
        self._searched += end - start
        base = self._base
        if start >= base:
            return self._window[start - base : end - base]
        pieces = []
        i = bisect_right(self._older_starts, start) - 1
        while i < len(self._older) and self._older_starts[i] < end:
            begin = self._older_starts[i]
            pieces.append(self._older[i][max(start - begin, 0) : end - begin])
            i += 1
        if end > base:
            pieces.append(self._window[: end - base])
        return "".join(pieces)

    def _trim(self) -> None:
        """Once the window holds twice ``_size`` characters, keep its last ``_size``:
        appending a delta copies the window, so it must stay short, and cutting only at
        twice the size makes each cut's copy cost one character per character received."""
        cut = len(self._window) - self._size
        self._older.append(self._window[:cut])
        self._older_starts.append(self._base)
        self._window = self._window[cut:]
        self._base += cut
        if self._period and self._repeat - self._period < self._base:
            self._period = 0  # the earlier copy left the window: search again
        drop = bisect_left(self._starts, self._base, 0, self._held_from)
        del self._keys[:drop], self._starts[:drop]  # held ones stay: they are the block
        self._held_from -= drop

    def _scan(self) -> int:
        """Split newly whole units off, count them, trip on a loop; the last unit end."""
        while True:
            found = self._next_boundary()
            if found is None:
                return self._last_end
            start, end, unit_end = found
            self._scanned = end
            unit = self._slice(self._unit_start, start)
            if unit_end != end and _MARKER_ONLY.fullmatch(unit):
                continue  # "3. " numbers an item; it does not end a sentence
            unit_start, self._unit_start = self._unit_start, end
            self._last_end = unit_end  # a sentence ends before its space, a line after "\n"
            if unit.lstrip().startswith("```"):
                self._fence = not self._fence
                continue
            if self._fence:
                continue
            key = unit_key(unit)
            if not key:
                continue
            if key not in self._counts:
                self._held_from = len(self._keys) + 1  # something new: release what was held
                self._block_judged = False
            self._keys.append(key)
            self._starts.append(unit_start)
            self._counts.setdefault(key, 0)
            if len(key) >= MIN_UNIT:
                self._counts[key] = self._counts.get(key, 0) + 1
                if self._counts[key] >= TIMES:
                    self.looping = True
                    return self._last_end
            if self._repeated_block():
                self.looping = True
                return self._last_end

    def _next_boundary(self) -> tuple[int, int, int] | None:
        """The next ``_BOUNDARY`` match after the last: ``(start, end, unit end)``, or None.

        A search that finds nothing has ruled out every start before the reply's end
        but one: a stop followed by closing quotes up to the end, which a space may
        still complete. That one is kept in ``_pending`` and the next search starts at
        the new text, so a reply without breaks is read once, however it is split."""
        window, base, end = self._window, self._base, self._end
        at = self._search_at
        if self._pending >= 0:
            closed = _skip(_CLOSERS, window, at - base) + base
            self._searched += closed - at + 1
            if closed == end:
                self._search_at = end
                return None
            start, self._pending = self._pending, -1
            if window[closed - base] in " \t":
                self._search_at = _skip(_BLANKS, window, closed - base) + base
                return start, self._search_at, closed
            at = closed
        match = _BOUNDARY.search(window, at - base)
        if match is not None:
            self._searched += match.end() + base - at
            self._search_at = match.end() + base
            unit_end = match.end(1) if match.group(1) else match.end(2)
            return match.start() + base, self._search_at, unit_end + base
        self._searched += end - at
        stop = end
        while stop > at and window[stop - 1 - base] in "\"')]":
            stop -= 1
        if stop > base and window[stop - 1 - base] in ".!?":
            self._pending = stop
        self._search_at = end
        return None

    def _repeated_block(self) -> bool:
        """Whether the held units are a block written before: two or more, ``MIN_BLOCK``
        characters, in the same order as an earlier run of units (in the window).

        While units are held the earlier ones stay the same and the held ones only
        grow, so the first comparison decides for the whole run: made once."""
        held = self._held_from
        if self._block_judged or len(self._keys) - held < 2:
            return False
        if self._scanned - self._starts[held] < MIN_BLOCK:
            return False
        self._block_judged = True
        first = bisect_left(self._starts, self._base, 0, held)
        # Keys hold no "\n" (spacing is folded to one space), so "\n" marks unit ends.
        earlier = "\n" + "\n".join(self._keys[first:held]) + "\n"
        block = "\n" + "\n".join(self._keys[held:]) + "\n"
        self._searched += len(earlier) + len(block)
        return block in earlier

    def _periodic(self) -> int | None:
        """Where the first copy ends when the end of the reply is one stretch written
        three times back to back (40+ characters each), or a short one repeated over
        ``PERIODIC_SPAN`` characters; else ``None``.

        The stretch is found from the longest suffix that occurs earlier (its start
        ``_repeat``) and the last place it occurs (``_period`` back): the reply from
        that place on repeats with that period, and no further back (one character
        more would be a longer repeated suffix). While new text
        keeps the period the suffix just grows and its last earlier place stays, so
        the search is only made again when the period breaks."""
        end = self._end
        if self._period and not self._keeps_period(end):
            self._period = 0
        if not self._period and not self._find_repeat(end):
            return None
        period, repeat = self._period, self._repeat
        if period < 4:
            return None
        times = TIMES + 2 if self._fence else TIMES  # code repeats a line more often on purpose
        if end - repeat + period < (times * period if period >= MIN_UNIT else PERIODIC_SPAN):
            return None
        if self._words is None:
            base = self._base
            self._words = _has_words(self._window[repeat - period - base : repeat - base])
        return max(self.released, repeat) if self._words else None

    def _keeps_period(self, end: int) -> bool:
        """Whether the text since ``_period_at`` repeats the text ``_period`` before it."""
        base, period, since = self._base, self._period, self._period_at
        self._period_at = end
        self._searched += 2 * (end - since)
        new, before = since - base, since - period - base
        return self._window[new : end - base] == self._window[before : end - period - base]

    def _find_repeat(self, end: int) -> bool:
        """Find the longest suffix that occurs earlier in the window, when it has
        ``MIN_UNIT`` characters or more; ``False`` (nothing to find) otherwise.

        Its last ``MIN_UNIT`` characters must occur earlier: when they do not, the
        suffix is shorter, and none can grow to the ``_LOOP_TAIL`` a loop needs before
        ``_LOOP_TAIL - MIN_UNIT`` more characters come, so the next look waits. When
        they do, the start is searched for from ``_repeat`` up, in doubling steps then
        halving ones: a suffix that occurs earlier still does without its first
        character, so whether one does only changes once along the way."""
        base = self._base
        if end < self._quiet_until or end - base <= MIN_UNIT:
            return False
        top = end - MIN_UNIT
        if not self._occurs_earlier(top, end):
            self._repeat = max(self._repeat, top + 1)
            self._quiet_until = top + 1 + _LOOP_TAIL
            return False
        low, high, step = max(self._repeat, base), top, 1
        while low < high:
            at = min(low + step - 1, high)
            if self._occurs_earlier(at, end):
                high = at
                break
            low, step = at + 1, step * 2
        while low < high:
            middle = (low + high) // 2
            if self._occurs_earlier(middle, end):
                high = middle
            else:
                low = middle + 1
        window = self._window
        earlier = window.rfind(window[low - base :], 0, end - 1 - base) + base
        self._searched += 2 * (end - base)
        self._repeat, self._period, self._period_at = low, low - earlier, end
        self._words = None
        return True

    def _occurs_earlier(self, start: int, end: int) -> bool:
        """Whether the reply from ``start`` on also occurs earlier (in the window)."""
        base = self._base
        self._searched += 2 * (end - base)
        return self._window.find(self._window[start - base :], 0, end - 1 - base) >= 0

"""How much of one reply Harvey reads: a hostile server's stream ends here.

A model's reply is bounded by its token cap, but a server is not a model: one
reply arrived with 3,000 tool calls (each would have run), another never ended,
a third streamed one call's arguments without end. Each bound is far above
anything a model within Harvey's windows writes, and passing one cuts the reply
where it is: the stream is closed (the server stops), no tool call of that reply
runs, and the reply ends with one line saying why — shown, and recorded with the
reply in the session.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Tool calls one reply may make; models call a handful at a time.
MAX_TOOL_CALLS = 32
#: Characters of text one reply may hold: ~500k tokens, past any window Harvey uses.
MAX_REPLY_CHARS = 2_000_000
#: Characters of one call's arguments (a file written whole is the largest legitimate one).
MAX_ARGUMENT_CHARS = 1_000_000
#: Characters of a call's name or id: a tool's name is a word, an id a few dozen.
MAX_NAME_CHARS = 256


class ReplyCut(Exception):
    """A reply passed a bound: ``note`` is the line that ends it."""

    def __init__(self, note: str) -> None:
        super().__init__(note)
        self.note = note


def too_many_calls() -> ReplyCut:
    return ReplyCut(
        f"(stopped: the reply made more than {MAX_TOOL_CALLS} tool calls; none of them ran)"
    )


def reply_too_long() -> ReplyCut:
    return ReplyCut(
        f"(stopped: the reply passed {MAX_REPLY_CHARS:,} characters; Harvey read no more of it)"
    )


def name_too_long() -> ReplyCut:
    return ReplyCut(
        f"(stopped: a tool call's name or id passed {MAX_NAME_CHARS} characters; "
        "no tool call of the reply ran)"
    )


def arguments_too_long(name: str) -> ReplyCut:
    shown = name if name.isidentifier() and len(name) <= 40 else "a tool"
    return ReplyCut(
        f"(stopped: the arguments of {shown} passed {MAX_ARGUMENT_CHARS:,} characters; "
        "no tool call of the reply ran)"
    )


#: A reply's first characters are fed delta by delta: small, so each feed is cheap.
EAGER_CHARS = 16 * 1024
#: Past them, a display is fed at most this often while text keeps coming...
FEED_SECONDS = 0.05
#: ...unless this much, or an eighth of the reply so far, is waiting.
FEED_CHARS = 4096


class Batched:
    """Text deltas joined before they are shown.

    A server may split a reply into deltas of one character. Everything downstream
    of the stream (the loop guard, the held-back display, the JSON events, the REPL's
    rendering) does some work per delta that grows with the reply, so a million tiny
    deltas would cost a million times the reply. The first ``EAGER_CHARS`` are fed as
    they come; after them the text is fed at most every ``FEED_SECONDS`` (a slow stream
    still shows each delta as it comes) or once a growing share of the reply waits, so
    a fast stream is fed a few dozen times more in all.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.pending: list[str] = []
        self.size = 0
        self.received = 0
        self.last = clock()

    def add(self, text: str) -> str:
        """Take a delta; the joined text when it is time to feed it, else ""."""
        self.pending.append(text)
        self.size += len(text)
        self.received += len(text)
        now = self.clock()
        early = self.received <= EAGER_CHARS
        waiting = self.size < max(FEED_CHARS, self.received // 8)
        if not early and waiting and now - self.last < FEED_SECONDS:
            return ""
        self.last = now
        return self.rest()

    def rest(self) -> str:
        """Everything waiting, now."""
        text = "".join(self.pending)
        self.pending.clear()
        self.size = 0
        return text

"""What Harvey is doing right now, for a front end to show while a turn works.

A turn on the embedded model can take a minute on two cores, most of it evaluating
the prompt; with nothing on the screen it looks hung (issue 39). Whoever does the
work says what it is doing: the agent ("asking MODEL", "reading sockets.md"), the
embedded model between batches of its prompt ("evaluating the prompt: 512 of 3,085
tokens") and while it writes ("writing: 40 tokens"). A front end listens for the
turn (``listening``): the REPL in its status line, ``harvey run`` on stderr — never on
stdout or in JSON output. Without a listener, reporting costs a context-variable read.

The listener is per context (a ``ContextVar``): two sessions in one process (tests,
a pool) do not hear each other's turns.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Activity:
    """One thing being done: ``what``, and how far (``done`` of ``total`` tokens)."""

    what: str
    done: int | None = None
    total: int | None = None

    def line(self) -> str:
        """``what`` with its progress, on one line: "evaluating the prompt: 512 of 3,085
        tokens", "writing: 40 tokens"."""
        if self.done is not None and self.total is not None:
            return f"{self.what}: {self.done:,} of {self.total:,} tokens"
        if self.done is not None:
            return f"{self.what}: {self.done:,} token{'' if self.done == 1 else 's'}"
        return self.what


Listener = Callable[[Activity], None]

_LISTENER: ContextVar[Listener | None] = ContextVar("harvey_activity", default=None)


@contextlib.contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """Activities reported inside go to ``listener`` (None: to no one)."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def report(what: str, done: int | None = None, total: int | None = None) -> None:
    """Tell the listener, if any, what is being done; a listener's failure is not the
    work's: it is dropped."""
    listener = _LISTENER.get()
    if listener is None:
        return
    try:
        listener(Activity(what, done, total))
    except Exception:  # showing progress must never fail a turn
        _LISTENER.set(None)


def active() -> bool:
    """Whether anyone listens (so a reporter can skip work done only to report)."""
    return _LISTENER.get() is not None

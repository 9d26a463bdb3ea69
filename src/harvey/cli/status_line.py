"""``harvey run``'s status on stderr: what Harvey is doing, from the first second of a turn.

The turn reports its activities (``harvey.llm.activity``): "asking MODEL", "reading
sockets.md", "evaluating the prompt: 512 of 3,085 tokens", "writing: 40 tokens",
each after ``PREFIX`` ("harvey … asking SmolLM2-135M-Instruct").
On a terminal they share one line, rewritten in place and erased when the turn ends,
so the reply on stdout is all that stays. Anywhere else (a pipe, a log) an activity
that lasts half a second is one line, and a long one (the embedded
model evaluating a prompt) a line every ``EVERY_SECONDS`` at most; a quick turn, or
one that fails at once, leaves stderr to its error line. Stdout and JSON never get any.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from harvey.llm.activity import Activity, listening
from harvey.redact import redact
from harvey.terminal_text import for_terminal, unguarded

EVERY_SECONDS = 2.0  # between two lines of the same activity, off a terminal
QUIET_SECONDS = 0.5  # off a terminal, an activity is told once it has lasted this long
TTY_EVERY_SECONDS = 0.1  # between two rewrites of the line on a terminal
#: How a status line starts: not "harvey: ", which is an error's or a warning's line.
PREFIX = "harvey … "


class StatusLine:
    """Shows each activity on ``stream``: one line rewritten on a terminal; elsewhere a line
    for each activity that lasts ``QUIET_SECONDS`` (so a quick turn, or a failure, leaves
    stderr to the error alone), and every ``EVERY_SECONDS`` while it goes on."""

    def __init__(
        self,
        stream: TextIO,
        clock: Callable[[], float] = time.monotonic,
        *,
        watch: bool = True,
    ) -> None:
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.tty = bool(isatty is not None and isatty())
        self.clock = clock
        self._lock = threading.Lock()
        self._current: Activity | None = None
        self._since = 0.0  # when the current activity began
        self._told: str | None = None  # the last line written
        self._told_at = 0.0
        self._shown = False  # a line is on the terminal, to erase at the end
        self._done = threading.Event()
        self._watcher: threading.Thread | None = None
        if watch:
            self._watcher = threading.Thread(target=self._watch, name="harvey-status", daemon=True)
            self._watcher.start()

    def __call__(self, activity: Activity) -> None:
        now = self.clock()
        with self._lock:
            if self._current is None or activity.what != self._current.what:
                self._since = now
            self._current = activity
            if self.tty and now - self._told_at >= TTY_EVERY_SECONDS:
                self._write(activity, now)

    def poll(self) -> None:
        """Off a terminal: write the current activity if it has lasted long enough and
        was not written in the last ``EVERY_SECONDS``; on one, rewrite the line if it is
        behind (the watcher calls this every tenth of a second)."""
        now = self.clock()
        with self._lock:
            activity = self._current
            if self.tty:  # the line catches up with what a quick rewrite skipped
                if activity is not None and activity.line() != self._told:
                    self._write(activity, now)
                return
            if activity is None or now - self._since < QUIET_SECONDS:
                return
            line = activity.line()
            if line == self._told or (
                self._told is not None
                and self._told.startswith(f"{activity.what}")
                and now - self._told_at < EVERY_SECONDS
            ):
                return
            self._write(activity, now)

    def _watch(self) -> None:
        while not self._done.wait(0.1):
            self.poll()

    def _write(self, activity: Activity, now: float) -> None:
        self._told, self._told_at = activity.line(), now
        text = for_terminal(redact(f"{PREFIX}{activity.line()}"), one_line=True)
        if self.tty:  # Harvey's own erase-line, under the guard that would show it as ^[
            width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
            raw = _under_guards(self.stream)
            raw.write(f"\r\x1b[K{text[:width]}")
            raw.flush()
            self._shown = True
        else:
            self.stream.write(f"{text}\n")
            self.stream.flush()

    def close(self) -> None:
        """Stop watching, and erase the terminal's status line (the reply comes next)."""
        self._done.set()
        if self._watcher is not None:
            self._watcher.join()
        with self._lock:
            if self._shown:
                raw = _under_guards(self.stream)
                raw.write("\r\x1b[K")
                raw.flush()
                self._shown = False


@contextlib.contextmanager
def status_on_stderr() -> Iterator[StatusLine]:
    """Show the activities reported inside on stderr; the line is erased at the end."""
    line = StatusLine(sys.stderr)
    try:
        with listening(line):
            yield line
    finally:
        line.close()


def _under_guards(stream: TextIO) -> TextIO:
    """The terminal under the redacting and sanitising wrappers the command line puts on
    stderr (what is written there is redacted and sanitised already)."""
    from harvey.cli.errors import RedactingStderr

    if isinstance(stream, RedactingStderr):
        stream.flush()
        stream = stream.raw
    return unguarded(stream)

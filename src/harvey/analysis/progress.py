"""Progress of a chunked analysis: the events, and plain lines when no front end draws them.

The engine reports events (chunk started, chunk finished, the synthesis of
the answer started, with how many quotes it is written from); a reporter
decides how they look. The library's own reporter prints
one plain line per event, ``Processing chunk i/N…``, as the seed specifies, so
logs stay greppable (``harvey analyze ... 2>log``, tests). A front end passes
its own: the rich bar on a terminal (``repl/progress.py``: the library knows no
live display), JSON output's events. All calls come from the engine's
coordinating thread. File names come from the workspace and may hold escape
sequences: a plain line passes ``for_terminal``.

A whole-folder analysis also reports files: ``expect_files`` before ``start``
adds a files column to the bar, ``file_finished`` when the last chunk of a file
is done. They are
not in the protocol (a one-file reporter need not know files); the folder
engine calls them when a reporter has them.
"""

from __future__ import annotations

import sys
from typing import TextIO

from harvey.protocols import ProgressReporter
from harvey.terminal_text import for_terminal


class NullProgress:
    """Shows nothing (library use without a terminal)."""

    def expect_files(self, files: int) -> None:
        pass

    def file_finished(self, done: int, total: int, name: str) -> None:
        pass

    def start(self, total: int) -> None:
        pass

    def chunk_started(self, index: int, total: int) -> None:
        pass

    def chunk_finished(self, index: int, total: int, error: str | None) -> None:
        pass

    def synthesis_started(self, level: int, inputs: int, groups: int) -> None:
        pass

    def close(self) -> None:
        pass


class PlainProgress:
    """One line per event, flushed at once (the seed's ``Processing chunk i/N…``)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def _line(self, text: str) -> None:
        self.stream.write(for_terminal(text) + "\n")
        self.stream.flush()

    def start(self, total: int) -> None:
        pass

    def expect_files(self, files: int) -> None:
        pass

    def file_finished(self, done: int, total: int, name: str) -> None:
        self._line(f"File {done}/{total} done: {name}")

    def chunk_started(self, index: int, total: int) -> None:
        self._line(f"Processing chunk {index}/{total}…")

    def chunk_finished(self, index: int, total: int, error: str | None) -> None:
        if error is not None:
            self._line(f"Chunk {index}/{total} failed: {error}")

    def synthesis_started(self, level: int, inputs: int, groups: int) -> None:
        self._line(f"Synthesizing the answer from {inputs} quote{'s' if inputs != 1 else ''}…")

    def close(self) -> None:
        pass


def make_progress(stream: ProgressReporter | TextIO | None = None) -> ProgressReporter:
    """``stream`` itself when a front end passed a reporter (the terminal's bar,
    ``repl/progress.py``; JSON output's events), else plain lines on it (default stderr)."""
    if stream is not None and hasattr(stream, "chunk_started"):
        return stream  # type: ignore[return-value]
    return PlainProgress(sys.stderr if stream is None else stream)

"""Progress display for chunked analysis: a rich bar on a terminal, plain lines otherwise.

The engine reports events (chunk started, chunk finished, synthesis level
started); a reporter decides how they look. On a terminal a rich progress bar
shows chunks done, failures, elapsed time and ETA. When output is a pipe or a
file — ``harvey analyze ... 2>log``, tests — each call prints one plain line,
``Processing chunk i/N…``, as the seed specifies, so logs stay greppable.
All calls come from the engine's coordinating thread. File names come from the
workspace and may hold escape sequences: a plain line passes ``for_terminal``,
and the bar draws through ``safe_console``.

A whole-folder analysis also reports files: ``expect_files`` before ``start``
adds a files column to the bar, ``file_finished`` when the last chunk of a file
is done, ``files_synthesis_started`` before the files are synthesised. They are
not in the protocol (a one-file reporter need not know files); the folder
engine calls them when a reporter has them.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol, TextIO

from harvey.terminal_text import for_terminal, safe_console


class ProgressReporter(Protocol):
    def start(self, total: int) -> None: ...

    def chunk_started(self, index: int, total: int) -> None: ...

    def chunk_finished(self, index: int, total: int, error: str | None) -> None: ...

    def synthesis_started(self, level: int, inputs: int, groups: int) -> None: ...

    def close(self) -> None: ...


class NullProgress:
    """Shows nothing (library use without a terminal)."""

    def expect_files(self, files: int) -> None:
        pass

    def file_finished(self, done: int, total: int, name: str) -> None:
        pass

    def files_synthesis_started(self, count: int) -> None:
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

    def files_synthesis_started(self, count: int) -> None:
        self._line(f"Synthesizing {count} file{'s' if count != 1 else ''}…")

    def chunk_started(self, index: int, total: int) -> None:
        self._line(f"Processing chunk {index}/{total}…")

    def chunk_finished(self, index: int, total: int, error: str | None) -> None:
        if error is not None:
            self._line(f"Chunk {index}/{total} failed: {error}")

    def synthesis_started(self, level: int, inputs: int, groups: int) -> None:
        if groups == 1:
            self._line(f"Synthesizing {inputs} partial results…")
        else:
            self._line(f"Synthesizing level {level}: {inputs} partial results in {groups} groups…")

    def close(self) -> None:
        pass


class RichProgress:
    """A rich progress bar: chunks done of N, (files done of F,) failures, elapsed, ETA."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._progress: Any = None
        self._task: Any = None
        self._failed = 0
        self._files: int | None = None

    def expect_files(self, files: int) -> None:
        self._files = files

    def start(self, total: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        files: list[ProgressColumn] = []
        if self._files is not None:
            files = [TextColumn("{task.fields[files_done]}/" + f"{self._files} files")]
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            *files,
            TextColumn("[red]{task.fields[failed]} failed"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=safe_console(file=self._stream),
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(
            "Analysing chunks", total=total, failed=0, files_done=0
        )

    def file_finished(self, done: int, total: int, name: str) -> None:
        self._progress.update(self._task, files_done=done)

    def files_synthesis_started(self, count: int) -> None:
        self._progress.update(self._task, description=f"Synthesizing {count} files")

    def chunk_started(self, index: int, total: int) -> None:
        pass

    def chunk_finished(self, index: int, total: int, error: str | None) -> None:
        if error is not None:
            self._failed += 1
        self._progress.update(self._task, advance=1, failed=self._failed)

    def synthesis_started(self, level: int, inputs: int, groups: int) -> None:
        label = "Synthesizing" if groups == 1 else f"Synthesizing level {level} ({groups} groups)"
        self._progress.update(self._task, description=label)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def make_progress(stream: TextIO | None = None) -> ProgressReporter:
    """A rich bar when ``stream`` (default stderr) is a terminal, plain lines otherwise."""
    stream = sys.stderr if stream is None else stream
    if hasattr(stream, "chunk_started"):  # a reporter posing as the stream (JSON output's)
        return stream  # type: ignore[return-value]
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return RichProgress(stream)
    return PlainProgress(stream)

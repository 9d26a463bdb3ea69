"""The chunked analysis's progress on a terminal: a rich bar (chunks, files, failures, ETA).

The analysis library reports events to a ``ProgressReporter`` and draws plain
lines itself; a live display is a front end's business, so the bar lives here
and ``harvey analyze``, ``harvey run`` and the REPL hand it to the engine when
stderr is a terminal. File names come from the workspace and may hold escape
sequences: the bar draws through ``safe_console`` (sanitised, no markup).
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from harvey.analysis.progress import PlainProgress
from harvey.protocols import ProgressReporter
from harvey.terminal_text import safe_console


def progress_for(stream: TextIO | None = None) -> ProgressReporter:
    """A rich bar when ``stream`` (default stderr) is a terminal, plain lines otherwise."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return RichProgress(stream)
    return PlainProgress(stream)


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

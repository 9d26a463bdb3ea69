"""The terminal's progress bar (``repl/progress.py``): rich on a terminal, lines on a pipe."""

from __future__ import annotations

import io

from harvey.analysis.progress import PlainProgress
from harvey.repl.progress import RichProgress, progress_for


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_for_picks_plain_for_pipes_and_rich_for_terminals() -> None:
    assert isinstance(progress_for(io.StringIO()), PlainProgress)
    stream = Tty()
    bar = progress_for(stream)
    assert isinstance(bar, RichProgress)
    bar.start(3)
    bar.chunk_finished(1, 3, None)
    bar.chunk_finished(2, 3, "boom")
    bar.synthesis_started(1, 3, 1)
    bar.close()
    assert "1 failed" in stream.getvalue()


def test_a_file_name_with_escapes_cannot_drive_the_terminal() -> None:
    stream = Tty()
    bar = progress_for(stream)
    bar.expect_files(1)
    bar.start(1)
    bar.file_finished(1, 1, "evil\x1b]0;pwned\x07.md")
    bar.close()
    assert "\x1b]0;" not in stream.getvalue()

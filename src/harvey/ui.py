"""How the agent asks the person something, without knowing about terminals.

The REPL implements ``AgentUI`` with prompt_toolkit; ``harvey run`` and
``harvey analyze`` use ``HeadlessUI``, which never blocks on input.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TextIO

from harvey.terminal_text import for_terminal

if TYPE_CHECKING:
    from harvey.protocols import ProgressReporter


class WriteChoice(enum.Enum):
    """The person's answer to "may the model write this file?"."""

    YES = "yes"  # this write
    NO = "no"  # not this one; the model is told and the turn goes on
    ALL = "all"  # this one and every later write of the session, without asking
    QUIT = "quit"  # not this one, and end the turn (like Ctrl-C)


@dataclass(frozen=True)
class WriteRequest:
    """A write the model asked for, described before anything touches the disk.

    ``old_size`` is None for a new file; ``old`` is the current text when it
    can be compared (a UTF-8 text file of reasonable size), else None.
    """

    path: str  # workspace-relative, as the person should see it
    content: str
    old: str | None = None
    old_size: int | None = None
    # An edit_file change: the diff of the changed lines (the file is never read whole),
    # the size after it and how many places change. ``content`` is then unused.
    diff: tuple[str, ...] | None = None
    new_size: int | None = None
    changes: int = 0

    @property
    def is_new(self) -> bool:
        return self.old_size is None


def printable(text: str) -> str:
    """``text`` kept on one line with every control made visible: ``for_terminal``.

    Paths and file contents come from the model, which may be steered by a
    hostile file: an escape sequence or a bidi override in a diff could hide
    the line that matters from the person approving it, so none reaches the
    terminal raw (tab is kept, a newline shown as ``^J``).
    """
    return for_terminal(text, one_line=True)


class AgentUI(Protocol):
    interactive: bool
    auto_yes: bool

    def confirm(self, question: str) -> bool: ...

    def ask_chunk_instruction(self, alert: str, default: str) -> str | None:
        """Show the overflow alert; return the instruction, or None for "no"."""
        ...

    def approve_write(self, request: WriteRequest) -> WriteChoice:
        """Ask whether the model may write ``request.path`` (called by the write gate)."""
        ...

    def progress_stream(self) -> ProgressReporter | TextIO:
        """Where an analysis reports progress: a reporter, or a stream for plain lines."""
        ...

    def warn(self, message: str) -> None: ...


class HeadlessUI:
    """No terminal to ask: refuse what needs a person unless ``auto_yes``."""

    interactive = False

    def __init__(
        self,
        auto_yes: bool = False,
        err: TextIO | None = None,
        allow_writes: bool = False,
        progress: Callable[[TextIO], ProgressReporter] | None = None,
    ) -> None:
        """``progress`` makes the reporter an analysis draws on ``err`` (the CLI's bar on a
        terminal, ``repl/progress.py``); without it an analysis prints plain lines there."""
        self.auto_yes = auto_yes
        self.allow_writes = allow_writes  # --allow-writes; --yes deliberately does not imply it
        self._err = err
        self._make_progress = progress

    @property
    def err(self) -> TextIO:
        return self._err or sys.stderr

    def confirm(self, question: str) -> bool:
        if self.auto_yes:
            print(for_terminal(f"{question} yes (--yes)"), file=self.err)
        return self.auto_yes

    def ask_chunk_instruction(self, alert: str, default: str) -> str | None:
        return default if self.auto_yes else None

    def approve_write(self, request: WriteRequest) -> WriteChoice:
        shown = printable(request.path)
        if self.allow_writes:
            print(f"harvey: writing {shown} (--allow-writes)", file=self.err)
            return WriteChoice.YES
        print(f"harvey: refused to write {shown} (pass --allow-writes to allow)", file=self.err)
        return WriteChoice.NO

    def progress_stream(self) -> ProgressReporter | TextIO:
        return self._make_progress(self.err) if self._make_progress is not None else self.err

    def warn(self, message: str) -> None:
        print(f"warning: {for_terminal(message)}", file=self.err)

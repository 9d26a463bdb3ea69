"""The REPL's side of ``AgentUI``: prompt_toolkit for input, rich for the questions.

``TerminalUI`` is what the agent sees of the person at the terminal (confirm,
the overflow alert's instruction, the write gate's question); ``LineReader`` is
the one place input is read, with history on a terminal and plain lines on a pipe.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.history import History, InMemoryHistory
from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from harvey.errors import HarveyError
from harvey.inputs import clean_text, read_stdin_line
from harvey.repl.history import PrivateHistory
from harvey.terminal_text import for_terminal
from harvey.tools.approval import WritePreview, write_preview
from harvey.ui import WriteChoice, WriteRequest

if TYPE_CHECKING:
    from rich.markdown import Markdown

    from harvey.protocols import ProgressReporter

WRITE_QUESTION = "write it? [y]es / [N]o / [a]ll this session / [q]uit the turn: "
WRITE_ANSWERS = {
    "": WriteChoice.NO,
    "n": WriteChoice.NO,
    "no": WriteChoice.NO,
    "y": WriteChoice.YES,
    "yes": WriteChoice.YES,
    "a": WriteChoice.ALL,
    "all": WriteChoice.ALL,
    "q": WriteChoice.QUIT,
    "quit": WriteChoice.QUIT,
}


def render_write_preview(preview: WritePreview) -> Panel:
    """The question as rich renders it; Text (never markup) so file content stays literal."""
    styles = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))
    lines = [Text(preview.title, style="bold")]
    for line in preview.lines:
        style = next((st for prefix, st in styles if line.startswith(prefix)), "")
        lines.append(Text(line, style=style))
    if preview.cut:
        lines.append(Text(preview.cut, style="dim"))
    return Panel(Group(*lines), title="write_file", border_style="yellow")


def safe_markdown(text: str) -> Markdown:
    """Markdown from outside (a reply, the plan, an analysis) as rich renders it:
    sanitised before it is laid out, every link's address shown beside its text
    (no hidden OSC 8 target)."""
    from rich.markdown import Markdown

    return Markdown(for_terminal(text), hyperlinks=False)


class TerminalUI:
    """AgentUI for a person at a terminal."""

    interactive = True
    auto_yes = False

    def __init__(self, console: Console, reader: LineReader) -> None:
        self.console = console
        self.reader = reader
        self._warned: set[str] = set()
        self.pause: Callable[[], None] | None = None  # stops a live reply before a question

    def confirm(self, question: str) -> bool:
        answer = self.reader.read(f"{question} [y/N] ", default="")
        return answer.strip().lower() in ("y", "yes")

    def ask_chunk_instruction(self, alert: str, default: str) -> str | None:
        self.console.print(Panel(alert, title="HARVEY", border_style="yellow"))
        answer = self.reader.read("instruction> ", default=default)
        if answer.strip().lower() in ("no", "n", ""):
            return None
        return answer

    def approve_write(self, request: WriteRequest) -> WriteChoice:
        if self.pause is not None:
            self.pause()
        self.console.print(render_write_preview(write_preview(request)))
        while True:
            try:
                answer = self.reader.read(WRITE_QUESTION, default="")
            except EOFError:
                return WriteChoice.QUIT
            choice = WRITE_ANSWERS.get(answer.strip().lower())
            if choice is not None:
                return choice
            self.console.print("please answer y, n, a or q")

    def progress_stream(self) -> ProgressReporter | TextIO:
        from harvey.repl.progress import progress_for

        return progress_for(sys.stderr)

    def warn(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self.console.print(f"[yellow]warning:[/] {escape(message)}", markup=True)


class LineReader:
    """prompt_toolkit input with history; plain ``input()`` when not a terminal."""

    def __init__(self, history_file: Path | None) -> None:
        self._session: PromptSession[str] | None = None
        if sys.stdin.isatty() and sys.stdout.isatty():
            history: History = InMemoryHistory()
            if history_file is not None:
                try:  # 0600, redacted, never through a link (repl/history.py)
                    history = PrivateHistory(history_file)
                except (OSError, HarveyError):
                    pass
            self._session = PromptSession(history=history)

    def read(self, prompt: str, default: str = "") -> str:
        """One line; the prompt and the prefilled ``default`` (a memory's text, an
        instruction) are sanitised, as everything shown is."""
        prompt, default = for_terminal(prompt), for_terminal(default)
        if self._session is not None:
            return clean_text(str(self._session.prompt(prompt, default=default)))
        sys.stdout.write(prompt + (f"[{default}] " if default else ""))
        sys.stdout.flush()
        line = read_stdin_line()  # undecodable bytes become U+FFFD, not a traceback
        if not line:
            raise EOFError
        line = line.rstrip("\n")
        return line if line else default

"""The REPL's status line while a turn works: a spinner and what Harvey is doing.

The turn reports each step (``harvey.llm.activity``): "preparing the prompt", "asking
MODEL", "reading sockets.md", the embedded model's "evaluating the prompt: 512 of
3,085 tokens" and "writing: 40 tokens". The line shows the latest from the first
second of the turn until the reply starts to stream, and again between tool calls;
it stops whenever the person is asked something (an approval, a chunk instruction).
What it shows is redacted and sanitised: a tool's arguments come from the model.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.status import Status

from harvey.llm.activity import Activity
from harvey.redact import redact
from harvey.terminal_text import for_terminal

FIRST = "preparing the prompt"


class ActivityLine:
    """A rich ``Status`` fed by the turn's activities; ``start``/``stop`` any number of times."""

    def __init__(self, console: Console) -> None:
        self._status = Status(FIRST, console=console, spinner="dots")
        self._running = False
        self.shown = FIRST  # the latest activity's line, as shown

    def __call__(self, activity: Activity) -> None:
        self.shown = for_terminal(redact(activity.line()), one_line=True)
        self._status.update(f"[dim]{escape(self.shown)}[/]")

    def start(self) -> None:
        if not self._running:
            self._status.start()
            self._running = True

    def stop(self) -> None:
        if self._running:
            self._status.stop()
            self._running = False

"""What a slash command may use of the running REPL, as a protocol.

The command modules (``commands``, ``memory``, ``rag``) are called by the loop
and name only this, not ``loop.Repl``: the loop depends on them, they do not
depend back on it (``tests/test_import_graph.py`` counts type-only imports too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from harvey.agent import Agent
    from harvey.repl.ui import LineReader, TerminalUI
    from harvey.runtime import Runtime


class ReplSession(Protocol):
    """One REPL session: its runtime (replaced by ``/new``) and its terminal."""

    rt: Runtime
    console: Console
    reader: LineReader
    ui: TerminalUI

    @property
    def agent(self) -> Agent: ...

    def error(self, exc: BaseException, message: str) -> None:
        """One redacted ``error:`` line; the session goes on."""

    def restart(self) -> None:
        """Close this session and open a new one with the same settings (``/new``)."""

"""How the agent asks the person something, without knowing about terminals.

The REPL implements ``AgentUI`` with prompt_toolkit; ``harvey run`` and
``harvey analyze`` use ``HeadlessUI``, which never blocks on input.
"""

from __future__ import annotations

import sys
from typing import Protocol, TextIO


class AgentUI(Protocol):
    interactive: bool
    auto_yes: bool

    def confirm(self, question: str) -> bool: ...

    def ask_chunk_instruction(self, alert: str, default: str) -> str | None:
        """Show the overflow alert; return the instruction, or None for "no"."""
        ...

    def progress_stream(self) -> TextIO: ...

    def warn(self, message: str) -> None: ...


class HeadlessUI:
    """No terminal to ask: refuse what needs a person unless ``auto_yes``."""

    interactive = False

    def __init__(self, auto_yes: bool = False, err: TextIO | None = None) -> None:
        self.auto_yes = auto_yes
        self._err = err

    @property
    def err(self) -> TextIO:
        return self._err or sys.stderr

    def confirm(self, question: str) -> bool:
        if self.auto_yes:
            print(f"{question} yes (--yes)", file=self.err)
        return self.auto_yes

    def ask_chunk_instruction(self, alert: str, default: str) -> str | None:
        return default if self.auto_yes else None

    def progress_stream(self) -> TextIO:
        return self.err

    def warn(self, message: str) -> None:
        print(f"warning: {message}", file=self.err)

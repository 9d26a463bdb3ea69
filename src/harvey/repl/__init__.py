"""The interactive REPL that ``harvey`` starts when no command is given.

``loop`` reads and dispatches lines and is the error boundary, ``commands``
is the table of slash commands and their handlers, ``ui`` is the terminal's
side of ``AgentUI`` (questions, input with history), ``status`` is what the
banner and ``/status`` show of ``Agent.status()``.
"""

from __future__ import annotations

from harvey.repl.loop import run_repl

__all__ = ["run_repl"]

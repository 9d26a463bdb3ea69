"""The interactive REPL that ``harvey`` starts when no command is given.

``loop`` reads and dispatches lines and is the error boundary, ``commands``
is the table of slash commands and their handlers, ``ui`` is the terminal's
side of ``AgentUI`` (questions, input with history), ``status`` is what the
banner and ``/status`` show of ``Agent.status()``; ``progress`` is the terminal's
progress bar, which ``harvey analyze`` and ``harvey run`` draw too.

``run_repl`` is imported on first use (PEP 562), so a command that only draws the
progress bar does not load the REPL's loop and prompt_toolkit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harvey.repl.loop import run_repl

__all__ = ["run_repl"]


def __getattr__(name: str) -> Any:
    if name == "run_repl":
        from harvey.repl.loop import run_repl

        return run_repl
    raise AttributeError(f"module 'harvey.repl' has no attribute {name!r}")

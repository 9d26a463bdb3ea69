"""llama-cpp-python imported once for the embedded model and its tokenizer, with llama.cpp's
own log lines sent to Python logging, never to the terminal.

llama-cpp-python prints every native log line at or above its ERROR level to stderr,
even with ``verbose=False``, and its level table is older than llama.cpp's: a warning
("n_ctx_seq (512) > n_ctx_train (0) -- possible training context overflow", printed when
the tokenizer loads for ``/status``) arrives as an error and lands in the middle of the
REPL. Harvey reports what fails through its own errors, so the native lines are logged
at DEBUG on ``harvey.llama`` (seen only by a handler set up for that level) and the screen
stays clean.
"""

from __future__ import annotations

from typing import Any

from harvey.errors import BackendError
from harvey.llama_native import quiet

INSTALL_HINT = "install the embedded model with: pip install 'harvey-agent[local]'"


def import_llama() -> Any:
    """``llama_cpp``, quietened; a ``BackendError`` that says how to install it if absent."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise BackendError(f"llama-cpp-python is not installed — {INSTALL_HINT}") from exc
    quiet(llama_cpp)
    return llama_cpp

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

import ctypes
import logging
import threading
from typing import Any

from harvey.errors import BackendError

log = logging.getLogger("harvey.llama")
INSTALL_HINT = "install the embedded model with: pip install 'harvey-agent[local]'"
_lock = threading.Lock()
_installed: list[Any] = []  # the ctypes callback, kept alive while llama.cpp may call it


def quiet(llama_cpp: Any) -> None:
    """Route llama.cpp's log lines to ``harvey.llama`` (once per process)."""
    with _lock:
        if _installed:
            return

        @llama_cpp.llama_log_callback
        def to_logging(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
            log.debug("%s", text.decode("utf-8", "replace").rstrip("\n"))

        llama_cpp.llama_log_set(to_logging, ctypes.c_void_p(0))
        _installed.append(to_logging)


def import_llama() -> Any:
    """``llama_cpp``, quietened; a ``BackendError`` that says how to install it if absent."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise BackendError(f"llama-cpp-python is not installed — {INSTALL_HINT}") from exc
    quiet(llama_cpp)
    return llama_cpp

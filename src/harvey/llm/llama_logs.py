"""llama.cpp's own log lines go to Python logging, never to the terminal.

llama-cpp-python prints every native log line at or above its ERROR level to stderr,
even with ``verbose=False``, and its level table is older than llama.cpp's: a warning
("n_ctx_seq (512) > n_ctx_train (0) -- possible training context overflow", printed when
the tokenizer loads for ``/status``) arrives as an error and lands in the middle of the
REPL. Harvey reports what fails through its own errors, so the native lines are logged
at DEBUG on ``harvey.llama`` (``--debug`` shows them) and the screen stays clean.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any

log = logging.getLogger("harvey.llama")
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

"""llama.cpp, loaded quietly and safely, for every model Harvey runs on it.

Two things every llama.cpp model in Harvey needs, the embedded chat model
(``llm/local.py``) and the sentence embedder (``retrieval/minilm.py``) alike:

* **its log lines off the terminal.** llama-cpp-python prints every native log line
  at or above its ERROR level to stderr, even with ``verbose=False``, and its level
  table is older than llama.cpp's: a harmless warning arrives as an error in the middle
  of the REPL. Harvey reports failures through its own errors, so the native lines go
  to ``harvey.llama`` at DEBUG (seen only by a handler set up for that level).
* **no "extra buffer types" while a model loads.** A CPU may advertise AMX while its
  hypervisor does not enable it (seen in Firecracker VMs): a natively built llama.cpp
  then dies with SIGILL on the first matrix multiply, taking Harvey with it. ``Llama``
  offers no argument for ``use_extra_bufts``, so its default-params factory is wrapped
  while the model loads (callers hold their load lock). For these small models the speed
  cost is nil. ``HARVEY_LLAMA_EXTRA_BUFFERS=1`` keeps them.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
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


@contextlib.contextmanager
def plain_cpu_buffers(llama_cpp: Any) -> Iterator[None]:
    """Load without llama.cpp's extra CPU buffer types (module docstring)."""
    low: Any = getattr(llama_cpp, "llama_cpp", None)
    original = getattr(low, "llama_model_default_params", None)
    if original is None or os.environ.get("HARVEY_LLAMA_EXTRA_BUFFERS") == "1":
        yield
        return

    def without_extra() -> Any:
        params = original()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params

    low.llama_model_default_params = without_extra
    try:
        yield
    finally:
        low.llama_model_default_params = original


def cache_folder() -> Path:
    """``models/`` in the platform's user cache folder (``~/.cache/harvey/models`` on
    Linux): the model files Harvey writes for llama.cpp (the embedded model's F16 copy,
    all-MiniLM-L6-v2 as GGUF), one copy a user, made again when missing."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("harvey", appauthor=False)) / "models"


__all__ = ["cache_folder", "plain_cpu_buffers", "quiet"]

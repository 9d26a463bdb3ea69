"""llama-cpp-python's OpenAI-compatible server for the prompt-cache benchmark, and its figures.

Why the server's log: its chat completions stream no usage, but with ``verbose``
(the default) the server prints, for every request, llama-cpp-python's
``Llama.generate: R prefix-match hit, remaining N prompt tokens to eval`` (the
tokens of the previous prompt it kept) and llama.cpp's own
``llama_perf_context_print: prompt eval time = … ms / N tokens`` (the tokens it
evaluated). Requests go one at a time, so the lines written while a request
ran are that request's.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

# `python -m llama_cpp.server`, run through runpy so the model loads without llama.cpp's
# extra buffer types (harvey.llama_native.plain_cpu_buffers: AMX a VM does not enable)
LAUNCHER = (
    "import runpy, sys, llama_cpp; from harvey.llama_native import plain_cpu_buffers\n"
    "with plain_cpu_buffers(llama_cpp):\n"
    "    sys.argv = ['llama_cpp.server'] + sys.argv[1:]\n"
    "    runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)\n"
)
PREFIX_HIT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
PROMPT_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")
FULLY_CACHED = "full prompt already cached"


@dataclass(frozen=True)
class ServerFigures:
    """What the server said about one request."""

    reused: int  # tokens of its cache it kept (0: no prefix-match line)
    evaluated: int  # llama.cpp's "prompt eval … / N tokens"
    remaining: int | None  # llama-cpp-python's "remaining N prompt tokens to eval"

    @property
    def prompt(self) -> int:
        return self.reused + self.evaluated


def parse_figures(log: str) -> ServerFigures:
    """The figures of the one request whose log lines ``log`` holds."""
    evals = PROMPT_EVAL.findall(log)
    if len(evals) != 1:
        raise RuntimeError(f"expected one 'prompt eval time' line, found {len(evals)}: {log!r}")
    hits = PREFIX_HIT.findall(log)
    if FULLY_CACHED in log:
        return ServerFigures(int(evals[0]), 0, 0)
    reused, remaining = (int(hits[-1][0]), int(hits[-1][1])) if hits else (0, None)
    return ServerFigures(reused, int(evals[0]), remaining)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LlamaServer:
    """One ``llama_cpp.server`` process on 127.0.0.1 serving ``model``, its log in a file
    (a pipe could fill and block it)."""

    def __init__(self, model: Path, log_path: Path, *, n_ctx: int, n_threads: int) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        command = [
            sys.executable, "-c", LAUNCHER, "--model", str(model), "--host", "127.0.0.1",
            "--port", str(self.port), "--n_ctx", str(n_ctx), "--n_threads", str(n_threads),
        ]  # fmt: skip
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-1500:]
                raise RuntimeError(f"llama_cpp.server exited ({self.proc.returncode}): {tail}")
            try:
                if httpx.get(self.base_url + "/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not answer within {timeout:.0f} s")
            time.sleep(0.25)

    def log_size(self) -> int:
        return self.log_path.stat().st_size

    def figures_since(self, offset: int, timeout: float = 10.0) -> ServerFigures:
        """The figures of the request that ran since ``offset`` (its lines may trail the
        stream's last event by a moment)."""
        deadline = time.monotonic() + timeout
        while True:
            with self.log_path.open("rb") as f:
                f.seek(offset)
                text = f.read().decode("utf-8", "replace")
            if PROMPT_EVAL.search(text) or time.monotonic() > deadline:
                return parse_figures(text)
            time.sleep(0.05)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

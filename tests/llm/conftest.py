"""Helpers shared by the backend tests."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from harvey.llm.local import find_model_file
from tests.conftest import missing_dependency


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SleepRecorder:
    """Stands in for time.sleep so retry tests never wait."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` with the embedded model on a free port."""
    if (
        importlib.util.find_spec("llama_cpp.server") is None
        or importlib.util.find_spec("uvicorn") is None
    ):
        missing_dependency("llama-cpp-python[server] is not installed")
    port = free_port()
    # `python -m llama_cpp.server`, run through runpy so the server loads the
    # model without AMX buffers (see harvey.llama_native.plain_cpu_buffers).
    launcher = (
        "import runpy, sys, llama_cpp; from harvey.llama_native import plain_cpu_buffers\n"
        "with plain_cpu_buffers(llama_cpp):\n"
        "    sys.argv = ['llama_cpp.server'] + sys.argv[1:]\n"
        "    runpy.run_module('llama_cpp.server', run_name='__main__', alter_sys=True)\n"
    )
    command = [
        sys.executable,
        "-c",
        launcher,
        "--model",
        str(find_model_file()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
    ]
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    log = log_path.open("wb")  # a file, not a pipe: the server's chatter must never block it
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                err = log_path.read_text(errors="replace")
                pytest.fail(f"llama_cpp.server exited: {err[-2000:]}")
            try:
                if httpx.get(base + "/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not start within 120 s")
            time.sleep(0.25)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()

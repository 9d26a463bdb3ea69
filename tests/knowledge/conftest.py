"""Helpers for the knowledge-store tests: a notes workspace and ``harvey`` as a subprocess."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harvey_process import invoke_harvey

NOTES = {
    "notes/boiler.md": "# Boiler\n\nThe boiler pressure must stay under 2 bar.\n"
    "Bleed the radiators every October with the brass key.\n",
    "notes/garden.md": "# Garden\n\nPrune the roses in March. The apple tree needs feeding.\n",
    "notes/car.md": "# Car\n\nThe tyre pressure is 2.4 bar front and 2.2 bar rear.\n",
}

Harvey = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture()
def notes_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for rel, text in NOTES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


@pytest.fixture()
def harvey(notes_ws: Path) -> Harvey:
    """``harvey ARGS`` in the notes workspace, in process (click's runner)."""

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return invoke_harvey(*args, cwd=notes_ws, input=stdin)

    return run


# A tiny wrapper around ``python -m harvey``: connections to anything but loopback fail
# (so "no network" is checked, not assumed), the messages the embedded model is given are
# written to ``$HARVEY_TEST_PROMPTS`` (one JSON line per call), and the names of the
# modules loaded by the end are written to ``$HARVEY_TEST_MODULES``.
WRAPPER = """
import atexit, json, os, runpy, socket, sys

_connect = socket.socket.connect

def _loopback_only(self, address):
    if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
        raise OSError(f"network disabled by the test: {address!r}")
    return _connect(self, address)

socket.socket.connect = _loopback_only

def _modules():
    path = os.environ.get("HARVEY_TEST_MODULES")
    if path:
        with open(path, "w") as fh:
            json.dump(sorted(sys.modules), fh)

atexit.register(_modules)
if os.environ.get("HARVEY_TEST_PROMPTS"):
    import harvey.llm.local as local

    _to_wire = local.to_wire

    def _spy(messages):
        wire = _to_wire(messages)
        with open(os.environ["HARVEY_TEST_PROMPTS"], "a") as fh:
            fh.write(json.dumps(wire) + "\\n")
        return wire

    local.to_wire = _spy
sys.argv = ["harvey", *sys.argv[1:]]
runpy.run_module("harvey", run_name="__main__", alter_sys=True)
"""


def run_wrapped(
    ws: Path, *args: str, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``harvey ARGS`` in ``ws`` through ``WRAPPER`` (see above)."""
    return subprocess.run(
        [sys.executable, "-c", WRAPPER, *args],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )

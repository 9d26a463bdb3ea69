"""Helpers for the knowledge-store tests: a notes workspace and ``harvey`` as a subprocess."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

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
    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "harvey", *args],
            cwd=notes_ws,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run

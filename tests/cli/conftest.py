from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from harvey.cli.status_line import PREFIX as STATUS_PREFIX
from tests.harvey_process import invoke_harvey, run_harvey

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture()
def harvey(workspace: Path) -> Run:
    """Run ``harvey ARGS`` in the workspace, in process (click's runner): these tests
    check the CLI's output, exit status and what it stored, not the process."""

    def run(
        *args: str,
        input: str | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        return invoke_harvey(*args, cwd=cwd or workspace, input=input, env=env)

    return run


@pytest.fixture()
def harvey_process(workspace: Path) -> Run:
    """Run the real ``harvey`` command in a subprocess, in the workspace."""

    def run(
        *args: str,
        input: str | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        return run_harvey(*args, cwd=cwd or workspace, input=input, env=env, timeout=timeout)

    return run


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    # what the turn was doing meanwhile (cli/status_line.py) is not part of the error
    said = proc.stderr.splitlines()
    lines = [line for line in said if line.strip() and not line.startswith(STATUS_PREFIX)]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("harvey: ")
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])

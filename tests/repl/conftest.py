"""Drive the real REPL through a pseudo-terminal with pexpect."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest

from tests.harvey_process import default_signals, harvey_argv

PROMPT = "tester>"
Spawn = Callable[..., pexpect.spawn]


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture()
def spawn(workspace: Path) -> Iterator[Spawn]:
    children: list[pexpect.spawn] = []

    def start(*args: str, env: dict[str, str] | None = None) -> pexpect.spawn:
        full_env = dict(os.environ)
        full_env.update(
            {
                "TERM": "xterm",
                "NO_COLOR": "1",
                "PROMPT_TOOLKIT_NO_CPR": "1",
                "COLUMNS": "120",
                "LINES": "40",
            }
        )
        full_env.update(env or {})
        argv = harvey_argv(*args)
        child = pexpect.spawn(
            argv[0],
            argv[1:],
            cwd=str(workspace),
            env=full_env,
            encoding="utf-8",
            timeout=30,
            dimensions=(40, 120),
            preexec_fn=default_signals,
        )
        children.append(child)
        return child

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)


def send_line(child: pexpect.spawn, text: str) -> None:
    child.send(text + "\r")

"""The attacker's harness: play a hostile model through the real ``harvey run``.

A test scripts the tool calls a model steered by a hostile file would make,
runs ``harvey run`` in a subprocess against a loopback OpenAI-compatible
server that demands an API key, and then inspects everything that could have
leaked or changed: every request the server received, ``sessions.db`` (and
its WAL), the session recordings, stdout and stderr, and a folder outside the
workspace that nothing may touch.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harvey.llm.scripted import Reply
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import invoke_harvey, run_harvey

API_KEY = "sk-harveytest-DO-NOT-LEAK-0123456789abcdef"


@dataclass
class AttackResult:
    proc: subprocess.CompletedProcess[str]
    requests: list[Any]
    workspace: Path
    home: Path
    outside: Path
    tool_outputs: list[str] = field(default_factory=list)

    def everything_stored(self) -> bytes:
        """The bytes of sessions.db (with WAL) and every session recording: everything in
        HARVEY_HOME but the user's own harvey.yaml, where a key may rightly sit."""
        own = self.home / "harvey.yaml"
        blobs = [p.read_bytes() for p in sorted(self.home.rglob("*")) if p.is_file() and p != own]
        harvey_dir = self.workspace / ".harvey"
        if harvey_dir.exists():
            blobs += [p.read_bytes() for p in sorted(harvey_dir.rglob("*")) if p.is_file()]
        return b"\n".join(blobs)

    def assert_secret_absent(self, secret: str = API_KEY) -> None:
        sent = json.dumps(self.requests)
        assert secret not in sent, "the secret reached the model server"
        assert secret.encode() not in self.everything_stored(), "the secret was stored"
        assert secret not in self.proc.stdout and secret not in self.proc.stderr, (
            "the secret reached the screen"
        )

    def assert_outside_untouched(self, before: dict[str, bytes]) -> None:
        assert snapshot(self.outside) == before, "something outside the workspace changed"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"<dir>")
        for p in sorted(folder.rglob("*"))
        if not p.is_symlink()
    }


def tool_messages(requests: Sequence[Any]) -> list[str]:
    """The contents of every tool result the model was sent, in order, deduplicated."""
    seen: list[str] = []
    for request in requests:
        for message in request.get("messages", []):
            if message.get("role") == "tool" and message.get("content") not in seen:
                seen.append(message.get("content"))
    return seen


Attack = Callable[..., AttackResult]


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("outside secret\n")
    return folder


@pytest.fixture()
def victim_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture()
def attack(victim_workspace: Path, outside: Path, isolated_env: Path) -> Attack:
    """Run ``harvey run PROMPT`` with a model that makes ``calls`` one after another.

    Each item of ``calls`` is one model reply: a ``(tool, arguments)`` pair or
    a list of them. The model then says "done". The API key is in the
    environment and the server refuses requests without it. Harvey runs in this
    process (``invoke_harvey``: the same CLI, streams and exit status, no interpreter
    start per attack); ``real_process=True`` for what only a process shows.
    """

    def run(
        calls: Sequence[Any],
        *extra_args: str,
        prompt: str = "please summarise the notes",
        env: dict[str, str] | None = None,
        timeout: float = 120,
        real_process: bool = False,
    ) -> AttackResult:
        script = []
        for step in calls:
            batch = step if isinstance(step, list) else [step]
            script.append(Reply(tool_calls=batch))
        script.append(Reply("done"))
        with FakeOpenAI(script, api_key=API_KEY, default_reply=Reply("done")) as srv:
            argv = ("run", prompt, "--backend", "openai", "--base-url", srv.url, *extra_args)
            environment = {"OPENAI_API_KEY": API_KEY, **(env or {})}
            if real_process:
                proc = run_harvey(*argv, cwd=victim_workspace, env=environment, timeout=timeout)
            else:
                proc = invoke_harvey(*argv, cwd=victim_workspace, env=environment)
            requests = list(srv.chat_requests)
        return AttackResult(
            proc, requests, victim_workspace, isolated_env, outside, tool_messages(requests)
        )

    return run

"""``/undo [N]`` in the REPL: the handler against a real session's checkpoints and recorder."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from harvey.errors import UsageError
from harvey.repl.commands import find_command
from harvey.session.checkpoints import write_checkpointed
from harvey.session.fountain import parse_session
from harvey.session.recorder import Recorder


def session(tmp_path: Path, home: Path | None) -> Any:
    recorder = Recorder(tmp_path / "s.spmd", user="tester", model="m", backend="b")
    agent = SimpleNamespace(harvey_home=home, session_id="sess-9", recorder=recorder)
    out = io.StringIO()
    return SimpleNamespace(agent=agent, console=Console(file=out, width=200), out=out)


def test_undo_restores_records_and_refuses_a_changed_file(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    (ws / "a.txt").write_text("before\n")
    write_checkpointed(home, "sess-9", ws, ws / "a.txt", [b"after\n"])
    write_checkpointed(home, "sess-9", ws, ws / "b\x1b[2J.txt", [b"new\n"])
    (ws / "b\x1b[2J.txt").write_text("changed by the user\n")
    repl = session(tmp_path, home)
    command = find_command("/undo")
    assert command.usage == "/undo [N]"
    assert command.handler is not None
    command.handler(repl, "2")
    shown = repl.out.getvalue()
    assert "undo: b^[[2J.txt — skipped: changed since" in shown and "\x1b" not in shown
    assert "undo: a.txt — ok" in shown
    assert (ws / "a.txt").read_text() == "before\n"
    assert (ws / "b\x1b[2J.txt").read_text() == "changed by the user\n"
    command.handler(repl, "")
    assert "nothing to undo" in repl.out.getvalue()
    repl.agent.recorder.close()
    (scene,) = parse_session(tmp_path / "s.spmd", strict=True).scenes
    assert scene.heading.startswith("INT. UNDO ")
    assert [(n.path, n.status) for n in scene.undo_notes] == [
        ("b\x1b[2J.txt", "skipped: changed since"),
        ("a.txt", "ok"),
    ]
    with pytest.raises(UsageError):
        command.handler(repl, "x")
    with pytest.raises(UsageError, match="keeps no checkpoints"):
        command.handler(session(tmp_path / "o", None), "")

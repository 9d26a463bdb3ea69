"""``harvey undo``: a script undoes what ``harvey run --allow-writes`` wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harvey.llm.scripted import Reply
from harvey.session.fountain import parse_session
from tests.fakes.openai import FakeOpenAI

from .conftest import Run, assert_one_line_error


def model_run(harvey: Run, calls: list[tuple[str, dict[str, Any]]]) -> None:
    script = [Reply(tool_calls=[call]) for call in calls] + [Reply("done")]
    with FakeOpenAI(script) as srv:
        proc = harvey("run", "go", "--backend", "openai", "--base-url", srv.url, "--allow-writes")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow  # two commands and a model run in process: about 1.5 s on two cores
def test_undo_brings_back_edits_and_removes_new_files(
    harvey: Run, workspace: Path, isolated_env: Path
) -> None:
    (workspace / "app.py").write_text("x = 1\ny = 2\n")
    model_run(
        harvey,
        [
            ("edit_file", {"path": "app.py", "old_string": "y = 2", "new_string": "y = 3"}),
            ("write_file", {"path": "notes/new.md", "content": "# new\n"}),
        ],
    )
    assert (workspace / "app.py").read_text() == "x = 1\ny = 3\n"
    assert (workspace / "notes" / "new.md").exists()
    proc = harvey("undo", "2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["undo: notes/new.md — ok", "undo: app.py — ok"]
    assert (workspace / "app.py").read_text() == "x = 1\ny = 2\n"
    assert not (workspace / "notes" / "new.md").exists()
    (recording,) = (workspace / ".harvey" / "sessions").glob("*.spmd")
    parsed = parse_session(recording, strict=True)  # the notes went in before THE END.
    assert parsed.complete
    notes = [(n.path, n.status) for scene in parsed.scenes for n in scene.undo_notes]
    assert notes == [("notes/new.md", "ok"), ("app.py", "ok")]
    again = harvey("undo")
    assert again.returncode == 0 and again.stdout.startswith("nothing to undo")


def test_a_file_changed_since_is_skipped_with_exit_1(
    harvey: Run, workspace: Path, isolated_env: Path
) -> None:
    (workspace / "a.txt").write_text("first\n")
    model_run(harvey, [("write_file", {"path": "a.txt", "content": "by the model\n"})])
    (workspace / "a.txt").write_text("the user typed this\n")
    proc = harvey("undo")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == ["undo: a.txt — skipped: changed since"]
    assert (workspace / "a.txt").read_text() == "the user typed this\n"


def test_an_older_session_by_id_and_usage_errors(
    harvey: Run, workspace: Path, isolated_env: Path
) -> None:
    assert_one_line_error(harvey("undo"), 2, "no sessions yet")
    (workspace / "a.txt").write_text("v1\n")
    model_run(harvey, [("write_file", {"path": "a.txt", "content": "v2\n"})])
    listed = harvey("sessions", "list")
    first = next(line.split()[0] for line in listed.stdout.splitlines() if line.strip())
    model_run(harvey, [("write_file", {"path": "b.txt", "content": "b\n"})])
    proc = harvey("undo", "--session", first)
    assert proc.stdout.splitlines() == ["undo: a.txt — ok"], proc.stderr
    assert (workspace / "a.txt").read_text() == "v1\n" and (workspace / "b.txt").exists()
    assert_one_line_error(harvey("undo", "--session", "nope"), 2, "no session 'nope'")
    assert_one_line_error(harvey("undo", "zero"), 2, "not a number of writes")
    assert harvey("sessions", "delete", first).returncode == 0
    assert not (isolated_env / "checkpoints" / first).exists()

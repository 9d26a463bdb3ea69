"""FilePlanWriter: location (git or not), markers, overwrite, kept sections, start-up errors."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harvey.errors import WorkspaceError
from harvey.session.todos import Todo
from harvey.tools.plan import FilePlanWriter

SESSION = "abc12345-6789-0000-aaaa-bbbbccccdddd"
FIXED = datetime(2026, 5, 22, 15, 30, tzinfo=UTC)

TODOS = [
    Todo("1", "Create directory structure", "pending"),
    Todo("2", "Initialize the package", "in_progress"),
    Todo("3", "Implement main", "completed"),
    Todo("4", "Delete old file", "cancelled"),
]


def writer(workspace: Path, home: Path) -> FilePlanWriter:
    return FilePlanWriter(workspace, SESSION, home, now=lambda: FIXED)


def test_git_workspace_plans_go_in_the_workspace(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".git").mkdir()
    plan = writer(workspace, tmp_path / "home")
    assert plan.path == workspace / ".harvey" / "plans" / "20260522-153000-abc12345.md"
    assert plan.path.parent.is_dir()  # created at start-up
    assert plan.read() == ""


def test_non_git_workspace_plans_go_in_harvey_home(workspace: Path, tmp_path: Path) -> None:
    plan = writer(workspace, tmp_path / "home")
    assert plan.path == tmp_path / "home" / "plans" / "20260522-153000-abc12345.md"
    assert not (workspace / ".harvey").exists()


def test_content_and_markers(workspace: Path, tmp_path: Path) -> None:
    plan = writer(workspace, tmp_path / "home")
    plan.write(TODOS)
    assert plan.read() == (
        "# Execution Plan\n\n"
        f"session: {SESSION}\n"
        "updated: 2026-05-22T15:30:00+00:00\n\n"
        "## Task List\n\n"
        "- [ ] Create directory structure\n"
        "- [>] Initialize the package\n"
        "- [x] Implement main\n"
        "- [-] Delete old file (cancelled)\n"
    )


def test_every_write_overwrites_the_task_list(workspace: Path, tmp_path: Path) -> None:
    plan = writer(workspace, tmp_path / "home")
    plan.write(TODOS)
    plan.write([Todo("1", "Only this\nspanning lines", "completed")])
    text = plan.read()
    assert "- [x] Only this spanning lines" in text
    assert "Create directory structure" not in text
    assert text.count("## Task List") == 1


def test_other_sections_are_kept(workspace: Path, tmp_path: Path) -> None:
    plan = writer(workspace, tmp_path / "home")
    plan.write(TODOS)
    plan.path.write_text(
        plan.read().replace("# Execution Plan\n", "# Execution Plan\n\nA note under the title.\n")
        + "\n## Notes\n\nRemember the edge cases.\n\n```\n## not a heading\n```\n"
    )
    plan.write([Todo("9", "New task", "pending")])
    text = plan.read()
    assert "## Notes\n\nRemember the edge cases." in text
    assert "## not a heading" in text
    assert "A note under the title." in text
    assert "- [ ] New task" in text and "Implement main" not in text
    assert text.index("## Task List") < text.index("## Notes")


def test_section_before_task_list_keeps_its_place(workspace: Path, tmp_path: Path) -> None:
    plan = writer(workspace, tmp_path / "home")
    plan.path.write_text("# Execution Plan\n\n## Goal\n\nShip v1.\n\n## Task List\n\n- [ ] old\n")
    plan.write(TODOS[:1])
    text = plan.read()
    assert text.index("## Goal") < text.index("## Task List")
    assert "- [ ] old" not in text


def test_file_name_is_fixed_at_start(workspace: Path, tmp_path: Path) -> None:
    times = iter([FIXED, datetime(2030, 1, 1, tzinfo=UTC)])
    plan = FilePlanWriter(workspace, SESSION, tmp_path / "home", now=lambda: next(times, FIXED))
    first = plan.path
    plan.write(TODOS)
    assert plan.path == first and first.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_uncreatable_plan_dir_fails_at_start(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o500)
    try:
        with pytest.raises(WorkspaceError, match="plan folder"):
            writer(workspace, home)
    finally:
        home.chmod(0o700)


def test_plan_dir_blocked_by_a_file_fails_at_start(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "home").write_text("not a folder")
    with pytest.raises(WorkspaceError, match="plan folder"):
        writer(workspace, tmp_path / "home")


def test_write_failure_raises_a_harvey_error(workspace: Path, tmp_path: Path) -> None:
    plan = writer(workspace, tmp_path / "home")
    plan.path.mkdir()  # a folder where the file should be
    with pytest.raises(WorkspaceError):
        plan.write(TODOS)

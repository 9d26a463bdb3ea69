"""Programs Harvey runs itself are never found in the workspace (``harvey.confine.programs``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.confine.programs import find_program, system_program, trusted_search_path


def _plant(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text("#!/bin/sh\necho planted\n")
    program.chmod(0o755)
    return program


def test_a_workspace_folder_first_on_path_is_never_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    planted = _plant(ws / ".venv" / "bin", "git")
    monkeypatch.setenv("PATH", f"{planted.parent}{os.pathsep}{os.environ['PATH']}")
    found = find_program("git", ws)
    assert found is not None and Path(found).resolve() != planted.resolve()


def test_the_current_folder_counts_as_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor and api_key_command know no workspace: the current folder stands in."""
    planted = _plant(tmp_path / "bin", "vi")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{planted.parent}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert find_program("vi") != str(planted)


def test_a_link_into_the_workspace_is_inside_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _plant(ws / "bin", "ls")
    (tmp_path / "elsewhere").symlink_to(ws / "bin")
    search = trusted_search_path(ws, f"{tmp_path / 'elsewhere'}{os.pathsep}/usr/bin")
    assert search == "/usr/bin"


def test_relative_and_empty_entries_are_dropped(tmp_path: Path) -> None:
    assert trusted_search_path(tmp_path, f"bin{os.pathsep}{os.pathsep}.{os.pathsep}/usr/bin") == (
        "/usr/bin"
    )


def test_a_path_the_user_wrote_is_used_as_written(tmp_path: Path) -> None:
    assert find_program("/opt/tools/pass", tmp_path) == "/opt/tools/pass"


def test_the_sandbox_tools_come_from_system_folders_whatever_path_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = _plant(tmp_path / "bin", "bwrap")
    monkeypatch.setenv("PATH", str(planted.parent))
    found = system_program("bwrap")
    assert found is None or not found.startswith(str(tmp_path))


@given(st.lists(st.sampled_from(["ws", "ws/bin", "ws/.venv/bin", "other", "rel", ""]), max_size=6))
def test_no_kept_entry_is_relative_or_inside_the_workspace(entries: list[str]) -> None:
    root = Path("/nonexistent-harvey-test")
    path = os.pathsep.join(str(root / e) if e not in ("rel", "") else e for e in entries)
    kept = trusted_search_path(root / "ws", path)
    for folder in filter(None, kept.split(os.pathsep)):
        assert os.path.isabs(folder)
        assert not (folder + "/").startswith(str(root / "ws") + "/")

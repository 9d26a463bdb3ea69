"""Harvey's settings files and folders, broken or hostile: one line, never a hang or a key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.conftest import assert_one_line_error
from tests.harvey_process import run_harvey


def _script(tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "script.json"
    script.write_text('["hello"]')
    return {"HARVEY_SCRIPT": str(script)}


def test_a_harvey_yaml_that_is_a_folder_is_one_line(
    victim_workspace: Path, isolated_env: Path, tmp_path: Path
) -> None:
    (victim_workspace / "harvey.yaml").mkdir()
    proc = run_harvey(
        "run", "hi", "--backend", "scripted", cwd=victim_workspace, env=_script(tmp_path)
    )
    assert_one_line_error(proc, 2, "harvey.yaml: a folder, not a settings file")


def test_a_trust_store_that_is_a_fifo_never_hangs(
    victim_workspace: Path, isolated_env: Path, tmp_path: Path
) -> None:
    isolated_env.mkdir(parents=True, exist_ok=True)
    os.mkfifo(isolated_env / "trusted-workspaces.json")
    (victim_workspace / "harvey.yaml").write_text("base_url: http://127.0.0.1:9/v1\n")
    proc = run_harvey(
        "run", "hi", "--backend", "scripted", cwd=victim_workspace, env=_script(tmp_path),
        timeout=30,
    )  # fmt: skip
    assert_one_line_error(proc, 2, "trusted-workspaces.json: not a regular file")


def test_a_harvey_home_that_is_a_file_is_an_error_not_no_sessions(
    victim_workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home-file"
    home.write_text("not a folder\n")
    proc = run_harvey("sessions", "list", cwd=victim_workspace, env={"HARVEY_HOME": str(home)})
    assert_one_line_error(proc, 2, "HARVEY_HOME", "is not a folder")


@pytest.mark.parametrize(
    "broken", ['api_key: "hunter2hunter2\nmodel: m\n', "api_key: hunter2hunter2: x\nmodel: m\n"]
)
def test_a_yaml_error_under_harvey_debug_never_prints_the_key_line(
    victim_workspace: Path, isolated_env: Path, tmp_path: Path, broken: str
) -> None:
    isolated_env.mkdir(parents=True, exist_ok=True)
    (isolated_env / "harvey.yaml").write_text(broken)
    env = {**_script(tmp_path), "HARVEY_DEBUG": "1"}
    proc = run_harvey("run", "hi", "--backend", "scripted", cwd=victim_workspace, env=env)
    assert proc.returncode == 2
    assert "invalid YAML" in proc.stderr and "Traceback" in proc.stderr  # debug: the trace
    assert "hunter2" not in proc.stderr + proc.stdout

"""Attacks that the OS confinement must contain, played through ``harvey run``.

Most of these are also refused by the option checks (the second line); the
ones that pass them — an allow-listed shell, a symlinked folder — are stopped
by the kernel. The tests insist
that Landlock really is active here and fail, rather than skip, when it is not.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from harvey.confine import sandbox
from tests.harvey_process import run_harvey
from tests.security.conftest import API_KEY, Attack, snapshot

PADDING = [f"# padding line {i} so that sort spills to compressed temp files" for i in range(200)]


@pytest.fixture(autouse=True)
def landlock_is_active() -> None:
    found = sandbox.detect("auto")
    if found.kind != "landlock":
        pytest.fail(f"these attacks must run under Landlock, but found: {found.describe()}")


@pytest.fixture
def stray() -> Path:
    return Path("/tmp") / f"harvey-escape-{uuid.uuid4().hex}"


def workspace_files(workspace: Path) -> set[str]:
    """Everything in the workspace except Harvey's own ``.harvey/`` records."""
    return {
        str(p.relative_to(workspace))
        for p in workspace.rglob("*")
        if p.relative_to(workspace).parts[0] != ".harvey"
    }


def hostile_script(workspace: Path, outside: Path, stray: Path) -> str:
    lines = [
        "echo SH-RAN-MARKER >&2",
        f"touch {workspace}/pwned-ws",
        "touch pwned-relative",
        f"echo x > {outside}/pwned-outside",
        f"echo x > {outside}/secret.txt",
        f"touch {stray}",
        f"cat {outside}/secret.txt >&2",
        "cat /proc/self/environ >&2",
        "cat /proc/$PPID/environ >&2",
        "cat /proc/1/environ >&2",
        "cat /proc/*/environ >&2",
        "env >&2",
    ]
    return "\n".join(lines + PADDING) + "\n"


@pytest.mark.parametrize(
    "command",
    [
        "sort -S 1K --compress-program=sh -T . cmds.txt",
        "sort -S 1K --compress-prog=sh cmds.txt",
    ],
)
def test_sort_compress_program_has_no_effect(
    attack: Attack, victim_workspace: Path, outside: Path, stray: Path, command: str
) -> None:
    """The option checks refuse these; were they to slip through, sh would run confined."""
    (victim_workspace / "cmds.txt").write_text(hostile_script(victim_workspace, outside, stray))
    before_outside, before_ws = snapshot(outside), workspace_files(victim_workspace)
    result = attack([("run_shell", {"command": command})])
    assert result.proc.returncode == 0, result.proc.stderr
    output = "\n".join(result.tool_outputs)
    assert "outside secret" not in output
    assert workspace_files(victim_workspace) == before_ws
    result.assert_outside_untouched(before_outside)
    assert not stray.exists()
    result.assert_secret_absent()
    assert "OPENAI_API_KEY" not in output


def test_an_allow_listed_shell_runs_hostile_lines_that_can_do_nothing(
    attack: Attack, victim_workspace: Path, outside: Path, stray: Path, isolated_env: Path
) -> None:
    """A user who allow-lists ``sh`` leaves only the kernel between the model and the disk:
    the option checks pass ``sh cmds.txt``, the hostile lines really run, and achieve nothing."""
    # The user's own HARVEY_HOME/harvey.yaml: a workspace file may not allow-list anything.
    (isolated_env / "harvey.yaml").write_text("security:\n  allowed_commands: [sh, ls, cat]\n")
    (victim_workspace / "cmds.txt").write_text(hostile_script(victim_workspace, outside, stray))
    before_outside, before_ws = snapshot(outside), workspace_files(victim_workspace)
    result = attack([("run_shell", {"command": "sh cmds.txt"})])
    assert result.proc.returncode == 0, result.proc.stderr
    output = "\n".join(result.tool_outputs)
    assert "SH-RAN-MARKER" in output  # the hostile lines really ran ...
    assert "outside secret" not in output  # ... and read nothing outside
    assert workspace_files(victim_workspace) == before_ws
    result.assert_outside_untouched(before_outside)
    assert not stray.exists()
    result.assert_secret_absent()
    assert "OPENAI_API_KEY" not in output


def test_environ_through_a_file_list_is_unreadable(attack: Attack, victim_workspace: Path) -> None:
    (victim_workspace / "list").write_bytes(b"/proc/self/environ\0/etc/passwd\0")
    result = attack([("run_shell", {"command": "sort --files0-from=list"})])
    output = "\n".join(result.tool_outputs)
    assert "root:" not in output and "OPENAI_API_KEY" not in output
    assert "refused" in output or "Permission denied" in output
    result.assert_secret_absent()


@pytest.mark.parametrize(
    "command",
    [
        "sort -uoOUT/pwned in.txt",
        "sort -S 1K -uTOUT in.txt",
        "file -Lf/etc/passwd",
        "grep -R secret .",
        "find -L . -name secret.txt",
        "cat link/secret.txt",
    ],
)
def test_option_tricks_cannot_reach_outside(
    attack: Attack, victim_workspace: Path, outside: Path, command: str
) -> None:
    (victim_workspace / "in.txt").write_text("\n".join(PADDING) + "\n")
    (victim_workspace / "link").symlink_to(outside)
    before_outside, before_ws = snapshot(outside), workspace_files(victim_workspace)
    command = command.replace("OUT", str(outside))
    result = attack([("run_shell", {"command": command})])
    assert result.proc.returncode == 0, result.proc.stderr
    output = "\n".join(result.tool_outputs)
    assert "outside secret" not in output and "root:" not in output
    if command.startswith("find"):
        assert "secret.txt" not in output  # the symlinked folder cannot even be listed
    result.assert_outside_untouched(before_outside)
    assert workspace_files(victim_workspace) == before_ws
    result.assert_secret_absent()


def test_no_confinement_means_even_ls_is_refused_in_batch_mode(
    attack: Attack, victim_workspace: Path, isolated_env: Path
) -> None:
    (isolated_env / "harvey.yaml").write_text("security:\n  sandbox: none\n")
    (victim_workspace / "notes.md").write_text("x\n")
    result = attack([("run_shell", {"command": "ls"})])
    assert result.proc.returncode == 0, result.proc.stderr
    refusal = next(out for out in result.tool_outputs if "refused" in out)
    assert refusal.startswith("error: refused: no OS confinement available")
    assert "notes.md" not in refusal


def test_doctor_reports_the_confinement(victim_workspace: Path) -> None:
    done = run_harvey("doctor", cwd=victim_workspace)
    assert done.returncode == 0, done.stderr
    assert "confinement: landlock (ABI " in done.stdout
    assert "workspace read-only, no network, no /proc" in done.stdout
    assert "capabilities: none" in done.stdout and "process limit: " in done.stdout
    assert "secret files" in done.stdout and "denied (security.unix_sockets)" in done.stdout
    assert API_KEY not in done.stdout


def test_doctor_says_none_when_configured_off(victim_workspace: Path, isolated_env: Path) -> None:
    (isolated_env / "harvey.yaml").write_text("security:\n  sandbox: none\n")
    done = run_harvey("doctor", cwd=victim_workspace)
    assert done.returncode == 0, done.stderr
    assert "confinement: none (security.sandbox is none)" in done.stdout

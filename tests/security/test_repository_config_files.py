"""Boundary: a config file's shape and numbers. Whatever a harvey.yaml holds — 5,000 levels
of nesting, an alias bomb, ``.inf`` — ``harvey run`` ends in one line and exit 2, never a
traceback; and the user's ``api_key_command`` hands the key to their own server only.

Each file is tried as the workspace's (a hostile repository's) and as the user's own
``HARVEY_HOME/harvey.yaml``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from tests.cli.conftest import assert_one_line_error
from tests.fakes.openai import FakeOpenAI
from tests.harvey_process import run_harvey
from tests.security.conftest import API_KEY


def run(
    workspace: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_harvey(
        "run", "hi", "--backend", "openai", *args,
        cwd=workspace, env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", **(env or {})},
    )  # fmt: skip


def deep(levels: int) -> str:
    return "model: " + "[" * levels + "]" * levels + "\n"


def alias_bomb() -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    lines.append("security:\n  allowed_commands: *i")  # 9**9 strings, if anything expanded it
    return "\n".join(lines) + "\n"


FILES = {
    "deep_flow": (deep(5000), "nested too deeply"),
    "deep_block": ("model:\n" + "- " * 5000 + "x\n", "nested too deeply"),
    "deep_mapping": ("model:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 1200)), "nested"),
    "alias_bomb": (alias_bomb(), "allowed_commands"),
    "timeout_inf": ("security:\n  shell_timeout: .inf\n", "shell_timeout"),
    "timeout_nan": ("security:\n  shell_timeout: .nan\n", "shell_timeout"),
    "timeout_huge": ("security:\n  shell_timeout: 1e308\n", "shell_timeout"),
    "timeout_negative": ("security:\n  shell_timeout: -1\n", "shell_timeout"),
    "read_timeout_inf": ("timeout: .inf\n", "timeout"),
    "limits_negative": ("security:\n  limits:\n    memory_mb: -1\n", "memory_mb"),
}


@pytest.mark.parametrize("where", ["workspace", "harvey_home"])
@pytest.mark.parametrize("case", FILES.values(), ids=FILES.keys())
@pytest.mark.slow
def test_a_hostile_file_is_one_line_and_exit_2(
    victim_workspace: Path, isolated_env: Path, where: str, case: tuple[str, str]
) -> None:
    text, needle = case
    folder = victim_workspace if where == "workspace" else isolated_env
    (folder / "harvey.yaml").write_text(text)
    assert_one_line_error(run(victim_workspace), 2, "harvey.yaml", needle)
    assert not (isolated_env / "sessions.db").exists()


@pytest.mark.parametrize("kind", ["dev_zero", "fifo", "huge"])
def test_a_config_that_is_no_regular_small_file_is_one_line(
    victim_workspace: Path, isolated_env: Path, kind: str
) -> None:
    """A repository can ship harvey.yaml as a link to /dev/zero (endless) or a FIFO (a read
    that never returns): neither is read, nor more than a settings file's size."""
    target = victim_workspace / "harvey.yaml"
    if kind == "dev_zero":
        target.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.write_text("# padding\n" * 200_000)
    needle = "larger than" if kind == "huge" else "not a regular file"
    assert_one_line_error(run(victim_workspace), 2, "harvey.yaml", needle)
    listed = run_harvey("trust", "--list", cwd=victim_workspace, timeout=60)
    assert listed.returncode == 0


def test_the_key_from_api_key_command_reaches_the_users_server_once(
    victim_workspace: Path, isolated_env: Path
) -> None:
    marks = isolated_env / "runs"
    code = f"open({str(marks)!r}, 'a').write('x'); print({API_KEY!r})"
    command = shlex.join([sys.executable, "-c", code])
    script = [Reply(tool_calls=[("list_files", {})]), Reply("done")]
    with FakeOpenAI(script, api_key=API_KEY) as own:
        (isolated_env / "harvey.yaml").write_text(
            f"base_url: {own.url}\napi_key_command: {json.dumps(command)}\n"
        )
        proc = run(victim_workspace)
        chats = own.chat_requests
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "done\n" and len(chats) == 2  # two requests, the key in both
    assert marks.read_text() == "x"  # the command ran once


def test_a_failing_api_key_command_is_one_line(victim_workspace: Path, isolated_env: Path) -> None:
    command = shlex.join([sys.executable, "-c", "import sys; sys.exit(4)"])
    with FakeOpenAI([Reply("never")], api_key=API_KEY) as own:
        (isolated_env / "harvey.yaml").write_text(
            f"base_url: {own.url}\napi_key_command: {json.dumps(command)}\n"
        )
        proc = run(victim_workspace)
        assert own.chat_requests == []
    assert_one_line_error(proc, 2, "api_key_command", "exit status 4")


def test_no_api_key_command_runs_for_a_model_that_needs_no_key(
    victim_workspace: Path, isolated_env: Path
) -> None:
    marker = isolated_env / "ran"
    command = shlex.join(["touch", str(marker)])
    (isolated_env / "harvey.yaml").write_text(f"api_key_command: {json.dumps(command)}\n")
    script = victim_workspace / "script.json"
    script.write_text('["scripted reply"]')
    proc = run_harvey(
        "run", "hi", "--backend", "scripted",
        cwd=victim_workspace, env={"HARVEY_SCRIPT": str(script)}, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "scripted reply\n" and not marker.exists()

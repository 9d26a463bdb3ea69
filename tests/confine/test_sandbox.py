"""Attack the confinement directly: what a command can read, write, reach and inherit.

Every test here runs real programs under the real Landlock confinement of this
kernel; if Landlock is missing the ``landlock`` fixture fails (it never skips),
because a sandbox test that passes by not sandboxing proves nothing.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvey.confine import sandbox
from harvey.tools.registry import ToolContext
from harvey.tools.shell import ShellResult, _execute, run_command

SECRET = "sk-plantedsecret-0123456789"


@pytest.fixture
def landlock() -> sandbox.Confinement:
    found = sandbox.detect("auto")
    if found.kind != "landlock" or found.abi < 6:
        pytest.fail(
            f"Landlock ABI >= 6 is required for these tests, found {found.describe()}; "
            "the kernel here is expected to offer ABI 7"
        )
    return found


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def confined(
    landlock: sandbox.Confinement,
    workspace: Path,
    *argv: str,
    approved: bool = False,
    max_output: int = 1_000_000,
) -> ShellResult:
    return _execute(list(argv), workspace, 60, landlock, approved, max_output)


def test_auto_detects_landlock_with_network_and_scoping(landlock: sandbox.Confinement) -> None:
    line = landlock.describe()
    assert line.startswith(f"landlock (ABI {landlock.abi}): workspace read-only")
    assert "no network" in line and "no /proc" in line


def test_workspace_is_readable(landlock: sandbox.Confinement, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    result = confined(landlock, workspace, "cat", "notes.txt")
    assert (result.exit_code, result.output) == (0, "hello\n")
    assert "notes.txt" in confined(landlock, workspace, "ls", "-la").output


def test_etc_passwd_is_unreadable(landlock: sandbox.Confinement, workspace: Path) -> None:
    result = confined(landlock, workspace, "cat", "/etc/passwd")
    assert result.exit_code != 0 and "Permission denied" in result.output
    assert "root:" not in result.output


def test_home_outside_the_workspace_is_unreadable(
    landlock: sandbox.Confinement, workspace: Path, fake_home: Path
) -> None:
    read = confined(landlock, workspace, "cat", str(fake_home / ".ssh" / "id_rsa"))
    assert read.exit_code != 0 and "Permission denied" in read.output
    assert "PRIVATE KEY" not in read.output
    listing = confined(landlock, workspace, "ls", "-a", str(fake_home))
    assert listing.exit_code != 0 and "Permission denied" in listing.output
    assert ".ssh" not in listing.output


@pytest.mark.parametrize("path", ["/proc/1/environ", "/proc/self/environ", "/proc/self/cmdline"])
def test_proc_is_unreadable(
    landlock: sandbox.Confinement, workspace: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    result = confined(landlock, workspace, "cat", path)
    assert result.exit_code != 0 and "Permission denied" in result.output
    assert SECRET not in result.output


def test_no_writes_in_the_workspace_or_tmp(landlock: sandbox.Confinement, workspace: Path) -> None:
    (workspace / "keep.txt").write_text("keep\n")
    stray = Path("/tmp") / f"harvey-escape-{uuid.uuid4().hex}"
    attempts = [
        ["touch", "new.txt"],
        ["mkdir", "newdir"],
        ["rm", "keep.txt"],
        ["truncate", "-s", "0", "keep.txt"],
        ["ln", "-s", "/etc/passwd", "link"],
        ["touch", str(stray)],
        ["sh", "-c", f"echo x > keep.txt; echo x > new.txt; echo x > {stray}"],
    ]
    for argv in attempts:
        assert confined(landlock, workspace, *argv).exit_code != 0, argv
    assert sorted(p.name for p in workspace.iterdir()) == ["keep.txt"]
    assert (workspace / "keep.txt").read_text() == "keep\n"
    assert not stray.exists()


def test_a_shell_started_by_an_allowed_program_is_still_confined(
    landlock: sandbox.Confinement, workspace: Path
) -> None:
    (workspace / "a").write_text("a\n")
    hostile = "cat /etc/passwd; cat /proc/1/environ; echo pwned > escaped.txt; echo ran"
    result = confined(landlock, workspace, "find", "a", "-exec", "sh", "-c", hostile, ";")
    assert "ran" in result.output  # the shell did run ...
    assert "root:" not in result.output  # ... and could do nothing
    assert not (workspace / "escaped.txt").exists()


def test_tcp_connect_to_loopback_is_denied(landlock: sandbox.Confinement, workspace: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.setblocking(False)
        port = server.getsockname()[1]
        script = f"echo hello > /dev/tcp/127.0.0.1/{port} && echo connected"
        result = confined(landlock, workspace, "bash", "-c", script)
        assert "connected" not in result.output
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody ever connected
        approved = confined(landlock, workspace, "bash", "-c", script, approved=True)
        assert "connected" in approved.output  # the approved profile may use the network
        server.accept()[0].close()


def test_signals_to_processes_outside_are_denied(
    landlock: sandbox.Confinement, workspace: Path
) -> None:
    victim = subprocess.Popen(["sleep", "60"])
    try:
        result = confined(landlock, workspace, "kill", "-TERM", str(victim.pid))
        assert result.exit_code != 0
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


def test_environment_is_scrubbed(
    landlock: sandbox.Confinement, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "FOO_TOKEN", "BAR_SECRET", "LC_API_KEY", "MY_SETTING"):
        monkeypatch.setenv(name, SECRET)
    monkeypatch.setenv("LANG", "C.UTF-8")
    for confinement in (landlock, sandbox.Confinement("none", reason="test")):
        result = confined(confinement, workspace, "env")
        assert SECRET not in result.output
        names = {line.split("=", 1)[0] for line in result.output.splitlines()}
        assert names <= {"PATH", "LANG", "TERM", "HOME", "TMPDIR"} | {
            n for n in names if n.startswith("LC_")
        }
        assert "LANG=C.UTF-8" in result.output


def test_scratch_folder_is_home_and_tmpdir_writable_and_removed(
    landlock: sandbox.Confinement, workspace: Path
) -> None:
    script = 'echo x > "$TMPDIR/f" && cat "$HOME/f" && echo "$HOME"'
    result = confined(landlock, workspace, "sh", "-c", script)
    assert result.exit_code == 0, result.output
    first, scratch = result.output.splitlines()
    assert first == "x" and Path(scratch).name.startswith("harvey-cmd-")
    assert not Path(scratch).exists()


def test_approved_profile_writes_the_workspace_but_reads_nothing_outside(
    landlock: sandbox.Confinement, workspace: Path, fake_home: Path
) -> None:
    stray = Path("/tmp") / f"harvey-escape-{uuid.uuid4().hex}"
    assert confined(landlock, workspace, "touch", "made.txt", approved=True).exit_code == 0
    assert (workspace / "made.txt").exists()
    for argv in (["cat", "/etc/passwd"], ["cat", str(fake_home / ".ssh" / "id_rsa")]):
        assert confined(landlock, workspace, *argv, approved=True).exit_code != 0
    assert confined(landlock, workspace, "touch", str(stray), approved=True).exit_code != 0
    assert not stray.exists()


def test_output_cap_stops_a_huge_producer(landlock: sandbox.Confinement, workspace: Path) -> None:
    result = confined(landlock, workspace, "yes", "spam", max_output=10_000)
    assert len(result.output) == 10_000
    assert result.problem is not None and "output cut at 10,000 bytes" in result.problem
    assert result.exit_code == -9  # killed by SIGKILL, not finished
    small = confined(landlock, workspace, "head", "-c", "9999", "/dev/zero", max_output=10_000)
    assert (small.problem, small.exit_code, len(small.output)) == (None, 0, 9999)


def test_output_cap_through_run_shell(ctx: ToolContext) -> None:
    from harvey.tools.shell import RunShellTool

    tool = RunShellTool(("yes",), timeout=60, max_output=4096)
    out = tool.run(ctx, {"command": "yes 0123456789abcde"})  # 16 bytes a line
    assert out.startswith("error: output cut at 4,096 bytes; the command was stopped\n")
    assert out.count("0123456789abcde\n") == 4096 // 16


def test_nothing_runs_unasked_without_confinement(workspace: Path) -> None:
    ctx = ToolContext(workspace=workspace, allowed_commands=("ls",), sandbox="none")
    batch = run_command(ctx, "ls")
    assert not batch.ran and batch.problem is not None
    assert batch.problem.startswith("refused: no OS confinement available")
    asked: list[str] = []
    interactive = ctx.evolve(interactive=True, confirm=lambda q: asked.append(q) or True)
    assert run_command(interactive, "ls").ran
    assert asked and "no OS confinement" in asked[0]


def test_unknown_or_missing_confinement_is_none() -> None:
    assert not sandbox.detect("none").active
    assert "asks first" in sandbox.detect("none").describe()
    if sys.platform != "darwin":
        missing = sandbox.detect("sandbox-exec")
        assert not missing.active and "macOS" in missing.reason


def test_launcher_fails_closed_on_a_bad_invocation(workspace: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(sandbox.LAUNCHER), "{}", "touch", "x"],
        cwd=workspace,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 126 and "harvey-sandbox: usage" in done.stderr
    assert not (workspace / "x").exists()


@pytest.fixture
def policy(tmp_path: Path) -> Iterator[sandbox.Policy]:
    (tmp_path / "scratch").mkdir()
    yield sandbox.Policy.for_command(tmp_path / "ws", tmp_path / "scratch")


def test_seatbelt_profile_denies_by_default(policy: sandbox.Policy) -> None:
    text = sandbox.seatbelt_profile(policy)
    assert text.startswith("(version 1)\n(deny default)")
    assert '(allow file-read* (subpath (param "WORKSPACE")))' in text
    assert '(allow file-read* file-write* (subpath (param "SCRATCH")))' in text
    assert "network" not in text and 'file-write* (subpath (param "WORKSPACE"))' not in text
    assert "/Users" not in text and "/private/etc/passwd" not in text
    approved = sandbox.seatbelt_profile(sandbox.Policy(policy.workspace, policy.scratch, True))
    assert '(allow file-write* (subpath (param "WORKSPACE")))' in approved
    assert "(allow network*)" in approved
    argv = sandbox.seatbelt_argv(policy, ["ls"])
    assert argv[:2] == ["/usr/bin/sandbox-exec", "-p"] and argv[-2:] == ["--", "ls"]
    assert f"WORKSPACE={policy.workspace}" in argv and f"SCRATCH={policy.scratch}" in argv


def test_bubblewrap_argv_has_no_proc_and_no_network(policy: sandbox.Policy) -> None:
    argv = sandbox.bubblewrap_argv(policy, ["ls"])
    assert "--unshare-all" in argv and "--share-net" not in argv and "--proc" not in argv
    joined = " ".join(argv)
    assert f"--ro-bind-try {policy.workspace} {policy.workspace}" in joined
    assert f"--bind {policy.scratch} {policy.scratch}" in joined
    assert "/etc/passwd" not in joined and " /etc " not in joined
    approved = sandbox.bubblewrap_argv(
        sandbox.Policy(policy.workspace, policy.scratch, True), ["ls"]
    )
    assert "--share-net" in approved
    assert f"--bind {policy.workspace} {policy.workspace}" in " ".join(approved)


def test_scrubbed_env_keeps_only_what_programs_need(tmp_path: Path) -> None:
    env = sandbox.scrubbed_env(
        tmp_path,
        {"PATH": "/usr/bin", "LC_ALL": "C", "TERM": "xterm", "GITHUB_TOKEN": "t", "X": "1"},
    )
    assert env == {
        "PATH": "/usr/bin",
        "LC_ALL": "C",
        "TERM": "xterm",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),
    }
    assert os.path.isdir(env["HOME"])


@pytest.mark.parametrize(
    "argv",
    [
        ["ls", "-l"],
        ["cat", "a.txt"],
        ["grep", "-rn", "a", "."],
        ["head", "a.txt"],
        ["tail", "a.txt"],
        ["wc", "a.txt"],
        ["find", "."],
        ["stat", "a.txt"],
        ["file", "a.txt"],
        ["du", "-s", "."],
        ["sort", "a.txt"],
        ["uniq", "a.txt"],
        ["which", "ls"],
    ],
)
def test_the_default_read_only_commands_work_confined(
    landlock: sandbox.Confinement, workspace: Path, argv: list[str]
) -> None:
    (workspace / "a.txt").write_text("b\na\n")
    result = confined(landlock, workspace, *argv)
    assert (result.exit_code, result.problem) == (0, None), result.output
    assert "denied" not in result.output


def test_programs_outside_the_system_folders_are_not_found(
    landlock: sandbox.Confinement, workspace: Path, fake_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = fake_home / "bin"
    bin_dir.mkdir()
    shadow = bin_dir / "cat"
    shadow.write_text("#!/bin/sh\necho shadowed\n")
    shadow.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    (workspace / "a.txt").write_text("real\n")
    assert confined(landlock, workspace, "cat", "a.txt").output == "real\n"
    result = confined(landlock, workspace, "sh", "-c", 'echo "$PATH"')
    assert str(bin_dir) not in result.output
    (bin_dir / "mytool").write_text("#!/bin/sh\necho ran\n")
    (bin_dir / "mytool").chmod(0o755)
    missing = confined(landlock, workspace, "mytool")
    assert not missing.ran and missing.problem is not None
    assert "outside the folders commands may run" in missing.problem


def test_bubblewrap_confines_or_fails_closed(
    workspace: Path, fake_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bwrap is the fallback when Landlock is missing: where it is installed its
    confinement must hold; where it is not, choosing it must make commands ask."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    (workspace / "a.txt").write_text("inside\n")
    found = sandbox.detect("bubblewrap")
    ctx = ToolContext(workspace=workspace, allowed_commands=("cat",), sandbox="bubblewrap")
    if not found.active:
        assert "bwrap" in found.reason
        refused = run_command(ctx, "cat a.txt")
        assert not refused.ran and "no OS confinement available" in str(refused.problem)
        return
    assert run_command(ctx, "cat a.txt").output == "inside\n"
    for argv in (
        ["cat", "/etc/passwd"],
        ["cat", "/proc/self/environ"],
        ["cat", str(fake_home / ".ssh" / "id_rsa")],
        ["touch", "new.txt"],
    ):
        result = confined(found, workspace, *argv)
        assert result.exit_code != 0, argv
        assert "root:" not in result.output and "PRIVATE KEY" not in result.output
    assert SECRET not in confined(found, workspace, "env").output
    assert sorted(p.name for p in workspace.iterdir()) == ["a.txt"]


def test_detection_falls_back_and_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    detect = sandbox.detect.__wrapped__  # uncached, so the fakes below are seen
    monkeypatch.setattr(sandbox, "landlock_abi", lambda: 2)
    monkeypatch.setattr(sandbox, "bubblewrap_works", lambda: True)
    old = detect("landlock")
    assert not old.active and old.reason == "Landlock ABI >= 3 needed, ABI 2"
    assert detect("auto").kind == "bubblewrap"  # ABI 2 cannot stop truncate(2)
    monkeypatch.setattr(sandbox, "bubblewrap_works", lambda: False)
    monkeypatch.setattr(sandbox, "seatbelt_works", lambda: False)
    nothing = detect("auto")
    assert not nothing.active and "no OS confinement available" in nothing.describe()
    monkeypatch.setattr(sandbox, "landlock_abi", lambda: 4)
    assert detect("auto").describe() == (
        "landlock (ABI 4): workspace read-only, no network, no /proc, signals not scoped (ABI < 6)"
    )

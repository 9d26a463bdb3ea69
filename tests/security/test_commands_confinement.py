"""model → commands: the sandbox's last holes, attacked through the real launcher and ``harvey run``.

Invariant: an unasked command runs with no Unix (or, offline, any) sockets, no
capabilities, bounded processes, file size, CPU and memory, leaves nothing running
after it returns, runs only programs from system folders, cannot make git run a
program, and cannot read a secret file of the workspace, whole or in pieces.

Kernel-level probes run ``/usr/bin/python3`` through the real launcher
(``shell._execute``, the function ``run_shell`` ends in): python3 is not on the
default allow-list, and these tests are about what the kernel allows, not the list.
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import textwrap
from pathlib import Path

import pytest

from harvey.config.settings import LimitsSettings
from harvey.confine import git_policy, sandbox
from harvey.tools.registry import ToolContext
from harvey.tools.shell import ShellResult, _execute, run_command
from tests.harvey_process import run_harvey
from tests.security.conftest import Attack

# A python3 the sandbox lets run (beneath /usr); the test interpreter may live elsewhere.
PYTHON = next(
    (p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.path.exists(p)),
    "/usr/bin/python3",
)
DOTENV_VALUE = "sk-dotenv-QWERTYUIOPASDFGHJKLZXCVBNM-0123456789"


@pytest.fixture(autouse=True)
def landlock() -> sandbox.Confinement:
    found = sandbox.detect("auto")
    if found.kind != "landlock" or found.abi < 6:
        pytest.fail(f"these attacks must run under Landlock ABI >= 6, found {found.describe()}")
    return found


@functools.cache
def trust() -> tuple[str, ...]:
    """``--trust`` where ``harvey run`` has it: these tests widen the allow-list in the
    workspace's harvey.yaml as its (trusting) owner would."""

    done = run_harvey("run", "--help")
    return ("--trust",) if "--trust" in done.stdout else ()


def confined(
    workspace: Path,
    *argv: str,
    approved: bool = False,
    limits: LimitsSettings | None = None,
    unix_sockets: bool = False,
    timeout: float = 60,
) -> ShellResult:
    if argv[0] == PYTHON and not os.path.exists(PYTHON):
        pytest.fail("the kernel probes need a python3 beneath /usr (apt-get install python3)")
    return _execute(
        list(argv),
        workspace,
        timeout,
        sandbox.detect("auto"),
        approved,
        limits=limits,
        unix_sockets=unix_sockets,
    )


def python(workspace: Path, code: str, **kwargs: object) -> ShellResult:
    return confined(workspace, PYTHON, "-c", textwrap.dedent(code), **kwargs)  # type: ignore[arg-type]


# -- Unix sockets ---------------------------------------------------------------------


@pytest.fixture
def unix_server(outside: Path):  # type: ignore[no-untyped-def]
    path = outside / "agent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)
    server.setblocking(False)
    yield path, server
    server.close()


CONNECT = """
import socket, sys
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    print("CONNECTED")
except OSError as exc:
    print("refused:", exc.errno)
"""


@pytest.mark.parametrize("approved", [False, True])
def test_a_unix_socket_outside_cannot_be_reached(
    victim_workspace: Path, unix_server: tuple[Path, socket.socket], approved: bool
) -> None:
    path, server = unix_server
    result = confined(victim_workspace, PYTHON, "-c", CONNECT, str(path), approved=approved)
    assert "CONNECTED" not in result.output and "refused: 1" in result.output, result.output
    with pytest.raises(BlockingIOError):
        server.accept()  # nobody ever connected


def test_allowed_commands_in_harvey_run_reach_no_socket(
    attack: Attack, victim_workspace: Path, unix_server: tuple[Path, socket.socket]
) -> None:
    """What the model can do with the default allow-list: open a socket file as a file."""
    path, server = unix_server
    (victim_workspace / "in.sock").symlink_to(path)
    result = attack(
        [
            ("run_shell", {"command": "cat in.sock"}),
            ("run_shell", {"command": f"cat {path}"}),
            ("run_shell", {"command": "grep -r x in.sock"}),
        ]
    )
    assert result.proc.returncode == 0, result.proc.stderr
    with pytest.raises(BlockingIOError):
        server.accept()  # nobody ever connected
    assert all(out.startswith("error:") for out in result.tool_outputs), result.tool_outputs


def test_a_socket_inside_the_workspace_or_a_pair_is_no_way_out(victim_workspace: Path) -> None:
    """socketpair stays (it reaches nothing); a socket file the command finds is useless."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(victim_workspace / "in.sock"))
    server.listen(1)
    server.setblocking(False)
    try:
        code = CONNECT + "\na, b = socket.socketpair(); a.send(b'x'); print('PAIR', b.recv(1))\n"
        result = confined(victim_workspace, PYTHON, "-c", code, "in.sock")
        assert "refused: 1" in result.output and "PAIR b'x'" in result.output, result.output
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()


def test_the_users_config_can_allow_unix_sockets_to_approved_commands(
    victim_workspace: Path, unix_server: tuple[Path, socket.socket]
) -> None:
    path, server = unix_server
    unasked = confined(victim_workspace, PYTHON, "-c", CONNECT, str(path), unix_sockets=True)
    assert "CONNECTED" not in unasked.output  # never for a command nobody approved
    approved = confined(
        victim_workspace, PYTHON, "-c", CONNECT, str(path), approved=True, unix_sockets=True
    )
    assert "CONNECTED" in approved.output, approved.output
    server.accept()[0].close()


def test_offline_commands_get_no_socket_at_all_and_no_io_uring(victim_workspace: Path) -> None:
    """Landlock confines TCP only; UDP (a DNS query carries data out) is seccomp's."""
    result = python(
        victim_workspace,
        """
        import ctypes, socket
        for family, kind in ((socket.AF_INET, socket.SOCK_DGRAM), (socket.AF_INET6, socket.SOCK_DGRAM),
                             (socket.AF_NETLINK, socket.SOCK_RAW), (socket.AF_UNIX, socket.SOCK_DGRAM)):
            try:
                socket.socket(family, kind)
                print("OPENED", family)
            except OSError as exc:
                print("denied", exc.errno)
        params = ctypes.create_string_buffer(120)
        fd = ctypes.CDLL(None, use_errno=True).syscall(425, 8, params)
        print("io_uring", fd, ctypes.get_errno())
        """,
    )
    assert "OPENED" not in result.output and result.output.count("denied 1") == 4, result.output
    assert "io_uring -1 1" in result.output


# -- nothing outlives the command ----------------------------------------------------


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone, or gone while being read
        return False


DAEMONS = """
import os, sys, time
def daemon(tag):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            print(tag, os.getpid(), flush=True)
            os.close(1); os.close(2)
            time.sleep(600)
        os._exit(0)
daemon("SETSID")
if os.fork() == 0:
    print("CHILD", os.getpid(), flush=True)
    time.sleep(600)
time.sleep(0.3)
if sys.argv[1] == "hang":
    time.sleep(600)
"""


def running_with_argument(word: str) -> bool:
    """Whether a live process (seen from here) has ``word`` in its command line."""
    for name in os.listdir("/proc"):
        if name.isdigit() and alive(int(name)):
            try:
                if word.encode() in Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0"):
                    return True
            except OSError:
                continue
    return False


def pids(output: str) -> list[int]:
    return [
        int(line.split()[1])
        for line in output.splitlines()
        if line.split()[:1] in (["SETSID"], ["CHILD"])
    ]


@pytest.mark.parametrize("mode", ["return", "hang"])
@pytest.mark.slow
def test_no_descendant_outlives_the_command(victim_workspace: Path, mode: str) -> None:
    timeout = 5 if mode == "hang" else 60
    result = confined(victim_workspace, PYTHON, "-c", DAEMONS, mode, timeout=timeout)
    found = pids(result.output)
    assert len(found) == 2, result.output
    assert not [pid for pid in found if alive(pid)], "a daemon survived the command"
    if mode == "hang":
        assert result.problem is not None and "timed out" in result.problem


def test_a_daemon_started_through_harvey_run_is_gone_after_the_run(
    attack: Attack, victim_workspace: Path
) -> None:
    (victim_workspace / "harvey.yaml").write_text("security:\n  allowed_commands: [sh, cat]\n")
    (victim_workspace / "d.sh").write_text(
        "setsid sleep 600 &\necho DAEMON $!\n( sleep 601 & echo FORKED $! )\n"
    )
    result = attack([("run_shell", {"command": "sh d.sh"})], *trust())
    output = "\n".join(result.tool_outputs)
    found = [
        int(w)
        for line in output.splitlines()
        for w in line.split()[1:2]
        if line.startswith(("DAEMON", "FORKED"))
    ]
    assert len(found) == 2, output
    assert not [pid for pid in found if alive(pid)]


def test_killing_harvey_ends_the_command_and_its_daemons(victim_workspace: Path) -> None:
    """Harvey killed outright (SIGKILL, no cleanup of its own): the launcher gets
    SIGTERM from the kernel (PR_SET_PDEATHSIG) and ends every descendant."""
    import signal
    import sys
    import time

    code = (
        "import sys; from pathlib import Path; from harvey.confine import sandbox; "
        "from harvey.tools.shell import _execute; "
        "_execute(['sh', '-c', 'setsid sleep 634567 & sleep 634568'], Path(sys.argv[1]), 600, "
        "sandbox.detect('auto'))"
    )
    harvey = subprocess.Popen([sys.executable, "-c", code, str(victim_workspace)])
    try:
        for _ in range(500):  # until both are running (not a timing assertion)
            if running_with_argument("634567") and running_with_argument("634568"):
                break
            time.sleep(0.02)
        assert running_with_argument("634567"), "the command never started"
    finally:
        harvey.send_signal(signal.SIGKILL)
        harvey.wait()
    for _ in range(500):
        if not running_with_argument("634567") and not running_with_argument("634568"):
            break
        time.sleep(0.02)
    assert not running_with_argument("634567"), "a daemon outlived Harvey"
    assert not running_with_argument("634568"), "the command outlived Harvey"


def test_the_launcher_cannot_be_signalled_by_the_command(victim_workspace: Path) -> None:
    result = confined(victim_workspace, "sh", "-c", "kill -KILL $PPID; echo rc=$?")
    assert "rc=0" not in result.output and result.exit_code == 0, result.output


# -- capabilities ----------------------------------------------------------------------

CAPS = """
import ctypes, os, socket, time
libc = ctypes.CDLL(None, use_errno=True)
bounding = [c for c in range(41) if libc.prctl(23, c, 0, 0, 0) == 1]
print("BOUNDING", bounding)
header = (ctypes.c_uint32 * 2)(0x20080522, 0)
data = (ctypes.c_uint32 * 6)()
libc.capget(header, data)
print("SETS", list(data))
print("AMBIENT", [c for c in range(41) if libc.prctl(47, 1, c, 0, 0) == 1])
path = os.path.join(os.environ["TMPDIR"], "f")
open(path, "w").close()
for name, attempt in (
    ("chown", lambda: os.chown(path, 1, 1)),
    ("mknod", lambda: os.mknod(path + "d", 0o600 | 0o020000, os.makedev(1, 3))),
    ("clock", lambda: time.clock_settime(time.CLOCK_REALTIME, time.time())),
    ("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
    ("setuid", lambda: os.setuid(1)),
):
    try:
        attempt()
        print("ALLOWED", name)
    except OSError as exc:
        print("denied", name, exc.errno)
"""


@pytest.mark.parametrize("approved", [False, True])
def test_commands_hold_no_capability_even_as_root(victim_workspace: Path, approved: bool) -> None:
    result = confined(victim_workspace, PYTHON, "-c", CAPS, approved=approved)
    assert "BOUNDING []" in result.output, result.output
    assert "SETS [0, 0, 0, 0, 0, 0]" in result.output and "AMBIENT []" in result.output
    assert "ALLOWED" not in result.output, result.output
    if os.geteuid() == 0:  # as root each of these would have worked with capabilities
        for name in ("chown", "mknod", "clock", "setuid"):
            assert f"denied {name} 1" in result.output, result.output


# -- limits ------------------------------------------------------------------------


def test_a_fork_bomb_is_bounded_and_cleaned_up(victim_workspace: Path) -> None:
    script = "i=0; while [ $i -lt 200 ]; do sleep 600 & echo P $!; i=$((i+1)); done; echo DONE"
    result = confined(victim_workspace, "sh", "-c", script, limits=LimitsSettings(processes=20))
    started = [int(line.split()[1]) for line in result.output.splitlines() if line.startswith("P ")]
    assert len(started) < 200, "the process limit did not hold"
    assert "Resource temporarily unavailable" in result.output or "fork" in result.output
    assert not [pid for pid in started if alive(pid)]


def test_a_file_over_the_size_limit_is_cut(victim_workspace: Path) -> None:
    script = 'head -c 3000000 /dev/zero > "$TMPDIR/big"; echo status=$?; wc -c < "$TMPDIR/big"'
    result = confined(victim_workspace, "sh", "-c", script, limits=LimitsSettings(file_size_mb=1))
    assert "File too large" in result.output, result.output
    assert "1048576" in result.output


def test_a_cpu_loop_is_killed_by_its_cpu_limit(victim_workspace: Path) -> None:
    result = confined(
        victim_workspace, "sh", "-c", "while :; do :; done", limits=LimitsSettings(cpu_seconds=1)
    )
    assert result.problem is None  # not the timeout: the kernel ended it
    assert result.exit_code in (-9, -24), result  # SIGKILL or SIGXCPU


def test_memory_is_bounded(victim_workspace: Path) -> None:
    code = "x = bytearray(600 * 1024 * 1024)\nprint('ALLOCATED')"
    result = python(victim_workspace, code, limits=LimitsSettings(memory_mb=256))
    assert "ALLOCATED" not in result.output and "MemoryError" in result.output, result.output


def test_the_default_limits_let_real_tools_run(victim_workspace: Path) -> None:
    (victim_workspace / "a.txt").write_text("hello\n")
    subprocess.run(["git", "init", "-q", str(victim_workspace)], check=True)
    for argv in (
        ["git", "status", "--short"],
        ["grep", "-rn", "hello", "."],
        [PYTHON, "-c", "import json, sqlite3; print(json.dumps([1]))"],
        ["sh", "-c", "seq 1 100 | sort -n | tail -1"],
    ):
        result = confined(victim_workspace, *argv)
        assert (result.exit_code, result.problem) == (0, None), (argv, result.output)


# -- programs from the workspace -------------------------------------------------------


def plant(folder: Path, name: str, marker: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(f"#!/bin/sh\necho {marker}\n")
    program.chmod(0o755)


def test_workspace_programs_on_path_never_shadow_system_ones(
    attack: Attack, victim_workspace: Path
) -> None:
    (victim_workspace / "notes.md").write_text("x\n")
    plant(victim_workspace / ".venv" / "bin", "ls", "VENV-LS-RAN")
    plant(victim_workspace / "bin", "cat", "BIN-CAT-RAN")
    plant(victim_workspace, "grep", "DOT-GREP-RAN")
    path = f"{victim_workspace}/.venv/bin:{victim_workspace}/bin:.:bin::/usr/bin:/bin"
    result = attack(
        [
            ("run_shell", {"command": "ls"}),
            ("run_shell", {"command": "cat notes.md"}),
            ("run_shell", {"command": "grep x notes.md"}),
            ("run_shell", {"command": ".venv/bin/ls"}),
            ("run_shell", {"command": "./bin/cat notes.md"}),
        ],
        env={"PATH": f"{path}:{os.environ['PATH']}"},
    )
    output = "\n".join(result.tool_outputs)
    assert "RAN" not in output, output
    assert "notes.md" in result.tool_outputs[0]  # the system ls ran
    assert sum("named by its path" in out for out in result.tool_outputs) == 2


def test_search_path_drops_workspace_relative_and_missing_folders(tmp_path: Path) -> None:
    ws, scratch = tmp_path / "ws", tmp_path / "scratch"
    (ws / "bin").mkdir(parents=True)
    scratch.mkdir()
    policy = sandbox.Policy.for_command(ws, scratch)
    path = f"{ws}/bin:.:bin::/usr/bin:/nonexistent:{scratch}:/bin"
    assert policy.search_path(path).split(":") == ["/usr/bin", "/bin"]


# -- git ---------------------------------------------------------------------------------


def git(workspace: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    env.update({"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"})
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", "-C", str(workspace), *args], check=True, env=env, capture_output=True)


@pytest.fixture
def repo(victim_workspace: Path) -> Path:
    git(victim_workspace, "init", "-q")
    (victim_workspace / "a.txt").write_text("one\n")
    (victim_workspace / "b.bin").write_text("binary\n")
    git(victim_workspace, "add", ".")
    git(victim_workspace, "commit", "-qm", "first")
    (victim_workspace / "a.txt").write_text("two\n")
    return victim_workspace


HOSTILE_CONFIG = {
    "core.fsmonitor": "echo FSMONITOR-RAN >&2; false",
    "core.pager": "echo PAGER-RAN; cat",
    "alias.st": "!echo ALIAS-RAN",
    "diff.evil.textconv": "echo TEXTCONV-RAN",
    "diff.external": "echo EXTDIFF-RAN",
    "log.showSignature": "true",
    "gpg.program": "echo GPG-RAN",
}


def git_ctx(workspace: Path, interactive: bool = False) -> ToolContext:
    return ToolContext(workspace=workspace, allowed_commands=("git", "ls"), interactive=interactive)


@pytest.mark.parametrize("key", sorted(HOSTILE_CONFIG))
def test_a_repository_config_that_runs_programs_makes_git_ask(repo: Path, key: str) -> None:
    git(repo, "config", key, HOSTILE_CONFIG[key])
    (repo / ".gitattributes").write_text("*.bin diff=evil\n")
    for command in ("git status", "git log -p", "git diff", "git show"):
        result = run_command(git_ctx(repo), command)
        assert not result.ran and "refused" in str(result.problem), (command, result)
        assert key.lower() in str(result.problem).lower()


def test_plain_git_on_a_harmless_repository_runs_unasked(repo: Path) -> None:
    git(repo, "remote", "add", "origin", "https://example.com/r.git")
    for command in ("git status --short", "git log --oneline", "git diff", "git branch"):
        result = run_command(git_ctx(repo), command)
        assert result.ran and result.exit_code == 0, (command, result)
    assert "two" in run_command(git_ctx(repo), "git diff").output


@pytest.mark.parametrize(
    "command",
    [
        "git -c alias.x=!touch${IFS}MARK x",
        "git -c core.pager=sh log",
        "git --config-env=core.pager=HOME log",
        "git --exec-path=. status",
        "git -p log",
        "git --git-dir=/tmp log",
        "git st",
        "git commit -m x",
        "git log --ext-diff -p",
        "git log --ext -p",
        "git grep -O x",
        "git grep -iOvi x",
        "git show --textconv HEAD",
        "git log --show-signature",
        "git branch new",
        "git help log",
    ],
)
def test_git_options_that_run_programs_ask(repo: Path, command: str) -> None:
    result = run_command(git_ctx(repo), command)
    assert not result.ran and "refused" in str(result.problem), (command, result)
    assert not (repo / "MARK").exists()


@pytest.mark.parametrize("include", ["include.path", "includeIf.gitdir:/.path"])
def test_a_config_include_asks(repo: Path, include: str) -> None:
    (repo / "extra.cfg").write_text("[core]\n\tpager = echo INCLUDED-RAN\n")
    git(repo, "config", include, str(repo / "extra.cfg"))
    result = run_command(git_ctx(repo), "git log")
    assert not result.ran and "include" in str(result.problem).lower()


def test_a_git_file_or_linked_dot_git_asks(victim_workspace: Path, outside: Path) -> None:
    (victim_workspace / ".git").write_text(f"gitdir: {outside}\n")
    assert not run_command(git_ctx(victim_workspace), "git status").ran
    (victim_workspace / ".git").unlink()
    (victim_workspace / ".git").symlink_to(outside)
    assert not run_command(git_ctx(victim_workspace), "git status").ran


def test_a_bare_repository_as_the_workspace_is_checked_too(victim_workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(victim_workspace)], check=True)
    (victim_workspace / "config").write_text(
        (victim_workspace / "config").read_text() + "[core]\n\tpager = echo BARE-RAN\n"
    )
    result = run_command(git_ctx(victim_workspace), "git log")
    assert not result.ran and "core.pager" in str(result.problem)


def test_the_neutralised_git_runs_no_repository_program(repo: Path) -> None:
    """The second line: were the config check bypassed, the overrides still hold.
    Without them the same command does run the hooks (so the test can fail)."""
    marker = repo / "fsmonitor.sh"
    marker.write_text("#!/bin/sh\necho FSMONITOR-RAN >&2\nexit 1\n")
    marker.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(marker))
    git(repo, "config", "core.pager", "echo PAGER-RAN; cat")
    env_only = confined(repo, "git", "-c", "core.pager=echo PAGER-RAN", "-p", "status")
    assert "PAGER-RAN" in env_only.output or "FSMONITOR-RAN" in env_only.output, env_only.output
    safe = confined(repo, *git_policy.neutralised(["git", "status"]))
    assert "RAN" not in safe.output and safe.exit_code == 0, safe.output
    safe_log = confined(repo, *git_policy.neutralised(["git", "log", "-p"]))
    assert "RAN" not in safe_log.output and safe_log.exit_code == 0, safe_log.output


def test_the_documented_git_allow_list_is_safe_in_harvey_run(
    attack: Attack, repo: Path, outside: Path
) -> None:
    (repo / "harvey.yaml").write_text(
        "security:\n  allowed_commands: [ls, cat, grep, head, tail, wc, find, stat, git]\n"
    )
    git(repo, "config", "core.fsmonitor", "echo FSMONITOR-RAN >&2; false")
    git(repo, "config", "core.pager", "echo PAGER-RAN; cat")
    git(repo, "config", "alias.x", "!echo ALIAS-RAN")
    result = attack(
        [
            ("run_shell", {"command": "git status"}),
            ("run_shell", {"command": "git log -p"}),
            ("run_shell", {"command": "git x"}),
            ("run_shell", {"command": f"git -c alias.y=!touch{chr(32)}{outside}/MARK y"}),
        ],
        *trust(),
    )
    output = "\n".join(result.tool_outputs)
    assert "RAN" not in output and not (outside / "MARK").exists()
    assert all("refused" in out for out in result.tool_outputs), result.tool_outputs
    assert "'core.fsmonitor'" in output and "'x' is not a read-only git command" in output
    assert "git option '-c'" in output


# -- secret files ---------------------------------------------------------------------


def no_piece(outputs: list[str], value: str, size: int = 5) -> bool:
    """True when no ``size``-character slice of the secret's distinctive part leaks."""
    core = value[len("sk-dotenv-") :]
    text = "\n".join(outputs)
    return not any(core[i : i + size] in text for i in range(len(core) - size + 1))


def test_secret_files_cannot_be_read_whole_in_pieces_or_through_links(
    attack: Attack, victim_workspace: Path
) -> None:
    (victim_workspace / ".env").write_text(f"OPENAI_API_KEY={DOTENV_VALUE}\n")
    (victim_workspace / "config" / "deploy").mkdir(parents=True)
    (victim_workspace / "config" / "deploy" / "server.pem").write_text(DOTENV_VALUE + "\n")
    (victim_workspace / "config" / "deploy" / "notes.txt").write_text("deploy notes\n")
    (victim_workspace / "link").symlink_to(".env")
    (victim_workspace / "docs").mkdir()
    (victim_workspace / "docs" / "env.txt").symlink_to("../.env")
    (victim_workspace / "readme.md").write_text("readable\n")
    result = attack(
        [
            [
                ("run_shell", {"command": "cat .env"}),
                ("run_shell", {"command": "head -c 30 .env"}),
                ("run_shell", {"command": "tail -c +31 .env"}),
                ("run_shell", {"command": "grep -oE '.{1,5}' .env"}),
            ],
            [
                ("run_shell", {"command": "cat link"}),
                ("run_shell", {"command": "cat docs/env.txt"}),
                ("run_shell", {"command": "cat config/deploy/server.pem"}),
            ],
            ("run_shell", {"command": "grep -r QWERTY ."}),
            ("run_shell", {"command": "sort .env"}),
            ("run_shell", {"command": "cat readme.md config/deploy/notes.txt"}),
            ("run_shell", {"command": "ls -a"}),
        ]
    )
    assert result.proc.returncode == 0, result.proc.stderr
    assert no_piece(result.tool_outputs, DOTENV_VALUE), result.tool_outputs
    assert "readable\ndeploy notes\n" in result.tool_outputs  # the rest stays readable
    listing = next(out for out in result.tool_outputs if "readme.md" in out and "link" in out)
    assert ".env" in listing  # listed, not read
    result.assert_secret_absent(DOTENV_VALUE)


def test_a_hard_link_to_a_secret_is_a_secret(victim_workspace: Path) -> None:
    (victim_workspace / ".env").write_text(DOTENV_VALUE + "\n")
    os.link(victim_workspace / ".env", victim_workspace / "innocent.txt")
    result = confined(victim_workspace, "cat", "innocent.txt")
    assert DOTENV_VALUE not in result.output and "Permission denied" in result.output


def test_configured_secret_files_are_left_out_too(victim_workspace: Path) -> None:
    (victim_workspace / "vault.yml").write_text(DOTENV_VALUE + "\n")
    ctx = ToolContext(
        workspace=victim_workspace, allowed_commands=("cat",), secret_files=("vault.yml",)
    )
    result = run_command(ctx, "cat vault.yml")
    assert DOTENV_VALUE not in result.output and "Permission denied" in result.output


def test_an_approved_command_cannot_read_secrets_either(victim_workspace: Path) -> None:
    (victim_workspace / ".env").write_text(DOTENV_VALUE + "\n")
    (victim_workspace / "src").mkdir()
    result = confined(
        victim_workspace,
        "sh",
        "-c",
        "cat .env; mv .env src/m; cat src/m; ln .env src/l; cat src/l; cp .env src/x; "
        "mv .env moved; cat moved; echo ok > src/new; cat src/new",
        approved=True,
    )
    assert DOTENV_VALUE not in result.output, result.output
    assert "ok" in result.output  # a folder without a secret is fully writable


def test_a_workspace_too_big_to_walk_asks(
    victim_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harvey.workspace import view as workspace_view

    monkeypatch.setattr(workspace_view, "MAX_ENTRIES", 10)
    monkeypatch.setattr(
        workspace_view.workspace_view, "__defaults__", (10, workspace_view.MAX_RULES)
    )
    for i in range(20):
        (victim_workspace / f"f{i}.txt").write_text("x\n")
    result = run_command(ToolContext(workspace=victim_workspace, allowed_commands=("ls",)), "ls")
    assert not result.ran and "too many" in str(result.problem)


# -- the same holes under bubblewrap (where it is installed) ----------------------------


def test_bubblewrap_closes_the_same_holes(
    victim_workspace: Path, unix_server: tuple[Path, socket.socket]
) -> None:
    """bubblewrap is the fallback when Landlock is missing. ``.ci/run`` installs it where
    it can; this skips where ``bwrap`` is absent or cannot make namespaces here."""
    found = sandbox.detect.__wrapped__("bubblewrap")
    if not found.active:
        pytest.skip(f"bubblewrap is not usable here: {found.reason}")
    path, server = unix_server
    (victim_workspace / ".env").write_text(DOTENV_VALUE + "\n")
    (victim_workspace / "link").symlink_to(".env")
    (victim_workspace / ".ssh").mkdir()
    (victim_workspace / ".ssh" / "id_ed25519").write_text(DOTENV_VALUE + "\n")
    (victim_workspace / "notes.txt").write_text("readable\n")
    os.link(victim_workspace / ".env", victim_workspace / "copy.txt")

    def run(*argv: str, **kwargs: object) -> ShellResult:
        return _execute(list(argv), victim_workspace, 60, found, **kwargs)  # type: ignore[arg-type]

    for name in (".env", "link", ".ssh/id_ed25519", "copy.txt"):
        assert DOTENV_VALUE not in run("cat", name).output
    assert run("cat", "notes.txt").output == "readable\n"
    for approved in (False, True):
        probe = run(PYTHON, "-c", CONNECT, str(path), approved=approved)
        assert "CONNECTED" not in probe.output, probe.output
    with pytest.raises(BlockingIOError):
        server.accept()
    caps = run(PYTHON, "-c", CAPS)
    assert "BOUNDING []" in caps.output and "ALLOWED" not in caps.output, caps.output
    daemon = run("sh", "-c", "setsid sleep 612345 & echo started")
    assert "started" in daemon.output
    assert not running_with_argument("612345"), "a daemon outlived the command"
    big = run(
        "sh",
        "-c",
        'head -c 3000000 /dev/zero > "$TMPDIR/big"',
        limits=LimitsSettings(file_size_mb=1),
    )
    assert big.exit_code != 0
    # What Landlock does not cover, through the same seccomp filter and a sized tmpfs.
    memfd = run(
        PYTHON,
        "-c",
        "import os\ntry:\n os.memfd_create('x')\nexcept OSError as e: print('refused', e.errno)",
    )
    assert "refused 1" in memfd.output, memfd.output
    fill = 'head -c 40000000 /dev/zero > "$TMPDIR/fill"; wc -c < "$TMPDIR/fill"'
    full = run("sh", "-c", fill, limits=LimitsSettings(scratch_mb=16))
    assert "No space left" in full.output and int(full.output.split()[-1]) <= 16 << 20, full.output
    approved_view = run("sh", "-c", "chmod 600 notes.txt && echo CHANGED", approved=True)
    assert "CHANGED" in approved_view.output, approved_view.output


# -- other programs whose options run programs ------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["tar", "-xf", "a.tar", "-I", "sh"],
        ["tar", "-xIsh", "-f", "a.tar"],
        ["tar", "xIf", "sh", "a.tar"],
        ["tar", "--use-comp=sh", "-xf", "a.tar"],
        ["tar", "-xf", "a.tar", "--to-command=sh"],
        ["tar", "-cf", "a.tar", "--checkpoint=1", "--checkpoint-action=exec=sh", "x"],
        ["tar", "-cf", "a.tar", "-F", "sh", "x"],
        ["rsync", "-e", "sh", "a", "b"],
        ["rsync", "--rsync-path=sh", "a", "b"],
        ["zip", "-TT", "sh", "a.zip", "x"],
        ["env", "sh", "-c", "id"],
        ["xargs", "sh"],
        ["timeout", "5", "sh"],
        ["nice", "sh"],
        ["find", ".", "-exec", "sh", ";"],
        ["find", ".", "-okdir", "sh", ";"],
        ["sort", "--compress-program=sh", "a"],
        ["diff", "-l", "a", "b"],
    ],
)
def test_options_that_run_programs_ask_even_when_allow_listed(
    victim_workspace: Path, argv: list[str]
) -> None:
    from harvey.confine.shell_policy import needs_confirmation

    reason = needs_confirmation(argv, [argv[0]], victim_workspace)
    assert reason is not None and "run" in reason, (argv, reason)


def test_plain_tar_listing_still_runs_unasked(victim_workspace: Path) -> None:
    from harvey.confine.shell_policy import needs_confirmation

    assert needs_confirmation(["tar", "-tf", "a.tar"], ["tar"], victim_workspace) is None
    assert needs_confirmation(["tar", "tvf", "a.tar"], ["tar"], victim_workspace) is None


def test_seatbelt_and_bubblewrap_leave_out_the_secret_files(tmp_path: Path) -> None:
    from harvey.workspace.secret_files import SecretFiles
    from harvey.workspace.view import workspace_view

    ws = tmp_path / "ws"
    (ws / ".ssh").mkdir(parents=True)
    (ws / ".env").write_text("k\n")
    (ws / "a.txt").write_text("x\n")
    view = workspace_view(ws, SecretFiles())
    policy = sandbox.Policy.for_command(ws, tmp_path, view=view)
    profile = sandbox.seatbelt_profile(policy)
    assert '(deny file-read* file-write* (literal (param "SECRET_0")) ' in profile
    assert '(subpath (param "SECRET_DIR_0"))' in profile
    argv = sandbox.seatbelt_argv(policy, ["cat", ".env"])
    assert f"-DSECRET_0={ws / '.env'}" in argv and f"-DSECRET_DIR_0={ws / '.ssh'}" in argv
    joined = " ".join(sandbox.bubblewrap_argv(policy, ["cat", ".env"]))
    assert f"--ro-bind /dev/null {ws / '.env'}" in joined
    assert f"--tmpfs {ws / '.ssh'} --remount-ro {ws / '.ssh'}" in joined
    assert "--cap-drop ALL" in joined and "--unshare-all" in joined


def test_a_submodule_config_is_checked_too(repo: Path) -> None:
    """``git status`` runs git in every submodule, which reads its own config."""
    module = repo / ".git" / "modules" / "lib"
    module.mkdir(parents=True)
    (module / "config").write_text("[core]\n\tfsmonitor = echo SUBMODULE-RAN\n")
    result = run_command(git_ctx(repo), "git status")
    assert not result.ran and "core.fsmonitor" in str(result.problem)


def test_without_confinement_an_approved_command_is_still_reaped_and_limited(
    victim_workspace: Path,
) -> None:
    """``security.sandbox: none`` (every command asked): no Landlock, but the launcher
    still supervises the command and sets the limits."""
    none = sandbox.Confinement("none", reason="test")
    result = _execute(
        [PYTHON, "-c", DAEMONS, "return"],
        victim_workspace,
        60,
        none,
        True,
        limits=LimitsSettings(file_size_mb=1),
    )
    found = pids(result.output)
    assert len(found) == 2 and not [pid for pid in found if alive(pid)], result.output
    big = _execute(
        ["sh", "-c", 'head -c 3000000 /dev/zero > "$TMPDIR/big"'],
        victim_workspace,
        60,
        none,
        True,
        limits=LimitsSettings(file_size_mb=1),
    )
    assert "File too large" in big.output


def test_the_launcher_grants_no_workspace_part_reached_through_a_link(
    victim_workspace: Path, outside: Path, tmp_path: Path
) -> None:
    """Were a folder swapped for a link between the walk and the launcher, the grant
    for a path beneath it would name the link's target: the launcher grants nothing."""
    import json
    import sys

    (outside / "inner").mkdir()
    (outside / "inner" / "data.txt").write_text("outside secret\n")
    (victim_workspace / "swapped").symlink_to(outside)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ws = os.path.realpath(victim_workspace)
    launcher = [sys.executable, "-I", "-S", str(sandbox.LAUNCHER)]
    spec = {
        "abi": sandbox.detect("auto").abi,
        "read": [*sandbox.SYSTEM_DIRS, f"{ws}/swapped/inner", f"{ws}/swapped"],
        "files": [f"{ws}/swapped/inner/data.txt"],
        "write": [str(scratch)],
        "devices": ["/dev/null"],
        "workspace": ws,
    }
    done = subprocess.run(
        [*launcher, json.dumps(spec), "--", "cat", f"{outside}/inner/data.txt"],
        capture_output=True,
        text=True,
    )
    assert "outside secret" not in done.stdout and "Permission denied" in done.stderr
    spec["workspace"] = ""  # the same grants, read as system paths, do follow the link
    followed = subprocess.run(
        [*launcher, json.dumps(spec), "--", "cat", f"{outside}/inner/data.txt"],
        capture_output=True,
        text=True,
    )
    assert "outside secret" in followed.stdout, followed.stderr


def test_the_question_for_an_asked_git_command_names_the_repositorys_hooks(repo: Path) -> None:
    """An approved ``git commit`` runs the repository's own hooks (as git would, confined):
    the person deciding is told which, and files git never runs are not listed."""
    hooks = repo / ".git" / "hooks"
    for name in ("pre-commit", "commit-msg", "not-a-hook", "pre-push.sample"):
        (hooks / name).write_text("#!/bin/sh\nexit 0\n")
        (hooks / name).chmod(0o755)
    (hooks / "post-commit").write_text("#!/bin/sh\n")  # not executable: git skips it
    asked: list[str] = []

    def confirm(question: str) -> bool:
        asked.append(question)
        return False

    ctx = ToolContext(workspace=repo, allowed_commands=("git",), interactive=True, confirm=confirm)
    assert not run_command(ctx, "git commit -qam x").ran
    assert asked and asked[0].endswith(
        "it may run the repository's own hooks: commit-msg, pre-commit)"
    ), asked
    git(repo, "config", "core.hooksPath", "elsewhere")
    asked.clear()
    run_command(ctx, "git commit -qam x")
    assert "commit-msg, pre-commit, those of core.hooksPath)" in asked[0], asked
    for name in ("pre-commit", "commit-msg"):
        (hooks / name).unlink()
    git(repo, "config", "--unset", "core.hooksPath")
    asked.clear()
    run_command(ctx, "git commit -qam x")
    assert "hooks" not in asked[0], asked  # nothing to name: the question as before

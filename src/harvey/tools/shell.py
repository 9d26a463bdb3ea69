"""run_shell: run one command in the workspace, without a shell, confined by the OS.

Security rests on the operating system, not on parsing: every command runs
under the confinement ``confine/sandbox.py`` detects (Landlock, bubblewrap or
sandbox-exec), which lets it read the workspace and system folders, write only
a private temporary folder, and reach no ``/proc``, home folder or network,
with a scrubbed environment (no API keys). Where no confinement is available
(or ``security.sandbox: none``) nothing runs unasked: every command asks in the
REPL and is refused in batch mode. Secret files (``.env``, keys,
``security.secret_files``) are not readable by any command, and nothing a
command starts outlives it: on a timeout or the output cap the launcher gets
SIGTERM and ends every descendant, however detached.

The checks here are a second line. The command line is split into argv (POSIX
quoting rules) and executed directly, so pipes, redirection, ``;``/``&&``,
substitution and globbing are refused with a message that says so. Commands on
``security.allowed_commands`` run at once; anything else, options that write
or run programs (``find -delete``, ``sort -o``) and arguments that point
outside the workspace ask the person (``ctx.confirm``) and are refused in
non-interactive mode. ``PATH`` holds only system folders, and a program named
by a path (``./bin/x``, ``.venv/bin/ls``) always asks: the workspace may be a
hostile clone. Unasked ``git`` runs only as a reader (``git_policy``). An
approved command runs confined too, with a profile that may also write the
workspace.

Output is read incrementally and capped (``MAX_OUTPUT_BYTES``): past the cap
the command is stopped, so memory does not grow with what a command prints.
"""

from __future__ import annotations

import os
import selectors
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvey.confine import git_policy, git_repository, sandbox
from harvey.confine.shell_policy import needs_confirmation
from harvey.errors import ToolError
from harvey.tools.registry import ToolContext
from harvey.workspace import secret_files
from harvey.workspace.secret_files import SecretFiles
from harvey.workspace.view import WorkspaceTooBig, WorkspaceView, workspace_view

if TYPE_CHECKING:
    from harvey.config.settings import LimitsSettings

OPERATOR_CHARS = frozenset("();<>|&")
MAX_OUTPUT_BYTES = 50 * 1024 * 1024  # past this the command is stopped and the rest dropped
READ_CHUNK = 64 * 1024
STOP_GRACE_SECONDS = 5.0  # for the launcher to end every descendant before it is killed


def split_command(command: str) -> list[str]:
    """Split a command line into argv, refusing shell syntax that would not work here."""
    if "\x00" in command:
        raise ToolError("the command contains a NUL byte")
    if "`" in command or "$(" in command:
        raise ToolError("command substitution is not supported (no shell); run commands one by one")
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:  # unbalanced quotes
        raise ToolError(f"cannot parse the command: {exc}") from exc
    for token in tokens:
        if token and set(token) <= OPERATOR_CHARS:
            raise ToolError(
                f"shell operator {token!r} is not supported: commands run without a shell "
                "(no pipes, redirection, ';' or '&&'); run one command at a time"
            )
    if not tokens:
        raise ToolError("empty command")
    return tokens


class RunShellTool:
    """Runs argv with cwd = workspace, a timeout, and the allow-list policy above."""

    name = "run_shell"
    description = (
        "Run one command in the workspace folder, without a shell: no pipes, redirection, "
        "';', '&&', variables or globbing. Read-only commands run directly; others need the "
        "user's approval. Returns the exit status and the combined stdout and stderr."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol reads an attribute
        "type": "object",
        "properties": {"command": {"type": "string", "description": "e.g. 'grep -rn TODO src'"}},
        "required": ["command"],
    }

    def __init__(
        self,
        allowed_commands: Sequence[str] | None = None,
        timeout: float | None = None,
        max_output: int = MAX_OUTPUT_BYTES,
    ) -> None:
        # None means "take it from the ToolContext"; settings pass real values.
        self.allowed_commands = None if allowed_commands is None else tuple(allowed_commands)
        self.timeout = timeout
        self.max_output = max_output

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        command = args.get("command", args.get("cmd"))  # the seeds spell it "cmd"
        if not isinstance(command, str) or not command.strip():
            return "error: run_shell needs a 'command' string"
        result = run_command(ctx, command, self.allowed_commands, self.timeout, self.max_output)
        return result.as_tool_output()


@dataclass(frozen=True)
class ShellResult:
    """What a command did. ``ran`` is False when it was refused or not found."""

    output: str
    exit_code: int
    ran: bool = True
    problem: str | None = None  # why it did not run, or timed out

    def as_tool_output(self) -> str:
        if self.problem is not None:
            return f"error: {self.problem}" + (f"\n{self.output}" if self.output else "")
        if self.exit_code != 0:
            return f"error: exit status {self.exit_code}" + (
                f"\n{self.output}" if self.output else " (no output)"
            )
        return self.output if self.output else "(no output)"


def run_command(
    ctx: ToolContext,
    command: str,
    allowed_commands: Sequence[str] | None = None,
    timeout: float | None = None,
    max_output: int = MAX_OUTPUT_BYTES,
) -> ShellResult:
    """The policy and execution shared by ``run_shell`` and the REPL's ``!cmd``."""
    try:
        argv = split_command(command)
    except ToolError as exc:
        return ShellResult("", 2, ran=False, problem=str(exc))
    allowed = allowed_commands if allowed_commands is not None else ctx.allowed_commands
    confinement = sandbox.detect(ctx.sandbox)
    reason = _workspace_program(argv[0], ctx.workspace)
    secrets = SecretFiles(ctx.secret_files, own=secret_files.active().own)
    reason = reason or needs_confirmation(argv, allowed, ctx.workspace, secrets)
    if reason is None and not confinement.active:
        reason = f"no OS confinement available ({confinement.reason}), so nothing runs unasked"
    view = None
    if confinement.active:
        try:
            view = workspace_view(ctx.workspace, secrets)
        except WorkspaceTooBig as exc:
            reason = reason or str(exc)
    if reason is not None:
        if not ctx.interactive or ctx.confirm is None:
            problem = f"refused: {reason} (non-interactive mode cannot ask for approval)"
            return ShellResult("", 126, ran=False, problem=problem)
        if argv[0] == "git" and (hooks := git_repository.repository_hooks(ctx.workspace)):
            reason += f"; it may run the repository's own hooks: {', '.join(hooks)}"
        if not ctx.confirm(f"Run `{command}`? ({reason})"):
            return ShellResult("", 126, ran=False, problem=f"the user declined to run {command!r}")
    elif argv[0] == "git":
        argv = git_policy.neutralised(argv, secrets)
    timeout = timeout if timeout is not None else ctx.shell_timeout
    return _execute(
        argv,
        ctx.workspace,
        timeout,
        confinement,
        reason is not None,
        max_output,
        view=view,
        limits=ctx.limits,
        unix_sockets=ctx.unix_sockets,
    )


def _workspace_program(program: str, workspace: Path) -> str | None:
    """A program named by a path runs only when the person approves that path:
    ``./bin/x`` or ``.venv/bin/ls`` comes from the (possibly hostile) workspace."""
    if "/" not in program:
        return None
    return f"{program!r} is a program named by its path, not a system command"


def _execute(
    argv: list[str],
    cwd: Path,
    timeout: float,
    confinement: sandbox.Confinement | None = None,
    approved: bool = False,
    max_output: int = MAX_OUTPUT_BYTES,
    *,
    view: WorkspaceView | None = None,
    limits: LimitsSettings | None = None,
    unix_sockets: bool = False,
) -> ShellResult:
    """Run argv confined, in a private scratch folder, with a scrubbed environment.

    Without a ``view`` the workspace is walked here (the default secret files are
    left out); a walk that cannot finish is a ``ToolError``."""
    from harvey.config.settings import LimitsSettings

    confinement = confinement or sandbox.Confinement("none", reason="not requested")
    if confinement.active and view is None:
        view = workspace_view(cwd, SecretFiles(own=secret_files.active().own))
    with sandbox.scratch_folder() as scratch:
        env = sandbox.scrubbed_env(scratch)
        policy = sandbox.Policy.for_command(
            cwd,
            scratch,
            approved=approved,
            view=view,
            limits=sandbox.command_limits(limits or LimitsSettings()),
            unix_sockets=unix_sockets,
        )
        env["PATH"] = policy.search_path(env["PATH"])
        if argv[0] == "git":
            env.update(git_policy.git_env(cwd))
        if _find_program(argv[0], cwd, env["PATH"]) is None:
            return ShellResult("", 127, ran=False, problem=_not_found(argv[0], confinement))
        launch = sandbox.launch(confinement, policy, argv)
        try:
            proc = subprocess.Popen(
                launch.argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # so a timeout or the cap can stop the whole group
                pass_fds=launch.pass_fds,
            )
        except FileNotFoundError:
            return ShellResult("", 127, ran=False, problem=f"command not found: {argv[0]}")
        except OSError as exc:
            raise ToolError(f"cannot run {argv[0]}: {exc.strerror or exc}") from exc
        finally:
            launch.close()
        try:
            return _collect(proc, timeout, max_output)
        finally:
            _stop(proc)  # nothing the command started outlives it
            if proc.stdout is not None:
                proc.stdout.close()
            proc.wait()


def _not_found(program: str, confinement: sandbox.Confinement) -> str:
    elsewhere = shutil.which(program) if "/" not in program else None
    if elsewhere is None:
        return f"command not found: {program}"
    return f"command not found: {program} ({elsewhere} is outside the folders commands may run)"


def _find_program(program: str, cwd: Path, path: str) -> str | None:
    if "/" in program:
        candidate = cwd / program
        return str(candidate) if os.access(candidate, os.X_OK) else None
    return shutil.which(program, path=path)


def _collect(proc: subprocess.Popen[bytes], timeout: float, max_output: int) -> ShellResult:
    """Read the output as it comes, never more than ``max_output`` bytes: past the cap
    or the timeout the command is stopped and the result says so."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    output = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _stopped(proc, output, f"timed out after {timeout:g}s and was stopped")
            if not selector.select(remaining):
                continue
            chunk = os.read(proc.stdout.fileno(), min(READ_CHUNK, max_output + 1 - len(output)))
            if not chunk:
                break
            output += chunk
            if len(output) > max_output:
                del output[max_output:]
                cut = f"output cut at {max_output:,} bytes; the command was stopped"
                return _stopped(proc, output, cut)
    try:
        code = proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired:
        return _stopped(proc, output, f"timed out after {timeout:g}s and was stopped")
    return ShellResult(_decode(output), code)


def _stopped(proc: subprocess.Popen[bytes], output: bytearray, problem: str) -> ShellResult:
    _stop(proc)
    return ShellResult(_decode(output), proc.wait(), problem=problem)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End the command and everything it started. The Landlock launcher supervises
    the command: SIGTERM makes it kill every descendant (however detached) and exit,
    so it gets a moment; then the process group is killed in any case (bubblewrap's
    PID namespace ends with it; without confinement the group is all there is)."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=STOP_GRACE_SECONDS)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if proc.returncode is None:
            proc.kill()


def _decode(output: bytes | bytearray) -> str:
    return bytes(output).decode("utf-8", errors="replace")

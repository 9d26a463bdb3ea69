"""The one way the tests start Harvey: a real process, or ``harvey.cli.main`` in process.

``run_harvey`` starts ``python -m harvey`` as a subprocess; keep it for what needs a
real process: the screen a terminal gets, signals, ptys, Ctrl-C, start-up time,
import side effects, the environment the child sees, the exit status of a killed
process. ``invoke_harvey`` runs the same command line in this process with click's
``CliRunner`` (no interpreter start-up, no import of Harvey per test) and returns the
same ``CompletedProcess``, so a test that only checks the CLI's behaviour (its output,
its exit status, what it stored) can switch by changing one name.

``PYTHONPATH`` and the suite's isolated ``HARVEY_HOME`` (tests/conftest.py) reach the
child through ``os.environ``; ``env`` adds or overrides variables (``None`` removes one).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

Env = Mapping[str, str | None]


def default_signals() -> None:
    """For ``preexec_fn``: a child started by a test gets SIGINT and SIGTERM as a shell
    gives them. A test worker may have inherited them ignored (a process a long suite ran
    before: Ray's, a confined launcher's), and a Python started with SIGINT ignored never
    turns Ctrl-C into KeyboardInterrupt — a test of Ctrl-C would then test nothing."""
    import signal

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def harvey_argv(*args: str, python_args: Sequence[str] = ()) -> list[str]:
    """The argv of ``python -m harvey ARGS`` (for ``Popen`` or pexpect)."""
    return [sys.executable, *python_args, "-m", "harvey", *args]


def harvey_spawn(*args: str) -> tuple[str, list[str]]:
    """``pexpect.spawn``'s (command, args) for ``python -m harvey ARGS`` on a pty."""
    command, *rest = harvey_argv(*args)
    return command, rest


def harvey_env(env: Env | None = None, *, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) with ``env``'s overrides; a ``None`` value removes."""
    full = dict(os.environ if base is None else base)
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = value
    return full


def run_harvey(
    *args: str,
    cwd: str | Path | None = None,
    env: Env | None = None,
    input: str | None = None,
    timeout: float = 120,
    python_args: Sequence[str] = (),
    base_env: Mapping[str, str] | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``python -m harvey ARGS`` as a real process, its output captured as text."""
    return subprocess.run(
        harvey_argv(*args, python_args=python_args),
        cwd=cwd,
        env=harvey_env(env, base=base_env),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


@contextlib.contextmanager
def _inside(cwd: str | Path | None) -> Iterator[None]:
    """The working directory for an in-process run (each xdist worker is its own process)."""
    if cwd is None:
        yield
        return
    before = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _process_wide_rules() -> Iterator[None]:
    """The redactor and secret-file rule the command installs (from its settings and
    keys) are the process's: a real process drops them on exit, so the run here does too."""
    from harvey import redact
    from harvey.workspace import secret_files

    redactor, rule = redact._active, secret_files._active
    try:
        yield
    finally:
        redact._active, secret_files._active = redactor, rule


def invoke_harvey(
    *args: str,
    cwd: str | Path | None = None,
    env: Env | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``harvey ARGS`` run in this process by click's ``CliRunner``.

    Harvey's ``handle_errors`` still wraps the runner's streams (guarded stdout and
    stderr, a redacting stderr), so what is captured is what a pipe would get. An
    exception that escapes the command (not ``SystemExit``) is re-raised: the CLI
    turns every error into a line and an exit status, so an escape is a bug.
    """
    from click.testing import CliRunner

    from harvey.cli import main

    runner = CliRunner()
    with _inside(cwd), _process_wide_rules():
        result = runner.invoke(main, list(args), input=input, env=dict(env or {}))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(
        ["harvey", *args], result.exit_code, result.stdout, result.stderr
    )

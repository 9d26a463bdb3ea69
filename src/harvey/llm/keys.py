"""Where the key for a server comes from: ``api_key``, ``api_key_command``, or ``OPENAI_API_KEY``.

For the top level and for each route, in this order: its ``api_key``, then its
``api_key_command``, then ``OPENAI_API_KEY`` from the environment. Both may
only come from the user's own ``HARVEY_HOME/harvey.yaml`` (``harvey.config.trust``
refuses them in a workspace file): a key must never sit in a file the model or
a repository can read, and a command line in such a file would be a program
that repository chose to run.

``api_key_command`` keeps the key in a password manager (``pass show openai``,
``op read op://vault/openai/key``): it runs without a shell (``shlex.split``),
once per session, and only when a request first needs the key — a session on a
local model never runs it. Its stdout, stripped, is the key; a failure, a
timeout or empty output is one ``ConfigError`` line. The key joins the
redactor's secrets as soon as it is read.
"""

from __future__ import annotations

import shlex
import subprocess
import threading
from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr

from harvey.errors import ConfigError

#: Seconds a key command may take (a password manager may wait for an agent).
KEY_COMMAND_TIMEOUT = 60.0

_lock = threading.Lock()
_resolved: dict[str, str] = {}  # command line → key, for this process (one session)


class CommandKey(SecretStr):
    """A key ``api_key_command`` prints, run the first time the key's value is asked for.

    Truthy before it has run (``if api_key:`` must not run it), shown as a
    secret, and pickled as the plain key it resolves to (a Ray worker gets the
    key, not the command).
    """

    def __init__(self, command: str) -> None:
        super().__init__("")
        self.command = command

    def get_secret_value(self) -> str:
        return run_key_command(self.command)

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CommandKey) and other.command == self.command

    def __hash__(self) -> int:
        return hash(("CommandKey", self.command))

    def _display(self) -> str:
        return "**********"

    def __reduce__(self) -> tuple[Any, ...]:
        return (SecretStr, (self.get_secret_value(),))


def key_for(
    api_key: SecretStr | None, api_key_command: str | None, env: Mapping[str, str]
) -> SecretStr | None:
    """The key for one server: the configured key, the command's, or OPENAI_API_KEY."""
    if api_key is not None:
        return api_key
    if api_key_command:
        return CommandKey(api_key_command)
    value = env.get("OPENAI_API_KEY")
    return SecretStr(value) if value else None


def run_key_command(command: str, timeout: float = KEY_COMMAND_TIMEOUT) -> str:
    """The key ``command`` prints (run once per process; later calls reuse it)."""
    with _lock:
        if command in _resolved:
            return _resolved[command]
        key = _run(command, timeout)
        _resolved[command] = key
    _remember_secret(key)
    return key


def forget_keys() -> None:
    """Forget every command's key (tests; a new session would run them again)."""
    with _lock:
        _resolved.clear()


def _run(command: str, timeout: float) -> str:
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"api_key_command: cannot split the command line: {exc}") from None
    if not argv:
        raise ConfigError("api_key_command is empty")
    name = argv[0]
    from harvey.confine.programs import find_program

    program = find_program(name)  # never a program of the workspace's on PATH
    if program is None:
        raise ConfigError(f"api_key_command {name!r}: not found outside the workspace")
    try:
        proc = subprocess.run(
            [program, *argv[1:]],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"api_key_command {name!r} did not finish within {timeout:g} seconds"
        ) from None
    except OSError as exc:
        raise ConfigError(f"api_key_command {name!r}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        raise ConfigError(
            f"api_key_command {name!r} failed (exit status {proc.returncode}){_said(proc.stderr)}"
        )
    key = proc.stdout.decode("utf-8", "replace").strip()
    if not key:
        raise ConfigError(f"api_key_command {name!r} printed no key")
    if any(char.isspace() or ord(char) < 32 or ord(char) == 127 for char in key):
        raise ConfigError(
            f"api_key_command {name!r} printed more than one word; print the key alone"
        )
    return key


def _said(stderr: bytes) -> str:
    """``: FIRST LINE`` of the command's stderr, redacted and safe to print, or ""."""
    from harvey.redact import redact
    from harvey.terminal_text import for_terminal

    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return f": {for_terminal(redact(lines[0]))[:200]}" if lines else ""


def _remember_secret(key: str) -> None:
    """Add ``key`` to the process's redactor, so nothing Harvey prints or stores shows it."""
    from harvey.redact import Redactor, active, install

    current = active()
    install(Redactor([*current.secrets, key], tokens=current.tokens))

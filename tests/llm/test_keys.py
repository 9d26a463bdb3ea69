"""api_key_command: the key from a password manager, run without a shell, once, lazily."""

from __future__ import annotations

import pickle
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from harvey.errors import ConfigError
from harvey.llm.keys import CommandKey, forget_keys, key_for, run_key_command
from harvey.redact import redact, reset

KEY = "sk-from-the-manager-0123456789abcdef"


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    forget_keys()
    reset()
    yield
    forget_keys()
    reset()


def python(code: str) -> str:
    return shlex.join([sys.executable, "-c", code])


def counting(tmp_path: Path, output: str = KEY) -> tuple[str, Path]:
    """A command printing ``output`` that appends a mark to a file each time it runs."""
    marks = tmp_path / "runs"
    code = f"open({str(marks)!r}, 'a').write('x'); print({output!r})"
    return python(code), marks


def test_the_key_is_read_once_and_only_when_needed(tmp_path: Path) -> None:
    command, marks = counting(tmp_path)
    key = key_for(None, command, {"OPENAI_API_KEY": "ignored-env-key"})
    assert isinstance(key, CommandKey) and key  # truthy without running
    assert str(key) == "**********" and KEY not in repr(key)
    assert not marks.exists()
    assert key.get_secret_value() == KEY
    assert CommandKey(command).get_secret_value() == KEY
    assert marks.read_text() == "x"  # one run per session


def test_the_key_joins_the_redactor(tmp_path: Path) -> None:
    command, _ = counting(tmp_path)
    run_key_command(command)
    assert redact(f"echoed {KEY}") == "echoed [REDACTED]"


def test_a_pickled_key_is_the_plain_key_not_the_command(tmp_path: Path) -> None:
    command, _ = counting(tmp_path)
    copy = pickle.loads(pickle.dumps(CommandKey(command)))
    assert type(copy) is SecretStr and copy.get_secret_value() == KEY


def test_no_shell_runs_the_command_line(tmp_path: Path) -> None:
    marker = tmp_path / "shell-ran"
    with pytest.raises(ConfigError):
        run_key_command(f"echo key; touch {marker}")  # `echo` prints "key; touch ..."
    assert not marker.exists()


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        (python("import sys; sys.stderr.write('no such entry\\n'); sys.exit(3)"), "exit status 3"),
        (python("pass"), "printed no key"),
        (python("print('two words')"), "more than one word"),
        ("/nonexistent/pass show openai", "No such file"),
        ("'unclosed", "cannot split"),
    ],
    ids=["fails", "empty", "two_words", "missing", "bad_quotes"],
)
def test_a_failure_is_one_line(command: str, needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        run_key_command(command)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_a_timeout_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"did not finish within 0\.2 seconds"):
        run_key_command(python("import time; time.sleep(30)"), timeout=0.2)


def test_the_order_is_key_then_command_then_environment() -> None:
    given = SecretStr("configured-key-123")
    assert key_for(given, "pass x", {"OPENAI_API_KEY": "env-key-123"}) is given
    assert isinstance(key_for(None, "pass x", {}), CommandKey)
    env_key = key_for(None, None, {"OPENAI_API_KEY": "env-key-123"})
    assert env_key is not None and env_key.get_secret_value() == "env-key-123"
    assert key_for(None, None, {}) is None

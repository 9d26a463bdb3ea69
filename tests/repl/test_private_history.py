"""The REPL history file: 0600, never through a link, and no key in it (issue 19, 8a)."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from harvey import redact as redact_module
from harvey.errors import WorkspaceError
from harvey.llm.scripted import Reply
from harvey.redact import Redactor
from harvey.repl.history import PrivateHistory, format_entry, parse_history
from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line

KEY = "sk-historytest-0123456789abcdefABCDEF"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_typed_key_is_not_stored_and_the_file_is_private(spawn: Spawn, isolated_env: Path) -> None:
    with FakeOpenAI([Reply("noted")]) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url, env={"OPENAI_API_KEY": KEY})
        child.expect(PROMPT)
        send_line(child, f"my key is {KEY} remember it")
        child.expect("noted")
        child.expect(PROMPT)
        send_line(child, "/exit")
        child.expect(pexpect.EOF)
    history = isolated_env / "history"
    text = history.read_text()
    assert "my key is" in text and "remember it" in text  # the line was stored...
    assert KEY not in text  # ...without the key
    assert _mode(history) == 0o600


@pytest.fixture()
def redactor() -> Iterator[Redactor]:
    installed = redact_module.install(Redactor([KEY]))
    yield installed
    redact_module.reset()


def test_an_old_history_is_tightened_and_scrubbed(tmp_path: Path, redactor: Redactor) -> None:
    path = tmp_path / "history"
    path.write_text(format_entry(f"export OPENAI_API_KEY={KEY}") + format_entry("ls\nmore"))
    path.chmod(0o644)
    history = PrivateHistory(path)
    assert _mode(path) == 0o600
    loaded = list(history.load_history_strings())
    assert loaded == ["ls\nmore", "export OPENAI_API_KEY=[REDACTED]"]  # newest first
    assert KEY not in path.read_text()
    history.store_string(f"again {KEY}")
    assert parse_history(path.read_bytes())[-1] == "again [REDACTED]"


def test_a_history_link_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "history").symlink_to(target)
    with pytest.raises(WorkspaceError, match="symbolic link"):
        PrivateHistory(tmp_path / "home" / "history")
    assert target.read_text() == ""


def test_the_format_round_trips() -> None:
    entries = ["one", "two\nlines", "", "+plus"]
    data = "".join(format_entry(e) for e in entries).encode()
    assert parse_history(data) == entries

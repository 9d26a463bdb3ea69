"""Text and file names at the entry points: undecodable bytes and unusable names."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from harvey.errors import UsageError
from harvey.inputs import check_input_file, clean_text, read_stdin, read_stdin_line, shown_name


def test_clean_text_turns_escaped_bytes_into_replacement_characters() -> None:
    argv = os.fsdecode(b"caf\xe9 \xff ok")  # how Python hands undecodable argv over
    cleaned = clean_text(argv)
    assert cleaned == "caf\ufffd \ufffd ok"
    cleaned.encode("utf-8")  # no lone surrogates left
    assert clean_text("plain é text") == "plain é text"
    assert clean_text("lone \ud800 high") == "lone \ufffd high"


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)
        self.encoding = "utf-8"


def test_stdin_is_read_as_bytes_and_decoded_with_replacement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(b"one \xff\ntwo\n"))
    assert read_stdin_line() == "one \ufffd\n"
    assert read_stdin() == "two\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO("text only \udcff"))
    assert read_stdin() == "text only \ufffd"


def test_check_input_file_is_one_line_for_every_unusable_name(tmp_path: Path) -> None:
    (tmp_path / "ok.spmd").write_text("x")
    check_input_file(tmp_path / "ok.spmd")
    cases = {
        tmp_path / "missing.spmd": "does not exist",
        tmp_path / ("a" * 300): "too long",
        tmp_path: "is a directory",
        tmp_path / "ok.spmd" / "below": "Not a directory",
    }
    for path, needle in cases.items():
        with pytest.raises(UsageError) as err:
            check_input_file(path, "session file")
        assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)
        assert str(err.value).startswith("session file ")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        check_input_file(fifo)


def test_shown_name_shortens_long_names() -> None:
    long = "b" * 300
    assert len(shown_name(long)) <= 81 and shown_name(long).startswith("bbb")
    assert shown_name("short.txt") == "short.txt"

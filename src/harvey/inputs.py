"""What a person hands Harvey at the entry points, made safe to use: text and file names.

Bytes that are not valid in the locale's encoding reach Python as lone
surrogates (argv, and stdin in some locales) or as a decode error (stdin in
others). Either way they used to end in a ``UnicodeEncodeError`` traceback the
first time the text was encoded; here they become U+FFFD once, at the door,
and the rest of Harvey only ever sees valid text.

A file name can be unusable in ways ``Path.is_file()`` does not absorb
(``ENAMETOOLONG``, ``EACCES`` on a folder in the way): ``check_input_file``
turns every such case into one ``UsageError`` line.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path
from typing import BinaryIO

from harvey.errors import UsageError

_SURROGATE = re.compile("[\ud800-\udfff]")
SHOWN_NAME_CHARS = 80  # a 300-character name is shortened in messages


def clean_text(text: str) -> str:
    """``text`` with undecodable bytes replaced by U+FFFD (valid text is returned as is).

    The surrogate escapes Python made of the bytes are turned back into the
    bytes and decoded with replacement, so one bad byte becomes one U+FFFD;
    any other lone surrogate is replaced directly.
    """
    if not _SURROGATE.search(text):
        return text
    try:
        raw = os.fsencode(text)
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return _SURROGATE.sub("\ufffd", raw.decode(sys.getfilesystemencoding(), "replace"))


def decode_bytes(data: bytes, encoding: str | None = None) -> str:
    """Bytes from stdin as text in the locale's encoding, bad bytes as U+FFFD."""
    return data.decode(encoding or sys.getfilesystemencoding() or "utf-8", "replace")


def _binary_stdin() -> BinaryIO | None:
    """The bytes under ``sys.stdin``; None when it was replaced by a text-only stream."""
    buffer: BinaryIO | None = getattr(sys.stdin, "buffer", None)
    return buffer


def read_stdin() -> str:
    """All of stdin as text; undecodable bytes become U+FFFD instead of an error."""
    buffer = _binary_stdin()
    if buffer is None:
        return clean_text(sys.stdin.read())
    return decode_bytes(buffer.read(), getattr(sys.stdin, "encoding", None))


def read_stdin_line() -> str:
    """One line of stdin ('' at end of input), decoded as ``read_stdin`` does."""
    buffer = _binary_stdin()
    if buffer is None:
        return clean_text(sys.stdin.readline())
    return decode_bytes(buffer.readline(), getattr(sys.stdin, "encoding", None))


def shown_name(path: Path | str) -> str:
    """A file name fit for a one-line message: long ones are cut in the middle."""
    name = clean_text(str(path))
    if len(name) <= SHOWN_NAME_CHARS:
        return name
    half = SHOWN_NAME_CHARS // 2
    return f"{name[:half]}…{name[-half:]}"


def check_input_file(path: Path, what: str = "file") -> None:
    """Raise one ``UsageError`` line unless ``path`` is an existing regular file.

    ``what`` names the file in the message ("session file"). Anything the
    operating system refuses about the name itself (too long, a component
    that is not a folder, no permission) is reported the same way.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise UsageError(f"{what} {shown_name(path)} does not exist") from None
    except (OSError, ValueError) as exc:  # ValueError: an embedded NUL
        reason = getattr(exc, "strerror", None) or str(exc)
        raise UsageError(f"{what} {shown_name(path)}: {reason}") from exc
    if stat.S_ISDIR(mode):
        raise UsageError(f"{what} {shown_name(path)} is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise UsageError(f"{what} {shown_name(path)} is not a regular file")

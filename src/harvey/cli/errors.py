"""The command line's error boundary: every exception becomes one line and an exit status.

A ``HarveyError`` prints ``harvey: MESSAGE`` on stderr and exits with its
``exit_code`` (2 for usage and configuration, 1 for model and tool failures);
Ctrl-C exits 130. A traceback reaches the user only with ``HARVEY_DEBUG=1``,
or for a bug, and it is redacted either way.

Everything else a command prints on stderr is redacted too: ``handle_errors``
puts a ``RedactingStderr`` in front of ``sys.stderr`` for the command's run,
so a warning, a progress line or a refused write's path (a model can name a
file after a token) passes ``redact`` whoever printed it. It redacts whole
lines (it holds a partial line until its newline, a carriage return or a
flush), since ``print`` writes its arguments one at a time.

While a command runs, its stdout and stderr are also guarded
(``terminal_text.guarded``): what it prints reaches the terminal sanitised,
after redaction, a server's error body in a message included.
"""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TextIO, TypeVar

import click

from harvey.errors import Cancelled, HarveyError
from harvey.redact import debug_enabled, redact, redacted_traceback
from harvey.terminal_text import guarded

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int) -> NoReturn:
    """One redacted ``harvey: ...`` line on stderr, then exit ``code``."""
    click.echo(f"harvey: {redact(message)}", err=True)
    sys.exit(code)


def show_traceback(exc: BaseException, code: int) -> NoReturn:
    """The whole traceback, redacted (it once printed api_key), then exit ``code``:
    for a HarveyError under HARVEY_DEBUG=1, and for a bug, whose traceback Python
    would otherwise print as it is."""
    click.echo(redacted_traceback(exc), err=True)
    sys.exit(code)


#: A partial line longer than this is written out (redacted) without waiting for its end.
MAX_PENDING_CHARS = 64 * 1024


class RedactingStderr(io.TextIOBase):
    """A text stream that redacts what it is given, a line at a time, into ``raw``."""

    def __init__(self, raw: TextIO) -> None:
        super().__init__()
        self.raw = raw
        self._pending = ""

    @property
    def encoding(self) -> str:  # type: ignore[override]  # click asks before writing
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.raw, "errors", None)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    def write(self, text: str) -> int:
        self._pending += text
        end = max(self._pending.rfind("\n"), self._pending.rfind("\r")) + 1
        if end == 0 and len(self._pending) > MAX_PENDING_CHARS:
            end = len(self._pending)
        if end:
            done, self._pending = self._pending[:end], self._pending[end:]
            self.raw.write(redact(done))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            done, self._pending = self._pending, ""
            self.raw.write(redact(done))
        self.raw.flush()


def redacting_stderr(func: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``func`` with ``sys.stderr`` redacted (once: nested commands share the wrapper)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if isinstance(sys.stderr, RedactingStderr):
            return func(*args, **kwargs)
        original = sys.stderr
        wrapped = RedactingStderr(original)
        sys.stderr = wrapped
        try:
            return func(*args, **kwargs)
        finally:
            try:
                wrapped.flush()
            except (OSError, ValueError):  # a closed or broken stderr: nothing to save
                pass
            if sys.stderr is wrapped:
                sys.stderr = original

    return wrapper


def handle_errors(func: F) -> F:
    """Translate HarveyError and Ctrl-C into one line and an exit status; stderr is
    redacted for the whole command (``RedactingStderr``)."""

    @redacting_stderr
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Cancelled as exc:
            fail(str(exc) or "cancelled", 130)
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except HarveyError as exc:
            if debug_enabled():
                show_traceback(exc, exc.exit_code)
            fail(str(exc), exc.exit_code)
        except BrokenPipeError:
            sys.exit(1)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # a bug: its traceback, as Python would print it, but redacted
            show_traceback(exc, 1)

    return guarded(wrapper)  # type: ignore[return-value]

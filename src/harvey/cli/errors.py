"""The command line's error boundary: every exception becomes one line and an exit status.

A ``HarveyError`` prints ``harvey: MESSAGE`` on stderr and exits with its
``exit_code`` (2 for usage and configuration, 1 for model and tool failures);
Ctrl-C exits 130. A traceback reaches the user only with ``HARVEY_DEBUG=1``,
or for a bug, and it is redacted either way. While a command runs, its stdout
and stderr are guarded (``terminal_text.guarded``): what it prints reaches the
terminal sanitised, a server's error body in a message included.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

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


def handle_errors(func: F) -> F:
    """Translate HarveyError and Ctrl-C into one line and an exit status."""

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

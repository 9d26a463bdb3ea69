"""One error hierarchy for Harvey, translated at the boundaries.

    HarveyError                 anything Harvey reports to a person in one line
    ├── ConfigError             harvey.yaml / environment / flags are wrong (exit 2)
    ├── UsageError              the command line itself is wrong (exit 2)
    ├── BackendError            a model server or the embedded model failed (exit 1)
    │   ├── BackendUnavailable  could not connect / timed out (transient)
    │   ├── BackendHTTPError    the server answered with an HTTP error status
    │   ├── StreamError         a malformed or truncated stream
    │   └── ModelNotFound       the server does not know the model
    ├── WorkspaceError          a path escapes the workspace or is unusable
    ├── ToolError               a tool failed (becomes an ``error:`` tool result)
    ├── StoreError              sessions.db cannot be opened or written
    │   └── TurnNotSaved        a finished turn could not be committed (carries its reply)
    ├── SessionFileError        a .spmd file cannot be parsed (names the line)
    └── Cancelled               the user pressed Ctrl-C or answered "no"

Third-party exceptions (httpx, sqlite3, yaml, llama.cpp) never cross a module
boundary untranslated: each module raises one of these ``from`` the original.
"""

from __future__ import annotations

from typing import Any


class HarveyError(Exception):
    """Base class: ``str(err)`` is a complete one-line message for a person."""

    exit_code = 1


class ConfigError(HarveyError):
    exit_code = 2


class UsageError(HarveyError):
    exit_code = 2


class BackendError(HarveyError):
    """A model backend failed. ``transient`` errors are worth retrying."""

    transient = False


class BackendUnavailable(BackendError):
    transient = True


class BackendHTTPError(BackendError):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status
        self.transient = status == 429 or status >= 500


class StreamError(BackendError):
    pass


class ModelNotFound(BackendError):
    pass


class WorkspaceError(HarveyError):
    exit_code = 2


class ToolError(HarveyError):
    pass


class StoreError(HarveyError):
    pass


class TurnNotSaved(StoreError):
    """The turn finished but sessions.db refused it (disk full, read-only).

    ``outcome`` is the turn's ``TurnOutcome``: the reply must still reach the
    person, so the caller prints it first and this error after it.
    """

    def __init__(self, message: str, outcome: Any) -> None:
        super().__init__(message)
        self.outcome = outcome


class SessionFileError(HarveyError):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message if line is None else f"{message} (line {line})")
        self.line = line


class Cancelled(HarveyError):
    """Raised when the user interrupts work; carries what to tell them."""

    exit_code = 130

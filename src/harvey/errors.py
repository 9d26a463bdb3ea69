"""One error hierarchy for Harvey, translated at the boundaries.

    HarveyError                 anything Harvey reports to a person in one line
    ├── ConfigError             harvey.yaml / environment / flags are wrong (exit 2)
    ├── UsageError              the command line itself is wrong (exit 2)
    ├── BackendError            a model server or the embedded model failed (exit 1)
    │   ├── BackendUnavailable  could not connect / timed out (transient)
    │   ├── BackendHTTPError    the server answered with an HTTP error status
    │   ├── StreamError         a malformed or truncated stream
    │   ├── ModelNotFound       the server does not know the model
    │   ├── ContextTooLong      the server rejected the prompt as longer than its context
    │   ├── SynthesisError      the reduce phase of a chunked analysis failed
    │   └── ClusterError        --executor ray: no Ray, no cluster, or no worker left
    ├── WorkspaceError          a path escapes the workspace or is unusable
    │   ├── FileRefused         a secret file or a hard link: never read for the model
    │   └── DocumentError       a PDF/DOCX/HTML/EPUB cannot be turned into text (one line)
    ├── ToolError               a tool failed (becomes an ``error:`` tool result)
    │   └── HookDenied          a before-hook refused the call (its message goes to the model)
    ├── GrammarUnavailable      no tree-sitter grammar (internal: the chunker falls back)
    ├── StoreError              sessions.db cannot be opened or written
    │   └── TurnNotSaved        a finished turn could not be committed (carries its reply)
    ├── KnowledgeError          a knowledge store (.harvey/rag/NAME.db) or its embedder failed
    ├── SessionFileError        a .spmd file cannot be parsed (names the line)
    └── Cancelled               the user pressed Ctrl-C or answered "no"

Third-party exceptions (httpx, sqlite3, yaml, llama.cpp) never cross a module
boundary untranslated: each module raises one of these ``from`` the original.

Every exception class Harvey defines is in this tree. The few that are a
module's private control flow and never leave it stay in their module but
still subclass a class here, so one that escaped by a bug would still be one
line, not a traceback: ``tools/search.py``'s ``_DeadlinePassed`` and
``confine/shell_policy.py``'s ``_Refuse`` are ``ToolError``s, and
``config/yaml_text.py``'s ``DuplicateKey`` is a ``ConfigError`` (and a ``yaml.YAMLError``,
since it is raised from inside the YAML loader).
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


class ContextTooLong(BackendError):
    """The server (or the embedded model) refused a prompt as longer than its window.

    ``prompt_tokens`` and ``window`` are what the server said, when it said;
    the chunked analysis splits the chunk on this error, a chat turn shows the line.
    """

    def __init__(
        self, message: str, prompt_tokens: int | None = None, window: int | None = None
    ) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.window = window


class SynthesisError(BackendError):
    """The reduce phase of a chunked analysis failed; ``harvey analyze`` exits 1."""


class ClusterError(BackendError):
    """``--executor ray`` could not run the map phase: Ray is not installed, the cluster
    does not answer, or every worker that could hold the model is gone (exit 1)."""


class WorkspaceError(HarveyError):
    exit_code = 2


class FileRefused(WorkspaceError):
    """A file Harvey will not read for the model: ``reason`` is ``"secret file"`` (by its
    name, ``harvey.workspace.secret_files``) or ``"hard link"`` (``st_nlink > 1``). Readers
    that walk a folder skip and count these; a read of one file is refused with the message."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class NotAFile(WorkspaceError):
    """A path that names no regular file: ``kind`` is ``"missing"``, ``"directory"``, or
    what it is instead (``"a FIFO"``, ``"a socket"``, ...), so a reader can say it its own
    way (``read_file`` points a model at ``list_files``)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class DocumentError(WorkspaceError):
    """A document cannot be turned into text: encrypted without the password, no text
    layer (a scan), damaged, unsupported, or over a limit. ``reason`` is one word
    (``"encrypted"``, ``"no-text"``, ``"damaged"``, ``"unsupported"``, ``"too-large"``)
    for readers that count skipped files; the message is the line a person sees."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class ToolError(HarveyError):
    pass


class HookDenied(ToolError):
    """Raised by a tool hook's before-step to refuse a call; the message goes to the model."""


class GrammarUnavailable(HarveyError):
    """No usable tree-sitter grammar for a language.

    Internal: ``chunks/source_boundaries.py`` raises it and the chunker then
    falls back to its heuristic, so it never reaches a person.
    """


class StoreError(HarveyError):
    pass


class KnowledgeError(HarveyError):
    """A knowledge store cannot be opened, is corrupted, or its embedder failed (exit 1)."""


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

"""``--output-format json|stream-json``: what ``harvey run`` and ``harvey analyze`` print.

``json`` prints one object when the command ends; ``stream-json`` prints one
object per line as things happen (``start``, ``text``, ``tool``, ``write``,
``chunk``, ``synthesis``, ``file``, ``citations``, ``warning``, ``error``) and ends with the
same object as ``json`` under ``"type": "result"``. The schema, with its
version, is ``docs/OUTPUT_FORMAT.md``.

Nothing else reaches stdout in these modes: warnings, progress and refusals
stay on stderr (and are events too). Every error — a usage error, a server
that does not answer, Ctrl-C — still ends the output with a ``result`` whose
``exit`` is the process's exit status and whose ``error`` says what failed.
The lines are ASCII (``ensure_ascii``): no escape sequence or bidi control in a
reply can reach a terminal through them; ``jq -r`` gives the text back.
Everything from the model or the workspace is redacted first.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from harvey.errors import Cancelled, HarveyError, TurnNotSaved
from harvey.llm.metering import Meter, UsageTotal
from harvey.redact import redact, redact_data

if TYPE_CHECKING:  # the command line imports this module for its options: keep it light
    from harvey.analysis.answer import Citation
    from harvey.messages import ToolCall, ToolResult

SCHEMA_VERSION = 2
FORMATS = ("text", "json", "stream-json")
JSON_FORMATS = ("json", "stream-json")
#: A streamed text event waits for its line's end, up to this many characters
#: (redaction needs a whole token; a secret is never split across a newline).
MAX_PENDING_TEXT = 4096

_SURROGATE = re.compile("[\ud800-\udfff]")

F = TypeVar("F", bound=Callable[..., Any])


def _event_end(text: str, start: int) -> int | None:
    """Where the next text event from ``start`` ends: after the last whole line within
    ``MAX_PENDING_TEXT`` characters, else (a longer line) after its last space there, else
    at the limit; ``None`` while what is left is one unfinished line under the limit."""
    limit = start + MAX_PENDING_TEXT
    end = text.rfind("\n", start, limit) + 1
    if end:
        return end
    if len(text) <= limit:
        return None
    space = text.rfind(" ", start, limit) + 1  # a token is never cut in two, so redacted whole
    return space if space > start else limit


def output_format_option(func: F) -> F:
    return click.option(
        "--output-format",
        type=click.Choice(FORMATS),
        default="text",
        show_default=True,
        help="text: the answer alone; json: one JSON object at the end; stream-json: one "
        "JSON object per line as it happens (docs/OUTPUT_FORMAT.md).",
    )(func)


def requested_format(args: Sequence[str]) -> str:
    """The ``--output-format`` a command line asks for, read before (or without) parsing it:
    a usage error must come out as JSON when JSON was asked for."""
    found = "text"
    items = list(args)
    for i, arg in enumerate(items):
        if arg == "--":
            break
        if arg == "--output-format" and i + 1 < len(items):
            found = items[i + 1]
        elif arg.startswith("--output-format="):
            found = arg.split("=", 1)[1]
    return found if found in FORMATS else "text"


def _clean(value: Any) -> Any:
    """Strings a strict JSON parser takes: a lone surrogate (undecodable input) becomes U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


class JsonOutput:
    """The events and the result of one command in a JSON format, written to stdout."""

    def __init__(self, fmt: str, command: str) -> None:
        assert fmt in JSON_FORMATS, fmt
        self.stream = fmt == "stream-json"
        self.command = command
        self.session_id: str | None = None
        self.model: str | None = None
        self.resumed = False
        self.reply: str | None = None
        self.usage = UsageTotal()
        self.meter: Meter | None = None  # the command's model calls, counted as they finish
        self.tool_calls: list[dict[str, Any]] = []
        self.writes: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.analysis: dict[str, int] | None = None
        self.citations: list[dict[str, Any]] = []
        self._pending = ""
        self._finished = False

    # -- writing ---------------------------------------------------------------------

    def _emit(self, obj: dict[str, Any]) -> None:
        line = json.dumps(_clean(obj), ensure_ascii=True, separators=(",", ":"))
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def event(self, kind: str, /, **fields: Any) -> None:
        """One ``stream-json`` line (nothing in ``json`` mode, which prints only the result)."""
        if self.stream:
            self._emit({"type": kind, **fields})

    # -- what happens ----------------------------------------------------------------

    def started(self, session_id: str, model: str, resumed: bool) -> None:
        self.session_id, self.model, self.resumed = session_id, model, resumed
        self.event(
            "start",
            version=SCHEMA_VERSION,
            command=self.command,
            session_id=session_id,
            model=model,
            resumed=resumed,
        )

    def text(self, delta: str) -> None:
        """A piece of the model's reply as it streams; sent a line at a time, redacted."""
        if not self.stream:
            return
        pending = self._pending + delta
        start = 0
        while True:  # events of at most MAX_PENDING_TEXT: a 20 MB line streams in parts
            end = _event_end(pending, start)
            if end is None:
                break
            self.event("text", text=redact(pending[start:end]))
            start = end
        self._pending = pending[start:]

    def flush_text(self) -> None:
        if self._pending:
            done, self._pending = self._pending, ""
            self.event("text", text=redact(done))

    def tool(self, call: ToolCall, result: ToolResult) -> None:
        from harvey.session.records import status_from_result

        self.flush_text()
        entry = {
            "name": redact(call.name),
            "arguments": redact_data(dict(call.arguments)),
            "status": redact(status_from_result(result.content)),
        }
        self.tool_calls.append(entry)
        self.event("tool", **entry)

    def write(self, path: str, approved: bool) -> None:
        entry = {"path": redact(path), "approved": approved}
        self.writes.append(entry)
        self.event("write", **entry)

    def warning(self, message: str) -> None:
        self.warnings.append(redact(message))
        self.event("warning", message=redact(message))

    def analysis_started(self, total: int) -> None:
        counts = self.analysis or {"chunks": 0, "failed": 0, "reused": 0}
        counts["chunks"] += total
        self.analysis = counts

    def chunk(self, index: int, total: int, error: str | None, reused: bool) -> None:
        if self.analysis is not None:
            self.analysis["failed"] += error is not None
            self.analysis["reused"] += reused
        status = "ok" if error is None else f"error: {redact(error)}"
        self.event("chunk", index=index, total=total, status=status, reused=reused)

    def cited(self, citations: Sequence[Citation]) -> None:
        """The records an analysis's answer cites: ``citations`` in the result, and one
        ``citations`` event."""
        entries = [redact_data(c.as_dict()) for c in citations]
        self.citations.extend(entries)
        self.event("citations", citations=entries)

    # -- the end ---------------------------------------------------------------------

    def result(self, exit_code: int, error: dict[str, Any] | None = None) -> None:
        """The last object: everything the run came to (once; a second call is ignored)."""
        if self._finished:
            return
        self._finished = True
        self.flush_text()
        document: dict[str, Any] = {
            "type": "result",
            "version": SCHEMA_VERSION,
            "command": self.command,
            "session_id": self.session_id,
            "model": self.model,
            "resumed": self.resumed,
            "reply": None if self.reply is None else redact(self.reply),
            "usage": (self.meter.total if self.meter is not None else self.usage).as_dict(),
            "tool_calls": self.tool_calls,
            "writes": self.writes,
            "warnings": self.warnings,
        }
        if self.analysis is not None or self.command == "analyze":
            document["analysis"] = self.analysis or {"chunks": 0, "failed": 0, "reused": 0}
        document["citations"] = self.citations
        document["error"] = error
        document["exit"] = exit_code
        self._emit(document)

    def failed(self, exc: BaseException, exit_code: int) -> None:
        """An ``error`` event and the result carrying it."""
        if self._finished:
            return
        self.flush_text()
        error = error_fields(exc)
        self.event("error", **error, exit=exit_code)
        self.result(exit_code, error)

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """Turn whatever ends the command early into the JSON result, then let it go on to
        the error boundary (``cli.errors``), which prints its one stderr line and exits."""
        try:
            yield
        except TurnNotSaved as exc:  # the reply exists; only sessions.db refused it
            self.reply = exc.outcome.reply
            self.failed(exc, exc.exit_code)
            raise
        except (KeyboardInterrupt, Cancelled) as exc:
            self.failed(exc, 130)
            raise
        except HarveyError as exc:
            self.failed(exc, exc.exit_code)
            raise
        except click.exceptions.Exit:
            raise
        except click.ClickException as exc:
            self.failed(exc, exc.exit_code)
            raise
        except BrokenPipeError:
            raise
        except Exception as exc:  # a bug: still a result, then its traceback on stderr
            self.failed(exc, 1)
            raise


def error_fields(exc: BaseException) -> dict[str, Any]:
    """``message`` and ``kind`` (the error's class, e.g. ``BackendUnavailable``) of an error."""
    if isinstance(exc, KeyboardInterrupt):
        return {"kind": "Interrupted", "message": "interrupted"}
    if isinstance(exc, click.ClickException):
        return {"kind": "UsageError", "message": redact(exc.format_message())}
    message = str(exc) or type(exc).__name__
    return {"kind": type(exc).__name__, "message": redact(message)}


def usage_failure(args: Sequence[str], command: str, exc: BaseException) -> None:
    """A usage error found before a command ran, as its JSON result when JSON was asked for."""
    fmt = requested_format(args)
    if fmt in JSON_FORMATS:
        code = exc.exit_code if isinstance(exc, click.ClickException | HarveyError) else 2
        JsonOutput(fmt, command).failed(exc, code)


class JsonErrorsCommand(click.Command):
    """A command whose own usage errors (a missing PROMPT, a bad option) come out as its JSON
    result when ``--output-format json|stream-json`` is on the line, then as click prints them."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            usage_failure(given, self.name or "run", exc)
            raise

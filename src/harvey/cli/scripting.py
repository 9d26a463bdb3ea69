"""``harvey run`` and ``harvey analyze`` for scripts: ``--continue``/``--session`` and JSON output.

``run_json`` is ``oneshot.run_once`` with its events reported (``cli/output.py``):
the reply streams as ``text`` events, each tool call is a ``tool`` event, and the
result carries the session, the model, the usage and the reply. ``reporting``
wraps either command: every model call is metered, and whatever ends the
command (an error, Ctrl-C) still ends its output with the JSON result.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

from harvey.chat.agent import TurnOutcome
from harvey.chat.compaction import compact_if_needed
from harvey.chat.runtime import open_runtime
from harvey.cli.output import JsonOutput
from harvey.cli.status_line import status_on_stderr
from harvey.config.settings import Paths, Settings
from harvey.errors import Cancelled, TurnNotSaved, UsageError
from harvey.llm.metering import metered
from harvey.protocols import ProgressReporter
from harvey.redact import redact
from harvey.ui import HeadlessUI, WriteChoice, WriteRequest

if TYPE_CHECKING:
    from harvey.analysis.answer import Answer


@contextlib.contextmanager
def reporting(output: JsonOutput | None) -> Iterator[None]:
    """Meter the command's model calls into ``output`` and turn its failure into the
    JSON result; with no ``output`` (``--output-format text``) nothing changes."""
    if output is None:
        yield
        return
    with metered() as meter, output.guard():
        output.meter = meter
        yield


def resume_choice(continue_: bool, session_id: str | None) -> tuple[bool, str | None]:
    """``--continue`` and ``--session ID``: at most one of them."""
    if continue_ and session_id is not None:
        raise UsageError("use either --continue or --session ID, not both")
    if session_id is not None and not session_id.strip():
        raise UsageError("--session needs a session id (see 'harvey sessions list')")
    return continue_, session_id


def run_json(
    paths: Paths,
    settings: Settings,
    prompt: str,
    output: JsonOutput,
    *,
    auto_yes: bool,
    record: bool,
    allow_writes: bool,
    resume_latest: bool,
    resume_id: str | None,
) -> int:
    """One turn, reported as JSON; a reply sessions.db refused is in the result with the error."""
    ui = EventUI(output, auto_yes=auto_yes, allow_writes=allow_writes)
    runtime = open_runtime(
        paths, settings, ui=ui, record=record, resume_latest=resume_latest, resume_id=resume_id
    )
    try:
        output.started(runtime.agent.session_id, runtime.client.model, runtime.resumed)
        try:
            with status_on_stderr():  # on stderr: the JSON on stdout stays the result alone
                if runtime.resumed:  # --continue: the same fit-the-window rules as the REPL
                    compact_if_needed(runtime.agent, prompt)
                outcome: TurnOutcome = runtime.agent.turn(
                    prompt, on_text=output.text, on_tool=output.tool
                )
        except TurnNotSaved as exc:
            output.reply = exc.outcome.reply
            raise
    finally:
        runtime.close()
    output.model = outcome.model or output.model
    output.reply = outcome.reply
    output.result(0)
    return 0


def analysis_finished(output: JsonOutput | None, code: int) -> int:
    """The JSON result of an analysis that ran (``code`` 1: more chunks than allowed)."""
    if output is None:
        return code
    if code:
        cancelled = Cancelled(
            "cancelled: more chunks than --max-chunks; pass --yes to process them all"
        )
        output.failed(cancelled, code)
    else:
        output.result(0)
    return code


class EventUI(HeadlessUI):
    """``HeadlessUI`` that also reports writes, warnings and chunk progress as events."""

    def __init__(self, output: JsonOutput, *, auto_yes: bool, allow_writes: bool) -> None:
        super().__init__(auto_yes=auto_yes, allow_writes=allow_writes)
        self.output = output
        self._progress = ChunkEvents(output, self)

    def approve_write(self, request: WriteRequest) -> WriteChoice:
        choice = super().approve_write(request)
        self.output.write(request.path, choice is WriteChoice.YES)
        return choice

    def warn(self, message: str) -> None:
        super().warn(message)
        self.output.warning(message)

    def progress_stream(self) -> ProgressReporter | TextIO:
        return self._progress  # a reporter: each chunk an event


class ChunkEvents(io.TextIOBase):
    """The chunked analysis's progress reporter: each chunk an event, no bar on stdout.

    It is also the text stream the reporter protocol falls back to (anything
    written goes to stderr), so the analysis engine takes it as its reporter
    directly (``analysis.progress.make_progress``).
    """

    def __init__(self, output: JsonOutput, ui: HeadlessUI) -> None:
        super().__init__()
        self.output = output
        self.ui = ui
        self._reused: set[int] = set()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return self.ui.err.write(text)

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        """Called by the engine after each analysis: nothing to close, the stream goes on."""

    def start(self, total: int) -> None:
        self._reused.clear()
        self.output.analysis_started(total)

    def chunk_started(self, index: int, total: int) -> None:
        pass

    def chunk_reused(self, index: int, total: int) -> None:
        self._reused.add(index)

    def chunk_finished(self, index: int, total: int, error: str | None) -> None:
        self.output.chunk(index, total, error, index in self._reused)

    def synthesis_started(self, level: int, inputs: int, groups: int) -> None:
        self.output.event("synthesis", level=level, inputs=inputs, groups=groups)

    def answered(self, answer: Answer) -> None:
        """The analysis's answer is made: its citations go into the result (and an event)."""
        self.output.cited(answer.citations)

    def expect_files(self, files: int) -> None:
        pass

    def file_finished(self, done: int, total: int, name: str) -> None:
        self.output.event("file", done=done, total=total, name=redact(name))

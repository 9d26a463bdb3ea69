"""The interactive REPL's loop: read a line, dispatch it, keep the session whatever happens.

Turns run on the main thread so Ctrl-C interrupts even a stalled network read;
the agent commits nothing for an interrupted turn, so the prompt comes back
with history, ``sessions.db`` and the session file as they were. The loop is
the REPL's error boundary: a ``HarveyError``, an ``OSError`` or any other
exception a line raises becomes one line, and the prompt comes back
(``HARVEY_DEBUG=1`` adds the redacted traceback).

Everything the REPL prints goes through one console, ``terminal_text.safe_console``:
text from outside (replies, tool output, stored rows, file names) is sanitised
and never read as rich markup; Harvey's own styled lines say ``markup=True`` and
escape what they interpolate.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.text import Text

from harvey.chat.agent import Agent, TurnOutcome
from harvey.chat.calls.harvey_replies import model_notice
from harvey.chat.compaction import compact_if_needed
from harvey.chat.runtime import Runtime, open_runtime
from harvey.config.settings import Paths, Settings
from harvey.errors import Cancelled, ContextTooLong, HarveyError, TurnNotSaved, UsageError
from harvey.inputs import shown_name
from harvey.llm.activity import listening
from harvey.llm.too_long import with_advice
from harvey.messages import Message, ToolCall, ToolResult
from harvey.redact import debug_enabled, redact, redacted_traceback
from harvey.repl.activity_line import ActivityLine
from harvey.repl.commands import find_command
from harvey.repl.memory import mine_on_exit, offer_profile
from harvey.repl.status import banner_line
from harvey.repl.ui import LineReader, TerminalUI, safe_markdown
from harvey.terminal_text import safe_console, unguarded
from harvey.ui import printable

#: What to do about a prompt too long for the model, in the REPL.
REPL_TOO_LONG = "/compact or /clear the history, or /model one with a larger context window"


class Repl:
    """One REPL session: the runtime it talks to and the terminal it talks through."""

    def __init__(
        self, runtime: Runtime, console: Console, reader: LineReader, ui: TerminalUI
    ) -> None:
        self.rt = runtime
        self.console = console
        self.reader = reader
        self.ui = ui

    @property
    def agent(self) -> Agent:
        return self.rt.agent

    def banner(self) -> None:
        resumed = " (resumed)" if self.rt.resumed else ""
        where = escape(f"{banner_line(self.agent)} · workspace {self.rt.paths.workspace}")
        self.console.print(
            f"[bold]Harvey[/] — {where}{resumed}\n"
            "Type /help for commands, Ctrl-D or /exit to quit.",
            markup=True,
        )
        notice = model_notice(self.agent.client.backend, self.agent.client.model)
        if notice is not None:
            self.console.print(f"[yellow]{escape(notice)}[/]", markup=True)
        if self.rt.recorder is not None and self.rt.recorder.enabled:
            self.console.print(
                f"[dim]recording to {escape(str(self.rt.recorder.path))}[/]", markup=True
            )

    def restart(self) -> None:
        """Close this session and open a new one with the same settings (``/new``)."""
        paths, settings = self.rt.paths, self.rt.settings
        record = self.rt.recorder is not None
        self.rt.close()
        self.rt = open_runtime(paths, settings, ui=self.ui, record=record)

    def loop(self) -> int:
        self.banner()
        offer_profile(self)  # the first session in a workspace without a profile
        while True:
            try:
                line = self.reader.read(f"{self.agent.user.lower()}> ")
            except KeyboardInterrupt:
                continue
            except EOFError:
                return 0
            text = line.strip()
            if not text:
                continue
            try:
                if not self.dispatch(text):
                    return 0
            except KeyboardInterrupt:
                self.agent.cancel_event.set()
                self.console.print("\n[yellow]cancelled[/]", markup=True)
            except Cancelled:
                self.console.print("\n[yellow]cancelled[/]", markup=True)
            except ContextTooLong as exc:  # said with what to do here, in the REPL
                self.error(exc, str(with_advice(exc, REPL_TOO_LONG)))
            except HarveyError as exc:
                self.error(exc, str(exc))
            except OSError as exc:  # a file name the system refuses (too long, ...)
                where = f"{shown_name(exc.filename)}: " if exc.filename else ""
                self.error(exc, where + str(exc.strerror or exc))
            except Exception as exc:  # a bug in a command must not end the session
                self.error(exc, f"unexpected {type(exc).__name__}: {exc}")

    def error(self, exc: BaseException, message: str) -> None:
        """One redacted ``error:`` line; the traceback too under ``HARVEY_DEBUG=1``."""
        if debug_enabled():
            self.console.print(redacted_traceback(exc))
        line = redact(" ".join(message.split()))  # one line, even for a multi-line message
        self.console.print(f"[red]error:[/] {escape(line)}", markup=True)

    def dispatch(self, text: str) -> bool:
        """Run one line; False when it ends the session."""
        if text.startswith("!"):
            self.shell(text[1:].strip())
        elif text.startswith("/"):
            name, _, arg = text.partition(" ")
            command = find_command(name)
            if command.handler is None:
                return False
            command.handler(self, arg.strip())
        else:
            self.chat(text)
        return True

    # -- chat --------------------------------------------------------------------

    def chat(self, text: str) -> None:
        buffer: list[str] = []
        # No redirection of stdout: rich would read what others print meanwhile as ANSI
        # styles (Text.from_ansi); unredirected, it stays behind the process's guard.
        live = Live(
            console=self.console,
            refresh_per_second=8,
            vertical_overflow="visible",
            redirect_stdout=False,
            redirect_stderr=False,
        )

        line = ActivityLine(self.console)  # what Harvey is doing, until the reply streams

        def on_text(delta: str) -> None:
            if not buffer:
                line.stop()
                live.start()
            buffer.append(delta)
            live.update(safe_markdown(redact("".join(buffer))))  # whole text: a key spans deltas

        def stop_live() -> None:
            line.stop()
            if buffer:
                live.stop()
                buffer.clear()

        def on_tool(call: ToolCall, result: ToolResult) -> None:
            status = tool_status(result)
            stop_live()
            # redacted whole, then cut: a token in a command is hidden before the line is
            # shortened, so no cut leaves a recognisable piece of it on the screen
            args = redact(call.arguments_json())
            cut = f"{args[:120]}{'…' if len(args) > 120 else ''}"
            shown = escape(f"{redact(call.name)}({cut})")
            self.console.print(f"[dim]→ {shown} — {escape(status)}[/]", markup=True)
            line.start()

        self.ui.pause = stop_live
        unsaved: TurnNotSaved | None = None
        line.start()
        try:
            compact_if_needed(self.agent, text)  # between turns, never inside one
            with listening(line):
                outcome: TurnOutcome = self.agent.turn(text, on_text=on_text, on_tool=on_tool)
        except TurnNotSaved as exc:  # the reply first, then the error (the loop prints it)
            outcome, unsaved = exc.outcome, exc
        finally:
            self.ui.pause = None
            line.stop()
            live.stop()
        if not buffer or "".join(buffer) != outcome.reply:
            shown = redact(outcome.reply) or "(no reply)"
            # Harvey's own reply (a listing, cited lines, a diff) is shown as it is, line by line
            self.console.print(Text(shown) if outcome.by_harvey else safe_markdown(shown))
        if unsaved is not None:
            raise unsaved

    # -- shell ---------------------------------------------------------------------

    def shell(self, command: str) -> None:
        from harvey.tools.shell import run_command

        if not command:
            raise UsageError("usage: !COMMAND")
        ctx = self.agent.tool_context()
        result = run_command(ctx, command)
        if result.problem is not None:  # refused, declined, not found, timed out
            self.console.print(f"[yellow]{escape(result.problem)}[/]", markup=True)
        if result.output or result.problem is None:
            self.console.print(redact(result.output).rstrip() or "(no output)")
        if result.exit_code != 0:
            self.console.print(f"[dim]exit {result.exit_code}[/]", markup=True)
        if self.rt.recorder is not None:
            self.rt.recorder.record_shell(command, result.output, result.exit_code)
        if result.ran:
            self.agent.add_context(
                Message(
                    "user",
                    f"I ran `{command}` (exit {result.exit_code}):\n```\n{result.output}\n```",
                )
            )


def run_repl(
    paths: Paths,
    settings: Settings,
    *,
    record: bool = True,
    resume_latest: bool = False,
    resume_file: Path | None = None,
) -> int:
    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.output import create_output

    # rich and prompt_toolkit draw with escape sequences of their own, so they write to
    # the terminal under the command line's guard; what others print stays guarded.
    screen = unguarded(sys.stdout)
    with create_app_session(output=create_output(stdout=screen)):
        console = safe_console(file=screen)
        reader = LineReader(paths.harvey_home / "history")
        ui = TerminalUI(console, reader)
        runtime = open_runtime(
            paths,
            settings,
            ui=ui,
            record=record,
            resume_latest=resume_latest,
            resume_file=resume_file,
        )
        repl = Repl(runtime, console, reader, ui)
        try:
            code = repl.loop()
            mine_on_exit(repl)  # a long interactive session is offered for mining
            return code
        finally:
            repl.rt.close()


def tool_status(result: ToolResult, limit: int = 160) -> str:
    """``ok``, or ``error: `` and the first line of why (redacted, printable, cut)."""
    if not result.is_error:
        return "ok"
    lines = result.content.removeprefix("error:").strip().splitlines()
    why = printable(redact(lines[0].strip() if lines else ""))
    if not why:
        return "error"
    return f"error: {why[:limit]}{'…' if len(why) > limit else ''}"

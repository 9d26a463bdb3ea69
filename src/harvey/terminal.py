"""The interactive REPL: prompt_toolkit for input, rich for output.

Turns run on the main thread so Ctrl-C interrupts even a stalled network read;
the agent commits nothing for an interrupted turn, so the prompt comes back
with history, ``sessions.db`` and the session file as they were.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from rich.console import Console, Group
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from harvey.agent import Agent, TurnOutcome
from harvey.config import Paths, Settings
from harvey.errors import Cancelled, HarveyError, TurnNotSaved, UsageError
from harvey.inputs import clean_text, read_stdin_line, shown_name
from harvey.messages import Message, ToolCall, ToolResult
from harvey.redact import redact
from harvey.runtime import Runtime, open_runtime
from harvey.slash import SLASH_HELP, parse_read_chunks
from harvey.tools.approval import WritePreview, write_preview
from harvey.tools.sandbox import detect
from harvey.ui import WriteChoice, WriteRequest

EXIT_WORDS = ("/exit", "/quit")
WRITE_QUESTION = "write it? [y]es / [N]o / [a]ll this session / [q]uit the turn: "
WRITE_ANSWERS = {
    "": WriteChoice.NO,
    "n": WriteChoice.NO,
    "no": WriteChoice.NO,
    "y": WriteChoice.YES,
    "yes": WriteChoice.YES,
    "a": WriteChoice.ALL,
    "all": WriteChoice.ALL,
    "q": WriteChoice.QUIT,
    "quit": WriteChoice.QUIT,
}


def render_write_preview(preview: WritePreview) -> Panel:
    """The question as rich renders it; Text (never markup) so file content stays literal."""
    styles = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))
    lines = [Text(preview.title, style="bold")]
    for line in preview.lines:
        style = next((st for prefix, st in styles if line.startswith(prefix)), "")
        lines.append(Text(line, style=style))
    if preview.cut:
        lines.append(Text(preview.cut, style="dim"))
    return Panel(Group(*lines), title="write_file", border_style="yellow")


class TerminalUI:
    """AgentUI for a person at a terminal."""

    interactive = True
    auto_yes = False

    def __init__(self, console: Console, reader: LineReader) -> None:
        self.console = console
        self.reader = reader
        self._warned: set[str] = set()
        self.pause: Callable[[], None] | None = None  # stops a live reply before a question

    def confirm(self, question: str) -> bool:
        answer = self.reader.read(f"{question} [y/N] ", default="")
        return answer.strip().lower() in ("y", "yes")

    def ask_chunk_instruction(self, alert: str, default: str) -> str | None:
        self.console.print(Panel(alert, title="HARVEY", border_style="yellow"))
        answer = self.reader.read("instruction> ", default=default)
        if answer.strip().lower() in ("no", "n", ""):
            return None
        return answer

    def approve_write(self, request: WriteRequest) -> WriteChoice:
        if self.pause is not None:
            self.pause()
        self.console.print(render_write_preview(write_preview(request)))
        while True:
            try:
                answer = self.reader.read(WRITE_QUESTION, default="")
            except EOFError:
                return WriteChoice.QUIT
            choice = WRITE_ANSWERS.get(answer.strip().lower())
            if choice is not None:
                return choice
            self.console.print("please answer y, n, a or q")

    def progress_stream(self) -> TextIO:
        return sys.stderr

    def warn(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self.console.print(f"[yellow]warning:[/] {message}", highlight=False)


class LineReader:
    """prompt_toolkit input with history; plain ``input()`` when not a terminal."""

    def __init__(self, history_file: Path | None) -> None:
        self._session: PromptSession[str] | None = None
        if sys.stdin.isatty() and sys.stdout.isatty():
            history: History = InMemoryHistory()
            if history_file is not None:
                try:
                    history_file.parent.mkdir(parents=True, exist_ok=True)
                    history = FileHistory(str(history_file))
                except OSError:
                    pass
            self._session = PromptSession(history=history)

    def read(self, prompt: str, default: str = "") -> str:
        if self._session is not None:
            return clean_text(str(self._session.prompt(prompt, default=default)))
        sys.stdout.write(prompt + (f"[{default}] " if default else ""))
        sys.stdout.flush()
        line = read_stdin_line()  # undecodable bytes become U+FFFD, not a traceback
        if not line:
            raise EOFError
        line = line.rstrip("\n")
        return line if line else default


class Repl:
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
        st = self.agent.status()
        resumed = " (resumed)" if self.rt.resumed else ""
        self.console.print(
            f"[bold]Harvey[/] — {st.backend} · {st.model} · context {st.context_window:,} "
            f"tokens · workspace {self.rt.paths.workspace}{resumed}\n"
            "Type /help for commands, Ctrl-D or /exit to quit.",
            highlight=False,
        )
        if self.rt.recorder is not None and self.rt.recorder.enabled:
            self.console.print(f"[dim]recording to {self.rt.recorder.path}[/]", highlight=False)

    def loop(self) -> int:
        self.banner()
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
            if text in EXIT_WORDS:
                return 0
            try:
                self.dispatch(text)
            except KeyboardInterrupt:
                self.agent.cancel_event.set()
                self.console.print("\n[yellow]cancelled[/]")
            except Cancelled:
                self.console.print("\n[yellow]cancelled[/]")
            except HarveyError as exc:
                self.console.print(f"[red]error:[/] {redact(str(exc))}", highlight=False)
            except OSError as exc:  # a file name the system refuses (too long, ...)
                where = f"{shown_name(exc.filename)}: " if exc.filename else ""
                self.console.print(
                    f"[red]error:[/] {escape(redact(where + str(exc.strerror or exc)))}",
                    highlight=False,
                )

    def dispatch(self, text: str) -> None:
        if text.startswith("!"):
            self.shell(text[1:].strip())
        elif text.startswith("/"):
            self.command(text)
        else:
            self.chat(text)

    # -- chat --------------------------------------------------------------------

    def chat(self, text: str) -> None:
        buffer: list[str] = []
        live = Live(console=self.console, refresh_per_second=8, vertical_overflow="visible")

        def on_text(delta: str) -> None:
            if not buffer:
                live.start()
            buffer.append(delta)
            live.update(Markdown(redact("".join(buffer))))  # whole text: a key spans deltas

        def stop_live() -> None:
            if buffer:
                live.stop()
                buffer.clear()

        def on_tool(call: ToolCall, result: ToolResult) -> None:
            status = "error" if result.is_error else "ok"
            stop_live()
            args = call.arguments_json()
            self.console.print(
                f"[dim]→ {call.name}({args[:120]}{'…' if len(args) > 120 else ''}) — {status}[/]",
                highlight=False,
            )

        self.ui.pause = stop_live
        unsaved: TurnNotSaved | None = None
        try:
            outcome: TurnOutcome = self.agent.turn(text, on_text=on_text, on_tool=on_tool)
        except TurnNotSaved as exc:  # the reply first, then the error (the loop prints it)
            outcome, unsaved = exc.outcome, exc
        finally:
            self.ui.pause = None
            live.stop()
        if not buffer or "".join(buffer) != outcome.reply:
            self.console.print(Markdown(redact(outcome.reply) or "(no reply)"))
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
            self.console.print(f"[yellow]{result.problem}[/]", highlight=False)
        if result.output or result.problem is None:
            self.console.print(
                redact(result.output).rstrip() or "(no output)", highlight=False, markup=False
            )
        if result.exit_code != 0:
            self.console.print(f"[dim]exit {result.exit_code}[/]")
        if self.rt.recorder is not None:
            self.rt.recorder.record_shell(command, result.output, result.exit_code)
        if result.ran:
            self.agent.add_context(
                Message(
                    "user",
                    f"I ran `{command}` (exit {result.exit_code}):\n```\n{result.output}\n```",
                )
            )

    # -- slash commands --------------------------------------------------------------

    def command(self, text: str) -> None:
        name, _, arg = text.partition(" ")
        arg = arg.strip()
        handlers = {
            "/help": self.cmd_help,
            "/model": self.cmd_model,
            "/status": self.cmd_status,
            "/clear": self.cmd_clear,
            "/new": self.cmd_new,
            "/plan": self.cmd_plan,
            "/todos": self.cmd_todos,
            "/read": self.cmd_read,
            "/read-chunks": self.cmd_read_chunks,
        }
        handler = handlers.get(name)
        if handler is None:
            raise UsageError(f"unknown command {name} (try /help)")
        handler(arg)

    def cmd_help(self, _: str) -> None:
        table = Table(show_header=False, box=None)
        for usage, what in SLASH_HELP:
            table.add_row(f"[bold]{usage}[/]", what)
        self.console.print(table)

    def cmd_model(self, arg: str) -> None:
        if not arg:
            for name in self.agent.client.list_models():
                marker = "*" if name == self.agent.client.model else " "
                self.console.print(f"{marker} {name}", highlight=False)
            return
        self.agent.switch_model(arg)
        caps = self.agent.capabilities()
        self.console.print(
            f"model: {arg} (context {caps.context_window:,} tokens)", highlight=False
        )

    def cmd_status(self, _: str) -> None:
        st = self.agent.status()
        ratio_kind = "calibrated" if st.calibrated else "heuristic"
        table = Table(show_header=False, box=None)
        rows = [
            ("backend", f"{st.backend} ({st.endpoint})"),
            ("model", str(st.model)),
            ("context window", f"{st.context_window:,} tokens ({st.context_source})"),
            ("used (estimated)", f"{st.used_tokens:,} tokens"),
            ("  of which plan", f"{st.plan_tokens:,} tokens"),
            ("remaining", f"{st.remaining_tokens:,} tokens (after a 10% margin)"),
            ("bytes per token", f"{st.bytes_per_token:.2f} ({ratio_kind})"),
            ("tools", "on" if st.tools else "off"),
            ("confinement", detect(self.agent.settings.security.sandbox).describe()),
            ("session", str(st.session_id)),
        ]
        if st.omitted_messages:
            rows.insert(5, ("  left out", f"{st.omitted_messages} oldest messages (do not fit)"))
        for key, value in rows:
            table.add_row(key, value)
        self.console.print(table)

    def cmd_clear(self, _: str) -> None:
        self.agent.clear()
        self.console.print("conversation cleared")

    def cmd_new(self, _: str) -> None:
        paths, settings = self.rt.paths, self.rt.settings
        record = self.rt.recorder is not None
        self.rt.close()
        self.rt = open_runtime(paths, settings, ui=self.ui, record=record)
        self.console.print(f"new session {self.agent.session_id}")

    def cmd_plan(self, arg: str) -> None:
        writer = self.rt.plan_writer
        if writer is None:
            raise UsageError("no plan file for this session")
        if arg == "edit":
            if not writer.path.exists():
                writer.write(self.rt.store.get_todos(self.agent.session_id))
            editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
            subprocess.call([*shlex.split(editor), str(writer.path)])
            return
        if not writer.path.exists():
            self.console.print("no plan yet (the model writes one with todo_write)")
            return
        self.console.print(f"[dim]{writer.path}[/]", highlight=False)
        self.console.print(Markdown(writer.read()))

    def cmd_todos(self, _: str) -> None:
        todos = self.rt.store.get_todos(self.agent.session_id)
        if not todos:
            self.console.print("no todos")
        marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "cancelled": "[-]"}
        for t in todos:
            self.console.print(
                f"{marks.get(t.status, '[?]')} {t.id}: {t.content}", highlight=False, markup=False
            )

    def cmd_read(self, arg: str) -> None:
        from harvey.tools.files import safe_path

        if not arg:
            raise UsageError("usage: /read FILE")
        path = safe_path(self.agent.workspace, arg)
        if not path.is_file():
            raise UsageError(f"{arg}: no such file in the workspace")
        text = self.agent.chunks.read_for_context(path).text
        self.agent.add_context(Message("user", text))
        self.console.print(
            f"added {arg} to the conversation ({len(text):,} characters)", highlight=False
        )

    def cmd_read_chunks(self, arg: str) -> None:
        from harvey.tools.files import safe_path

        request = parse_read_chunks(arg)
        path = safe_path(self.agent.workspace, request.file)
        if not path.is_file():
            raise UsageError(f"{request.file}: no such file in the workspace")
        instruction = request.instruction or self.reader.read("instruction> ")
        if not instruction.strip():
            raise UsageError("an instruction is needed")
        result = self.agent.chunks.analyze(path, instruction, overrides=request.options)
        self.console.print(Markdown(result.text))
        self.agent.record_analysis(request.file, instruction, result.text)


def run_repl(
    paths: Paths,
    settings: Settings,
    *,
    record: bool = True,
    resume_latest: bool = False,
    resume_file: Path | None = None,
) -> int:
    console = Console(highlight=False)
    reader = LineReader(paths.harvey_home / "history")
    ui = TerminalUI(console, reader)
    runtime = open_runtime(
        paths, settings, ui=ui, record=record, resume_latest=resume_latest, resume_file=resume_file
    )
    repl = Repl(runtime, console, reader, ui)
    try:
        return repl.loop()
    finally:
        repl.rt.close()

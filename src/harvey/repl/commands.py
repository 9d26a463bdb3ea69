"""The REPL's slash commands: one table of name, usage, help and handler.

``/help`` prints the table, the loop looks a command up in it, and each
handler is a function of the running REPL (a ``ReplSession``) and the rest of the line. A
handler reports bad input by raising ``UsageError``; the loop turns that, and
anything else a handler raises, into one line and keeps the session.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from harvey.config.choices import OVERLAPS
from harvey.config.settings import ChunkingSettings
from harvey.errors import UsageError
from harvey.messages import Message
from harvey.repl.memory import MEMORY_USAGE, memory_command, recall_command
from harvey.repl.rag import RAG_USAGE, rag_command
from harvey.repl.status import status_rows
from harvey.repl.ui import safe_markdown

if TYPE_CHECKING:
    from harvey.repl.session import ReplSession

Handler = Callable[["ReplSession", str], None]


@dataclass(frozen=True)
class SlashCommand:
    """One command. ``handler`` None means the command ends the session (``/exit``)."""

    name: str
    usage: str
    help: str
    handler: Handler | None
    aliases: tuple[str, ...] = ()


# What a line can be besides a slash command; /help lists these first.
INPUT_FORMS: tuple[tuple[str, str], ...] = (
    ("TEXT", "chat with the model"),
    ("@NAME TEXT", "send this turn to a route from harvey.yaml, or to another model"),
    ("!COMMAND", "run a command (allowlist applies) and add its output to the context"),
)

READ_CHUNKS_USAGE = (
    f"/read-chunks FILE [--chunk-size N] [--overlap {'|'.join(OVERLAPS)}] [INSTRUCTION]"
)


def show_help(repl: ReplSession, _: str) -> None:
    table = Table(show_header=False, box=None)
    for usage, what in (*INPUT_FORMS, *((c.usage, c.help) for c in SLASH_COMMANDS)):
        table.add_row(Text(usage, style="bold"), what)
    repl.console.print(table)


def switch_model(repl: ReplSession, arg: str) -> None:
    agent = repl.agent
    if not arg:
        for name in agent.client.list_models():
            marker = "*" if name == agent.client.model else " "
            repl.console.print(f"{marker} {name}", highlight=False)
        return
    agent.switch_model(arg)
    caps = agent.capabilities()
    repl.console.print(f"model: {arg} (context {caps.context_window:,} tokens)", highlight=False)


def show_status(repl: ReplSession, _: str) -> None:
    table = Table(show_header=False, box=None)
    for key, value in status_rows(repl.agent):
        table.add_row(key, value)
    repl.console.print(table)


def clear(repl: ReplSession, _: str) -> None:
    repl.agent.clear()
    repl.console.print("conversation cleared")


def new_session(repl: ReplSession, _: str) -> None:
    repl.restart()
    repl.console.print(f"new session {repl.agent.session_id}")


def plan(repl: ReplSession, arg: str) -> None:
    writer = repl.rt.plan_writer
    if writer is None:
        raise UsageError("no plan file for this session")
    if arg == "edit":
        if not writer.path.exists():
            writer.write(repl.rt.store.get_todos(repl.agent.session_id))
        open_editor(str(writer.path))
        return
    if not writer.path.exists():
        repl.console.print("no plan yet (the model writes one with todo_write)")
        return
    repl.console.print(f"[dim]{escape(str(writer.path))}[/]", markup=True)
    repl.console.print(safe_markdown(writer.read()))


def open_editor(path: str) -> None:
    """Run ``$VISUAL`` or ``$EDITOR`` (else ``vi``) on ``path`` and wait for it.

    An editor that cannot be started is one line, naming the variable to set.
    """
    variable = "VISUAL" if os.environ.get("VISUAL") else "EDITOR"
    editor = os.environ.get(variable) or "vi"
    try:
        argv = shlex.split(editor)
    except ValueError as exc:
        raise UsageError(f"${variable} is not a command line ({exc}): {editor!r}") from exc
    if not argv:
        raise UsageError(f"${variable} is empty; set it to your editor")
    from harvey.confine.programs import find_program

    # Never an editor of the workspace's: a cloned .venv/bin/vi first on PATH would run
    # unconfined with everything the user may do.
    program = find_program(argv[0])
    if program is None:
        raise UsageError(
            f"cannot find the editor {argv[0]!r} outside the workspace; set $VISUAL or $EDITOR"
        )
    try:
        subprocess.call([program, *argv[1:], path])
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(
            f"cannot start the editor {argv[0]!r} ({reason}); set $VISUAL or $EDITOR"
        ) from exc


def undo(repl: ReplSession, arg: str) -> None:
    """Restore the files of this session's last N approved writes, each recorded."""
    from harvey.session.checkpoints import Checkpoints, parse_count, undo_lines
    from harvey.ui import printable

    agent = repl.agent
    if agent.harvey_home is None:
        raise UsageError("this session keeps no checkpoints, so there is nothing to undo")
    results = Checkpoints(agent.harvey_home, agent.session_id).undo(parse_count(arg))
    if results and agent.recorder is not None:
        agent.recorder.record_undo([(r.path, r.status) for r in results])
    for line in undo_lines(results):
        repl.console.print(Text(printable(line)))


def show_todos(repl: ReplSession, _: str) -> None:
    todos = repl.rt.store.get_todos(repl.agent.session_id)
    if not todos:
        repl.console.print("no todos")
    marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "cancelled": "[-]"}
    for t in todos:
        repl.console.print(
            f"{marks.get(t.status, '[?]')} {t.id}: {t.content}", highlight=False, markup=False
        )


def read(repl: ReplSession, arg: str) -> None:
    from harvey.chat.oversize import ChunkStatus
    from harvey.ui import printable
    from harvey.workspace.paths import safe_path
    from harvey.workspace.source import binary_refusal

    if not arg:
        raise UsageError("usage: /read FILE")
    agent = repl.agent
    path = safe_path(agent.workspace, arg)
    if not path.is_file():
        raise UsageError(f"{arg}: no such file in the workspace")
    read = agent.chunks.read_for_context(path)
    status = read.chunked.status
    if status is ChunkStatus.REFUSED:  # a binary file: as harvey analyze refuses it
        raise UsageError(f"{binary_refusal(arg, '/read')}; nothing was added to the conversation")
    if status in (ChunkStatus.CANCELLED, ChunkStatus.FAILED):  # declined, or the analysis failed
        why = read.chunked.text.removeprefix("error: ").splitlines()[0]
        repl.console.print(
            Text(printable(f"nothing was added to the conversation: {arg} was not read ({why})"))
        )
        return
    agent.add_context(Message("user", read.text))
    repl.console.print(
        f"added {arg} to the conversation ({len(read.text):,} characters)", highlight=False
    )


def read_chunks(repl: ReplSession, arg: str) -> None:
    from harvey.workspace.paths import safe_path

    request = parse_read_chunks(arg)
    agent = repl.agent
    path = safe_path(agent.workspace, request.file)
    if not path.is_file():
        raise UsageError(f"{request.file}: no such file in the workspace")
    instruction = request.instruction or repl.reader.read("instruction> ")
    if not instruction.strip():
        raise UsageError("an instruction is needed")
    result = agent.chunks.analyze(path, instruction, overrides=request.options)
    repl.console.print(safe_markdown(result.text))
    agent.record_analysis(request.file, instruction, result.text, by_harvey=result.by_harvey)


def compact_now(repl: ReplSession, arg: str) -> None:
    from harvey.chat.compaction import compact

    repl.console.print(compact(repl.agent, arg), highlight=False)


SLASH_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("/help", "/help", "this list", show_help),
    SlashCommand("/model", "/model [NAME]", "list models, or switch to NAME", switch_model),
    SlashCommand(
        "/status",
        "/status",
        "backend, model, context window, tokens used and remaining",
        show_status,
    ),
    SlashCommand(
        "/read",
        "/read FILE",
        "add a workspace file to the conversation (guarded by the context budget)",
        read,
    ),
    SlashCommand(
        "/read-chunks",
        READ_CHUNKS_USAGE,
        "analyse a file chunk by chunk and add the synthesized result",
        read_chunks,
    ),
    SlashCommand(
        "/plan", "/plan [edit]", "show the plan file, or open it in $VISUAL or $EDITOR", plan
    ),
    SlashCommand("/todos", "/todos", "show the todo list", show_todos),
    SlashCommand(
        "/undo",
        "/undo [N]",
        "restore the files of the last N approved writes (default 1); a file changed since "
        "by someone else is left alone",
        undo,
    ),
    SlashCommand(
        "/clear", "/clear", "forget the conversation so far (the session keeps its record)", clear
    ),
    SlashCommand(
        "/compact",
        "/compact [INSTRUCTION]",
        "summarise the older turns to free context (sessions.db keeps them)",
        compact_now,
    ),
    SlashCommand("/new", "/new", "start a new session (nothing is deleted)", new_session),
    SlashCommand(
        "/rag", RAG_USAGE, "knowledge stores: pick one, pause, query, ingest", rag_command
    ),
    SlashCommand(
        "/memory",
        MEMORY_USAGE,
        "long-term memories: list, recall status, mine, profile",
        memory_command,
    ),
    SlashCommand("/recall", "/recall QUERY", "the memories matching QUERY, scored", recall_command),
    SlashCommand("/exit", "/exit", "quit (also /quit and Ctrl-D)", None, aliases=("/quit",)),
)


def find_command(name: str) -> SlashCommand:
    """The command called ``name`` (or one of its aliases); UsageError if there is none."""
    for command in SLASH_COMMANDS:
        if name == command.name or name in command.aliases:
            return command
    raise UsageError(f"unknown command {name} (try /help)")


@dataclass(frozen=True)
class ReadChunksRequest:
    file: str
    instruction: str
    options: ChunkingSettings  # only the values given on the line (ChunkingSettings.partial)


def parse_read_chunks(arg: str) -> ReadChunksRequest:
    usage = f"usage: {READ_CHUNKS_USAGE}"
    try:
        words = shlex.split(arg)
    except ValueError as exc:
        raise UsageError(f"{usage} ({exc})") from exc
    if not words:
        raise UsageError(usage)
    file, rest = words[0], words[1:]
    chunk_size: int | None = None
    overlap: str | None = None
    instruction: list[str] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in ("--chunk-size", "--overlap") and i + 1 >= len(rest):
            raise UsageError(f"{word} needs a value; {usage}")
        if word == "--chunk-size":
            try:
                chunk_size = int(rest[i + 1])
            except ValueError as exc:
                raise UsageError(f"--chunk-size must be a number of bytes; {usage}") from exc
            if chunk_size < 200:
                raise UsageError("--chunk-size must be at least 200 bytes")
            i += 2
        elif word == "--overlap":
            overlap = rest[i + 1]
            if overlap not in OVERLAPS:
                raise UsageError(f"--overlap must be {', '.join(OVERLAPS[:-1])} or {OVERLAPS[-1]}")
            i += 2
        else:
            instruction.append(word)
            i += 1
    return ReadChunksRequest(
        file,
        " ".join(instruction),
        ChunkingSettings.partial(chunk_size_bytes=chunk_size, overlap=overlap),
    )

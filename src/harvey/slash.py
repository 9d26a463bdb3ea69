"""Parsing for the REPL's slash commands (kept apart so it is testable)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from harvey.config import ChunkingSettings
from harvey.errors import UsageError

SLASH_HELP: list[tuple[str, str]] = [
    ("TEXT", "chat with the model"),
    ("@NAME TEXT", "send this turn to a route from harvey.yaml, or to another model"),
    ("!COMMAND", "run a command (allowlist applies) and add its output to the context"),
    ("/help", "this list"),
    ("/model [NAME]", "list models, or switch to NAME"),
    ("/status", "backend, model, context window, tokens used and remaining"),
    ("/read FILE", "add a workspace file to the conversation (guarded by the context budget)"),
    (
        "/read-chunks FILE [--chunk-size N] [--overlap paragraph|sentence|none] [INSTRUCTION]",
        "analyse a file chunk by chunk and add the synthesized result",
    ),
    ("/plan", "show the plan file"),
    ("/plan edit", "open the plan file in $EDITOR"),
    ("/todos", "show the todo list"),
    ("/clear", "forget the conversation so far (the session keeps its record)"),
    ("/new", "start a new session (nothing is deleted)"),
    ("/exit", "quit (also Ctrl-D)"),
]


@dataclass(frozen=True)
class ReadChunksRequest:
    file: str
    instruction: str
    options: ChunkingSettings  # only the values given on the line (ChunkingSettings.partial)


def parse_read_chunks(arg: str) -> ReadChunksRequest:
    usage = (
        "usage: /read-chunks FILE [--chunk-size N] [--overlap paragraph|sentence|none] "
        "[INSTRUCTION]"
    )
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
            if overlap not in ("paragraph", "sentence", "none"):
                raise UsageError("--overlap must be paragraph, sentence or none")
            i += 2
        else:
            instruction.append(word)
            i += 1
    return ReadChunksRequest(
        file,
        " ".join(instruction),
        ChunkingSettings.partial(chunk_size_bytes=chunk_size, overlap=overlap),
    )

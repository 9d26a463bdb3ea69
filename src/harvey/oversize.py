"""What happens when a file will not fit: alert, ask, chunk, map-reduce, inject.

The pre-read guard in ``read_file`` calls ``handle_oversize`` (through
``ToolContext.on_oversize``) before any byte of the file is read. Models
without tool support reach the same guard through ``attach_mentioned_files``.
``analyze_file`` is the shared path used by both and by ``harvey analyze``.

Memory for an analysis does not grow with the file: the chunk count is first
bounded from the file's size alone (each chunk holds at most
``chunk_size_bytes``, so a file of S bytes makes at least S / chunk_size
chunks) and a file that must make more than ``max_chunks`` is asked about
before one byte is read. A file up to one window is read whole and chunked
with its grammar; a larger one is streamed through the chunker twice — once
to count the chunks (the prompts say "chunk i of N"), once to feed the map
phase lazily.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

from harvey.config import ChunkingSettings
from harvey.context.analysis import ChunkAnalysisParams, run_chunked_analysis
from harvey.context.budget import file_exceeds_budget
from harvey.context.chunking import (
    Chunk,
    ChunkConfig,
    DocType,
    Overlap,
    boundary_name,
    chunk_document,
    detect_doc_type,
    language_for_path,
)
from harvey.context.stream_chunking import WINDOW_BYTES, count_chunks, iter_chunks, utf8_windows
from harvey.errors import Cancelled, HarveyError, UsageError, WorkspaceError
from harvey.llm.base import LLMClient
from harvey.tools.files import file_kind, looks_binary, open_regular, safe_path

if TYPE_CHECKING:
    from harvey.agent import Agent

CANCELLED = "File read cancelled by user."
CHUNK_CLOSING = "Chunk analysis complete. Synthesized result injected into conversation."
ATTACH_LIMIT_BYTES = 1_000_000
PATH_TOKEN = re.compile(r"[\w./\\~-]+\.[\w]+|[\w./-]*/[\w.-]+")


@dataclass(frozen=True)
class AnalysisOptions:
    chunk_size_bytes: int | None = None
    overlap: Overlap | None = None
    concurrency: int | None = None
    max_chunks: int | None = None


def overflow_alert(name: str, estimated: int, remaining: int) -> str:
    return (
        f"Context overflow: {name} is approximately {estimated:,} tokens;\n"
        f"{remaining:,} tokens remain in current context.\n"
        'Enter instructions to process each chunk in turn, or "no" to return.'
    )


def _display_name(agent: Agent, path: Path) -> str:
    try:
        return str(path.relative_to(agent.workspace))
    except ValueError:
        return path.name


def chunk_config(
    settings: ChunkingSettings, client: LLMClient, options: AnalysisOptions
) -> ChunkConfig:
    """The ``chunking:`` settings for the client doing the map calls, with per-run overrides."""
    cfg = ChunkConfig.from_settings(settings, embedded=client.backend == "local")
    return replace(
        cfg,
        chunk_size_bytes=options.chunk_size_bytes or cfg.chunk_size_bytes,
        overlap=options.overlap or cfg.overlap,
        concurrency=options.concurrency or cfg.concurrency,
        max_chunks=options.max_chunks or cfg.max_chunks,
    )


def handle_oversize(agent: Agent, path: Path, size: int, estimated: int) -> str:
    """The alert: ask for a chunk instruction, or cancel, before reading anything."""
    state = agent.current_turn
    client = state.client if state else agent.client
    remaining = agent.remaining_tokens(client, state.new_messages if state else None)
    name = _display_name(agent, path)
    alert = overflow_alert(name, estimated, remaining)
    if not agent.ui.interactive and not agent.ui.auto_yes:
        message = (
            f"File read cancelled: {name} is approximately {estimated:,} tokens but only "
            f"{remaining:,} remain in the context. Rerun with --yes to analyse it in chunks "
            "with your prompt as the instruction."
        )
        agent.ui.warn(message)
        return message
    default = (state.user_text or "") if state else ""
    instruction = agent.ui.ask_chunk_instruction(alert, default)
    if instruction is None or instruction.strip().lower() in ("no", "n", ""):
        return CANCELLED
    try:
        return analyze_file(agent, path, instruction, client=client, alert=alert)
    except Cancelled:
        raise
    except HarveyError as exc:
        return f"error: chunk analysis of {name} failed: {exc}"


def _regular_size(path: Path, name: str) -> int:
    """The size of a regular file, from ``stat`` alone (a FIFO would block an open)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise WorkspaceError(f"cannot read {name}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError(f"{name} is {file_kind(info.st_mode)}, not a regular file")
    return info.st_size


def _open(path: Path, name: str) -> IO[bytes]:
    try:
        return open_regular(path)
    except OSError as exc:
        raise WorkspaceError(f"cannot read {name}: {exc.strerror or exc}") from exc


def _streamed(path: Path, name: str, cfg: ChunkConfig, doc_type: DocType) -> Iterator[Chunk]:
    with _open(path, name) as handle:
        try:
            yield from iter_chunks(utf8_windows(handle), cfg, doc_type)
        except OSError as exc:
            raise WorkspaceError(f"cannot read {name}: {exc.strerror or exc}") from exc


def _chunks(
    path: Path, name: str, size: int, cfg: ChunkConfig, doc_type: DocType
) -> tuple[list[Chunk] | Iterator[Chunk], int]:
    """The chunks (a list, or a lazy stream for a file over one window) and how many."""
    if size <= WINDOW_BYTES:
        with _open(path, name) as handle:
            try:
                raw = handle.read(WINDOW_BYTES + 1)
            except OSError as exc:
                raise WorkspaceError(f"cannot read {name}: {exc.strerror or exc}") from exc
        content = raw.decode("utf-8", errors="replace")
        listed = chunk_document(content, cfg, doc_type, language=language_for_path(path))
        return listed, len(listed)
    with _open(path, name) as handle:
        try:
            total = count_chunks(utf8_windows(handle), cfg, doc_type)
        except OSError as exc:
            raise WorkspaceError(f"cannot read {name}: {exc.strerror or exc}") from exc
    return _streamed(path, name, cfg, doc_type), total


def analyze_file(
    agent: Agent,
    path: Path,
    instruction: str,
    *,
    client: LLMClient | None = None,
    alert: str | None = None,
    options: AnalysisOptions | None = None,
) -> str:
    """Chunk ``path`` and run the map-reduce analysis; return the synthesis.

    Inside a turn the synthesized text also becomes the turn's final reply,
    and the interrupted TALKING scene (with HARVEY's alert) is written before
    the CHUNK ANALYSIS scene so the session file reads in the order it happened.
    """
    from harvey.agent import find_mention

    options = options or AnalysisOptions()
    state = agent.current_turn
    client = client or (state.client if state else agent.client)
    name = _display_name(agent, path)
    size = _regular_size(path, name)
    if size == 0:
        raise UsageError(f"{name} is empty: there is nothing to analyse")
    mention, without_route = find_mention(instruction)
    map_client = agent.resolve_route(mention) if mention else client
    doc_type = detect_doc_type(path)
    cfg = chunk_config(agent.settings.chunking, map_client, options)
    at_least = -(-size // cfg.chunk_size_bytes)  # no chunk holds more than chunk_size_bytes
    asked = at_least > cfg.max_chunks
    if asked and not agent.ui.confirm(
        f"{name} is {size:,} bytes: at least {at_least:,} chunks of {cfg.chunk_size_bytes:,} "
        f"bytes, more than max_chunks ({cfg.max_chunks}). Process them all?"
    ):
        return CANCELLED  # refused before one byte of the file was read
    chunks, total = _chunks(path, name, size, cfg, doc_type)
    if (
        total > cfg.max_chunks
        and not asked
        and not agent.ui.confirm(
            f"{name} splits into {total} chunks, more than max_chunks ({cfg.max_chunks}). "
            f"Process all {total}?"
        )
    ):
        return CANCELLED
    recorder = agent.recorder
    if state is not None and recorder is not None and not state.recorded_prefix:
        recorder.record_turn(
            agent.turn_record(
                state, user_text=state.user_text, reply=None, notes=state.notes, harvey_notice=alert
            )
        )
        state.recorded_prefix = True
    params = ChunkAnalysisParams(
        filename=name,
        chunks=chunks,
        instruction=without_route if mention else instruction,
        model=map_client.model,
        boundary=boundary_name(doc_type),
        config=cfg,
        as_typed=instruction,
        total=total,
    )
    result = run_chunked_analysis(
        map_client,
        params,
        recorder=recorder,
        progress=agent.ui.progress_stream(),
        cancel=agent.cancel_event,
        context_window=agent.capabilities(map_client).context_window,
        bytes_per_token=agent.bytes_per_token(map_client),
    )
    text = result if isinstance(result, str) else result.text
    if state is not None:
        state.final_reply = text
    return text


def attach_mentioned_files(agent: Agent, text: str, client: LLMClient) -> str:
    """For models without tools: attach workspace files named in the prompt.

    Each named file passes the same pre-read guard as ``read_file``: if it
    would not fit, the alert runs and (on acceptance) the synthesized analysis
    is the turn's reply.
    """
    attachments: list[str] = []
    seen: set[Path] = set()
    for token in PATH_TOKEN.findall(text):
        candidate = token.strip(".,;:'\"`()")
        try:
            path = safe_path(agent.workspace, candidate)
        except HarveyError:
            continue
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        attachments.append(read_for_context(agent, path))
        state = agent.current_turn
        if state is not None and state.final_reply is not None:
            break
    if not attachments:
        return text
    return text + "\n\n" + "\n\n".join(attachments)


def read_for_context(agent: Agent, path: Path) -> str:
    """Read a whole file into the conversation, behind the pre-read guard."""
    name = _display_name(agent, path)
    if agent.settings.chunking.enabled:
        state = agent.current_turn
        client = state.client if state else agent.client
        budget = int(
            agent.remaining_tokens(client, state.new_messages if state else None)
            * agent.settings.chunking.threshold
        )
        exceeds, size = file_exceeds_budget(path, budget, agent.bytes_per_token(client))
        if exceeds:
            estimated = math.ceil(size / agent.bytes_per_token(client))
            return f"[{name}: {handle_oversize(agent, path, size, estimated)}]"
    try:
        with open_regular(path) as handle:  # never a FIFO, never more than the limit
            raw = handle.read(ATTACH_LIMIT_BYTES + 1)
    except WorkspaceError:
        return f"[{name}: not a regular file, not attached]"
    except OSError as exc:
        return f"[{name}: cannot read it ({exc.strerror or exc}), not attached]"
    if looks_binary(raw):
        return f"[{name}: binary file, not attached]"
    cut = len(raw) > ATTACH_LIMIT_BYTES
    body = raw[:ATTACH_LIMIT_BYTES].decode("utf-8", errors="replace")
    if cut:
        body += f"\n[only the first {ATTACH_LIMIT_BYTES:,} bytes of {name} are attached]"
    return f"--- {name} ---\n{body}\n--- end of {name} ---"

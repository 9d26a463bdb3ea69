"""What happens when a file will not fit: alert, ask, chunk, map-reduce, inject.

The pre-read guard in ``read_file`` calls ``handle_oversize`` (through
``ToolContext.on_oversize``) before any byte of the file is read. Models
without tool support reach the same guard through ``attach_mentioned_files``.
``analyze_file`` is the shared path used by both and by ``harvey analyze``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.config import ChunkingSettings
from harvey.context.analysis import ChunkAnalysisParams, run_chunked_analysis
from harvey.context.budget import file_exceeds_budget
from harvey.context.chunking import (
    ChunkConfig,
    Overlap,
    boundary_name,
    chunk_document,
    detect_doc_type,
    language_for_path,
)
from harvey.errors import Cancelled, HarveyError, WorkspaceError
from harvey.llm.base import LLMClient
from harvey.tools.files import looks_binary, safe_path

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
    try:
        content = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise WorkspaceError(f"cannot read {name}: {exc.strerror or exc}") from exc
    mention, without_route = find_mention(instruction)
    map_client = agent.resolve_route(mention) if mention else client
    doc_type = detect_doc_type(path)
    cfg = chunk_config(agent.settings.chunking, map_client, options)
    chunks = chunk_document(content, cfg, doc_type, language=language_for_path(path))
    if len(chunks) > cfg.max_chunks and not agent.ui.confirm(
        f"{name} splits into {len(chunks)} chunks, more than max_chunks ({cfg.max_chunks}). "
        f"Process all {len(chunks)}?"
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
    raw = path.read_bytes()[:ATTACH_LIMIT_BYTES]
    if looks_binary(raw):
        return f"[{name}: binary file, not attached]"
    body = raw.decode("utf-8", errors="replace")
    return f"--- {name} ---\n{body}\n--- end of {name} ---"

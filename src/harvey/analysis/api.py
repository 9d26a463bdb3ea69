"""The library entry point of a chunked analysis: one file, without an Agent or a session.

``analyze_file`` is what ``harvey analyze`` and the REPL's overflow path
(``ChunkedReads.analyze``) both call: it sizes the chunks for the map model,
asks before more than ``max_chunks``, cuts the file (lazily when it is big)
and runs the map-reduce engine. Everything a session would add is a
collaborator passed in and optional: the recorder that writes the CHUNK
ANALYSIS scene, the stored map results (resume), the calibrated ratios of a
``PromptBudget`` (``Sizing``), the question before a long run (``confirm``)
and the progress stream. A caller with only settings and a client gets the
4-bytes heuristic, no recording, and a run that never asks.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

if TYPE_CHECKING:
    from harvey.analysis.answer import Answer, Citation
    from harvey.analysis.evidence import Record
    from harvey.analysis.map_calls import MapExecutor, ResultCache
    from harvey.analysis.mapper import Style
    from harvey.analysis.params import AnalysisRecorder, AnswerKind
    from harvey.analysis.sizes import AnswerSetting, EvidenceSetting
    from harvey.config.settings import ChunkingSettings, Settings
    from harvey.messages import Message
    from harvey.protocols import LLMClient, ModelCapabilities, ProgressReporter, Usage
    from harvey.workspace.source import Source


class Sizing(Protocol):
    """What an analysis asks of a calibrated budget (``chat.prompt_budget.PromptBudget``)."""

    def capabilities(self, client: LLMClient | None = None) -> ModelCapabilities: ...

    def bytes_per_token(
        self, client: LLMClient | None = None, doc_type: str = "prose"
    ) -> float: ...

    def size_ratio(self, client: LLMClient | None = None, doc_type: str = "prose") -> float: ...

    def calibrate(
        self, client: LLMClient, prompt: list[Message], usage: Usage, doc_type: str = "prose"
    ) -> None: ...


class Heuristic:
    """``Sizing`` without a sessions.db: the model's own window and the 4-bytes ratio."""

    def capabilities(self, client: LLMClient | None = None) -> ModelCapabilities:
        assert client is not None, "Heuristic sizing needs the client"
        return client.capabilities()

    def bytes_per_token(self, client: LLMClient | None = None, doc_type: str = "prose") -> float:
        from harvey.context.budget import BYTES_PER_TOKEN

        return BYTES_PER_TOKEN

    def size_ratio(self, client: LLMClient | None = None, doc_type: str = "prose") -> float:
        return self.bytes_per_token(client, doc_type)

    def calibrate(
        self, client: LLMClient, prompt: list[Message], usage: Usage, doc_type: str = "prose"
    ) -> None:
        """Nothing to keep the sample in."""


class AnalysisStatus(enum.Enum):
    ANSWERED = "answered"  # ``text`` is the synthesis
    CANCELLED = "cancelled"  # ``confirm`` refused more than max_chunks; nothing was read


@dataclass(frozen=True)
class AnalyzeOptions:
    """How one analysis runs, beyond the settings: the ``harvey analyze`` flags in one value."""

    overrides: ChunkingSettings | None = None  # --chunk-size, --overlap, --max-chunks, ...
    fresh: bool = False  # --fresh: make every map call again instead of reusing stored results
    executor: MapExecutor | None = None  # --executor ray; None runs the map calls here
    evidence: EvidenceSetting | None = None  # over analysis.evidence
    answer: AnswerSetting | None = None  # over analysis.answer
    answer_chars: int | None = None  # bounds the evidence an answer shows (a chat turn's room)


@dataclass(frozen=True)
class Collaborators:
    """What a session lends an analysis; each part is optional."""

    recorder: AnalysisRecorder | None = None  # writes the CHUNK ANALYSIS scene
    results: Callable[[bool], ResultCache] | None = None  # fresh → stored map results
    sizing: Sizing | None = None  # calibrated ratios; default ``Heuristic``
    confirm: Callable[[str], bool] | None = None  # asked before more than max_chunks
    progress: ProgressReporter | TextIO | None = None  # a front end's reporter, or lines here
    warn: Callable[[str], None] | None = None  # one-line notices (results reused)
    cancel: threading.Event | None = None
    on_start: Callable[[], None] | None = None  # called once the chunks are agreed to


@dataclass(frozen=True)
class FileAnalysis:
    """The outcome of ``analyze_file``: its status, the answer, the evidence it rests on
    (every verified record, numbered as the answer cites them) and what was reused."""

    status: AnalysisStatus
    text: str = ""
    total: int = 0
    reused: int = 0
    answer: Answer | None = None
    records: tuple[Record, ...] = ()

    @property
    def answered(self) -> bool:
        return self.status is AnalysisStatus.ANSWERED

    @property
    def citations(self) -> list[Citation]:
        """The records the answer cites: number, place, quote, verified."""
        return list(self.answer.citations) if self.answer is not None else []


def chunking_of(settings: Settings | ChunkingSettings) -> ChunkingSettings:
    """The ``chunking:`` stanza, from the whole settings or the stanza itself."""
    from harvey.config.settings import Settings

    return settings.chunking if isinstance(settings, Settings) else settings


def harvey_home_or_none() -> Path | None:
    """Where a document's index and the embedder's converted weights are kept."""
    from harvey.config.settings import default_harvey_home

    try:
        return default_harvey_home()
    except OSError:
        return None


def answer_plan(
    settings: Settings | ChunkingSettings, model: str, options: AnalyzeOptions
) -> tuple[Style, AnswerKind]:
    """How evidence is found and who writes the answer, for ``model``: the options, else
    ``analysis.evidence``/``analysis.answer``, else ``sizes.py``'s choice."""
    from harvey.analysis.sizes import answer_kind, evidence_style
    from harvey.config.settings import Settings

    evidence = settings.analysis.evidence if isinstance(settings, Settings) else "auto"
    answer = settings.analysis.answer if isinstance(settings, Settings) else "auto"
    return (
        evidence_style(model, options.evidence or evidence),
        answer_kind(model, options.answer or answer),
    )


def analyze_file(
    path: Path | Source,
    instruction: str,
    *,
    settings: Settings | ChunkingSettings,
    client: LLMClient,
    name: str | None = None,
    as_typed: str | None = None,
    options: AnalyzeOptions | None = None,
    using: Collaborators | None = None,
) -> FileAnalysis:
    """Chunk ``path`` and analyse it with ``client`` (the map and synthesis model).

    ``path`` is a ``Source`` (``workspace.open_for_model``: decided, read and hashed
    once) or a resolved path the caller vouches for. ``name`` is how a path is recorded
    (its workspace-relative name; default the file's name; a ``Source`` has its own);
    ``as_typed`` the instruction as the person typed it, ``@route`` included. Raises
    ``UsageError`` for an empty file, ``WorkspaceError`` for one that cannot be read,
    ``SynthesisError`` and ``Cancelled`` from the analysis.
    """
    from harvey.analysis.engine import ChunkAnalysisParams, run_chunked_analysis
    from harvey.analysis.file_chunks import (
        chunk_config,
        chunks_of,
        document_page_starts,
        document_pages,
        source_size,
    )
    from harvey.analysis.semantic import finder_for
    from harvey.chunks.chunking import boundary_name
    from harvey.errors import UsageError
    from harvey.messages import Message
    from harvey.workspace.source import Source

    options = options or AnalyzeOptions()
    using = using or Collaborators()
    sizing: Sizing = using.sizing or Heuristic()
    confirm = using.confirm or (lambda _question: True)
    source = path if isinstance(path, Source) else Source.at(path, name or path.name)
    name = source.name
    size = source_size(source)
    if size == 0:
        raise UsageError(f"{name} is empty: there is nothing to analyse")
    doc_type = source.doc_type
    evidence, answer = answer_plan(settings, client.model, options)
    cfg = chunk_config(
        chunking_of(settings),
        client,
        options.overrides,
        instruction=instruction,
        bytes_per_token=sizing.size_ratio(client, doc_type.value),
        evidence=evidence,
    )
    at_least = -(-size // cfg.chunk_size_bytes)  # no chunk holds more than chunk_size_bytes
    asked = at_least > cfg.max_chunks
    if asked and not confirm(
        f"{name} is {size:,} bytes: at least {at_least:,} chunks of "
        f"{cfg.chunk_size_bytes:,} bytes, more than max_chunks ({cfg.max_chunks}). "
        "Process them all?"
    ):
        return FileAnalysis(AnalysisStatus.CANCELLED)  # before one byte is read
    chunks, total = chunks_of(source, size, cfg)
    if (
        total > cfg.max_chunks
        and not asked
        and not confirm(
            f"{name} splits into {total} chunks, more than max_chunks ({cfg.max_chunks}). "
            f"Process all {total}?"
        )
    ):
        return FileAnalysis(AnalysisStatus.CANCELLED, total=total)
    if using.on_start is not None:
        using.on_start()
    params = ChunkAnalysisParams(
        filename=name,
        chunks=chunks,
        instruction=instruction,
        model=client.model,
        boundary=boundary_name(doc_type),
        config=cfg,
        as_typed=as_typed or instruction,
        total=total,
        pages=document_pages(source),
        page_starts=document_page_starts(source),
        evidence=evidence,
        answer=answer,
        answer_chars=options.answer_chars,
        finder=finder_for(instruction, [source], style=evidence, harvey_home=harvey_home_or_none()),
    )
    result = run_chunked_analysis(
        client,
        params,
        recorder=using.recorder,
        progress=using.progress,
        cancel=using.cancel,
        context_window=sizing.capabilities(client).context_window,
        bytes_per_token=sizing.size_ratio(client),
        results=using.results(options.fresh) if using.results is not None else None,
        executor=options.executor,
        on_usage=lambda sent, usage: sizing.calibrate(
            client, [Message("user", sent)], usage, doc_type.value
        ),
    )
    if result.reused and using.warn is not None:
        using.warn(
            f"reused {result.reused} of {total} map results stored by an earlier run "
            "(harvey analyze --fresh makes every call again)"
        )
    return FileAnalysis(
        AnalysisStatus.ANSWERED,
        result.text,
        total,
        result.reused,
        result.answer,
        tuple(result.records),
    )

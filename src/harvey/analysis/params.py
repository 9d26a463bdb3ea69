"""What an analysis takes and gives: its inputs, its result, and the notes it writes.

``ChunkAnalysisParams`` is the seed's inputs type, with the one thing an input
decides for the map phase — the stored-result key and the prompt of a chunk
(``map_call``; whole-folder analysis numbers chunks per file instead,
``folder_map.py``). ``AnalysisRecorder`` is the part of the session recorder
an analysis writes to, so the engine needs no recorder import.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from harvey.analysis.chunking import Chunk, ChunkConfig

if TYPE_CHECKING:
    from harvey.session.records import ChunkFileNote


class AnalysisRecorder(Protocol):
    """The chunk-analysis methods of ``harvey.session.recorder.Recorder``."""

    def record_chunk_analysis_start(
        self,
        filename: str,
        total_chunks: int,
        model: str,
        boundary: str,
        chunk_size_bytes: int,
        user_instruction: str,
        endpoints: int | None = None,
        files: int | None = None,
        pages: str = "",
    ) -> None: ...

    def record_chunk_result(self, i: int, n: int, status: str) -> None: ...

    def record_chunk_synthesis(self, model: str, status: str, levels: int = 1) -> None: ...

    def record_chunk_served(self, served: int, endpoints: int) -> None: ...

    def record_chunk_file(self, note: ChunkFileNote) -> None: ...  # whole-folder analysis


def map_prompt(instruction: str, index: int, total: int, chunk: str) -> str:
    """The seed's per-chunk prompt (``index`` is 1-based)."""
    return f"{instruction}\n\n---\nChunk {index} of {total}:\n{chunk}"


def result_key(model: str, params: ChunkAnalysisParams, index: int, total: int, text: str) -> str:
    """The stored-result key of one map call: a hash of everything its prompt is made of
    (and the chunking that produced the chunk), so a changed file, instruction, model or
    chunk size never reuses a result made for another prompt."""
    cfg = params.config
    parts = [
        model,
        params.instruction,
        hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        index,
        total,
        params.boundary,
        cfg.chunk_size_bytes,
        cfg.overlap,
    ]
    return hashlib.sha256(json.dumps(parts).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class ChunkAnalysisParams:
    """Inputs to ``run_chunked_analysis`` (the seed's ``ChunkAnalysisParams``).

    ``model`` is the resolved name recorded in the notes (an ``@name`` in the
    instruction already parsed by the caller, who passes the matching client);
    ``boundary`` is ``"paragraph"`` or ``"source"``. ``chunks`` may be a lazy
    iterable (a file streamed through the chunker) when ``total`` says how many
    it yields: the map phase then pulls one chunk per free call slot, so only
    the chunks in flight are in memory, however large the file.
    """

    filename: str
    chunks: Sequence[Chunk | str] | Iterable[Chunk | str]
    instruction: str
    model: str
    boundary: str = "paragraph"
    config: ChunkConfig = field(default_factory=ChunkConfig)
    # The instruction as the person typed it (``@route`` included) for the
    # session record, when ``instruction`` had the route stripped for the model.
    as_typed: str | None = None
    total: int | None = None
    pages: str = ""  # "1-12": a PDF's pages, for the [[chunk:]] note

    def map_call(self, model: str, index: int, total: int, text: str) -> tuple[str, str]:
        """The stored-result key and the prompt of chunk ``index`` of ``total`` (1-based);
        whole-folder analysis numbers chunks per file instead (``folder_analysis.py``)."""
        key = result_key(model, self, index, total, text)
        return key, map_prompt(self.instruction, index, total, text)

    @property
    def count(self) -> int:
        """How many chunks the map phase will see."""
        if self.total is not None:
            return self.total
        if not isinstance(self.chunks, Sequence):
            raise ValueError("lazy chunks need ChunkAnalysisParams.total")
        return len(self.chunks)


@dataclass
class AnalysisResult:
    """The synthesized answer, which chunks failed (1-based) and how many reduce levels ran."""

    text: str
    failures: list[int]
    levels: int
    partials: list[str]
    reused: int = 0  # map results taken from an earlier run instead of a call


__all__ = ["AnalysisRecorder", "AnalysisResult", "ChunkAnalysisParams", "map_prompt"]

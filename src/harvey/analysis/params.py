"""What an analysis takes and gives: its inputs, its result, and the notes it writes.

``ChunkAnalysisParams`` is the seed's inputs type, with what an input decides
for the map phase — where a chunk is (``piece``: its file, its number there, a
PDF's pages) and the stored-result key of its call (``map_key``); whole-folder
analysis numbers chunks per file instead (``folder_map.py``). How the evidence
is found (``evidence``) and whether a model writes the answer (``answer``) are
``sizes.py``'s choice unless set. ``AnalysisRecorder`` is the part of the session
recorder an analysis writes to, so the engine needs no recorder import.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from harvey.analysis.evidence import FORMAT
from harvey.chunks.chunking import Chunk, ChunkConfig

if TYPE_CHECKING:
    from harvey.analysis.answer import Answer
    from harvey.analysis.evidence import ChunkEvidence, Dropped, Record
    from harvey.analysis.finder import Finder
    from harvey.analysis.mapper import Piece, Style
    from harvey.session.records import ChunkFileNote

AnswerKind = Literal["evidence", "synthesis"]


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

    def record_chunk_evidence(
        self, i: int, n: int, kept: Sequence[Record], dropped: Sequence[Dropped]
    ) -> None: ...

    def record_answer(self, answer: Answer) -> None: ...

    def record_chunk_synthesis(
        self, model: str, status: str, levels: int = 1, answer: str = ""
    ) -> None: ...

    def record_chunk_served(self, served: int, endpoints: int) -> None: ...

    def record_chunk_file(self, note: ChunkFileNote) -> None: ...  # whole-folder analysis


def result_key(model: str, params: ChunkAnalysisParams, index: int, total: int, text: str) -> str:
    """The stored-result key of one map call: a hash of everything its request is made
    of (the evidence format and style, model, instruction, chunk and chunking), so a
    changed file, instruction, model or chunk size never reuses a result made for another."""
    cfg = params.config
    parts = [
        FORMAT,
        params.evidence,
        model,
        params.instruction,
        hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        index,
        total,
        params.boundary,
        cfg.chunk_size_bytes,
        cfg.overlap,
        getattr(params.finder, "signature", "words"),  # which finder numbered the candidates
    ]
    return hashlib.sha256(json.dumps(parts).encode("utf-8", "surrogatepass")).hexdigest()


def as_chunk(chunk: Chunk | str) -> Chunk:
    """A chunk given as bare text: its lines counted from 1 (where it is is unknown)."""
    if isinstance(chunk, Chunk):
        return chunk
    return Chunk(chunk, 0, len(chunk), 1, 1 + chunk.count("\n"))


def positioned(chunks: Iterable[Chunk | str]) -> Iterator[Chunk]:
    """The chunks, each bare text placed right after the one before it (a caller that
    passes texts, not ``Chunk``s, gives them in order without overlap)."""
    offset, line = 0, 1
    for chunk in chunks:
        if isinstance(chunk, Chunk):
            yield chunk
            continue
        yield Chunk(chunk, offset, offset + len(chunk), line, line + chunk.count("\n"))
        offset += len(chunk)
        line += chunk.count("\n")


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
    page_starts: Sequence[int] = ()  # where a PDF's pages begin in its text
    evidence: Style = "harvey"  # how a chunk's evidence is found (``mapper.py``)
    answer: AnswerKind = "evidence"  # the evidence itself, or a checked synthesis
    answer_chars: int | None = None  # bounds the evidence an answer shows (a chat turn)
    finder: Finder | None = None  # what finds a chunk's evidence; None: the word finder

    def piece(self, index: int, total: int, chunk: Chunk | str) -> Piece:
        """Chunk ``index`` of ``total`` (1-based) with its place in its file."""
        from harvey.analysis.mapper import Piece

        return Piece(
            as_chunk(chunk),
            self.filename,
            index,
            total,
            self.page_starts,
            self.boundary == "source",
        )

    def map_key(self, model: str, index: int, total: int, text: str) -> str:
        """The stored-result key of chunk ``index`` of ``total`` (1-based)."""
        return result_key(model, self, index, total, text)

    def names(self) -> list[str]:
        """The files analysed (their words name the document, not a topic in it)."""
        return [self.filename]

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
    """The answer, which chunks failed (1-based), every chunk's evidence (``None`` for a
    failed one) and the records found, numbered as the answer cites them."""

    answer: Answer
    failures: list[int]
    evidence: list[ChunkEvidence | None]
    records: list[Record]
    reused: int = 0  # map results taken from an earlier run instead of a call
    calls: int = 0  # model calls the map phase made

    @property
    def text(self) -> str:
        return self.answer.text


__all__ = [
    "AnalysisRecorder",
    "AnalysisResult",
    "AnswerKind",
    "ChunkAnalysisParams",
    "as_chunk",
    "positioned",
]

"""Recovery when a server says a map call's chunk is too long for it.

The chunk sizes are computed from an estimate (or a count the server may
disagree with by a few tokens), so a server can still refuse a prompt as
longer than its window. Failing the chunk would lose a part of the
document; instead the chunk is cut in two at its best boundary — the same
boundary rules as the chunker (paragraph, sentence, definition), so a half
is never a word cut in the middle — and the evidence of both halves is found
(each half knows its own lines, so its quotes are located in the file). A half
that is still too long is cut again, to ``MAX_SPLIT_DEPTH`` levels; below
that the error stands and the chunk fails as any other.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, replace

from harvey.analysis.evidence import ChunkEvidence
from harvey.analysis.mapper import EvidenceMapper, Piece
from harvey.chunks.chunking import MIN_CHUNK_SIZE, Chunk, ChunkConfig, chunk_document
from harvey.errors import ContextTooLong
from harvey.llm.base import chat
from harvey.messages import Message
from harvey.protocols import LLMClient
from harvey.workspace.kinds import DocType

MAX_SPLIT_DEPTH = 3  # at most 2**3 = 8 pieces for one chunk
# The first half is cut at the chunker's best boundary within this share of the text.
_FIRST_HALF_SHARE = 0.6


@dataclass(frozen=True)
class SplitResult:
    """The evidence of a chunk analysed in ``parts`` pieces, and the note's status."""

    evidence: ChunkEvidence
    parts: int

    @property
    def status(self) -> str:
        why = "the server said the chunk was too long"
        return f"{self.evidence.status()} (split in {self.parts} parts: {why})"


def split_in_two(text: str, doc_type: DocType) -> tuple[str, str] | None:
    """``text`` cut once at the chunker's best boundary near its middle; ``None`` if too small.

    The two halves concatenate back to ``text`` exactly (nothing lost, no overlap).
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    target = math.ceil(size * _FIRST_HALF_SHARE)
    if target < MIN_CHUNK_SIZE or size < 2 * MIN_CHUNK_SIZE:
        return None
    cfg = ChunkConfig(chunk_size_bytes=target, overlap="none")
    first = chunk_document(text, cfg, doc_type)[0]
    if not 0 < first.end < len(text):
        return None
    return text[: first.end], text[first.end :]


def split_piece(piece: Piece, doc_type: DocType) -> tuple[Piece, Piece] | None:
    """``piece`` as two pieces of its file, each knowing its own lines and offset."""
    halves = split_in_two(piece.chunk.text, doc_type)
    if halves is None:
        return None
    a, b = halves
    c = piece.chunk
    second_line = c.start_line + a.count("\n")
    first = Chunk(
        a, c.start, c.start + len(a), c.start_line, c.start_line + a.rstrip("\n").count("\n")
    )
    second = Chunk(
        b, c.start + len(a), c.end, second_line, second_line + b.rstrip("\n").count("\n")
    )
    return replace(piece, chunk=first), replace(piece, chunk=second)


def analyse_split(
    client: LLMClient,
    mapper: EvidenceMapper,
    piece: Piece,
    doc_type: DocType,
    cancel: threading.Event,
    refused_whole: ContextTooLong,
) -> SplitResult:
    """Find the evidence of ``piece`` in pieces after the server refused it whole.

    Raises the last ``ContextTooLong`` when a piece cannot be cut further or
    ``MAX_SPLIT_DEPTH`` is reached; ``Cancelled`` when ``cancel`` is set.
    """
    found = ChunkEvidence()
    parts = 0

    def analyse(part: Piece, depth: int, refused: ContextTooLong | None) -> None:
        nonlocal parts
        if refused is None:
            planned = mapper.plan(part)
            try:
                if isinstance(planned, ChunkEvidence):
                    evidence = planned
                else:
                    reply = chat(
                        client,
                        [Message(role="user", content=planned.prompt)],
                        cancel=cancel,
                        response_schema=planned.schema,
                    )
                    evidence = mapper.read(part, reply.answer)
                parts += 1
                found.records.extend(evidence.records)
                found.dropped.extend(evidence.dropped)
                return
            except ContextTooLong as exc:
                refused = exc
        halves = split_piece(part, doc_type) if depth < MAX_SPLIT_DEPTH else None
        if halves is None:
            raise refused
        for half in halves:
            analyse(half, depth + 1, None)

    analyse(piece, 0, refused_whole)
    return SplitResult(found, parts)

"""Recovery when a server says a map call's chunk is too long for it.

The chunk sizes are computed from an estimate (or a count the server may
disagree with by a few tokens), so a server can still refuse a prompt as
longer than its window. Failing the chunk would lose a part of the
document; instead the chunk is cut in two at its best boundary — the same
boundary rules as the chunker (paragraph, sentence, definition), so a half
is never a word cut in the middle — and both halves are analysed. A half
that is still too long is cut again, to ``MAX_SPLIT_DEPTH`` levels; below
that the error stands and the chunk fails as any other.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from harvey.analysis.chunking import MIN_CHUNK_SIZE, ChunkConfig, DocType, chunk_document
from harvey.errors import ContextTooLong
from harvey.llm.base import LLMClient, chat
from harvey.messages import Message

MAX_SPLIT_DEPTH = 3  # at most 2**3 = 8 pieces for one chunk
# The first half is cut at the chunker's best boundary within this share of the text.
_FIRST_HALF_SHARE = 0.6


@dataclass(frozen=True)
class SplitResult:
    """The partial result of a chunk analysed in ``parts`` pieces, and the note's status."""

    text: str
    parts: int

    @property
    def status(self) -> str:
        return f"ok (split in {self.parts} parts: the server said the chunk was too long)"


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


def part_prompt(instruction: str, index: int, total: int, part: str, text: str) -> str:
    """The map prompt for one piece of chunk ``index`` (``part`` like ``"1"`` or ``"2.1"``)."""
    return (
        f"{instruction}\n\n---\nChunk {index} of {total}, part {part} "
        f"(the chunk was split to fit the model):\n{text}"
    )


def analyse_split(
    client: LLMClient,
    instruction: str,
    index: int,
    total: int,
    text: str,
    doc_type: DocType,
    cancel: threading.Event,
    refused_whole: ContextTooLong,
) -> SplitResult:
    """Analyse chunk ``index`` (1-based) in pieces after the server refused it whole.

    Raises the last ``ContextTooLong`` when a piece cannot be cut further or
    ``MAX_SPLIT_DEPTH`` is reached; ``Cancelled`` when ``cancel`` is set.
    """
    outputs: list[str] = []

    def analyse(piece: str, label: str, depth: int, refused: ContextTooLong | None) -> None:
        if refused is None:
            try:
                prompt = part_prompt(instruction, index, total, label, piece)
                reply = chat(client, [Message(role="user", content=prompt)], cancel=cancel)
                outputs.append(reply.answer)
                return
            except ContextTooLong as exc:
                refused = exc
        halves = split_in_two(piece, doc_type) if depth < MAX_SPLIT_DEPTH else None
        if halves is None:
            raise refused
        for k, half in enumerate(halves, 1):
            analyse(half, f"{label}.{k}" if label else str(k), depth + 1, None)

    analyse(text, "", 0, refused_whole)
    return SplitResult("\n\n".join(outputs), len(outputs))

"""Split a document into bounded, lossless, structure-aware chunks.

The chunker works on the UTF-8 bytes of the document, so the size bound is
exact and never needs re-encoding per piece, and it searches for cut points
*lazily*, only in the window where the current chunk may end. Cutting one
chunk therefore costs a few C-level regex searches over at most one chunk's
worth of text, whatever the number of paragraphs.

Where a chunk ends (first rule that applies, the hard bound always wins):

1. a *preferred* boundary — for prose a Markdown/reStructuredText heading, the
   last one past half the target; for source the last top-level definition
   (keyword line at column 0 after an empty line, with its decorators and
   comments) past a twelfth — a chunk does not run into a definition it
   cannot hold whole unless that leaves it tiny — else an indented definition
   (a method of a class too big for one chunk) or any flush line (the seed's
   heuristic) past half; tree-sitter's definition starts likewise (top-level
   past a twelfth, nested past half);
2. the first paragraph boundary (a blank line) once the chunk reaches 75 %
   of the target, else the last one past half;
3. else, each only when the larger unit cannot end the chunk past half the
   target (so a fallback never leaves a tiny chunk): the last sentence end
   (prose), line end, or word break past half; else the last whole
   character that fits.

Overlap: chunk N+1 starts inside chunk N — at N's last paragraph when that is
at most a quarter of the chunk size, else at the longest run of N's trailing
whole sentences that fits in a quarter (``paragraph``); at the longest run of
trailing sentences within a quarter (``sentence``); nowhere (``none``). The
overlap counts toward the hard bound, and it never starts at N's own start: a
small chunk (a short definition before one too big to join it) is not repeated
whole by the next, so the model never reads one chunk twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from harvey.chunks.cut_points import Cutter, Defs
from harvey.config.choices import OVERLAPS, Overlap
from harvey.workspace.kinds import DocType

MIN_CHUNK_SIZE = 16  # leaves ≥ 12 bytes after a quarter of overlap: room for any character


@dataclass(frozen=True, kw_only=True)
class ChunkConfig:
    """One run's chunking parameters, resolved from ``harvey.config.settings.ChunkingSettings``.

    The stanza (with any per-run overrides laid over it) is validated once as
    ``ChunkingSettings``; ``from_settings`` resolves what it leaves open (the
    concurrency for the backend). Code without a ``harvey.yaml`` builds one directly.
    """

    enabled: bool = True
    threshold: float = 0.80
    chunk_size_bytes: int = 6000
    max_chunks: int = 20
    overlap: Overlap = "paragraph"
    concurrency: int = 4
    # False: nobody set it, so the server's capacity is found out (``map_support.map_limit``)
    concurrency_given: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], not {self.threshold}")
        if self.chunk_size_bytes < MIN_CHUNK_SIZE:
            raise ValueError(
                f"chunk_size_bytes must be at least {MIN_CHUNK_SIZE}, not {self.chunk_size_bytes}"
            )
        if self.max_chunks < 1:
            raise ValueError(f"max_chunks must be at least 1, not {self.max_chunks}")
        if self.overlap not in OVERLAPS:
            raise ValueError(f"overlap must be one of {', '.join(OVERLAPS)}, not {self.overlap!r}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {self.concurrency}")

    @classmethod
    def from_settings(cls, settings: Any, *, embedded: bool = False) -> ChunkConfig:
        """Build from ``ChunkingSettings``; unset concurrency: 1 embedded, 4 else."""
        concurrency = settings.concurrency or (1 if embedded else 4)
        size = settings.chunk_size_bytes  # "auto" is resolved for the map model by the caller
        return cls(
            enabled=settings.enabled,
            threshold=settings.threshold,
            chunk_size_bytes=size if isinstance(size, int) else 6000,
            max_chunks=settings.max_chunks,
            overlap=settings.overlap,
            concurrency=concurrency,
            concurrency_given=settings.concurrency is not None,
        )


class Chunk(NamedTuple):
    """``content[start:end] == text``; lines are 1-based, ``end_line`` holds the last char.

    An immutable record; a named tuple rather than a frozen dataclass because
    a long document makes thousands of them and a tuple is built several
    times faster.
    """

    text: str
    start: int
    end: int
    start_line: int
    end_line: int


def _byte_spans(
    data: bytes, cfg: ChunkConfig, doc_type: DocType, defs: Defs | None
) -> list[tuple[int, int]]:
    """The chunks as ``(start, end)`` byte offsets."""
    n, size, overlap = len(data), cfg.chunk_size_bytes, cfg.overlap
    if n <= size:  # one chunk: no boundary to look for
        return [(0, n)]
    cutter = Cutter(data, size, doc_type is DocType.PROSE, defs)
    spans: list[tuple[int, int]] = []
    cb = s = 0
    while n > cb + size:
        e = cutter.end(cb, s, cb + size)
        spans.append((cb, e))
        cb, s = cutter.overlap_start(cb, e, overlap), e
    spans.append((cb, n))
    return spans


def _to_chunks(content: str, data: bytes, spans: list[tuple[int, int]]) -> list[Chunk]:
    """Build the chunks: character offsets, text and line numbers, in one ordered pass.

    Line numbers come from counting newlines (``bytes.count``, C speed but
    still a tenth of the chunker's time), so each byte is counted once: a
    chunk's count is split at the next chunk's start, and the part after it
    (the overlap) is what the next chunk's count starts from. An ASCII
    document's byte offsets are its character offsets, so its texts are plain
    slices; otherwise each chunk's bytes are decoded once, which gives both
    its text and its length in characters.
    """
    out: list[Chunk] = []
    count = data.count
    new_chunk = tuple.__new__  # what ``Chunk(...)`` calls, minus a Python-level frame
    ascii_only = len(data) == len(content)
    line = 1  # the line holding the current chunk's first byte
    pos = char = 0  # the end of the previous chunk, in bytes and in characters
    last = len(spans) - 1
    for i, (a, b) in enumerate(spans):
        # Chunks are non-empty except for an empty document, which has one; the next
        # chunk starts at or after this one's start and at or before its end.
        nxt = spans[i + 1][0] if i < last else b
        if nxt < b:  # overlap (or no next chunk): split the count at the next start
            head = count(b"\n", a, nxt)
            end_line = line + head + count(b"\n", nxt, b - 1)
        else:
            head = count(b"\n", a, b)
            end_line = line + head - (data[b - 1] == 10 if b > a else 0)
        if ascii_only:
            start, text = a, content[a:b]
        else:  # chunks start at or before the previous end: decode just the overlap
            start = char - len(data[a:pos].decode("utf-8", "surrogatepass"))
            text = data[a:b].decode("utf-8", "surrogatepass")
            pos, char = b, start + len(text)
        out.append(new_chunk(Chunk, (text, start, start + len(text), line, end_line)))
        line += head
    return out


def chunk_document(
    content: str, cfg: ChunkConfig, doc_type: DocType, *, language: str | None = None
) -> list[Chunk]:
    """Split ``content`` into chunks (see the module docstring); never an empty list.

    ``language`` (e.g. from ``language_for_path``) selects a tree-sitter
    grammar for ``DocType.SOURCE``; without one, or when parsing fails, the
    blank-line-then-signature heuristic finds the definitions.
    """
    if not content:
        return [Chunk("", 0, 0, 1, 1)]
    data = content.encode("utf-8", errors="surrogatepass")
    defs: Defs | None = None
    if doc_type is DocType.SOURCE and language is not None and len(data) > cfg.chunk_size_bytes:
        from harvey.chunks.source_boundaries import definition_levels

        defs = definition_levels(data, language, cfg.chunk_size_bytes)
    return _to_chunks(content, data, _byte_spans(data, cfg, doc_type, defs))


def boundary_name(doc_type: DocType) -> str:
    """The ``boundary=`` value recorded in the ``[[chunk:]]`` note."""
    return "source" if doc_type is DocType.SOURCE else "paragraph"


__all__ = [
    "Chunk",
    "ChunkConfig",
    "boundary_name",
    "chunk_document",
]

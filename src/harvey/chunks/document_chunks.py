"""A document's chunks cut at its page (or heading) boundaries wherever they can be.

The prose chunker fills a chunk up to its size and so may cut a PDF in the middle of a
page while a page boundary sat a little earlier; a chunk that spans two half pages is
harder to cite than one that holds whole pages. So whole sections — the pages of a
PDF, the heading sections of a DOCX, HTML page or EPUB — are packed into a chunk while
they fit, and only a section larger than a chunk is cut inside, by ``chunk_document``.
Every chunk keeps ``document.text[start:end] == text`` and its 1-based lines, so the
page range of a chunk is ``document.pages_of(chunk.start, chunk.end)``.
"""

from __future__ import annotations

from harvey.chunks.chunking import Chunk, ChunkConfig, chunk_document
from harvey.documents.model import Document
from harvey.workspace.kinds import DocType


def section_starts(document: Document) -> list[int]:
    """Where the sections begin: each page of a PDF, else each heading (and the start)."""
    if document.paged:
        return list(document.page_starts)
    return sorted({0, *(h.offset for h in document.headings)})


class _Lines:
    """The 1-based line of an offset, counted onward from the last one asked (offsets
    come in increasing order), so numbering a long text stays linear."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offset = 0
        self.line = 1

    def at(self, offset: int) -> int:
        if offset < self.offset:
            self.offset, self.line = 0, 1
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line


def _whole(text: str, lines: _Lines, start: int, end: int) -> Chunk | None:
    body = text[start:end].rstrip()
    if not body.strip():
        return None
    first = lines.at(start)
    return Chunk(body, start, start + len(body), first, first + body.count("\n"))


def chunk_sections(
    document: Document, cfg: ChunkConfig, doc_type: DocType = DocType.PROSE
) -> list[Chunk]:
    """The chunks of ``document.text``, in order, none empty (see the module docstring)."""
    text = document.text
    starts = section_starts(document)
    ends = [*starts[1:], len(text)]
    lines = _Lines(text)
    out: list[Chunk] = []
    group: tuple[int, int] | None = None
    size = 0

    def flush() -> None:
        nonlocal group, size
        if group is not None:
            chunk = _whole(text, lines, *group)
            if chunk is not None:
                out.append(chunk)
        group, size = None, 0

    for start, end in zip(starts, ends, strict=True):
        section = len(text[start:end].encode("utf-8", "surrogatepass"))
        if section > cfg.chunk_size_bytes:
            flush()
            base = lines.at(start) - 1
            for c in chunk_document(text[start:end], cfg, doc_type):
                if c.text.strip():
                    lines.at(start + c.start)
                    out.append(
                        Chunk(c.text, start + c.start, start + c.end, base + c.start_line,
                              base + c.end_line)
                    )  # fmt: skip
            continue
        if group is not None and size + section > cfg.chunk_size_bytes:
            flush()
        group = (group[0] if group is not None else start, end)
        size += section
    flush()
    return out


__all__ = ["chunk_sections", "section_starts"]

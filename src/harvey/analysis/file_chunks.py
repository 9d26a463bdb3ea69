"""A workspace file as chunks: the run's chunk config, the file's size, its chunks.

Shared by the two flows that analyse files — one file (``oversize.py``) and a
whole folder (``folder_reads.py``) — so both size ``chunk_size_bytes: auto``
the same way and read a file the same way. Memory does not grow with the
file: the size comes from ``stat`` alone (so a FIFO is refused before an open
could block on it), a file up to one window is read whole and chunked with its
grammar, and a larger one is streamed through the chunker twice — once to
count the chunks (the prompts say "chunk i of N"), once, lazily, for the map
phase. Every read error is one ``WorkspaceError`` line naming the file; a
secret file or a hard link is refused (``FileRefused``) before its size is used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from harvey.chunks.chunking import Chunk, ChunkConfig, chunk_document
from harvey.chunks.document_chunks import chunk_sections
from harvey.chunks.stream_chunking import WINDOW_BYTES, count_chunks, iter_chunks, utf8_windows
from harvey.config.settings import ChunkingSettings
from harvey.context.budget import BYTES_PER_TOKEN, FIXED_CHUNK_BYTES, auto_chunk_bytes
from harvey.documents.extraction import estimated_source_text_bytes, extract_source
from harvey.errors import BackendError, WorkspaceError
from harvey.protocols import LLMClient
from harvey.workspace.files import open_regular
from harvey.workspace.kinds import language_for_path
from harvey.workspace.source import Source

#: ``chunk_size_bytes: auto`` when the model chooses a chunk's evidence among numbered
#: candidates (``analysis.evidence: choose``): the analysis-quality benchmark's curve
#: (BENCHMARKS.md) found that model keeping fewer facts the larger its chunk, on the
#: embedded model and behind a server alike; at 3,000 bytes it kept nearly all it keeps
#: at 1,500 in under a third of the time. Harvey's own finder judges every size alike
#: and keeps window-sized chunks, the fewest calls.
CHOOSING_CHUNK_BYTES = 3000


def chunk_config(
    settings: ChunkingSettings,
    client: LLMClient,
    overrides: ChunkingSettings | None = None,
    *,
    instruction: str = "",
    bytes_per_token: float = BYTES_PER_TOKEN,
    evidence: str = "harvey",
) -> ChunkConfig:
    """The run config: the ``chunking:`` stanza with this run's overrides, for ``client``;
    ``chunk_size_bytes: auto`` sized to ``client``'s window (``auto_chunk_bytes``), and
    no larger than ``CHOOSING_CHUNK_BYTES`` when ``evidence`` (the style that finds it,
    ``analysis.evidence``) is the model choosing among candidates."""
    stanza = settings
    if overrides is not None and overrides.model_fields_set:  # no flag: nothing to merge
        stanza = settings.overridden_by(overrides)
    if stanza.chunk_size_bytes == "auto":
        try:
            window = client.capabilities().context_window
            size = auto_chunk_bytes(
                window, instruction=instruction, bytes_per_token=bytes_per_token
            )
        except BackendError:  # the window is unknowable: today's fixed size
            size = FIXED_CHUNK_BYTES
        if evidence == "choose":
            size = min(size, CHOOSING_CHUNK_BYTES)
        stanza = stanza.model_copy(update={"chunk_size_bytes": size})
    return ChunkConfig.from_settings(stanza, embedded=client.backend == "local")


def source_size(source: Source) -> int:
    """What the analysis will chunk, in bytes: a document's text (a PDF's estimated from
    its first pages), else the file's size from ``stat`` (``Source`` refused a FIFO, a
    secret file and a hard link before)."""
    return estimated_source_text_bytes(source) if source.is_document else source.size


def _open(source: Source) -> IO[bytes]:
    try:
        return open_regular(source.path)
    except OSError as exc:
        raise WorkspaceError(f"cannot read {source.name}: {exc.strerror or exc}") from exc


def _streamed(source: Source, cfg: ChunkConfig) -> Iterator[Chunk]:
    with _open(source) as handle:
        try:
            yield from iter_chunks(utf8_windows(handle), cfg, source.doc_type)
        except OSError as exc:
            raise WorkspaceError(f"cannot read {source.name}: {exc.strerror or exc}") from exc


def chunks_of(
    source: Source, size: int, cfg: ChunkConfig
) -> tuple[list[Chunk] | Iterator[Chunk], int]:
    """The chunks (a list, or a lazy stream for a file over one window) and how many.
    A PDF, DOCX, HTML or EPUB is chunked as its extracted text (``documents``)."""
    if source.is_document:
        return _document_chunks(source, cfg)
    if size <= WINDOW_BYTES:
        raw = source.data(WINDOW_BYTES)
        content = raw.decode("utf-8", errors="replace")
        language = language_for_path(source.path)
        listed = chunk_document(content, cfg, source.doc_type, language=language)
        return listed, len(listed)
    with _open(source) as handle:
        try:
            total = count_chunks(utf8_windows(handle), cfg, source.doc_type)
        except OSError as exc:
            raise WorkspaceError(f"cannot read {source.name}: {exc.strerror or exc}") from exc
    return _streamed(source, cfg), total


def _document_chunks(source: Source, cfg: ChunkConfig) -> tuple[list[Chunk], int]:
    """The extracted text (cached by content) cut at its pages or headings where it can
    (``document_chunks.chunk_sections``); each chunk's offsets are in that text, so its
    quotes are located on their pages (``document_page_starts``)."""
    listed = chunk_sections(extract_source(source), cfg, source.doc_type)
    return listed, len(listed)


def document_page_starts(source: Source) -> tuple[int, ...]:
    """Where a PDF's pages begin in its extracted text (empty for every other file)."""
    if not source.is_document:
        return ()
    document = extract_source(source)
    return tuple(document.page_starts) if document.paged else ()


def document_pages(source: Source) -> str:
    """``"1-12"``: the pages a PDF's analysis read, for its notes (``""`` for any other
    file); the extraction is the one the chunks came from."""
    if not source.is_document:
        return ""
    document = extract_source(source)
    return f"1-{len(document.page_starts)}" if document.paged else ""


__all__ = ["chunk_config", "chunks_of", "document_page_starts", "document_pages", "source_size"]

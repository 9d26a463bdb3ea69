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

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from harvey.analysis.chunking import Chunk, ChunkConfig, chunk_document
from harvey.analysis.document_chunks import chunk_sections
from harvey.analysis.stream_chunking import WINDOW_BYTES, count_chunks, iter_chunks, utf8_windows
from harvey.config.settings import ChunkingSettings
from harvey.context.budget import BYTES_PER_TOKEN, FIXED_CHUNK_BYTES, auto_chunk_bytes
from harvey.documents import estimated_text_bytes, extract
from harvey.documents.extraction import is_document_file
from harvey.errors import BackendError, WorkspaceError
from harvey.protocols import LLMClient
from harvey.workspace import secret_files
from harvey.workspace.files import file_kind, hard_link_refused, open_regular, secret_refused
from harvey.workspace.kinds import DocType, language_for_path


def chunk_config(
    settings: ChunkingSettings,
    client: LLMClient,
    overrides: ChunkingSettings | None = None,
    *,
    instruction: str = "",
    bytes_per_token: float = BYTES_PER_TOKEN,
) -> ChunkConfig:
    """The run config: the ``chunking:`` stanza with this run's overrides, for ``client``;
    ``chunk_size_bytes: auto`` sized to ``client``'s window (``auto_chunk_bytes``)."""
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
        stanza = stanza.model_copy(update={"chunk_size_bytes": size})
    return ChunkConfig.from_settings(stanza, embedded=client.backend == "local")


def regular_size(path: Path, name: str) -> int:
    """The size of a regular file, from ``stat`` alone (a FIFO would block an open).

    ``name`` is the workspace-relative name: a secret one is refused here, before a
    question about its chunks could be asked, and so is a file with several names."""
    rule = secret_files.active()
    if rule.matches(name) or rule.matches(path.name):
        raise secret_refused(name)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise WorkspaceError(f"cannot read {name}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError(f"{name} is {file_kind(info.st_mode)}, not a regular file")
    if info.st_nlink > 1:
        raise hard_link_refused(name, info.st_nlink)
    if is_document_file(path):  # its text's size, never its bytes (a PDF's estimated)
        return estimated_text_bytes(path, name)
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


def chunks_of(
    path: Path, name: str, size: int, cfg: ChunkConfig, doc_type: DocType
) -> tuple[list[Chunk] | Iterator[Chunk], int]:
    """The chunks (a list, or a lazy stream for a file over one window) and how many.
    A PDF, DOCX, HTML or EPUB is chunked as its extracted text (``documents``)."""
    if is_document_file(path):
        return _document_chunks(path, name, cfg, doc_type)
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


def _document_chunks(
    path: Path, name: str, cfg: ChunkConfig, doc_type: DocType
) -> tuple[list[Chunk], int]:
    """The extracted text (cached by content) cut at its pages or headings where it can
    (``document_chunks.chunk_sections``); each chunk's offsets are in that text, so its
    quotes are located on their pages (``document_page_starts``)."""
    document = extract(path, name)
    listed = chunk_sections(document, cfg, doc_type)
    return listed, len(listed)


def document_page_starts(path: Path, name: str) -> tuple[int, ...]:
    """Where a PDF's pages begin in its extracted text (empty for every other file)."""
    if not is_document_file(path):
        return ()
    document = extract(path, name)
    return tuple(document.page_starts) if document.paged else ()


def document_pages(path: Path, name: str) -> str:
    """``"1-12"``: the pages a PDF's analysis read, for its notes (``""`` for any other
    file); the extraction is the cached one the chunks came from."""
    if not is_document_file(path):
        return ""
    document = extract(path, name)
    return f"1-{len(document.page_starts)}" if document.paged else ""


__all__ = ["chunk_config", "chunks_of", "document_page_starts", "document_pages", "regular_size"]

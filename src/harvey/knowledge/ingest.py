"""Ingest files and folders into a store, incrementally and safely.

Safety: every path goes through ``safe_path`` (it must stay inside the
workspace, symlinks resolved), and every file is a ``Source`` (``workspace.source``):
only regular files are opened (never blocking on a FIFO), secret files (by the
workspace-relative name and the real path's) and hard links (``st_nlink > 1``: the other
name may be outside the workspace) are refused, the bytes are read once and hashed once
(a document's extraction cache is keyed by the same hash). Binary files are recognised
by the project's one test (``looks_binary``) and skipped, as are files over
``MAX_FILE_BYTES``. None of these is fatal: each is counted and named; a secret file
or hard link ingested by an older Harvey has its rows removed.

Incremental: a file whose size and mtime match its row is skipped unread; one
whose bytes hash the same only has its mtime refreshed; a changed file's
chunks are replaced in one transaction; files gone from an ingested folder
are pruned; and only chunk texts without a vector are embedded. Because each
file is its own transaction and vectors are added after the files, a Ctrl-C
leaves the store consistent and the next ingest continues where it stopped.

Chunking is Harvey's own chunker (``chunk_document``) at
``rag.chunk_size_bytes`` without overlap. Its source splitter is chosen per
language by measurement (``TREE_SITTER_LANGUAGES``, ``bench/rag_chunk_paths.py``):
the heuristic runs at 150+ MB/s and tree-sitter at 5-9 MB/s; on Python and C
both cut at a definition equally often, so the heuristic is used; on
JavaScript tree-sitter cuts there clearly more often, so it is used.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harvey.chunks.chunking import ChunkConfig, chunk_document
from harvey.chunks.document_chunks import chunk_sections
from harvey.documents import Document
from harvey.documents.extraction import MAX_DOCUMENT_BYTES, extract_source
from harvey.errors import DocumentError, FileRefused, UsageError, WorkspaceError
from harvey.knowledge.store import FileRow, KnowledgeStore, NewChunk
from harvey.retrieval.embedders import Embedder
from harvey.workspace.files import (
    GitIgnore,
    matches_any,
    relative_posix,
    walk_files,
)
from harvey.workspace.kinds import detect_doc_type, language_for_path
from harvey.workspace.paths import looks_binary, safe_path
from harvey.workspace.source import Source

MAX_FILE_BYTES = 10 * 1024 * 1024
# Languages whose files are split at tree-sitter's definition starts; every other source
# file uses the heuristic. Chosen by measurement (``bench/rag_chunk_paths.py``): tree-sitter
# earns its slower parse only where it cuts at definitions clearly more often.
TREE_SITTER_LANGUAGES: frozenset[str] = frozenset({"javascript"})
EMBED_BATCH = 64


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0
    embedded: int = 0
    bytes_read: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)

    def summary(self) -> str:
        skipped = f", {len(self.skipped)} skipped" if self.skipped else ""
        return (
            f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.removed} removed{skipped}; {self.chunks} chunks written, "
            f"{self.embedded} embedded"
        )


Progress = Callable[[int, int, int, int], None]  # files done/total, bytes done/total


def document_chunks(document: Document, cfg: ChunkConfig) -> list[NewChunk]:
    """A document's text chunked as prose, each chunk with the pages it spans."""
    out = []
    for c in chunk_sections(document, cfg):  # whole pages (or sections) where they fit
        if not c.text.strip():
            continue
        first, last = document.pages_of(c.start, c.end) or (0, 0)
        digest = text_hash(c.text.encode())
        out.append(NewChunk(c.start, c.end, c.start_line, c.end_line, digest, c.text, first, last))
    return out


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def text_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def collect(
    workspace: Path,
    paths: Sequence[str | Path],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> tuple[list[Path], list[str]]:
    """The files to ingest, and the folders walked (workspace-relative, for pruning)."""
    root = workspace.resolve()
    ignore = GitIgnore.of_workspace(root)
    files: list[Path] = []
    seen: set[Path] = set()
    folders: list[str] = []
    for raw in paths:
        try:
            path = safe_path(root, raw)
        except WorkspaceError as exc:
            raise UsageError(str(exc)) from exc
        if path.is_dir():
            folders.append(relative_posix(root, path) if path != root else "")
            found = list(walk_files(root, path, ignore))
        elif path.exists():
            found = [path]
        else:
            raise UsageError(f"no such file or folder: {raw}")
        for f in found:
            rel = relative_posix(root, f)
            if include and not matches_any(rel, include):
                continue
            if exclude and matches_any(rel, exclude):
                continue
            if f not in seen:
                seen.add(f)
                files.append(f)
    return files, folders


class Ingester:
    """Ingest into one open store with its bound embedder (``None``: FTS only)."""

    def __init__(
        self,
        store: KnowledgeStore,
        workspace: Path,
        embedder: Embedder | None,
        chunk_size_bytes: int = 1500,
    ) -> None:
        self.store = store
        self.workspace = workspace.resolve()
        self.embedder = embedder
        self.cfg = ChunkConfig(chunk_size_bytes=chunk_size_bytes, overlap="none")

    def ingest(
        self,
        paths: Sequence[str | Path],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        progress: Progress | None = None,
    ) -> IngestReport:
        files, folders = collect(self.workspace, paths, include, exclude)
        report = IngestReport()
        sizes = [_size(f) for f in files]  # for the progress line only
        total = sum(sizes)
        known = {row.path: row for row in self.store.files()}  # one query, not one a file
        done_bytes = 0
        for i, path in enumerate(files):
            self._one(path, known, report)
            done_bytes += sizes[i]
            if progress is not None:
                progress(i + 1, len(files), done_bytes, total)
        self._prune(files, folders, include, exclude, report)
        self.embed_pending(report)
        self.store.set_meta("last_ingest", str(time.time()))
        return report

    def _one(self, path: Path, known: dict[str, FileRow], report: IngestReport) -> None:
        rel = relative_posix(self.workspace, path)
        try:  # a secret file by either name, not a regular file, a hard link: decided once
            source = Source.at(path, rel)
        except FileRefused as exc:
            report.skipped.append((rel, exc.reason))
            if rel in known:  # stored before it was refused: its text must not stay findable
                report.removed += self.store.remove_files([rel])
            return
        except WorkspaceError as exc:
            report.skipped.append((rel, f"unreadable: {exc}"))
            return
        cap = MAX_DOCUMENT_BYTES if source.is_document else MAX_FILE_BYTES
        if source.size > cap:
            report.skipped.append((rel, f"over {cap // (1024 * 1024)} MB"))
            return
        old = known.get(rel)
        if old is not None and (old.size, old.mtime_ns) == (source.size, source.mtime_ns):
            report.unchanged += 1
            return
        try:
            data = source.data(cap)
            after = os.stat(path)
        except FileRefused as exc:  # became a hard link since the check above
            report.skipped.append((rel, exc.reason))
            return
        except (OSError, WorkspaceError) as exc:
            report.skipped.append((rel, f"unreadable: {getattr(exc, 'strerror', None) or exc}"))
            return
        if (after.st_size, after.st_mtime_ns) != (source.size, source.mtime_ns) or len(
            data
        ) != after.st_size:
            report.skipped.append((rel, "changed while it was read (ingest again)"))
            return
        report.bytes_read += len(data)
        is_document = source.is_document
        if looks_binary(data) and not is_document:
            report.skipped.append((rel, "binary"))
            return
        # the Source's one hash: a document's extraction cache is keyed by the same one
        row = FileRow(rel, after.st_size, after.st_mtime_ns, source.digest(cap))
        if old is not None and old.hash == row.hash:
            self.store.touch_file(row)
            report.unchanged += 1
            return
        if is_document:  # its text (cached by content), its chunks named by their pages
            try:
                chunks = document_chunks(extract_source(source), self.cfg)
            except DocumentError as exc:
                report.skipped.append((rel, str(exc).split(": ", 1)[-1]))
                if old is not None:  # its old text must not stay findable as current
                    report.removed += self.store.remove_files([rel])
                return
        else:
            chunks = self._chunks(path, data.decode("utf-8", errors="replace"))
        self.store.replace_file(row, chunks)
        report.chunks += len(chunks)
        if old is None:
            report.added += 1
        else:
            report.updated += 1

    def _chunks(self, path: Path, content: str) -> list[NewChunk]:
        language = language_for_path(path)
        pieces = chunk_document(
            content,
            self.cfg,
            detect_doc_type(path),
            language=language if language in TREE_SITTER_LANGUAGES else None,
        )
        return [
            NewChunk(c.start, c.end, c.start_line, c.end_line, text_hash(c.text.encode()), c.text)
            for c in pieces
            if c.text.strip()
        ]

    def _prune(
        self,
        files: list[Path],
        folders: list[str],
        include: Sequence[str],
        exclude: Sequence[str],
        report: IngestReport,
    ) -> None:
        """Drop rows of files under an ingested folder that the walk did not find."""
        if not folders:
            return
        seen = {relative_posix(self.workspace, f) for f in files}
        gone = []
        for row in self.store.files():
            under = any(not d or row.path.startswith(d + "/") for d in folders)
            if not under or row.path in seen:
                continue
            if include and not matches_any(row.path, include):
                continue  # outside this ingest's filter: not this ingest's to judge
            if exclude and matches_any(row.path, exclude):
                continue
            gone.append(row.path)
        if gone:
            report.removed += self.store.remove_files(gone)

    def embed_pending(self, report: IngestReport | None = None) -> int:
        """Embed every chunk text that has no vector yet, a batch per transaction."""
        if self.embedder is None:
            return 0
        pending = self.store.unembedded()
        count = 0
        for i in range(0, len(pending), EMBED_BATCH):
            batch = pending[i : i + EMBED_BATCH]
            vectors = self.embedder.embed([text for _h, text in batch])
            bound = int(self.store.meta("dims") or 0)
            if bound and vectors.shape[1] != bound:
                raise self.store.dimension_error(bound, self.embedder.spec, vectors.shape[1])
            if not bound:
                self.store.set_meta("dims", str(vectors.shape[1]))
            self.store.put_vectors(
                [(h, v.tobytes()) for (h, _t), v in zip(batch, vectors, strict=True)]
            )
            count += len(batch)
        if report is not None:
            report.embedded += count
        return count

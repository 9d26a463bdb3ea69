"""Whole-folder analysis as one map phase: every file's chunks numbered over the run.

The map engine (``engine.py``) sees one stream of chunks; ``FolderParams``
tells it, for each chunk number, which file the chunk is from and where in
that file, so a prompt names its file and a quote is located in it (``piece``),
and its stored-result key is made from the file's own numbering — adding a
file to the folder does not invalidate the results of the others.
``FileProgress`` adds the files to the run's progress: a file is done when its
last chunk is.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from harvey.analysis.evidence import FORMAT
from harvey.analysis.mapper import Piece
from harvey.analysis.params import ChunkAnalysisParams, as_chunk
from harvey.chunks.chunking import Chunk
from harvey.errors import WorkspaceError
from harvey.protocols import ProgressReporter


@dataclass
class FileChunks:
    """One file's share of the run: its name as shown (workspace-relative), its chunks
    (a list, or a lazy iterable that yields exactly ``total``), and how it was cut."""

    name: str
    chunks: Iterable[Chunk | str]
    total: int
    boundary: str
    chunk_size: int
    pages: str = ""  # "1-12" for a PDF, for its [[chunk-file:]] note
    page_starts: Sequence[int] = ()  # where a PDF's pages begin in its text


def digest(parts: Sequence[object]) -> str:
    """A stored-result key: the hash of everything a call's prompt is made from."""
    return hashlib.sha256(json.dumps(parts).encode("utf-8", "surrogatepass")).hexdigest()


def text_hash(text: str) -> str:
    """A text's hash inside a key (surrogates kept, so undecodable bytes still differ)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class FolderParams(ChunkAnalysisParams):
    """The run as one map phase: chunks numbered over the run, prompted and keyed per file."""

    files: list[FileChunks] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # the run index (0-based) of each first chunk

    def file_index(self, index: int) -> int:
        """Which file (0-based) run chunk ``index`` (1-based) belongs to."""
        return bisect.bisect_right(self.starts, index - 1) - 1

    def file_at(self, index: int) -> tuple[FileChunks, int]:
        """The file of run chunk ``index`` (1-based) and the chunk's index in that file."""
        f = self.file_index(index)
        return self.files[f], index - self.starts[f]

    def piece(self, index: int, total: int, chunk: Chunk | str) -> Piece:
        """Run chunk ``index`` as chunk ``local`` of its own file (its prompt names the file,
        its quotes are located in it)."""
        file, local = self.file_at(index)
        return Piece(
            as_chunk(chunk),
            file.name,
            local,
            file.total,
            file.page_starts,
            file.boundary == "source",
        )

    def names(self) -> list[str]:
        return [f.name for f in self.files]

    def map_key(self, model: str, index: int, total: int, text: str) -> str:
        file, local = self.file_at(index)
        return digest(
            [
                "folder-map",
                FORMAT,
                self.evidence,
                model,
                self.instruction,
                file.name,
                text_hash(text),
                local,
                file.total,
                file.boundary,
                file.chunk_size,
                self.config.overlap,
            ]
        )


def every_chunk(files: Sequence[FileChunks]) -> Iterator[Chunk | str]:
    """The files' chunks one after another; a file that no longer makes the chunks it was
    counted with stops the run, since every later chunk's number would be wrong."""
    for file in files:
        seen = 0
        for chunk in file.chunks:
            seen += 1
            if seen > file.total:
                break
            yield chunk
        if seen != file.total:
            raise WorkspaceError(
                f"{file.name} changed while it was being analysed "
                f"(expected {file.total} chunks); run the analysis again"
            )


class FileProgress:
    """The run's reporter, also told when every chunk of a file is done (files column)."""

    def __init__(self, inner: ProgressReporter, params: FolderParams) -> None:
        self.inner = inner
        self.params = params
        self.left = [f.total for f in params.files]
        self.done = 0

    def start(self, total: int) -> None:
        self._call("expect_files", len(self.left))
        self.inner.start(total)

    def _call(self, name: str, *args: object) -> None:
        """A files event, for a reporter that shows files (``progress.py``)."""
        method = getattr(self.inner, name, None)
        if method is not None:
            method(*args)

    def chunk_started(self, index: int, total: int) -> None:
        self.inner.chunk_started(index, total)

    def chunk_reused(self, index: int, total: int) -> None:
        self._call("chunk_reused", index, total)

    def chunk_finished(self, index: int, total: int, error: str | None) -> None:
        self.inner.chunk_finished(index, total, error)
        f = self.params.file_index(index)
        self.left[f] -= 1
        if self.left[f] == 0:
            self.done += 1
            self._call("file_finished", self.done, len(self.left), self.params.files[f].name)

    def synthesis_started(self, level: int, inputs: int, groups: int) -> None:
        self.inner.synthesis_started(level, inputs, groups)

    def close(self) -> None:
        self.inner.close()


def common_value(values: Iterable[str]) -> str:
    """The one value all files share, or ``mixed``."""
    seen = set(values)
    return seen.pop() if len(seen) == 1 else "mixed"

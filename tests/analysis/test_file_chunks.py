"""A workspace file as chunks (``file_chunks``): size from ``stat``, whole or streamed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harvey.analysis import file_chunks
from harvey.analysis.file_chunks import chunks_of, source_size
from harvey.chunks.chunking import ChunkConfig, chunk_document
from harvey.errors import WorkspaceError
from harvey.workspace.kinds import DocType
from harvey.workspace.source import Source

TEXT = "\n\n".join(f"Paragraph {i}. " + "words " * 60 for i in range(20))


def test_a_text_files_size_is_the_stat_size(tmp_path: Path) -> None:
    path = tmp_path / "doc.md"
    path.write_text(TEXT)
    assert source_size(Source.at(path, "doc.md")) == len(TEXT.encode())


def test_a_source_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    with pytest.raises(WorkspaceError, match=r"^sub is a directory"):
        Source.at(tmp_path / "sub", "sub")
    with pytest.raises(WorkspaceError, match=r"^gone\.md: no such file"):
        Source.at(tmp_path / "gone.md", "gone.md")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    with pytest.raises(WorkspaceError, match="FIFO"):
        Source.at(fifo, "pipe.md")


def test_a_file_within_one_window_is_chunked_whole(tmp_path: Path) -> None:
    path = tmp_path / "doc.md"
    path.write_text(TEXT)
    cfg = ChunkConfig(chunk_size_bytes=1000)
    chunks, count = chunks_of(Source.at(path, "doc.md"), path.stat().st_size, cfg)
    assert isinstance(chunks, list) and count == len(chunks) > 3
    assert chunks == chunk_document(TEXT, cfg, DocType.PROSE)


def test_a_file_over_one_window_is_counted_then_streamed_lazily(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "doc.md"
    path.write_text(TEXT)
    monkeypatch.setattr(file_chunks, "WINDOW_BYTES", 1024)
    cfg = ChunkConfig(chunk_size_bytes=1000)
    chunks, count = chunks_of(Source.at(path, "doc.md"), path.stat().st_size, cfg)
    assert not isinstance(chunks, list)  # nothing read yet beyond the count
    streamed = list(chunks)
    assert count == len(streamed) > 3
    assert [c.text for c in streamed] == [c.text for c in chunk_document(TEXT, cfg, DocType.PROSE)]

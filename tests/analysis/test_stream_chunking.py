"""Streamed chunking equals whole-text chunking, whatever the window edges cut through."""

from __future__ import annotations

import io
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from harvey.chunks.chunking import ChunkConfig, chunk_document
from harvey.chunks.stream_chunking import count_chunks, iter_chunks, utf8_windows
from harvey.workspace.kinds import DocType
from tests.analysis.test_chunking_properties import ALPHABET, DOC_TYPES, OVERLAPS, check_invariants

# Long texts: a drawn piece repeated (several windows and several 8 KB margins), and the
# odd piece of arbitrary text so the repeats are not all aligned.
PIECE = st.lists(ALPHABET, min_size=1, max_size=300).map("".join)
LONG = st.tuples(
    st.lists(PIECE | st.text(max_size=200), min_size=1, max_size=6), st.integers(1, 60)
)


def streamed(content: str, cfg: ChunkConfig, doc_type: DocType, window: int) -> list:
    windows = utf8_windows(io.BytesIO(content.encode("utf-8")), window)
    return list(iter_chunks(windows, cfg, doc_type))


@settings(max_examples=60, deadline=None)
@given(LONG, st.integers(16, 600), OVERLAPS, DOC_TYPES, st.integers(1, 5000))
def test_streamed_chunks_equal_whole_text_chunks(
    long: tuple[list[str], int], size: int, overlap: str, doc_type: DocType, window: int
) -> None:
    pieces, repeat = long
    content = "".join(pieces) * repeat
    cfg = ChunkConfig(chunk_size_bytes=size, overlap=overlap)  # type: ignore[arg-type]
    whole = chunk_document(content, cfg, doc_type)
    chunks = streamed(content, cfg, doc_type, window)
    check_invariants(content, chunks, size)
    assert chunks == whole
    windows = utf8_windows(io.BytesIO(content.encode("utf-8")), window)
    assert count_chunks(windows, cfg, doc_type) == len(whole)


def prose(rng: random.Random, n_bytes: int) -> str:
    words = ["lorem", "ipsum", "dolor", "sit", "amet", "é", "日本", "x" * 40, "Mr.", "(a)."]
    out: list[str] = []
    total = 0
    while total < n_bytes:
        kind = rng.random()
        if kind < 0.05:
            block = "\n\n" + rng.choice(["# Title\n\n", "Title\n=====\n\n", "def f():\n    x\n\n"])
        elif kind < 0.25:
            block = "\n\n"
        else:
            block = " ".join(rng.choice(words) for _ in range(rng.randint(1, 15))) + ". "
        out.append(block)
        total += len(block)
    return "".join(out)


def test_a_long_document_streams_to_the_same_chunks_across_many_windows() -> None:
    rng = random.Random(9)
    content = prose(rng, 400_000)
    for overlap in ("paragraph", "sentence", "none"):
        for doc_type in (DocType.PROSE, DocType.SOURCE):
            cfg = ChunkConfig(chunk_size_bytes=2000, overlap=overlap)  # type: ignore[arg-type]
            assert streamed(content, cfg, doc_type, 20_000) == chunk_document(
                content, cfg, doc_type
            )


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2000), st.integers(1, 64))
def test_utf8_windows_replace_invalid_bytes_like_a_whole_decode(raw: bytes, window: int) -> None:
    joined = b"".join(utf8_windows(io.BytesIO(raw), window))
    assert joined == raw.decode("utf-8", errors="replace").encode("utf-8")


def test_an_empty_stream_is_one_empty_chunk() -> None:
    cfg = ChunkConfig()
    assert streamed("", cfg, DocType.PROSE, 10) == chunk_document("", cfg, DocType.PROSE)

"""Chunk a document of any size as a stream: memory bounded by a window, not the file.

``chunk_document`` needs the whole text in memory; a 10 GB file does not fit.
Here the same cut rules (``cut_points.Cutter``) run over a sliding buffer: it
holds a little before the current chunk's start (what the boundary searches
look back at) and at least one chunk plus ``_AHEAD`` after it (what they read
past the hard bound), and the file is read into it a window at a time, the
unfinished tail carried over. Chunks come out one by one, each with the same
offsets and line numbers ``chunk_document`` would give it, so the map phase
can pull them lazily and only the chunks in flight are ever in memory.

The cut rules look at most ``_LOOKAHEAD`` (1 KB) past a chunk's bound and a
line or two before a boundary, so with an 8 KB margin each side the chunks are
exactly ``chunk_document``'s (a property test holds the two equal across
window edges). Only a single line or whitespace run longer than the margin
(an 8 KB heading underline, say) can make a cut differ, and then only which
boundary inside the chunk's window is chosen: the hard bound, losslessness
and the overlap rules are enforced per chunk and hold regardless.

Tree-sitter parses a whole file, so source streamed this way is cut with the
blank-line-then-signature heuristic; callers keep ``chunk_document`` (with
its grammar) for files that fit in one window.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from typing import IO

from harvey.chunks.chunking import Chunk, ChunkConfig
from harvey.chunks.cut_points import Cutter
from harvey.workspace.kinds import DocType

WINDOW_BYTES = 4 * 1024 * 1024  # read from the file this much at a time
_BACK = 8192  # kept before the current chunk's start
_AHEAD = 8192  # read past the current chunk's hard bound before cutting


def utf8_windows(handle: IO[bytes], window: int = WINDOW_BYTES) -> Iterator[bytes]:
    """The file's bytes as valid UTF-8, ``window`` raw bytes at a time.

    Invalid sequences become U+FFFD exactly as ``bytes.decode("utf-8",
    "replace")`` of the whole file would make them (the incremental decoder
    carries a character split across two reads), so the chunks match those of
    the text a whole read gives.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while True:
        raw = handle.read(window)
        text = decoder.decode(raw, final=not raw)
        if text:
            yield text.encode("utf-8")
        if not raw:
            return


def stream_spans(
    windows: Iterable[bytes], cfg: ChunkConfig, doc_type: DocType
) -> Iterator[tuple[int, int, bytes]]:
    """``(start, end, bytes)`` of each chunk, in byte offsets of the whole stream."""
    size, overlap = cfg.chunk_size_bytes, cfg.overlap
    need = size + _AHEAD
    source = iter(windows)
    buf, base, eof = b"", 0, False
    cutter = Cutter(buf, size, doc_type is DocType.PROSE, None)
    cb = s = 0  # the chunk's start, and where its new (not overlapped) text starts
    while True:
        if not eof and base + len(buf) < cb + need:
            keep = max(0, cb - _BACK - base)  # drop what no search will look at again
            parts, have = [buf[keep:]], len(buf) - keep
            base += keep
            while base + have < cb + need:
                piece = next(source, None)
                if piece is None:
                    eof = True
                    break
                parts.append(piece)
                have += len(piece)
            buf = b"".join(parts)
            cutter = Cutter(buf, size, doc_type is DocType.PROSE, None)
        if base + len(buf) <= cb + size:  # only at the end: else the buffer reaches cb + need
            yield cb, base + len(buf), buf[cb - base :]
            return
        e = cutter.end(cb - base, s - base, cb - base + size) + base
        yield cb, e, buf[cb - base : e - base]
        cb, s = cutter.overlap_start(cb - base, e - base, overlap) + base, e


def count_chunks(windows: Iterable[bytes], cfg: ChunkConfig, doc_type: DocType) -> int:
    """How many chunks the stream makes (a pass that keeps nothing but the count)."""
    return sum(1 for _ in stream_spans(windows, cfg, doc_type))


def iter_chunks(windows: Iterable[bytes], cfg: ChunkConfig, doc_type: DocType) -> Iterator[Chunk]:
    """The chunks of the stream, lazily; equal to ``chunk_document`` of its text.

    Character offsets and line numbers are carried from chunk to chunk: the
    part of the previous chunk before this one's start is counted once (its
    newlines, its characters), so no chunk is decoded or counted twice.
    """
    line, char = 1, 0  # of the current chunk's start
    prev_start, prev = 0, b""
    for a, _end, data in stream_spans(windows, cfg, doc_type):
        head = prev[: a - prev_start]  # chunks start at or before the previous end
        line += head.count(b"\n")
        char += len(head.decode("utf-8"))
        text = data.decode("utf-8")
        end_line = line + data.count(b"\n", 0, max(0, len(data) - 1))
        yield Chunk(text, char, char + len(text), line, end_line)
        prev_start, prev = a, data


__all__ = ["WINDOW_BYTES", "count_chunks", "iter_chunks", "stream_spans", "utf8_windows"]

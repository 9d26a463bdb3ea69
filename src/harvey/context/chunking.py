"""Split a document into bounded, lossless, structure-aware chunks.

The chunker works on the UTF-8 bytes of the document, so the size bound is
exact and never needs re-encoding per piece, and it searches for cut points
*lazily*, only in the window where the current chunk may end. Cutting one
chunk therefore costs a few C-level regex searches over at most one chunk's
worth of text, whatever the number of paragraphs.

Where a chunk ends (first rule that applies, the hard bound always wins):

1. a *preferred* boundary — a Markdown/reStructuredText heading for prose, a
   function/class/method start for source (tree-sitter, or the seed's
   blank-line-then-signature heuristic) — the last one past half the target;
2. the first paragraph boundary (a blank line) once the chunk reaches 75 %
   of the target, else the last one that fits;
3. for a paragraph too big to fit: the last sentence end (prose), then the
   last line end, then the last whole character that fits.

Overlap: chunk N+1 starts inside chunk N — at N's last paragraph when that is
at most a quarter of the chunk size, else at the longest run of N's trailing
whole sentences that fits in a quarter (``paragraph``); at the longest run of
trailing sentences within a quarter (``sentence``); nowhere (``none``). The
overlap counts toward the hard bound.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Literal

Overlap = Literal["paragraph", "sentence", "none"]
OVERLAPS: tuple[str, ...] = ("paragraph", "sentence", "none")
MIN_CHUNK_SIZE = 16  # leaves ≥ 12 bytes after a quarter of overlap: room for any character


class DocType(Enum):
    PROSE = "prose"
    SOURCE = "source"


@dataclass(frozen=True, kw_only=True)
class ChunkConfig:
    """Chunking parameters; mirrors the ``chunking:`` stanza of ``harvey.yaml``."""

    enabled: bool = True
    threshold: float = 0.80
    chunk_size_bytes: int = 6000
    max_chunks: int = 20
    overlap: Overlap = "paragraph"
    concurrency: int = 4

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
        """Build from ``harvey.config.ChunkingSettings``; unset concurrency → 1 embedded, 4 else."""
        concurrency = settings.concurrency or (1 if embedded else 4)
        return cls(
            enabled=settings.enabled,
            threshold=settings.threshold,
            chunk_size_bytes=settings.chunk_size_bytes,
            max_chunks=settings.max_chunks,
            overlap=settings.overlap,
            concurrency=concurrency,
        )


@dataclass(frozen=True)
class Chunk:
    """``content[start:end] == text``; lines are 1-based, ``end_line`` holds the last char."""

    text: str
    start: int
    end: int
    start_line: int
    end_line: int


_PROSE_EXTS = {".md", ".markdown", ".txt", ".rst", ".tex", ".html", ".htm", ".org", ".adoc"}
_LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".go": "go",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".swift": "swift",
    ".scala": "scala",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
    ".pl": "perl",
    ".r": "r",
    ".jl": "julia",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".zig": "zig",
    ".dart": "dart",
    ".m": "objc",
    ".sql": "sql",
    ".vue": "vue",
}
# Source without a grammar we map: still split with the heuristic.
_OTHER_SOURCE_EXTS = {".asm", ".s", ".f90", ".pas", ".clj", ".groovy", ".mk", ".cmake"}


def language_for_path(path: str | Path) -> str | None:
    """The tree-sitter grammar name for a source file, from its extension."""
    return _LANGUAGES.get(Path(path).suffix.lower())


def detect_doc_type(path: str | Path) -> DocType:
    """Source for known code extensions, prose for everything else (seed W2)."""
    suffix = Path(path).suffix.lower()
    if suffix in _PROSE_EXTS:
        return DocType.PROSE
    if suffix in _LANGUAGES or suffix in _OTHER_SOURCE_EXTS:
        return DocType.SOURCE
    return DocType.PROSE


# --- boundary patterns (on bytes); a boundary is the match's end ---------------------------

# A blank line followed by a non-blank one: the cut lands at the start of the paragraph.
_PARA = re.compile(rb"\n[ \t\r\f\v]*\n(?![ \t\r\f\v]*(?:\n|\Z))")
# A heading line: ATX (``# Title``), or the underline of a setext/RST title (a run of
# one punctuation character). Both start with a literal newline, which keeps the scan fast;
# the title line above an underline is found in Python (underlines are rare).
_HEADING = re.compile(rb"\n(?:#{1,6}[ \t]|([=\-~^*+#\"'`:.])\1{2,}[ \t\r]*(?:\n|\Z))")
_BLANK_LINE = re.compile(rb"[ \t\r\f\v]*")
# Seed heuristic: a blank line, then a line that starts flush with neither } nor ).
_SIGNATURE = re.compile(rb"\n[ \t\r\f\v]*\n(?=[^\s})\]])")
# A sentence ends at . ! or ?, maybe closed by quotes or brackets (curly ones too), then
# whitespace; the boundary is the start of the next sentence.
_SENTENCE = re.compile(rb"[.!?][\"')\]\x99\x9d\x80\xe2]*\s+")
_BACKUP = b" \t\r\n\f\v\"')].!?\xe2\x80\x99\x9d"  # chars a match may span before a boundary


# How far past the last allowed boundary a search may look (heading lookaheads read the
# next two lines). Bounding it keeps each search within about one chunk of text.
_LOOKAHEAD = 1024


def _search_start(data: bytes, floor: int, pos: int) -> int:
    """An earliest start for a search whose matches must *end* at ≥ ``pos``.

    Every pattern above matches only whitespace, closers and terminators
    before its end, so backing over a run of those is enough (plus one byte).
    """
    if pos <= floor:
        return floor
    window = data[max(floor, pos - 4096) : pos]
    return max(floor, pos - (len(window) - len(window.rstrip(_BACKUP))) - 1)


def _first_end(pattern: re.Pattern[bytes], data: bytes, lo: int, hi: int, floor: int) -> int:
    """The smallest boundary in ``[lo, hi]``, or -1."""
    for m in pattern.finditer(data, _search_start(data, floor, lo), hi + _LOOKAHEAD):
        e = m.end()
        if e > hi:
            return -1
        if e >= lo:
            return e
    return -1


def _last_end(pattern: re.Pattern[bytes], data: bytes, lo: int, hi: int, floor: int) -> int:
    """The largest boundary in ``[lo, hi]``, or -1.

    Searches a short tail of the range first: the last boundary is usually
    near the end, so most calls scan a few hundred bytes, not a whole chunk.
    """
    tail = max(lo, hi - 512)
    best = _scan_last(pattern, data, tail, hi, floor)
    if best < 0 and tail > lo:
        best = _scan_last(pattern, data, lo, tail - 1, floor)
    return best


def _scan_last(pattern: re.Pattern[bytes], data: bytes, lo: int, hi: int, floor: int) -> int:
    best = -1
    for m in pattern.finditer(data, _search_start(data, floor, lo), hi + _LOOKAHEAD):
        e = m.end()
        if e > hi:
            break
        if e >= lo:
            best = e
    return best


def _is_blank(line: bytes) -> bool:
    return _BLANK_LINE.fullmatch(line) is not None


def _line_before(data: bytes, start: int) -> int:
    """Start of the line that ends just before ``start`` (a line start), or -1."""
    return -1 if start <= 0 else data.rfind(b"\n", 0, start - 1) + 1


def _last_heading(data: bytes, lo: int, hi: int) -> int:
    """The largest heading start in ``[lo, hi]``, or -1."""
    best = -1
    for m in _HEADING.finditer(data, max(0, lo - 1), hi + _LOOKAHEAD):
        line = m.start() + 1
        if m.group(1) is None:  # ATX
            b = line
        else:  # an underline: the title is the line above, after a blank line or an overline
            title = _line_before(data, line)
            if title < 0 or _is_blank(data[title : line - 1]):
                continue
            b = title
            above = _line_before(data, title)
            if above >= 0 and data[above : title - 1].rstrip() == data[line : m.end()].rstrip():
                b = above  # an over- and underlined title starts at its overline
                above = _line_before(data, b)
            if above >= 0 and not _is_blank(data[above : b - 1]):
                continue
        if b > hi:
            break
        if b >= lo:
            best = max(best, b)
    return best


class _Cutter:
    """The cut-point rules for one document (bytes + doc type + optional def starts)."""

    def __init__(self, data: bytes, cfg: ChunkConfig, doc_type: DocType, defs: list[int] | None):
        self.data = data
        self.size = cfg.chunk_size_bytes
        self.doc_type = doc_type
        self.defs = defs  # sorted byte offsets of definition starts (tree-sitter), or None

    def preferred(self, lo: int, hi: int) -> int:
        if self.defs is not None:
            k = bisect_right(self.defs, hi) - 1
            return self.defs[k] if k >= 0 and self.defs[k] >= lo else -1
        if self.doc_type is DocType.SOURCE:
            return _last_end(_SIGNATURE, self.data, lo, hi, 0)
        return _last_heading(self.data, lo, hi)

    def end(self, cb: int, s: int, hi: int) -> int:
        """Where the chunk starting at ``cb`` (new text from ``s``) ends, given end ≤ ``hi``."""
        data, size = self.data, self.size
        e = self.preferred(max(s + 1, cb + size // 2), hi)
        if e > 0:
            return e
        e = _first_end(_PARA, data, max(s + 1, cb + (3 * size + 3) // 4), hi, 0)
        if e > 0:
            return e
        e = _last_end(_PARA, data, s + 1, hi, 0)
        if e > 0:
            return e
        if self.doc_type is DocType.PROSE:
            e = _last_end(_SENTENCE, data, s + 1, hi, 0)
            if e > 0:
                return e
        nl = data.rfind(b"\n", s, hi)
        if nl >= s:
            return nl + 1
        e = hi
        while e > s + 1 and (data[e] & 0xC0) == 0x80:  # never inside a character
            e -= 1
        return e

    def overlap_start(self, cb: int, e: int, mode: str) -> int:
        """Where chunk N+1 starts given chunk N = ``[cb, e)``; ``e`` means no overlap."""
        if mode == "none":
            return e
        quarter = self.size // 4
        lo = max(cb, e - quarter)
        if mode == "paragraph":
            # The last paragraph of chunk N starts at its last paragraph boundary,
            # or at ``cb`` when there is none inside the chunk.
            para = _last_end(_PARA, self.data, max(cb + 1, lo), e - 1, 0)
            if para > 0:
                return para
            if e - cb <= quarter:
                return cb
        # Sentence starts, counting paragraph starts (and the text's start) as ones.
        sent = _first_end(_SENTENCE, self.data, lo, e - 1, 0)
        para = _first_end(_PARA, self.data, lo, e - 1, 0)
        starts = [x for x in (sent, para) if x >= 0]
        if lo == 0:
            starts.append(0)
        return min(starts) if starts else e


def _byte_spans(
    data: bytes, cfg: ChunkConfig, doc_type: DocType, defs: list[int] | None
) -> list[tuple[int, int]]:
    """The chunks as ``(start, end)`` byte offsets."""
    cutter = _Cutter(data, cfg, doc_type, defs)
    n, size = len(data), cfg.chunk_size_bytes
    spans: list[tuple[int, int]] = []
    cb = s = 0
    while True:
        hi = cb + size
        if n <= hi:
            spans.append((cb, n))
            return spans
        e = cutter.end(cb, s, hi)
        spans.append((cb, e))
        cb, s = cutter.overlap_start(cb, e, cfg.overlap), e


def _to_chunks(content: str, data: bytes, spans: list[tuple[int, int]]) -> list[Chunk]:
    """Convert byte spans to character offsets and line numbers in one ordered pass."""
    points = sorted({p for span in spans for p in span})
    chars: dict[int, int] = {}
    lines: dict[int, int] = {}
    ascii_only = len(data) == len(content)
    char = line = prev = 0
    for p in points:
        piece = data[prev:p]
        if not ascii_only:
            char += len(piece.decode("utf-8", errors="surrogatepass"))
        line += piece.count(b"\n")
        chars[p] = p if ascii_only else char
        lines[p] = line + 1
        prev = p
    out = []
    for a, b in spans:
        start, end = chars[a], chars[b]
        last = lines[b] - 1 if b > a and data[b - 1] == 0x0A else lines[b]
        out.append(Chunk(content[start:end], start, end, lines[a], max(lines[a], last)))
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
    defs: list[int] | None = None
    if doc_type is DocType.SOURCE and language is not None and len(data) > cfg.chunk_size_bytes:
        from harvey.context.source_boundaries import definition_starts

        defs = definition_starts(data, language, cfg.chunk_size_bytes)
    return _to_chunks(content, data, _byte_spans(data, cfg, doc_type, defs))


def boundary_name(doc_type: DocType) -> str:
    """The ``boundary=`` value recorded in the ``[[chunk:]]`` note."""
    return "source" if doc_type is DocType.SOURCE else "paragraph"


__all__ = [
    "Chunk",
    "ChunkConfig",
    "DocType",
    "boundary_name",
    "chunk_document",
    "detect_doc_type",
    "language_for_path",
]

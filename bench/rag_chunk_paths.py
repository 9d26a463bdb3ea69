"""Which source splitter ingest uses per language: tree-sitter or the heuristic, measured.

For each language with a corpus on this machine (Python: the standard library
the chunker benchmark builds; C: the system headers in ``/usr/include``;
JavaScript: npm's own sources, when Node is installed), each file is chunked at
ingest's chunk size (1,500 bytes, no overlap) both ways, and two things are
measured:

* throughput (MB/s over the corpus, chunking included, parse included for
  tree-sitter), the best of ``RUNS`` passes;
* the share of cuts at a definition: of the chunks after a file's first, how
  many start where a definition (with the comments directly above it) starts,
  by the file's own parse tree — the same oracle for both paths, on the files
  that parse without error.

Ingest uses tree-sitter for a language only when it cuts at definitions
clearly more often (``MARGIN`` points) than the heuristic: it is never the
faster of the two, and ingest speed is a target of its own.
``harvey.knowledge.ingest.TREE_SITTER_LANGUAGES`` holds the choice; the
section says whether it agrees with what was measured.
"""

from __future__ import annotations

import time
from pathlib import Path

from bench.corpora import code_corpus
from harvey.chunks.chunking import ChunkConfig, chunk_document
from harvey.chunks.source_boundaries import definition_levels
from harvey.knowledge.ingest import TREE_SITTER_LANGUAGES
from harvey.workspace.kinds import DocType

SIZE = 1500
RUNS = 3
MARGIN = 5.0  # percentage points of cuts at a definition that would justify the slower parse
CAP = 3 * 1024 * 1024  # bytes per language: enough for a stable share, quick to run
Documents = list[tuple[str, str]]


def _files(root: Path, pattern: str) -> Documents:
    docs: Documents = []
    size = 0
    for path in sorted(root.rglob(pattern)) if root.is_dir() else []:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if len(text) < SIZE or path.name.endswith(".min.js"):
            continue  # a file under one chunk is never cut either way
        docs.append((str(path), text))
        size += len(text.encode())
        if size >= CAP:
            break
    return docs


def corpora() -> dict[str, Documents]:
    """The corpora found here, by tree-sitter language name (missing ones left out)."""
    python: Documents = []
    size = 0
    for name, text in code_corpus():
        if len(text) >= SIZE and size < CAP:
            python.append((name, text))
            size += len(text.encode())
    found = {
        "python": python,
        "c": _files(Path("/usr/include"), "*.h"),
        "javascript": _files(Path("/usr/lib/node_modules/npm/lib"), "*.js"),
    }
    return {lang: docs for lang, docs in found.items() if docs}


def _pass(docs: Documents, language: str | None) -> float:
    cfg = ChunkConfig(chunk_size_bytes=SIZE, overlap="none")
    start = time.perf_counter()
    for _name, text in docs:
        chunk_document(text, cfg, DocType.SOURCE, language=language)
    return time.perf_counter() - start


def _definition_share(docs: Documents, language: str | None, oracle: str) -> float:
    cfg = ChunkConfig(chunk_size_bytes=SIZE, overlap="none")
    cuts = at_def = 0
    for _name, text in docs:
        data = text.encode()
        levels = definition_levels(data, oracle, SIZE)
        if levels is None:
            continue  # no clean parse: no oracle for this file
        starts = set(levels[1])
        offset = 0  # chunks are contiguous (no overlap): each starts where the last ended
        for i, chunk in enumerate(chunk_document(text, cfg, DocType.SOURCE, language=language)):
            if i:
                cuts += 1
                at_def += offset in starts
            offset += len(chunk.text.encode("utf-8", "surrogatepass"))
    return 100.0 * at_def / cuts if cuts else 0.0


def run() -> list[str]:
    """The section's markdown lines."""
    rows = []
    for language, docs in corpora().items():
        mb = sum(len(t.encode()) for _n, t in docs) / (1024 * 1024)
        heuristic = min(_pass(docs, None) for _ in range(RUNS))
        parsed = min(_pass(docs, language) for _ in range(RUNS))
        share_h = _definition_share(docs, None, language)
        share_t = _definition_share(docs, language, language)
        measured = share_t - share_h >= MARGIN
        chosen = language in TREE_SITTER_LANGUAGES
        rows.append(
            f"| {language} | {len(docs)} files, {mb:.1f} MB | {mb / heuristic:.0f} "
            f"| {mb / parsed:.1f} | {share_h:.1f}% | {share_t:.1f}% "
            f"| {'tree-sitter' if measured else 'heuristic'} "
            f"| {'yes' if measured == chosen else '**no**'} |"
        )
    return [
        f"Source splitter per language at ingest ({SIZE:,}-byte chunks): throughput (best of "
        f"{RUNS}) and the share of cuts that land where the file's parse tree has a definition "
        f"start; tree-sitter is chosen only when that share is ≥ {MARGIN:.0f} points higher.",
        "",
        "| language | corpus | heuristic MB/s | tree-sitter MB/s | cuts at a definition, "
        "heuristic | tree-sitter | measured choice | ingest agrees |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
    ]


if __name__ == "__main__":
    print("\n".join(run()))

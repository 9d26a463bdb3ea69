"""What kind of file a name says it is: a document (PDF, Word, HTML, EPUB) or plain
text; and for text, prose or source code, and which tree-sitter grammar reads it.

The chunker cuts prose at headings and paragraphs and source at definitions; the pre-read
guard and the calibration keep a bytes-per-token ratio for each kind. The kind is decided
by the extension alone (seed W2), before a byte is read.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path


class DocType(Enum):
    PROSE = "prose"
    SOURCE = "source"


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


#: Extensions the document layer reads; everything else is plain text as before.
DOCUMENT_SUFFIXES = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".epub": "epub",
}
#: Office and e-book formats that look like documents but are not read (one clear line).
UNSUPPORTED_SUFFIXES = frozenset(
    {".doc", ".odt", ".rtf", ".pages", ".ppt", ".pptx", ".xls", ".xlsx", ".mobi", ".azw3"}
)


def document_kind(path: Path, head: bytes = b"") -> str | None:
    """``"pdf"``/``"docx"``/``"html"``/``"epub"``, ``"unsupported"``, or None (plain text)."""
    suffix = path.suffix.lower()
    if suffix in DOCUMENT_SUFFIXES:
        return DOCUMENT_SUFFIXES[suffix]
    if suffix in UNSUPPORTED_SUFFIXES:
        return "unsupported"
    if head.startswith(b"%PDF-"):
        return "pdf"
    return None

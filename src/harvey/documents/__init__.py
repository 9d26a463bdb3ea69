"""The document layer: PDF, DOCX, HTML and EPUB turned into text with page and heading
positions, bounded in memory and time, cached by content (see ``extract``).

The names are imported on first use (PEP 562): the extraction child
(``documents/child.py``) imports the readers of this package without the parent's
cache, subprocess and workspace machinery."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harvey.documents.extraction import estimated_text_bytes, extract, is_document
    from harvey.documents.model import Document, Heading, page_label

_WHERE = {
    "Document": "harvey.documents.model",
    "Heading": "harvey.documents.model",
    "page_label": "harvey.documents.model",
    "estimated_text_bytes": "harvey.documents.extraction",
    "extract": "harvey.documents.extraction",
    "is_document": "harvey.documents.extraction",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Document",
    "Heading",
    "estimated_text_bytes",
    "extract",
    "is_document",
    "page_label",
]

"""The document layer: PDF, DOCX, HTML and EPUB turned into text with page and heading
positions, bounded in memory and time, cached by content (see ``extract``)."""

from harvey.documents.extract import document_kind, estimated_text_bytes, extract, is_document
from harvey.documents.model import Document, Heading, page_label

__all__ = [
    "Document",
    "Heading",
    "document_kind",
    "estimated_text_bytes",
    "extract",
    "is_document",
    "page_label",
]

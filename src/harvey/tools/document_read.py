"""``read_file`` on a PDF, DOCX, HTML or EPUB: pages of the extracted text, never its bytes.

``offset`` and ``limit`` count characters of the extracted text (the bytes of a PDF
mean nothing to a model); ``pages`` ("3" or "3-5") picks pages of a paged document
instead of an offset (``limit`` still caps what one call returns).
Every page read says where it came from (``[report.pdf: PDF, 12 pages; pages 3-4,
characters 5200-9100 of 30211; continue with offset=9100]``). The pre-read guard
counts the text: for a whole-document read it asks before extracting, from the
size ``estimated_source_text_bytes`` gives (a PDF's page count times its first pages).
A document that cannot be read is one ``error:`` line (encrypted, scanned,
damaged, unsupported), never a traceback and never its raw bytes.
"""

from __future__ import annotations

import re
from typing import Any

from harvey.documents import Document
from harvey.documents.extraction import estimated_source_text_bytes, extract_source
from harvey.documents.model import page_label
from harvey.errors import DocumentError, ToolError
from harvey.tools.registry import ToolContext
from harvey.workspace.source import Source

_PAGES = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_pages(value: object) -> tuple[int, int] | None:
    """``3`` / ``"3"`` / ``"3-5"`` → (first, last); None when not given."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    match = _PAGES.match(value) if isinstance(value, str) else None
    if not match:
        raise ToolError(f"argument 'pages' must be a page or a range like '3-5', got {value!r}")
    first = int(match.group(1))
    last = int(match.group(2) or first)
    if first < 1 or last < first:
        raise ToolError(f"argument 'pages' must be a range of pages from 1, got {value!r}")
    return first, last


def _guard(ctx: ToolContext, source: Source) -> str | None:
    """The whole document asked for: the budget decides on its estimated text size."""
    if ctx.read_budget is None or ctx.on_oversize is None:
        return None
    budget = ctx.read_budget()
    try:
        size = estimated_source_text_bytes(source)
    except DocumentError:
        return None  # the read below reports why, in one line
    tokens = budget.tokens_for(size, "prose")
    if tokens <= budget.tokens:
        return None
    return ctx.on_oversize(source, size, tokens, budget.tokens)


def read_document(
    ctx: ToolContext, source: Source, args: dict[str, Any], limit: int, max_chars: int
) -> str:
    """One page of ``source``'s text for the model (``limit`` characters; 0 = all): its
    size estimate and its text from one read of the file."""
    shown = source.name
    pages = parse_pages(args.get("pages"))
    offset = args.get("offset") or 0
    if pages is None and "limit" not in args and not offset:
        guarded = _guard(ctx, source)
        if guarded is not None:
            return guarded
    try:
        document = extract_source(source)
    except DocumentError as exc:
        return f"error: {exc}"
    start, end = 0, len(document.text)
    if pages is not None:
        if not document.paged:
            return f"error: {shown} has no pages ({document.kind.upper()}); use offset and limit"
        if pages[0] > len(document.page_starts):
            return (
                f"error: {shown} has {len(document.page_starts)} pages readable; "
                f"page {pages[0]} is past the end"
            )
        start, end = document.span_of_pages(*pages)
    else:
        start = min(int(offset), end)  # with pages, offset is not used
    wanted = end - start if limit == 0 else min(limit, end - start)
    wanted = min(wanted, max_chars)
    return _page(document, shown, start, start + wanted)


def _page(document: Document, shown: str, start: int, stop: int) -> str:
    total = len(document.text)
    where = [document.describe()]
    label = page_label(document.pages_of(start, stop)) if stop > start else ""
    if label:
        where.append(f"pages {label.replace('p', '')}")
    where.append(f"characters {start}-{stop} of {total}")
    if stop < total:
        where.append(f"to continue reading use offset={stop}")
    return f"[{shown}: {'; '.join(where)}]\n{document.text[start:stop]}"


def attach_document(source: Source, limit: int) -> str:
    """A named document's text between markers, for a model without tools (``/read``,
    a file named in the prompt): at most ``limit`` characters, or why it is not there."""
    name = source.name
    try:
        document = extract_source(source)
    except DocumentError as exc:
        return f"[{name}: not attached: {str(exc).split(': ', 1)[-1]}]"
    body = document.text[:limit]
    if len(document.text) > limit:
        body += f"\n[only the first {limit:,} characters of {name}'s text are attached]"
    return f"--- {name} ({document.describe()}) ---\n{body}\n--- end of {name} ---"


__all__ = [
    "attach_document",
    "parse_pages",
    "read_document",
]

"""DOCX and EPUB: ZIP packages of XML, read under limits (in the extraction child).

A ZIP can claim small sizes and inflate to gigabytes, and XML can declare entities
that expand exponentially — in any encoding: a ``document.xml`` in UTF-16 hides
``<!DOCTYPE`` from any byte search. So every member is read through ``_member``
(at most ``Limits.member_bytes`` inflated, whatever the header claims), at most
``Limits.members`` chapters are read, all of them together inflate at most
``Limits.package_bytes`` (an EPUB of 2 KB whose spine names one highly compressed
chapter two thousand times would otherwise grow to gigabytes of text), and XML is
parsed by ``defusedxml`` with DTDs forbidden: the parser itself refuses a DOCTYPE,
an entity declaration or an external reference, however the file is encoded (Word
and EPUB 3 never need one; XHTML chapters of EPUB 2 declare one, so those go
through the HTML reader, which expands nothing). A DOCX body is read as a stream,
paragraph by paragraph, so its text stops at ``max_chars`` as it is made.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from collections.abc import Iterator
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as SafeET

from harvey.documents.html import decode_html, read_html_into
from harvey.documents.model import Document, Heading, Limits, TextBuilder
from harvey.errors import DocumentError

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _open_zip(data: bytes, name: str, kind: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        message = f"{name}: damaged {kind} — not a readable ZIP package"
        raise DocumentError(message, "damaged") from exc


class _Package:
    """A ZIP package and what has been inflated from it so far, against one budget."""

    def __init__(self, package: zipfile.ZipFile, limits: Limits) -> None:
        self.zip = package
        self.limits = limits
        self.inflated = 0


def _member(package: _Package, member: str, name: str) -> bytes:
    data = _inflate(package, member, name)
    package.inflated += len(data)
    budget = package.limits.package_bytes
    if package.inflated > budget:
        raise DocumentError(
            f"{name}: its members inflate past {budget // 2**20} MB together — "
            "refused (a ZIP bomb or a huge document)",
            "too-large",
        )
    return data


def _inflate(package: _Package, member: str, name: str) -> bytes:
    most = package.limits.member_bytes
    try:
        with package.zip.open(member) as handle:
            data = handle.read(most + 1)
    except KeyError as exc:
        raise DocumentError(f"{name}: damaged — {member} is missing", "damaged") from exc
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError) as exc:
        raise DocumentError(f"{name}: damaged — cannot inflate {member}", "damaged") from exc
    if len(data) > most:
        raise DocumentError(
            f"{name}: {member} inflates past {most // 2**20} MB — refused "
            "(a ZIP bomb or a huge document)",
            "too-large",
        )
    return data


def _refused(name: str) -> DocumentError:
    return DocumentError(f"{name}: refused — its XML declares a DOCTYPE or entities", "damaged")


def _xml(data: bytes, name: str) -> Element:
    try:
        return SafeET.fromstring(data, forbid_dtd=True)
    except DefusedXmlException:
        raise _refused(name) from None
    except (ParseError, ValueError) as exc:  # ValueError: an encoding expat cannot read
        raise DocumentError(f"{name}: damaged — its XML does not parse", "damaged") from exc


def _blocks(data: bytes, name: str) -> Iterator[Element]:
    """The body's top-level paragraphs and tables, one at a time, each freed after use
    (a paragraph's nested text boxes stay inside it, as Word shows them)."""
    depth = 0
    try:
        for event, node in SafeET.iterparse(io.BytesIO(data), ("start", "end"), forbid_dtd=True):
            if node.tag not in (_W + "p", _W + "tbl"):
                continue
            if event == "start":
                depth += 1
                continue
            depth -= 1
            if depth == 0:
                yield node
                node.clear()
    except DefusedXmlException:
        raise _refused(name) from None
    except (ParseError, ValueError) as exc:  # ValueError: an encoding expat cannot read
        raise DocumentError(f"{name}: damaged — its XML does not parse", "damaged") from exc


def _runs(element: Element) -> str:
    parts: list[str] = []
    for node in element.iter():
        if node.tag == _W + "t" and node.text:
            parts.append(node.text)
        elif node.tag == _W + "tab":
            parts.append("\t")
        elif node.tag in (_W + "br", _W + "cr"):
            parts.append("\n")
    return "".join(parts)


def _heading_level(paragraph: Element) -> int | None:
    style = paragraph.find(f"{_W}pPr/{_W}pStyle")
    value = (style.get(_W + "val") or "") if style is not None else ""
    lowered = value.lower().replace(" ", "")
    if lowered == "title":
        return 1
    if lowered.startswith("heading") and lowered[7:].isdigit():
        return min(int(lowered[7:]), 6)
    return None


def _table(table: Element) -> str:
    rows = []
    for row in table.iter(_W + "tr"):
        cells = []
        for cell in row.iter(_W + "tc"):
            text = " ".join(_runs(p).strip() for p in cell.iter(_W + "p") if _runs(p).strip())
            cells.append(text.replace("|", "\\|").replace("\n", " "))
        rows.append(cells)
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    lines = ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in rows]
    lines.insert(1, "|" + " --- |" * width)
    return "\n".join(lines)


def extract_docx(data: bytes, name: str, limits: Limits | None = None) -> Document:
    """Headings as ``#`` lines, paragraphs as blocks, tables as Markdown tables."""
    limits = limits or Limits()
    with _open_zip(data, name, "DOCX") as package:
        body = _member(_Package(package, limits), "word/document.xml", name)
    out = TextBuilder(limits.max_chars)
    with out.reading():
        for block in _blocks(body, name):
            if block.tag == _W + "tbl":
                out.block(_table(block))
                continue
            level = _heading_level(block)
            if level is not None:
                out.heading(level, _runs(block))
            else:
                out.block(_runs(block))
    return out.build("docx")


def _opf_path(package: _Package, name: str) -> str:
    container = _xml(_member(package, "META-INF/container.xml", name), name)
    for node in container.iter():
        if node.tag.endswith("rootfile") and node.get("full-path"):
            return str(node.get("full-path"))
    raise DocumentError(f"{name}: damaged EPUB — no package document", "damaged")


def extract_epub(data: bytes, name: str, limits: Limits | None = None) -> Document:
    """The spine's chapters in reading order, each one's headings kept; a chapter with
    no heading of its own gets its file name as one, so every chapter can be named."""
    limits = limits or Limits()
    out = TextBuilder(limits.max_chars)
    with _open_zip(data, name, "EPUB") as opened, out.reading():
        package = _Package(opened, limits)
        opf_path = _opf_path(package, name)
        opf = _xml(_member(package, opf_path, name), name)
        base = posixpath.dirname(opf_path)
        manifest = {
            node.get("id"): node.get("href")
            for node in opf.iter()
            if node.tag.endswith("}item") and node.get("href")
        }
        spine = [node.get("idref") for node in opf.iter() if node.tag.endswith("}itemref")]
        if len(spine) > limits.members:
            raise DocumentError(f"{name}: {len(spine)} chapters — refused", "too-large")
        for idref in spine:
            href = manifest.get(idref)
            if not href:
                continue
            member = posixpath.normpath(posixpath.join(base, href.split("#")[0]))
            before = len(out.headings)
            start = len(out)
            read_html_into(out, decode_html(_member(package, member, name)))
            if len(out.headings) == before and len(out) > start:
                chapter = Heading(start + (2 if start else 0), 1, posixpath.basename(member))
                out.headings.insert(before, chapter)
    return out.build("epub")


__all__ = ["extract_docx", "extract_epub"]

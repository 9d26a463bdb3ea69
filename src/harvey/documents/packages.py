"""DOCX and EPUB: ZIP packages of XML, read with the standard library under limits.

A ZIP can claim small sizes and inflate to gigabytes, and XML can declare entities
that expand exponentially. So every member is read through ``_member`` (at most
``MAX_MEMBER_BYTES`` inflated, whatever the header claims), at most
``MAX_MEMBERS`` members are read, all of them together inflate at most
``MAX_PACKAGE_BYTES`` (an EPUB of 2 KB whose spine names one highly compressed
chapter two thousand times would otherwise grow to gigabytes of text), and XML
holding a DOCTYPE is refused before it is parsed: Word and EPUB 3 never need one
(XHTML chapters of EPUB 2 declare one, so those go through the HTML reader, which
expands nothing).
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from xml.etree import ElementTree as ET

from harvey.documents.html import decode_html, read_html_into
from harvey.documents.model import Document, Heading, TextBuilder
from harvey.errors import DocumentError

MAX_MEMBER_BYTES = 64 * 1024 * 1024
MAX_MEMBERS = 2000
MAX_PACKAGE_BYTES = 128 * 1024 * 1024
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _open_zip(data: bytes, name: str, kind: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        message = f"{name}: damaged {kind} — not a readable ZIP package"
        raise DocumentError(message, "damaged") from exc


class _Package:
    """A ZIP package and what has been inflated from it so far, against one budget."""

    def __init__(self, package: zipfile.ZipFile) -> None:
        self.zip = package
        self.inflated = 0


def _member(package: _Package, member: str, name: str) -> bytes:
    data = _inflate(package.zip, member, name)
    package.inflated += len(data)
    if package.inflated > MAX_PACKAGE_BYTES:
        raise DocumentError(
            f"{name}: its members inflate past {MAX_PACKAGE_BYTES // 2**20} MB together — "
            "refused (a ZIP bomb or a huge document)",
            "too-large",
        )
    return data


def _inflate(package: zipfile.ZipFile, member: str, name: str) -> bytes:
    try:
        with package.open(member) as handle:
            data = handle.read(MAX_MEMBER_BYTES + 1)
    except KeyError as exc:
        raise DocumentError(f"{name}: damaged — {member} is missing", "damaged") from exc
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError) as exc:
        raise DocumentError(f"{name}: damaged — cannot inflate {member}", "damaged") from exc
    if len(data) > MAX_MEMBER_BYTES:
        raise DocumentError(
            f"{name}: {member} inflates past {MAX_MEMBER_BYTES // 2**20} MB — refused "
            "(a ZIP bomb or a huge document)",
            "too-large",
        )
    return data


def _xml(data: bytes, name: str) -> ET.Element:
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise DocumentError(f"{name}: refused — its XML declares a DOCTYPE", "damaged")
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        raise DocumentError(f"{name}: damaged — its XML does not parse", "damaged") from exc


def _runs(element: ET.Element) -> str:
    parts: list[str] = []
    for node in element.iter():
        if node.tag == _W + "t" and node.text:
            parts.append(node.text)
        elif node.tag == _W + "tab":
            parts.append("\t")
        elif node.tag in (_W + "br", _W + "cr"):
            parts.append("\n")
    return "".join(parts)


def _heading_level(paragraph: ET.Element) -> int | None:
    style = paragraph.find(f"{_W}pPr/{_W}pStyle")
    value = (style.get(_W + "val") or "") if style is not None else ""
    lowered = value.lower().replace(" ", "")
    if lowered == "title":
        return 1
    if lowered.startswith("heading") and lowered[7:].isdigit():
        return min(int(lowered[7:]), 6)
    return None


def _table(table: ET.Element) -> str:
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


def extract_docx(data: bytes, name: str) -> Document:
    """Headings as ``#`` lines, paragraphs as blocks, tables as Markdown tables."""
    with _open_zip(data, name, "DOCX") as package:
        root = _xml(_member(_Package(package), "word/document.xml", name), name)
    body = root.find(_W + "body")
    out = TextBuilder()
    for child in body if body is not None else []:
        if child.tag == _W + "p":
            level = _heading_level(child)
            text = _runs(child)
            if level is not None:
                out.heading(level, text)
            else:
                out.block(text)
        elif child.tag == _W + "tbl":
            out.block(_table(child))
    return out.build("docx")


def _opf_path(package: _Package, name: str) -> str:
    container = _xml(_member(package, "META-INF/container.xml", name), name)
    for node in container.iter():
        if node.tag.endswith("rootfile") and node.get("full-path"):
            return str(node.get("full-path"))
    raise DocumentError(f"{name}: damaged EPUB — no package document", "damaged")


def extract_epub(data: bytes, name: str) -> Document:
    """The spine's chapters in reading order, each one's headings kept; a chapter with
    no heading of its own gets its file name as one, so every chapter can be named."""
    out = TextBuilder()
    with _open_zip(data, name, "EPUB") as opened:
        package = _Package(opened)
        opf_path = _opf_path(package, name)
        opf = _xml(_member(package, opf_path, name), name)
        base = posixpath.dirname(opf_path)
        manifest = {
            node.get("id"): node.get("href")
            for node in opf.iter()
            if node.tag.endswith("}item") and node.get("href")
        }
        spine = [node.get("idref") for node in opf.iter() if node.tag.endswith("}itemref")]
        if len(spine) > MAX_MEMBERS:
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

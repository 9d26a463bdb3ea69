"""Real documents made in the tests: PDFs written byte by byte (a second producer next
to pypdf), DOCX and EPUB packages, HTML pages; and the attack files (a bomb, a file that
claims a million pages, a damaged one)."""

from __future__ import annotations

import io
import zipfile
import zlib


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(
    pages: list[list[str]],
    *,
    claimed_count: int | None = None,
    extra_stream: bytes | None = None,
) -> bytes:
    """A PDF with one page per item, each line of text drawn in Helvetica; an empty
    page list item draws a filled box only (a page with no text layer)."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below
    pages_id = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for lines in pages:
        if lines:
            ops = ["BT /F1 12 Tf 72 720 Td 14 TL"]
            ops += [f"({_escape(line)}) Tj T*" for line in lines]
            ops.append("ET")
            content = "\n".join(ops).encode("latin-1")
        else:
            content = b"0.5 g 72 72 400 600 re f"
        stream = add(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
        contents = b"%d 0 R" % stream
        if extra_stream is not None:
            bomb = add(
                b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream"
                % (len(extra_stream), extra_stream)
            )
            contents = b"[%d 0 R %d 0 R]" % (stream, bomb)
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
                b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %s >>"
                % (pages_id, font, contents)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id
    count = len(kids) if claimed_count is None else claimed_count
    refs = b" ".join(b"%d 0 R" % k for k in kids)
    objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (refs, count)
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
        % (len(objects) + 1, catalog, xref)
    )
    return out.getvalue()


def deflate_bomb(inflated: int) -> bytes:
    """A Flate stream of ``inflated`` zero bytes (about a thousandth of that on disk)."""
    packer = zlib.compressobj(9)
    block = b"\x00" * (1 << 20)
    parts = [packer.compress(block) for _ in range(inflated >> 20)]
    parts.append(packer.flush())
    return b"".join(parts)


def encrypted_pdf(pages: list[list[str]], password: str) -> bytes:
    """``pdf_bytes`` re-written and AES-encrypted by pypdf: a second producer."""
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(pdf_bytes(pages)))
    writer = pypdf.PdfWriter()
    for page in reader.pages:
        writer.add_page(page)
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _paragraph(text: str, style: str | None = None) -> str:
    props = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f"<w:p>{props}<w:r><w:t>{text}</w:t></w:r></w:p>"


def docx_bytes(
    blocks: list[tuple[str, str | list[list[str]]]], *, document_xml: str | None = None
) -> bytes:
    """A DOCX: blocks are ("Heading1", text), ("p", text) or ("table", rows)."""
    body = []
    for kind, value in blocks:
        if kind == "table":
            assert isinstance(value, list)
            rows = "".join(
                "<w:tr>" + "".join(f"<w:tc>{_paragraph(c)}</w:tc>" for c in row) + "</w:tr>"
                for row in value
            )
            body.append(f"<w:tbl>{rows}</w:tbl>")
        else:
            assert isinstance(value, str)
            body.append(_paragraph(value, None if kind == "p" else kind))
    xml = document_xml or (
        f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{_W}"><w:body>'
        + "".join(body)
        + "</w:body></w:document>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", "<Types/>")
        package.writestr("word/document.xml", xml)
    return out.getvalue()


def epub_bytes(chapters: list[tuple[str, str]]) -> bytes:
    """An EPUB 3 whose spine holds one XHTML file per (file name, body markup)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr("mimetype", "application/epub+zip")
        package.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:'
            'container" version="1.0"><rootfiles><rootfile full-path="OEBPS/content.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        items = "".join(
            f'<item id="c{i}" href="{name}" media-type="application/xhtml+xml"/>'
            for i, (name, _) in enumerate(chapters)
        )
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        package.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f"<manifest>{items}</manifest><spine>{spine}</spine></package>",
        )
        for name, body in chapters:
            package.writestr(f"OEBPS/{name}", f"<html><body>{body}</body></html>")
    return out.getvalue()


HTML_PAGE = b"""<!doctype html><html><head><title>T</title>
<style>body { color: red }</style><script>var secret = "SCRIPT-TEXT";</script></head>
<body><h1>Quarterly report</h1><p>Revenue grew by <b>12%</b>.</p>
<noscript>NOSCRIPT-TEXT</noscript><h2>Risks</h2><ul><li>Supply</li><li>Demand</li></ul>
<script>document.write("MORE-SCRIPT")</script></body></html>"""

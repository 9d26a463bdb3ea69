"""document → Harvey: every parser of untrusted bytes bounded in time, memory and output.

Invariant: no DOCX, EPUB, HTML or PDF of any size, encoding or shape takes Harvey
past the documented limits (``documents.model.Limits``: 1.5 GB of memory, 60 s,
20 million characters, 64 MB a member and 128 MB a package) or ends in a
traceback: it gives its text, its text cut with a note, or one ``DocumentError``
line. Each attack goes through ``extract`` — the child process, its limits and the
parent's translation — as a read would; limits are lowered here so that a test
that would otherwise wait a minute waits a second or two.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from harvey.documents import extract
from harvey.documents.html import web_codec
from harvey.documents.runner import Limits
from harvey.errors import DocumentError

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
LAUGHS = (
    '<!DOCTYPE w:document [<!ENTITY a "ha">'
    + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
    + "]>"
)
BODY = (
    f'<w:document xmlns:w="{W}"><w:body><w:p><w:r><w:t>&j;</w:t></w:r></w:p></w:body></w:document>'
)
EXTERNAL = (
    '<!DOCTYPE w:document [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    f'<w:document xmlns:w="{W}"><w:body><w:p><w:r><w:t>&x;</w:t></w:r></w:p></w:body></w:document>'
)
PARAMETER = (
    '<!DOCTYPE w:document [<!ENTITY % p SYSTEM "http://127.0.0.1:9/x.dtd"> %p;]>'
    f'<w:document xmlns:w="{W}"/>'
)


def package(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def encoded(xml: str, encoding: str) -> bytes:
    """The XML in ``encoding`` with its declaration saying so (and a BOM where one goes)."""
    text = f'<?xml version="1.0" encoding="{encoding.upper()}"?>' + xml
    if encoding == "utf-16":
        return text.encode("utf-16")  # BOM, native order
    return text.encode(encoding)


def docx(document_xml: bytes, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    return package({"[Content_Types].xml": b"<Types/>", "word/document.xml": document_xml}, method)


def epub(container: bytes, opf: bytes | None = None, chapter: bytes = b"<p>x</p>") -> bytes:
    default_opf = (
        b'<package xmlns="http://www.idpf.org/2007/opf"><manifest>'
        b'<item id="c" href="c.xhtml"/></manifest><spine><itemref idref="c"/></spine></package>'
    )
    return package(
        {
            "META-INF/container.xml": container,
            "OEBPS/c.opf": opf if opf is not None else default_opf,
            "OEBPS/c.xhtml": chapter,
        }
    )


CONTAINER = '<container><rootfiles><rootfile full-path="OEBPS/c.opf"/></rootfiles></container>'


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.fixture(autouse=True)
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARVEY_HOME", str(tmp_path / "home"))


# -- XML entities, in every encoding the parser reads ------------------------------------


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-16-le", "utf-16-be", "latin-1"])
@pytest.mark.parametrize(
    "xml", [LAUGHS + BODY, EXTERNAL, PARAMETER], ids=["laughs", "external", "parameter"]
)
def test_a_docx_declaring_entities_is_refused_in_any_encoding(
    tmp_path: Path, encoding: str, xml: str
) -> None:
    path = write(tmp_path, "e.docx", docx(encoded(xml, encoding)))
    # Without a BOM, UTF-16 in a named byte order is not read at all: damaged, one line.
    unread = encoding in ("utf-16-le", "utf-16-be")
    with pytest.raises(DocumentError, match="does not parse" if unread else "DOCTYPE") as refused:
        extract(path)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_an_epub_declaring_entities_in_its_container_or_package_is_refused(
    tmp_path: Path, encoding: str
) -> None:
    laughs_container = encoded(
        LAUGHS.replace("w:document", "container")
        + CONTAINER.replace("<container>", "<container>&j;"),
        encoding,
    )
    with pytest.raises(DocumentError, match="DOCTYPE"):
        extract(write(tmp_path, "c.epub", epub(laughs_container)))
    opf = encoded(
        LAUGHS.replace("w:document", "package")
        + '<package xmlns="http://www.idpf.org/2007/opf"><metadata>&j;</metadata></package>',
        encoding,
    )
    with pytest.raises(DocumentError, match="DOCTYPE"):
        extract(write(tmp_path, "p.epub", epub(CONTAINER.encode(), opf)))


def test_an_epub2_chapter_with_a_doctype_expands_nothing(tmp_path: Path) -> None:
    """XHTML chapters go through the HTML reader: a declared entity stays a literal."""
    chapter = LAUGHS.replace("w:document", "html") + "<html><body><p>&j; end</p></body></html>"
    doc = extract(write(tmp_path, "b.epub", epub(CONTAINER.encode(), chapter=chapter.encode())))
    assert "haha" not in doc.text and "end" in doc.text
    assert len(doc.text) < 1000


# -- compression, whatever the method -----------------------------------------------------


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_a_member_that_inflates_past_its_cap_is_refused_by_any_compression(
    tmp_path: Path, method: int
) -> None:
    big = (
        b'<w:document xmlns:w="'
        + W.encode()
        + b'"><w:body>'
        + b" " * (3 << 20)
        + b"</w:body></w:document>"
    )
    path = write(tmp_path, "z.docx", docx(big, method))
    assert path.stat().st_size < 64 * 1024
    with pytest.raises(DocumentError, match="inflates past 2 MB"):
        extract(path, limits=Limits(member_bytes=2 << 20))


def test_an_archive_inside_an_epub_is_only_bytes(tmp_path: Path) -> None:
    """A chapter that is itself a ZIP (of a bomb) is decoded as text, never opened."""
    inner = docx(b"<x>" + b" " * (8 << 20) + b"</x>")
    doc = extract(write(tmp_path, "n.epub", epub(CONTAINER.encode(), chapter=inner)))
    assert len(doc.text) <= len(inner) * 2


# -- text that grows: stopped as it is made --------------------------------------------------


def test_docx_text_stops_at_the_character_cap(tmp_path: Path) -> None:
    paragraph = "<w:p><w:r><w:t>" + "word " * 2000 + "</w:t></w:r></w:p>"
    xml = f'<w:document xmlns:w="{W}"><w:body>' + paragraph * 300 + "</w:body></w:document>"
    doc = extract(
        write(tmp_path, "long.docx", docx(xml.encode())), limits=Limits(max_chars=100_000)
    )
    assert len(doc.text) == 100_000
    assert doc.notes == ("text cut at 100,000 characters",)


@pytest.mark.parametrize("kind", ["html", "epub"])
def test_html_text_stops_at_the_character_cap(tmp_path: Path, kind: str) -> None:
    page = ("<p>" + "word " * 1000 + "</p>") * 500
    data = page.encode() if kind == "html" else epub(CONTAINER.encode(), chapter=page.encode())
    doc = extract(write(tmp_path, f"long.{kind}", data), limits=Limits(max_chars=50_000))
    assert len(doc.text) == 50_000 and doc.notes == ("text cut at 50,000 characters",)


# -- markup built to be slow, and codecs that are ---------------------------------------------


def test_markup_that_keeps_the_html_parser_busy_is_stopped_at_the_deadline(tmp_path: Path) -> None:
    """``<a `` seventy thousand times keeps ``HTMLParser`` busy for minutes."""
    path = write(tmp_path, "slow.html", b"<a " * 70_000)
    with pytest.raises(DocumentError, match="HTML extraction") as stopped:
        extract(path, limits=Limits(seconds=2))
    assert "time limit" in str(stopped.value) or "stopped after 2 s" in str(stopped.value)


@pytest.mark.parametrize("charset", ["punycode", "idna", "utf-7", "rot13", "base64", "zlib", "hex"])
def test_a_charset_that_is_not_a_web_encoding_is_never_used(tmp_path: Path, charset: str) -> None:
    assert web_codec(charset) is None
    body = "<p>" + "xn--" * 250_000 + "</p><p>plain end</p>"
    page = f'<html><head><meta charset="{charset}"></head><body>{body}</body></html>'
    doc = extract(write(tmp_path, "c.html", page.encode()))
    assert doc.text.endswith("plain end")


@pytest.mark.parametrize(
    "charset", ["iso-8859-1", "windows-1252", "Shift_JIS", "koi8-r", "utf-16le"]
)
def test_web_encodings_still_decode(charset: str) -> None:
    assert web_codec(charset) is not None


# -- memory: the child's, measured where it ran ------------------------------------------------

PEAK = """
import json, resource, sys
from pathlib import Path
from harvey.documents import extract
from harvey.documents.runner import Limits
from harvey.errors import DocumentError
try:
    extract(Path(sys.argv[1]), limits=Limits(memory_bytes=int(sys.argv[2])))
    outcome = "read"
except DocumentError as exc:
    outcome = str(exc)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"outcome": outcome, "peak": peak}))
"""


@pytest.mark.parametrize("attack", ["laughs-utf16", "flat-xml", "big-html"])
def test_no_document_takes_the_child_past_its_memory_cap(tmp_path: Path, attack: str) -> None:
    cap = 400 << 20
    if attack == "laughs-utf16":
        data, name = docx(encoded(LAUGHS + BODY, "utf-16")), "a.docx"
    elif attack == "flat-xml":  # empty paragraphs by the hundred thousand: read as a stream
        xml = f'<w:document xmlns:w="{W}"><w:body>' + "<w:p/>" * 300_000 + "</w:body></w:document>"
        data, name = docx(xml.encode()), "b.docx"
    else:
        data, name = ("<div>" * 200_000 + "text").encode(), "c.html"
    path = write(tmp_path, name, data)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PEAK), str(path), str(cap)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    result = json.loads(done.stdout)
    assert result["peak"] <= cap, result
    assert result["outcome"] == "read" or "\n" not in result["outcome"]

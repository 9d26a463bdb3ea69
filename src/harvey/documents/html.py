"""HTML (and EPUB chapters) as readable text: headings kept as Markdown ``#`` lines,
paragraphs and list items as blocks, scripts, styles and other invisible parts dropped.

The standard library's tolerant ``HTMLParser`` reads any markup without fetching
anything (no external entities, no network), so a hostile page is just text. It
runs only in the extraction child (``runner.py``), whose time limit stops markup
built to make it slow; the text it gives stops at ``max_chars``. A ``<meta
charset>`` is honoured only when it names an encoding of the WHATWG Encoding
Standard (what browsers decode): ``punycode``, ``idna``, ``utf-7``, the codecs
that are not text encodings at all and any other Python codec are never asked to
decode a hostile page (some are quadratic, some are not about text).
"""

from __future__ import annotations

import codecs
import functools
import re
from html.parser import HTMLParser

from harvey.documents.model import Document, TextBuilder

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "object"})
_BLOCKS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "footer", "nav", "aside",
        "blockquote", "pre", "table", "tr", "ul", "ol", "dl", "dt", "dd", "figure",
        "figcaption", "form", "fieldset", "address", "hr", "br", "body", "html",
    }
)  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_VOID = frozenset({"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "wbr"})
_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_\-]+)""", re.IGNORECASE)


class _Reader(HTMLParser):
    def __init__(self, out: TextBuilder) -> None:
        super().__init__(convert_charrefs=True)
        self.out = out
        self.skip_depth = 0
        self.heading: int | None = None
        self.buffer: list[str] = []
        self.pre = 0

    def flush(self) -> None:
        text = "".join(self.buffer)
        self.buffer = []
        if self.heading is not None:
            self.out.heading(self.heading, text)
            return
        if self.pre:
            self.out.block(text.strip("\n"))
            return
        lines = (" ".join(line.split()) for line in text.split("\n"))
        self.out.block("\n".join(line for line in lines if line))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":  # a <head> never closed ends here, as in a browser
            self.skip_depth = 0
        if tag in _SKIP:
            if tag not in _VOID:
                self.skip_depth += 1
            return
        if self.skip_depth:
            return
        if tag in _HEADINGS:
            self.flush()
            self.heading = _HEADINGS[tag]
        elif tag == "li":
            self.flush()
            self.buffer.append("- ")
        elif tag in ("td", "th"):
            self.buffer.append(" | ")
        elif tag == "br":
            self.buffer.append("\n")
        elif tag in _BLOCKS:
            self.flush()
            if tag == "pre":
                self.pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip_depth = max(0, self.skip_depth - 1)
            return
        if self.skip_depth:
            return
        if tag in _HEADINGS and self.heading is not None:
            self.flush()
            self.heading = None
        elif tag in _BLOCKS or tag == "li":
            self.flush()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)

    def handle_data(self, data: str) -> None:
        if not self.skip_depth:
            self.buffer.append(data)


#: The WHATWG Encoding Standard's encodings (and the labels pages use for them).
WEB_ENCODINGS = (
    "utf-8", "ibm866", "iso-8859-2", "iso-8859-3", "iso-8859-4", "iso-8859-5",
    "iso-8859-6", "iso-8859-7", "iso-8859-8", "iso-8859-10", "iso-8859-13",
    "iso-8859-14", "iso-8859-15", "iso-8859-16", "koi8-r", "koi8-u", "mac-roman",
    "mac-cyrillic", "cp874", "cp1250", "cp1251", "cp1252", "cp1253", "cp1254", "cp1255",
    "cp1256", "cp1257", "cp1258", "gbk", "gb2312", "gb18030", "big5", "euc-jp",
    "iso-2022-jp", "shift_jis", "euc-kr", "cp949", "utf-16-le", "utf-16-be", "utf-16",
    "ascii", "latin-1", "iso-8859-9", "iso-8859-11",
)  # fmt: skip


@functools.cache
def _web_codecs() -> frozenset[str]:
    return frozenset(codecs.lookup(name).name for name in WEB_ENCODINGS)


def web_codec(label: str) -> str | None:
    """The Python codec for a charset label, or None unless it is a web encoding."""
    try:
        name = codecs.lookup(label.strip()).name
    except (LookupError, ValueError):
        return None
    return name if name in _web_codecs() else None


def decode_html(data: bytes) -> str:
    """The page's text by its BOM, its ``<meta charset>`` (a web encoding only), else
    UTF-8; errors replaced."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    found = _CHARSET.search(data[:4096])
    codec = web_codec(found.group(1).decode("ascii")) if found else None
    return data.decode(codec or "utf-8", errors="replace")


def read_html_into(out: TextBuilder, markup: str) -> None:
    """Fill ``out`` from ``markup``; a full builder stops the parser where it is
    (``TextFull`` goes to the caller's ``out.reading()``)."""
    reader = _Reader(out)
    reader.feed(markup)
    reader.close()
    reader.flush()


def extract_html(data: bytes, max_chars: int | None = None) -> Document:
    out = TextBuilder(max_chars)
    with out.reading():
        read_html_into(out, decode_html(data))
    return out.build("html")


__all__ = ["decode_html", "extract_html", "read_html_into"]

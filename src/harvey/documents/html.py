"""HTML (and EPUB chapters) as readable text: headings kept as Markdown ``#`` lines,
paragraphs and list items as blocks, scripts, styles and other invisible parts dropped.

The standard library's tolerant ``HTMLParser`` reads any markup without fetching
anything (no external entities, no network), so a hostile page is just text.
"""

from __future__ import annotations

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


def decode_html(data: bytes) -> str:
    """The page's text by its BOM, its ``<meta charset>``, else UTF-8 (errors replaced)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    found = _CHARSET.search(data[:4096])
    if found:
        try:
            return data.decode(found.group(1).decode("ascii"), errors="replace")
        except LookupError:
            pass
    return data.decode("utf-8", errors="replace")


def read_html_into(out: TextBuilder, markup: str) -> None:
    reader = _Reader(out)
    reader.feed(markup)
    reader.close()
    reader.flush()


def extract_html(data: bytes) -> Document:
    out = TextBuilder()
    read_html_into(out, decode_html(data))
    return out.build("html")


__all__ = ["decode_html", "extract_html", "read_html_into"]

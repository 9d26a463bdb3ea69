"""The HTML rendering is a structured screenplay page (checked with html.parser, no browser)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from harvey.session.fountain import parse_session
from harvey.session.render import render_html

from .test_fountain_interop import record_realistic


class Collector(HTMLParser):
    """Records each element's tag, attributes and direct text, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[dict[str, object]] = []
        self.elements: list[dict[str, object]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element: dict[str, object] = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(element)
        if tag not in ("meta", "br"):
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            if self.stack.pop()["tag"] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.stack:
            self.stack[-1]["text"] = str(self.stack[-1]["text"]) + data

    def with_class(self, name: str) -> list[dict[str, object]]:
        return [
            e for e in self.elements if name in str(dict(e["attrs"]).get("class") or "").split()
        ]  # type: ignore[call-overload]


def rendered(tmp_path: Path) -> tuple[Collector, object]:
    path = tmp_path / "s.spmd"
    record_realistic(path)
    parsed = parse_session(path)
    page = Collector()
    page.feed(render_html(parsed))
    return page, parsed


def test_scene_headings_and_toc_anchors(tmp_path: Path) -> None:
    page, parsed = rendered(tmp_path)
    headings = [e["text"] for e in page.with_class("scene-heading")]
    assert headings == [s.heading for s in parsed.scenes]  # type: ignore[attr-defined]
    links = [e for e in page.elements if e["tag"] == "a"]
    assert [e["text"] for e in links] == headings
    ids = {dict(e["attrs"]).get("id") for e in page.with_class("scene")}  # type: ignore[call-overload]
    assert {str(dict(e["attrs"])["href"])[1:] for e in links} == ids  # type: ignore[call-overload]


def test_character_blocks_and_dialogue(tmp_path: Path) -> None:
    page, parsed = rendered(tmp_path)
    characters = [e["text"] for e in page.with_class("character")]
    assert characters == [who for s in parsed.scenes for who, _ in s.dialogue]  # type: ignore[attr-defined]
    lines = [e["text"] for e in page.with_class("lines")]
    assert "No.\n\nINT. NOT A SCENE\nCUT TO:" in lines


def test_notes_are_margin_notes_with_error_marking(tmp_path: Path) -> None:
    page, _ = rendered(tmp_path)
    notes = [str(e["text"]) for e in page.with_class("note")]
    assert 'tool: run_shell({"cmd":"make"}) — error: 2' in notes
    assert any(n.startswith("rag: 3 chunks") for n in notes)
    errors = [str(e["text"]) for e in page.with_class("error")]
    assert "chunk-result: 2/2 — error: context exceeded" in errors
    # errors are "— error" statuses and shell commands that exited non-zero
    assert all("— error" in n or (n.startswith("shell:") and "exit 0" not in n) for n in errors)
    assert any(n.startswith("shell:") for n in errors)
    assert page.with_class("margin-notes")


def test_markup_in_text_is_escaped(tmp_path: Path) -> None:
    from harvey.session.recorder import Recorder
    from harvey.session.records import TurnRecord

    rec = Recorder(tmp_path / "x.spmd", user="u", model="m", backend="b")
    rec.record_turn(TurnRecord("u", "m", "/w", "<script>alert(1)</script>", "&amp;"))
    rec.close()
    html = render_html(parse_session(rec.path))
    assert "<script>" not in html and "&lt;script&gt;" in html
    page = Collector()
    page.feed(html)
    assert page.with_class("end")

"""Render a parsed session as a standalone HTML screenplay page.

The page reads like a screenplay: a title page, a table of contents of scenes,
scene headings in caps, action lines full width, character names centred over
a narrow dialogue column, and notes (tool calls, file writes, retrieval,
recall, chunk progress, evidence) as margin notes beside the scene so they annotate without
interrupting the dialogue. An analysis's answer links each ``[3]`` it cites to the
``[[evidence:]]`` note that holds record 3's words (its quote also shows on hover).
Everything is escaped with :func:`html.escape`; the page needs no scripts and no network.
"""

from __future__ import annotations

import html
import re

from harvey.session.evidence_notes import read_citation, read_dropped, read_evidence
from harvey.session.fountain import Element, ParsedSession, Scene
from harvey.session.notes import (
    read_chunk,
    read_chunk_file,
    read_chunk_result,
    read_chunk_served,
    read_compaction,
    read_rag,
    read_rag_source,
    read_recall,
    read_shell,
    read_synthesis,
    read_tool,
    read_write,
)

_CSS = """
:root { --ink: #1b1b1b; --paper: #fffdf8; --rule: #d8d2c4; --note: #6b5d3f; }
* { box-sizing: border-box; }
body { margin: 0; background: #ece8df; color: var(--ink);
  font: 12pt/1.35 "Courier Prime", "Courier New", Courier, monospace; }
.page { width: 8.5in; margin: 24px auto; padding: 0.8in 2.6in 0.8in 1.2in;
  background: var(--paper); box-shadow: 0 1px 6px rgba(0,0,0,.18); position: relative; }
.title-page { text-align: center; padding-bottom: 0.4in; border-bottom: 1px dashed var(--rule); }
.title-page h1 { font-size: 14pt; text-transform: uppercase; text-decoration: underline;
  margin: 0 0 0.2in; }
.title-page dl { display: inline-grid; grid-template-columns: auto auto; gap: 2px 12px;
  text-align: left; margin: 0; }
.title-page dt { font-weight: bold; } .title-page dd { margin: 0; }
nav.toc { margin: 0.3in 0; font-size: 10pt; }
nav.toc h2 { font-size: 10pt; text-transform: uppercase; margin: 0 0 4px; }
nav.toc ol { margin: 0; padding-left: 2.2em; } nav.toc a { color: inherit; }
.transition { text-align: right; text-transform: uppercase; margin: 0.25in 0; }
.scene { margin-top: 0.35in; display: flow-root; }
.scene-heading { font-size: 12pt; font-weight: bold; text-transform: uppercase; margin: 0 0 12pt; }
.action { margin: 0 0 12pt; white-space: pre-wrap; }
.dialogue { margin: 0 0 12pt; }
.character { margin: 0; text-align: center; text-transform: uppercase; }
.lines { margin: 0 auto; width: 3.5in; white-space: pre-wrap; overflow-wrap: anywhere; }
.margin-notes { float: right; clear: right; width: 2.2in; margin: 0 -2.45in 6pt 0; }
.note { display: block; margin: 0 0 4px; font: 9pt/1.3 Georgia, serif; color: var(--note);
  border-left: 3px solid #c9b27c; background: #fbf5e6; padding: 3px 6px;
  white-space: pre-wrap; overflow-wrap: anywhere; }
.note.error { border-left-color: #b5452f; color: #7a2a1c; background: #fbebe6; }
.note.skipped { border-left-color: #9a9a9a; color: #555; background: #f2f2f2; }
a.cite { color: #5a3d8a; text-decoration: none; border-bottom: 1px dotted #5a3d8a; }
.note:target { outline: 2px solid #5a3d8a; }
.end { text-align: right; text-transform: uppercase; margin-top: 0.4in; }
.incomplete { color: #b5452f; text-align: center; font-style: italic; }
"""


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _note_class(raw: str) -> str:
    """CSS class from the typed note readers (the same ones the parser uses), so a
    model called ``llama3.1:8b`` or arguments containing "— error" can't fool it."""
    tool = read_tool(raw)
    if tool is not None:
        return "note note-tool" + ("" if tool.status == "ok" else " error")
    write = read_write(raw)
    if write is not None:
        kind = {"ok": "", "skipped": " skipped"}.get(write.status, " error")
        return "note note-write" + kind
    shell = read_shell(raw)
    if shell is not None:
        return "note note-shell" + ("" if shell.exit_code == 0 else " error")
    stated = (
        ("chunk-result", read_chunk_result),
        ("chunk-file", read_chunk_file),
        ("synthesis", read_synthesis),
        ("compaction", read_compaction),
    )
    for kind, reader in stated:
        parsed = reader(raw)
        if parsed is not None:
            return f"note note-{kind}" + ("" if parsed.status == "ok" else " error")
    if read_dropped(raw) is not None:
        return "note note-evidence-dropped skipped"
    readers = (
        ("chunk", read_chunk),
        ("chunk-served", read_chunk_served),
        ("evidence", read_evidence),
        ("citation", read_citation),
        ("rag", read_rag),
        ("rag-source", read_rag_source),
        ("recall", read_recall),
    )
    for kind, other in readers:
        if other(raw) is not None:
            return f"note note-{kind}"
    return "note"


_CITED = re.compile(r"\[(\d+)\]")


class Citations:
    """The evidence of the analysis read last, so the answer's ``[3]`` can link to the
    words it cites: ``anchor`` is the id of the ``[[evidence:]]`` note, ``title`` its quote."""

    def __init__(self) -> None:
        self.quotes: dict[int, tuple[str, str]] = {}

    def read(self, index: int, scene: Scene) -> None:
        found = scene.evidence
        if found:
            self.quotes = {e.id: (f"evidence-{index}-{e.id}", e.quote) for e in found}

    def anchor(self, raw: str) -> str | None:
        parsed = read_evidence(raw)
        if parsed is None or parsed.id not in self.quotes:
            return None
        return self.quotes[parsed.id][0]

    def link(self, escaped: str) -> str:
        """``[3]`` in already-escaped text as a link to record 3's note, its quote the title."""

        def one(match: re.Match[str]) -> str:
            cited = self.quotes.get(int(match.group(1)))
            if cited is None:
                return match.group(0)
            anchor, quote = cited
            return f'<a class="cite" href="#{anchor}" title="{_e(quote)}">{match.group(0)}</a>'

        return _CITED.sub(one, escaped) if self.quotes else escaped


def _element(element: Element, cited: Citations) -> str:
    if element.kind == "action":
        return f'<p class="action">{_e(element.text)}</p>'
    if element.kind == "note":
        anchor = cited.anchor(element.raw)
        where = f' id="{anchor}"' if anchor else ""
        text = _e(element.text)
        if read_citation(element.raw) is not None:
            text = cited.link(text)
        return f'<aside class="{_note_class(element.raw)}"{where}>{text}</aside>'
    return (
        '<div class="dialogue">'
        f'<p class="character">{_e(element.character or "")}</p>'
        f'<p class="lines">{cited.link(_e(element.text))}</p></div>'
    )


def _scene(index: int, scene: Scene, cited: Citations) -> str:
    """One scene; each run of consecutive notes becomes one margin-note group."""
    parts = [
        f'<section class="scene scene-{_e(scene.kind)}" id="scene-{index}">',
        f'<h2 class="scene-heading">{_e(scene.heading)}</h2>',
    ]
    in_notes = False
    for element in scene.elements:
        is_note = element.kind == "note"
        if is_note and not in_notes:
            parts.append('<div class="margin-notes">')
        elif in_notes and not is_note:
            parts.append("</div>")
        in_notes = is_note
        parts.append(_element(element, cited))
    if in_notes:
        parts.append("</div>")
    parts.append("</section>")
    return "\n".join(parts)


def render_html(parsed: ParsedSession) -> str:
    """A standalone HTML page of the session: title page, scene index, the screenplay."""
    title = parsed.title_page.get("Title", "Harvey Session")
    entries = "".join(
        f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in parsed.title_page.items() if k != "Title"
    )
    toc = "".join(
        f'<li><a href="#scene-{i}">{_e(s.heading)}</a></li>'
        for i, s in enumerate(parsed.scenes, start=1)
    )
    cited = Citations()
    rendered = []
    for i, scene in enumerate(parsed.scenes, start=1):
        cited.read(i, scene)
        rendered.append(_scene(i, scene, cited))
    scenes = "\n".join(rendered)
    ending = (
        '<p class="end">THE END.</p>'
        if parsed.complete
        else '<p class="incomplete">(The recording stops here: '
        "the session did not end cleanly.)</p>"
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{_e(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<main class="page">
<header class="title-page"><h1>{_e(title)}</h1><dl>{entries}</dl></header>
<nav class="toc"><h2>Scenes</h2><ol>{toc}</ol></nav>
<p class="transition">FADE IN:</p>
{scenes}
{ending}
</main>
</body>
</html>
"""

"""Read a Harvey session file (``.spmd``, Fountain) back into scenes, notes and dialogue.

The reader knows the shape the recorder writes (``docs/FOUNTAIN_FORMAT.md``):
a title page, ``FADE IN:``, scenes separated by blank lines, and inside a scene
blocks that are an action line, a run of ``[[notes]]`` or a character cue with
its dialogue. Because the recorder escapes all free text, dialogue comes back
byte for byte and a ``[[`` at a line start is always a real note.

By default the reader is forgiving: a truncated or damaged file yields what is
readable plus ``warnings`` naming the lines, so ``--continue-file`` can resume
after a crash. ``strict=True`` raises :class:`SessionFileError` at the first
problem instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from harvey.errors import SessionFileError
from harvey.protocols import RagInfo, RagSource, RecallItem
from harvey.session import evidence_notes as ev
from harvey.session import notes as n
from harvey.session.escape import cue_name, decode_block, decode_inline, is_note_line
from harvey.session.evidence_notes import ParsedCitation, ParsedDropped, ParsedEvidence
from harvey.session.records import (
    ChunkFileNote,
    ChunkServed,
    CompactionNote,
    ParsedChunkInfo,
    ParsedChunkResult,
    ParsedShell,
    ParsedSynthesis,
    ParsedToolNote,
    ParsedUndoNote,
    ParsedWriteNote,
)

T = TypeVar("T")
HARVEY = "HARVEY"
SHELL = "SHELL"
_TS = r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})"
_KINDS: list[tuple[str, re.Pattern[str]]] = [
    ("recall", re.compile(rf"^INT\. CONTEXT RECALL {_TS}$")),
    ("shell", re.compile(rf"^INT\. SHELL {_TS}$")),
    ("chunk_analysis", re.compile(rf"^INT\. CHUNK ANALYSIS — .* {_TS}$")),
    ("talking", re.compile(rf"^INT\. .* TALKING {_TS}$")),
    ("ext", re.compile(rf"^EXT\. .* {_TS}$")),
]
_ANY_TS = re.compile(rf" {_TS}$")
_TITLE = re.compile(r"^([A-Za-z][A-Za-z0-9 ]*):(?: (.*))?$")


@dataclass
class Element:
    """One block of a scene, in file order: ``action``, ``note`` or ``dialogue``."""

    kind: str
    text: str
    line: int
    character: str | None = None
    raw: str = ""  # a note's body as written (escaped), for the typed readers


@dataclass
class Scene:
    kind: str
    heading: str
    timestamp: str | None
    notes: list[str] = field(default_factory=list)
    dialogue: list[tuple[str, str]] = field(default_factory=list)
    elements: list[Element] = field(default_factory=list)
    line: int = 0

    def _read(self, reader: Callable[[str], T | None]) -> list[T]:
        found = (reader(e.raw) for e in self.elements if e.kind == "note")
        return [x for x in found if x is not None]

    @property
    def actions(self) -> list[str]:
        return [e.text for e in self.elements if e.kind == "action"]

    @property
    def tool_notes(self) -> list[ParsedToolNote]:
        return self._read(n.read_tool)

    @property
    def write_notes(self) -> list[ParsedWriteNote]:
        return self._read(n.read_write)

    @property
    def undo_notes(self) -> list[ParsedUndoNote]:
        return self._read(n.read_undo)

    @property
    def rag(self) -> RagInfo | None:
        found = self._read(n.read_rag)
        return found[0] if found else None

    @property
    def rag_sources(self) -> list[RagSource]:
        return self._read(n.read_rag_source)

    @property
    def recall(self) -> list[RecallItem]:
        return self._read(n.read_recall)

    @property
    def chunk(self) -> ParsedChunkInfo | None:
        found = self._read(n.read_chunk)
        return found[0] if found else None

    @property
    def chunk_results(self) -> list[ParsedChunkResult]:
        return self._read(n.read_chunk_result)

    @property
    def chunk_served(self) -> ChunkServed | None:
        found = self._read(n.read_chunk_served)
        return found[0] if found else None

    @property
    def chunk_files(self) -> list[ChunkFileNote]:
        """The files of a whole-folder analysis, in the order they were written."""
        return self._read(n.read_chunk_file)

    @property
    def synthesis(self) -> ParsedSynthesis | None:
        found = self._read(n.read_synthesis)
        return found[0] if found else None

    @property
    def evidence(self) -> list[ParsedEvidence]:
        """The records an analysis's map calls kept: number, place, the source's words."""
        return self._read(ev.read_evidence)

    @property
    def evidence_dropped(self) -> list[ParsedDropped]:
        return self._read(ev.read_dropped)

    @property
    def citations(self) -> list[ParsedCitation]:
        return self._read(ev.read_citation)

    @property
    def unsupported(self) -> list[tuple[str, str]]:
        return self._read(ev.read_unsupported)

    @property
    def compaction(self) -> CompactionNote | None:
        """The ``[[compaction:]]`` note with its summary: HARVEY's line right after it."""
        for index, element in enumerate(self.elements):
            note = n.read_compaction(element.raw) if element.kind == "note" else None
            if note is None:
                continue
            after = self.elements[index + 1 : index + 2]
            if note.ok and after and after[0].kind == "dialogue" and after[0].character == HARVEY:
                return replace(note, summary=after[0].text)
            return note
        return None

    @property
    def shell(self) -> ParsedShell | None:
        found = self._read(n.read_shell)
        return found[0] if found else None

    @property
    def omitted(self) -> int:
        """Lines of a SHELL scene's output the recording left out (``[[output: N lines
        omitted]]``, kept among the notes, not in ``shell_output``); 0 when none were."""
        return sum(self._read(n.read_omitted))

    @property
    def user_text(self) -> str | None:
        """The person's words: the first cue when HARVEY answers it (TALKING, EXT., SHELL)."""
        d = self.dialogue
        if len(d) >= 2 and d[0][0] not in (HARVEY, SHELL) and d[1][0] in (HARVEY, SHELL):
            return d[0][1]
        if self.kind in ("chunk_analysis", "shell") and d and d[0][0] not in (HARVEY, SHELL):
            return d[0][1]
        return None

    @property
    def reply(self) -> str | None:
        """The answer in a TALKING or EXT. scene: the last non-HARVEY dialogue, or in an
        analysis's scene HARVEY's own line (an answer that is the evidence itself, which
        no model wrote)."""
        if self.kind not in ("talking", "ext") or not self.dialogue:
            return None
        index = len(self.dialogue) - 1
        has_user = self.user_text is not None
        harvey = self.dialogue[index][0] == HARVEY
        if (harvey and not self.analysis_mode) or (has_user and index == 0):
            return None
        return self.dialogue[index][1]

    @property
    def analysis_mode(self) -> bool:
        """The scene of an analysis's answer (its action line says ``analysis mode``)."""
        return any("are in analysis mode." in line for line in self.actions)

    @property
    def shell_output(self) -> str | None:
        return next((text for who, text in self.dialogue if who == SHELL), None)


@dataclass
class ParsedSession:
    title_page: dict[str, str]
    scenes: list[Scene]
    complete: bool
    warnings: list[str] = field(default_factory=list)
    path: Path | None = None

    @property
    def turns(self) -> list[Scene]:
        """The conversation scenes (TALKING and EXT.), in order."""
        return [s for s in self.scenes if s.kind in ("talking", "ext")]


class _Reader:
    def __init__(self, source: str, strict: bool) -> None:
        self.source = source
        self.strict = strict
        self.warnings: list[str] = []

    def problem(self, message: str, line: int) -> None:
        if self.strict:
            raise SessionFileError(f"{self.source}: {message}", line=line)
        self.warnings.append(f"{self.source} line {line}: {message}")


def _blocks(lines: list[str], start: int) -> list[tuple[int, list[str]]]:
    """Runs of non-empty lines, each with its 1-based starting line number."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    first = 0
    for number, line in enumerate(lines[start:], start=start + 1):
        if line == "":
            if current:
                blocks.append((first, current))
                current = []
            continue
        if not current:
            first = number
        current.append(line)
    if current:
        blocks.append((first, current))
    return blocks


def _scene_for(heading: str, line: int) -> Scene:
    for kind, pattern in _KINDS:
        m = pattern.match(heading)
        if m:
            return Scene(kind, heading, m.group(1), line=line)
    ts = _ANY_TS.search(heading)
    return Scene("other", heading, ts.group(1) if ts else None, line=line)


def _is_cue(line: str) -> bool:
    name = cue_name(line)
    return bool(name) and not re.search(r"[a-z]", name) and not is_note_line(line)


def parse_session_text(text: str, source: str = "<session>", strict: bool = False) -> ParsedSession:
    """Parse the text of a session file; see :func:`parse_session`."""
    reader = _Reader(source, strict)
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        reader.problem("the file is empty", 1)

    title: dict[str, str] = {}
    index = 0
    while index < len(lines) and lines[index] != "":
        m = _TITLE.match(lines[index])
        if m and lines[index] != "FADE IN:":
            title[m.group(1)] = decode_inline(m.group(2) or "")
            index += 1
            continue
        break
    if not title and lines:
        reader.problem("no title page", 1)

    scenes: list[Scene] = []
    complete = False
    fade_in = False
    for number, block in _blocks(lines, index):
        if complete:
            reader.problem("text after THE END.", number)
            break
        first = block[0]
        if len(block) == 1 and first == "FADE IN:":
            fade_in = True
            continue
        if len(block) == 1 and first == "THE END.":
            complete = True
            continue
        if len(block) == 1 and (first.startswith("INT. ") or first.startswith("EXT. ")):
            scenes.append(_scene_for(first, number))
            continue
        if not fade_in and not scenes:
            reader.problem("expected FADE IN: before the first scene", number)
            fade_in = True
        if not scenes:
            reader.problem("text before the first scene heading", number)
            continue
        _add_block(scenes[-1], number, block, reader)
    if lines and not complete:
        reader.warnings.append(
            f"{source}: no THE END. — the session did not end cleanly (crash or still open)"
        )
    return ParsedSession(title, scenes, complete, reader.warnings)


def _add_block(scene: Scene, number: int, block: list[str], reader: _Reader) -> None:
    first = block[0]
    if first.startswith("[["):
        for offset, line in enumerate(block):
            if not is_note_line(line):
                reader.problem("unterminated or damaged [[note]]", number + offset)
                continue
            _add_note(scene, line[2:-2], number + offset)
        return
    if len(block) == 1:
        scene.elements.append(Element("action", decode_inline(first), number))
        return
    if not _is_cue(first):
        reader.problem(f"expected a character cue, found {first[:40]!r}", number)
        scene.elements.append(Element("action", decode_block(block), number))
        return
    who = cue_name(first)
    spoken: list[str] = []
    for offset, line in enumerate(block[1:], start=1):
        if is_note_line(line):  # a note inside dialogue (shell output omission)
            _add_note(scene, line[2:-2], number + offset)
        else:
            spoken.append(line)
    text = decode_block(spoken)
    scene.dialogue.append((who, text))
    scene.elements.append(Element("dialogue", text, number, character=who))


def _add_note(scene: Scene, body: str, number: int) -> None:
    shown = decode_inline(body)
    scene.notes.append(shown)
    scene.elements.append(Element("note", shown, number, raw=body))


def parse_session(path: str | Path, strict: bool = False) -> ParsedSession:
    """Parse a ``.spmd`` session file into its title page and scenes.

    Raises :class:`SessionFileError` when the file cannot be read at all (missing,
    unreadable, not UTF-8 in strict mode) and, with ``strict=True``, at the first
    structural problem, naming the line. Otherwise problems become ``warnings``.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise SessionFileError(f"cannot read session file {p}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
        bad_encoding = False
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        if strict:
            raise SessionFileError(f"{p}: not valid UTF-8", line=line) from exc
        text = data.decode("utf-8", errors="replace")
        bad_encoding = True
    parsed = parse_session_text(text, source=str(p), strict=strict)
    if bad_encoding:
        parsed.warnings.insert(0, f"{p}: not valid UTF-8; damaged bytes were replaced")
    parsed.path = p
    return parsed

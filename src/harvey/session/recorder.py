"""Record a session as a Fountain screenplay, one scene per interaction.

The file is the human-readable audit trail (format: ``docs/FOUNTAIN_FORMAT.md``):
a title page, ``FADE IN:``, then a scene for every chat turn, shell command,
context recall and chunked analysis, and ``THE END.`` on a clean exit. Each
``record_*`` call appends its text and flushes before returning, so a crash
leaves a readable file that simply lacks ``THE END.``.

Recording must never cost the user a turn: any OS error (permissions, full
disk, vanished directory) switches the recorder off after one warning, and
every later call is a no-op.

The file is written through ``harvey.ownfiles.nofollow``: its folder is reached from
the workspace (or ``HARVEY_HOME``) without following a link, and each append
opens the file relative to that folder with ``O_NOFOLLOW``. A ``.harvey`` or
``sessions`` that a cloned repository made a link is refused, never written.
"""

from __future__ import annotations

import errno
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvey.errors import WorkspaceError
from harvey.ownfiles.nofollow import Location
from harvey.ownfiles.private import location_of
from harvey.protocols import RecallItem
from harvey.redact import redact, redact_data
from harvey.session import evidence_notes, notes
from harvey.session.escape import (
    character_cue,
    cue_name,
    encode_block,
    encode_inline,
    encode_line,
)
from harvey.session.records import ChunkFileNote, ChunkServed, TurnRecord

if TYPE_CHECKING:
    from harvey.session.evidence_notes import CheckedAnswer, DroppedRecord, KeptRecord

log = logging.getLogger(__name__)

FORMAT_VERSION = "1.10"
HARVEY = "HARVEY"
SHELL = "SHELL"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
CHUNK_DONE = "Chunk analysis complete. Synthesized result injected into conversation."
CHUNK_FAILED = "Chunk analysis failed; no synthesized result was injected."


_RECORDING_NAME = re.compile(r"harvey-session-(\d{8}-\d{6})(?:-(\d+))?\.spmd")


def recording_order(name: str) -> tuple[str, int, str]:
    """The order recordings were started in, from a file's name alone.

    A plain sort puts ``…-101500-2.spmd`` before ``…-101500.spmd`` (a hyphen
    sorts before a dot) and ``-10`` before ``-2``: the second session of a
    second would read as the first. Names not made by ``open_in`` sort last,
    among themselves by name.
    """
    found = _RECORDING_NAME.fullmatch(name)
    if found is None:
        return ("~", 0, name)
    return (found[1], int(found[2] or 1), name)


class Recorder:
    """Appends scenes to one ``.spmd`` file; fail-open on any write error."""

    def __init__(
        self,
        path: Path,
        *,
        user: str,
        model: str,
        backend: str,
        clock: Callable[[], datetime] = datetime.now,
        warn: Callable[[str], None] | None = None,
        continued_from: Path | None = None,
        shell_head_lines: int = 20,
        shell_tail_lines: int = 20,
        reserved: bool = False,
        where: Location | None = None,
        continuing: bool = False,
    ) -> None:
        # reserved: ``open_in`` already created the (empty) file exclusively.
        # ``path`` given alone: its folder is a trusted root (tests, a caller's own folder).
        self.path = Path(path)
        self._where = where if where is not None else Location(self.path.parent)
        self.enabled = True
        self.user_cue = character_cue(user, "USER", frozenset({HARVEY, SHELL}))
        self._clock = clock
        self._warn = warn
        self._closed = False
        self._recalled = False
        self._last_was_note = False
        self._head = shell_head_lines
        self._tail = shell_tail_lines
        if continuing:  # the session's own file again: its title page is there
            return  # (``session/recordings.py`` took its THE END. off)
        now = clock()
        title = [
            ("Title", "Harvey Session"),
            ("Credit", "Recorded by Harvey"),
            ("Author", self.user_cue.lstrip("@")),
            ("Date", now.strftime(TIME_FORMAT)),
            ("Draft date", now.strftime("%Y-%m-%d")),
            ("Model", model),
            ("Backend", backend),
            ("Format", f"Harvey Fountain {FORMAT_VERSION}"),
        ]
        if continued_from is not None:
            title.append(("Continued from", str(continued_from)))
        text = "".join(f"{key}: {encode_inline(value)}\n" for key, value in title)
        self._write(text + "\nFADE IN:\n", mode="a" if reserved else "x")

    @classmethod
    def open_in(cls, directory: Path | Location, **kw: Any) -> Recorder:
        """A recorder on a fresh ``harvey-session-YYYYMMDD-HHMMSS[-N].spmd`` in ``directory``.

        A ``Location`` is walked from its root without following a link; so is
        a ``Path`` with a ``.harvey`` part (from the folder holding ``.harvey``);
        any other ``Path`` is a trusted folder, made with its parents (0700).
        """
        where = directory if isinstance(directory, Location) else location_of(Path(directory))
        clock: Callable[[], datetime] = kw.get("clock", datetime.now)
        stem = f"harvey-session-{clock().strftime('%Y%m%d-%H%M%S')}"
        path = where.path / f"{stem}.spmd"
        try:
            folder = where.open(create=True)  # 0700, like .harvey/ itself
        except (OSError, WorkspaceError) as exc:
            log.debug("cannot create %s: %s", where.path, exc)  # the constructor warns
            return cls(path, where=where, **kw)
        # Claim the name with an exclusive create, so two sessions started in the
        # same second never collide; the loser moves on to the next -N suffix.
        with folder:
            for suffix in range(2, 1000):
                try:
                    made = folder.create_new(path.name)
                except (OSError, WorkspaceError):
                    break  # unwritable: the constructor warns once and records nothing
                if made:
                    return cls(path, reserved=True, where=where, **kw)
                path = where.path / f"{stem}-{suffix}.spmd"
        return cls(path, where=where, **kw)

    # ------------------------------------------------------------ writing

    def _write(self, text: str, mode: str = "a") -> None:
        if not self.enabled:
            return
        try:
            with self._where.open(create=False) as folder:
                if mode == "x" and not folder.create_new(self.path.name):
                    raise FileExistsError(errno.EEXIST, "File exists")
                folder.append(self.path.name, text.encode("utf-8"))
        except (OSError, ValueError, WorkspaceError) as exc:
            self.enabled = False
            reason = getattr(exc, "strerror", None) or str(exc)
            message = f"session recording is off: cannot write {self.path} ({reason})"
            if self._warn is not None:  # the person is told once, by the front end's warning
                log.info(message)
                self._warn(message)
            else:
                log.warning(message)

    def _stamp(self, when: datetime | None = None) -> str:
        return (when or self._clock()).strftime(TIME_FORMAT)

    def _scene(self, heading: str) -> list[str]:
        self._last_was_note = False
        return ["\n\n", heading, "\n"]

    def _element(self, out: list[str], lines: list[str], note: bool = False) -> None:
        if not (note and self._last_was_note):
            out.append("\n")
        out.extend(line + "\n" for line in lines)
        self._last_was_note = note

    def _action(self, out: list[str], text: str) -> None:
        self._element(out, [encode_line(text.replace("\n", " "), first=True)])

    def _dialogue(self, out: list[str], cue: str, text: str) -> None:
        self._element(out, [cue, *encode_block(text)])

    def _cue(self, name: str) -> str:
        # Compare names, not cue lines: a forced cue ("@0") must still reserve "0".
        return character_cue(name, "MODEL", frozenset({HARVEY, SHELL, cue_name(self.user_cue)}))

    # ------------------------------------------------------------ scenes

    def record_turn(self, turn: TurnRecord) -> None:
        """One chat turn as an INT. … TALKING scene, or EXT. when the model is remote."""
        turn = _redacted(turn)
        user = character_cue(turn.user, "USER", frozenset({HARVEY, SHELL}))
        model = self._cue(turn.route.lstrip("@") if turn.route else turn.model)
        name = model.lstrip("@")
        stamp = self._stamp(turn.timestamp)
        if turn.remote:
            out = self._scene(f"EXT. {name} AND {user.lstrip('@')} {stamp}")
            where = f"Workspace: {turn.workspace}."
            self._action(out, f"Harvey routing to {name} (remote API). {where}")
        else:
            out = self._scene(f"INT. HARVEY AND {user.lstrip('@')} TALKING {stamp}")
            self._action(
                out,
                f"Harvey and {user.lstrip('@')} are in {turn.mode} mode. "
                f"Model: {name}. Workspace: {turn.workspace}.",
            )
        if turn.rag is not None:
            self._element(out, [notes.rag_note(turn.rag)], note=True)
            for source in turn.rag_sources:
                self._element(out, [notes.rag_source_note(source)], note=True)
        if turn.user_text is not None:
            self._dialogue(out, user, turn.user_text)
            self._dialogue(out, HARVEY, f"Forwarding to {name}.")
        if turn.compaction is not None:  # made before the request: the summary is sent now
            self._element(out, [notes.compaction_note(turn.compaction)], note=True)
            if turn.compaction.summary is not None:
                self._dialogue(out, HARVEY, turn.compaction.summary)
        route_who = name if turn.route else None
        writes = sorted(turn.write_notes, key=lambda w: w.call)  # stable: keeps their order
        for index, tool in enumerate(turn.tool_notes):
            self._element(out, [notes.tool_note(tool, route_who)], note=True)
            while writes and writes[0].call <= index:  # a write right after the call that made it
                self._element(out, [notes.write_note(writes.pop(0))], note=True)
        for write in writes:
            self._element(out, [notes.write_note(write)], note=True)
        if turn.harvey_notice is not None:
            self._dialogue(out, HARVEY, turn.harvey_notice)
        if turn.reply is not None:
            self._dialogue(out, HARVEY if turn.reply_by_harvey else model, turn.reply)
        self._write("".join(out))

    def record_shell(self, command: str, output: str, exit_code: int) -> None:
        """A ``!cmd`` as an INT. SHELL scene; long output keeps its head and tail."""
        command, output = redact(command), redact(output)
        out = self._scene(f"INT. SHELL {self._stamp()}")
        self._dialogue(out, self.user_cue, f"! {command}")
        lines = output.rstrip("\n").split("\n") if output.strip("\n") else []
        if lines:
            keep = self._head + self._tail
            if len(lines) > keep:
                omitted = len(lines) - keep
                head = encode_block("\n".join(lines[: self._head]))
                tail = [encode_line(x) for x in lines[len(lines) - self._tail :]]
                self._element(out, [SHELL, *head, notes.omitted_note(omitted), *tail])
            else:
                self._dialogue(out, SHELL, "\n".join(lines))
        self._element(out, [notes.shell_note(command, exit_code)], note=True)
        self._write("".join(out))

    def record_context_recall(self, items: list[RecallItem]) -> None:
        """The INT. CONTEXT RECALL scene: once per session, and only when something was recalled."""
        if not items or self._recalled:
            return
        self._recalled = True
        out = self._scene(f"INT. CONTEXT RECALL {self._stamp()}")
        self._element(out, [notes.recall_note(item) for item in items], note=True)
        self._write("".join(out))

    def record_chunk_analysis_start(
        self,
        filename: str,
        total_chunks: int,
        model: str,
        boundary: str,
        chunk_size_bytes: int,
        user_instruction: str,
        endpoints: int | None = None,
        files: int | None = None,
        pages: str = "",
    ) -> None:
        """Open INT. CHUNK ANALYSIS — <file> with its [[chunk:]] header and the instruction;
        a whole-folder analysis passes ``files`` and its label (the folder) as ``filename``."""
        user_instruction = redact(user_instruction)
        shown = encode_inline(filename.replace("\n", " "))
        out = self._scene(f"INT. CHUNK ANALYSIS — {shown} {self._stamp()}")
        header = notes.chunk_note(
            filename, total_chunks, model, boundary, chunk_size_bytes, endpoints, files, pages
        )
        self._element(out, [header], note=True)
        self._dialogue(out, self.user_cue, user_instruction)
        self._write("".join(out))

    def record_chunk_result(self, i: int, n: int, status: str) -> None:
        """A [[chunk-result: i/n — status]] note; i > n is written as given."""
        status = redact(status)
        out: list[str] = []
        self._element(out, [notes.chunk_result_note(i, n, status)], note=True)
        self._write("".join(out))

    def record_undo(self, undone: list[tuple[str, str]]) -> None:
        """``/undo``: an INT. UNDO scene, one [[undo: PATH — ok|skipped: …|error: …]] note
        per write taken back (``session/undo_notes.py`` writes the same for ``harvey undo``)."""
        out = self._scene(f"INT. UNDO {self._stamp()}")
        self._element(out, [notes.undo_note(path, status) for path, status in undone], note=True)
        self._write("".join(out))

    def record_chunk_served(self, served: int, endpoints: int) -> None:
        """After the map phase over a pool: [[chunk-served: E of P endpoints]]."""
        out: list[str] = []
        self._element(out, [notes.chunk_served_note(ChunkServed(served, endpoints))], note=True)
        self._write("".join(out))

    def record_chunk_file(self, note: ChunkFileNote) -> None:
        """One file of a whole-folder analysis: [[chunk-file: PATH — … — STATUS]]."""
        note = replace(note, path=redact(note.path), status=redact(note.status))
        out: list[str] = []
        self._element(out, [notes.chunk_file_note(note)], note=True)
        self._write("".join(out))

    def record_chunk_evidence(
        self, i: int, n: int, kept: Sequence[KeptRecord], dropped: Sequence[DroppedRecord]
    ) -> None:
        """After chunk i's result: an [[evidence:]] note per record kept (its number, place
        and words) and an [[evidence-dropped:]] note per record whose quote did not verify."""
        lines = [
            evidence_notes.evidence_note(r.id, r.location.cite(), r.quote, r.fact) for r in kept
        ]
        lines += [evidence_notes.dropped_note(i, n, d.quote, d.reason) for d in dropped]
        if lines:
            out: list[str] = []
            self._element(out, lines, note=True)
            self._write("".join(out))

    def record_answer(self, answer: CheckedAnswer) -> None:
        """The answer's [[citation:]] notes, and an [[unsupported:]] note per removed sentence."""
        lines = [
            evidence_notes.citation_note(c.id, c.location.cite(), c.verified)
            for c in answer.citations
        ]
        lines += [evidence_notes.unsupported_note(u) for u in answer.unsupported]
        if lines:
            out: list[str] = []
            self._element(out, lines, note=True)
            self._write("".join(out))

    def record_chunk_synthesis(
        self, model: str, status: str, levels: int = 1, answer: str = ""
    ) -> None:
        """The [[synthesis:]] note and HARVEY's closing line of the chunk analysis;
        ``answer`` (``evidence`` or ``synthesis``) says what the answer is."""
        out: list[str] = []
        self._element(out, [notes.synthesis_note(model, status, levels, answer)], note=True)
        closing = CHUNK_DONE if status.strip() == "ok" else CHUNK_FAILED
        self._dialogue(out, HARVEY, closing)
        self._write("".join(out))

    def close(self) -> None:
        """Write ``THE END.`` once; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        self._write("\n\nTHE END.\n")


def _redacted(turn: TurnRecord) -> TurnRecord:
    """The turn as it may be written down: secrets replaced before escaping, since
    an escaped line (``\\AKIA…``) would no longer look like the token it is."""

    def text(value: str | None) -> str | None:
        return None if value is None else redact(value)

    tools = [
        replace(
            note,
            name=redact(note.name),  # a hostile server may call a "tool" named after the key
            arguments=redact_data(note.arguments),
            status=redact(note.status),
        )
        for note in turn.tool_notes
    ]
    compaction = turn.compaction
    if compaction is not None:
        compaction = replace(
            compaction, status=redact(compaction.status), summary=text(compaction.summary)
        )
    return replace(
        turn,
        compaction=compaction,
        user_text=text(turn.user_text),
        reply=text(turn.reply),
        harvey_notice=text(turn.harvey_notice),
        tool_notes=tools,
    )

"""The note vocabulary of the session format: one writer and one reader per note type.

Writers and readers sit side by side so the format cannot drift between the
recorder and the parser. Every free-text field is escaped with
:func:`harvey.session.escape.encode_field`, which escapes the field's
separators, so readers split on unescaped separators only and get each field
back exactly. Readers take the note body (without ``[[ ]]``) as written and
return None for a note that is not of their type or is malformed.
"""

from __future__ import annotations

import re

from harvey.protocols import RagInfo, RagSource, RecallItem
from harvey.redact import redact
from harvey.session.escape import (
    character_cue,
    cue_name,
    decode_inline,
    encode_field,
    format_note,
    split_unescaped,
)
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
    ToolNote,
    WriteNote,
    first_line_status,
    write_status,
)

SEP = " — "
_INT = r"(-?\d+)"
_SCORE = r"(-?(?:\d+(?:\.\d*)?|inf|nan))"


def _status(status: str) -> str:
    return encode_field(first_line_status(status))


# ------------------------------------------------------------------ writers


def tool_note(note: ToolNote, character: str | None = None) -> str:
    who = note.character or character
    prefix = f"{encode_field(cue_name(character_cue(who, 'MODEL')), '—')}." if who else ""
    name = encode_field(note.name, "(—")
    via = f"{SEP}{encode_field(note.via)}" if note.via else ""
    return format_note(
        f"{prefix}tool: {name}({encode_field(note.args_text())}){SEP}{_status(note.status)}{via}"
    )


def write_note(note: WriteNote) -> str:
    """``[[write: PATH — ok|skipped|error: …]]``; the path is a model's, so it is escaped.

    Both are redacted here, in the one writer of the note, before escaping: a model can
    name a file after a token (``ghp_….txt``), and the recorder's turn redaction does
    not reach write notes. (An escaped token would no longer look like one.)"""
    status = encode_field(redact(write_status(note.status)))
    return format_note(f"write: {encode_field(redact(note.path))}{SEP}{status}")


def undo_note(path: str, status: str) -> str:
    """``[[undo: PATH — ok|skipped: …|error: …]]``: one write undone (``/undo``), redacted
    and escaped like a write note."""
    shown = encode_field(redact((status.strip() or "ok").splitlines()[0]))
    return format_note(f"undo: {encode_field(redact(path))}{SEP}{shown}")


def rag_note(rag: RagInfo) -> str:
    store = encode_field(rag.store, ",—")
    return format_note(f"rag: {rag.chunks} chunks from {store}, top score {rag.top_score:.2f}")


def rag_source_note(source: RagSource) -> str:
    path = encode_field(source.path, "—")
    span = f"L{source.start_line}-L{source.end_line}"
    if source.page_start:
        first, last = source.page_start, max(source.page_end, source.page_start)
        span = f"p{first}" if first == last else f"p{first}-p{last}"
    return format_note(f"rag-source: {path}:{span}{SEP}score {source.score:.2f}")


def recall_note(item: RecallItem) -> str:
    rid = encode_field(item.id, "(—")
    source = encode_field(item.source, ")—")
    return format_note(f"recall: {rid} ({source}){SEP}score {item.score:.2f}")


def chunk_note(
    filename: str,
    chunks: int,
    model: str,
    boundary: str,
    chunk_size: int,
    endpoints: int | None = None,
    files: int | None = None,
    pages: str = "",
) -> str:
    """``endpoints`` (a pool's size) is written only for a pool, ``files`` only for a
    whole-folder analysis and ``pages`` only for a PDF, so a one-file, one-server note of
    a text file stays as it was."""

    def f(value: str) -> str:
        return encode_field(value, ",—")

    pool = f", endpoints={endpoints}" if endpoints is not None else ""
    several = f", files={files}" if files is not None else ""
    return format_note(
        f"chunk: file={f(filename)}{several}, chunks={chunks}, model={f(model)}, "
        f"boundary={f(boundary)}, chunk-size={chunk_size}{pool}"
        + (f", pages={f(pages)}" if pages else "")
    )


def chunk_served_note(served: ChunkServed) -> str:
    return format_note(f"chunk-served: {served.served} of {served.endpoints} endpoints")


def chunk_file_note(note: ChunkFileNote) -> str:
    """``[[chunk-file: PATH — chunks=A-B, boundary=B, chunk-size=S, failed=F[, levels=L] —
    STATUS]]``; the path is escaped like a write note's."""
    levels = f", levels={note.levels}" if note.levels > 1 else ""
    levels += f", pages={encode_field(note.pages, ',—')}" if note.pages else ""
    fields = (
        f"chunks={note.first}-{note.last}, boundary={encode_field(note.boundary, ',—')}, "
        f"chunk-size={note.chunk_size}, failed={note.failed}{levels}"
    )
    return format_note(
        f"chunk-file: {encode_field(note.path)}{SEP}{fields}{SEP}{_status(note.status)}"
    )


def chunk_result_note(i: int, n: int, status: str) -> str:
    return format_note(f"chunk-result: {i}/{n}{SEP}{_status(status)}")


def synthesis_note(model: str, status: str, levels: int = 1, answer: str = "") -> str:
    """``answer`` (``evidence``: the answer is the evidence itself; ``synthesis``: a model
    wrote it from the evidence) is written when given."""
    extra = f", levels={levels}" if levels > 1 else ""
    extra += f", answer={encode_field(answer, ',—')}" if answer else ""
    return format_note(f"synthesis: model={encode_field(model, ',—')}{extra}{SEP}{_status(status)}")


def shell_note(command: str, exit_code: int) -> str:
    return format_note(f"shell: {encode_field(command)}{SEP}exit {exit_code}")


def compaction_note(note: CompactionNote) -> str:
    """``[[compaction: turns A–B, N tokens → M tokens, model=MODEL — STATUS]]``."""
    span = f"turns {note.first_turn}–{note.last_turn}"
    sizes = f"{note.tokens_before} tokens → {note.tokens_after} tokens"
    model = encode_field(note.model, ",—")
    return format_note(f"compaction: {span}, {sizes}, model={model}{SEP}{_status(note.status)}")


def omitted_note(count: int) -> str:
    return format_note(f"output: {count} lines omitted")


# ------------------------------------------------------------------ readers

_TOOL_HEAD = re.compile(r"^(?:([^a-z]*?)\.)?tool: ")
_RAG = re.compile(rf"^rag: (\d+) chunks from (.*), top score {_SCORE}$", re.S)
_RAG_SOURCE = re.compile(rf"^rag-source: (.*):L(\d+)-L(\d+){SEP}score {_SCORE}$", re.S)
_RAG_PAGES = re.compile(rf"^rag-source: (.*):p(\d+)(?:-p(\d+))?{SEP}score {_SCORE}$", re.S)
_CHUNK_SERVED = re.compile(r"^chunk-served: (\d+) of (\d+) endpoints$")
_RANGE = re.compile(r"^(\d+)-(\d+)$")
_CHUNK_RESULT = re.compile(rf"^chunk-result: {_INT}/{_INT}{SEP}(.*)$", re.S)
_SHELL = re.compile(rf"^shell: (.*){SEP}exit {_INT}$", re.S)
_OMITTED = re.compile(r"^output: (\d+) lines omitted$")
_COMPACTION = re.compile(
    r"^compaction: turns (\d+)–(\d+), (\d+) tokens → (\d+) tokens, model=(.*)$", re.S
)


def read_tool(body: str) -> ParsedToolNote | None:
    if body.startswith("tool: "):
        who, rest = None, body[len("tool: ") :]
    else:
        head = _TOOL_HEAD.match(body)
        if not head or head.group(1) is None:
            return None
        who, rest = head.group(1), body[head.end() :]
    parts = split_unescaped(rest, SEP)
    if len(parts) not in (2, 3):
        return None
    call, status = parts[:2]
    name_args = split_unescaped(call, "(", maxsplit=1)
    if len(name_args) != 2 or not name_args[1].endswith(")"):
        return None
    character = decode_inline(who) if who is not None else None
    return ParsedToolNote(
        name=decode_inline(name_args[0]),
        args_text=decode_inline(name_args[1][:-1]),
        status=decode_inline(status),
        character=character,
        via=decode_inline(parts[2]) if len(parts) == 3 else None,
    )


def read_write(body: str) -> ParsedWriteNote | None:
    if not body.startswith("write: "):
        return None
    parts = split_unescaped(body[len("write: ") :], SEP)
    if len(parts) != 2:
        return None
    status = decode_inline(parts[1])
    if status not in ("ok", "skipped") and not status.startswith("error:"):
        return None
    return ParsedWriteNote(decode_inline(parts[0]), status)


def read_undo(body: str) -> ParsedUndoNote | None:
    if not body.startswith("undo: "):
        return None
    parts = split_unescaped(body[len("undo: ") :], SEP)
    if len(parts) != 2:
        return None
    status = decode_inline(parts[1])
    if status != "ok" and not status.startswith(("skipped:", "error:")):
        return None
    return ParsedUndoNote(decode_inline(parts[0]), status)


def read_rag(body: str) -> RagInfo | None:
    m = _RAG.match(body)
    if not m:
        return None
    return RagInfo(int(m.group(1)), decode_inline(m.group(2)), float(m.group(3)))


def read_rag_source(body: str) -> RagSource | None:
    m = _RAG_SOURCE.match(body)
    if not m:
        paged = _RAG_PAGES.match(body)
        if not paged:
            return None
        first = int(paged.group(2))
        last = int(paged.group(3) or first)
        path, score = decode_inline(paged.group(1)), float(paged.group(4))
        return RagSource(path, 0, 0, score, first, last)
    return RagSource(decode_inline(m.group(1)), int(m.group(2)), int(m.group(3)), float(m.group(4)))


def read_recall(body: str) -> RecallItem | None:
    if not body.startswith("recall: "):
        return None
    parts = split_unescaped(body[len("recall: ") :], SEP)
    if len(parts) != 2 or not re.fullmatch(rf"score {_SCORE}", parts[1]):
        return None
    id_source = split_unescaped(parts[0], " (", maxsplit=1)
    if len(id_source) != 2 or not id_source[1].endswith(")"):
        return None
    return RecallItem(
        decode_inline(id_source[0]), decode_inline(id_source[1][:-1]), float(parts[1][6:])
    )


def _fields(raw: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for part in split_unescaped(raw, ", "):
        key, eq, value = part.partition("=")
        if eq:
            fields[key] = decode_inline(value)
    return fields


def read_chunk(body: str) -> ParsedChunkInfo | None:
    if not body.startswith("chunk: "):
        return None
    f = _fields(body[len("chunk: ") :])
    try:
        return ParsedChunkInfo(
            f["file"],
            int(f["chunks"]),
            f["model"],
            f["boundary"],
            int(f["chunk-size"]),
            int(f["endpoints"]) if "endpoints" in f else None,
            int(f["files"]) if "files" in f else None,
            f.get("pages", ""),
        )
    except (KeyError, ValueError):
        return None


def read_chunk_served(body: str) -> ChunkServed | None:
    m = _CHUNK_SERVED.match(body)
    return ChunkServed(int(m.group(1)), int(m.group(2))) if m else None


def read_chunk_file(body: str) -> ChunkFileNote | None:
    if not body.startswith("chunk-file: "):
        return None
    parts = split_unescaped(body[len("chunk-file: ") :], SEP)
    if len(parts) != 3:
        return None
    f = _fields(parts[1])
    span = _RANGE.match(f.get("chunks", ""))
    if span is None:
        return None
    try:
        return ChunkFileNote(
            decode_inline(parts[0]),
            int(span.group(1)),
            int(span.group(2)),
            f["boundary"],
            int(f["chunk-size"]),
            int(f["failed"]),
            decode_inline(parts[2]),
            int(f.get("levels", "1")),
            f.get("pages", ""),
        )
    except (KeyError, ValueError):
        return None


def read_chunk_result(body: str) -> ParsedChunkResult | None:
    m = _CHUNK_RESULT.match(body)
    if not m:
        return None
    return ParsedChunkResult(int(m.group(1)), int(m.group(2)), decode_inline(m.group(3)))


def read_synthesis(body: str) -> ParsedSynthesis | None:
    if not body.startswith("synthesis: "):
        return None
    parts = split_unescaped(body[len("synthesis: ") :], SEP)
    if len(parts) != 2:
        return None
    f = _fields(parts[0])
    try:
        levels = int(f.get("levels", "1"))
        return ParsedSynthesis(f["model"], decode_inline(parts[1]), levels, f.get("answer", ""))
    except (KeyError, ValueError):
        return None


def read_shell(body: str) -> ParsedShell | None:
    m = _SHELL.match(body)
    if not m:
        return None
    return ParsedShell(decode_inline(m.group(1)), int(m.group(2)))


def read_omitted(body: str) -> int | None:
    m = _OMITTED.match(body)
    return int(m.group(1)) if m else None


def read_compaction(body: str) -> CompactionNote | None:
    parts = split_unescaped(body, SEP)
    if len(parts) != 2:
        return None
    m = _COMPACTION.match(parts[0])
    if not m:
        return None
    status = decode_inline(parts[1])
    if status != "ok" and not status.startswith("error:"):
        return None
    first, last, before, after = (int(m.group(i)) for i in range(1, 5))
    return CompactionNote(first, last, before, after, decode_inline(m.group(5)), status)

"""What the recorder is told about a session, and what the parser gives back.

The agent describes each interaction with these plain records instead of
calling the recorder with long argument lists, so the recorder stays the one
place that knows the Fountain layout (see ``docs/FOUNTAIN_FORMAT.md``). The
``Parsed*`` records are the typed view of the notes the parser finds; they
carry text exactly as it was written, so a round trip can be compared.

A note that stores every field of its record has one type for both
directions (``RagInfo``, ``RecallItem``; scores come back rounded to 0.01).
Two pairs differ on purpose: ``ToolNote`` holds the arguments as a dict while
``ParsedToolNote`` holds the note's JSON text, which the recorder may have
shortened; ``WriteNote`` carries ``call``, where the recorder places the note,
which the note itself does not store, so ``ParsedWriteNote`` has only what can
be read back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harvey.messages import ToolCall
from harvey.protocols import RagInfo, RagSource
from harvey.session.escape import STATUS_LIMIT, first_line_status, shorten

#: Tool arguments longer than this (as compact JSON) are shortened in the note.
ARGS_LIMIT = 200


def status_from_result(content: str) -> str:
    """``ok``, or ``error: <first line>`` for results that follow the ``error:`` convention."""
    if not content.startswith("error:"):
        return "ok"
    first = content.splitlines()[0] if content else "error:"
    detail = first[len("error:") :].strip()
    return shorten(f"error: {detail}" if detail else "error:", STATUS_LIMIT)


#: How an MCP tool's call is marked in its note: the server's, not Harvey's own tool.
MCP_MARK = "MCP"


@dataclass(frozen=True)
class ToolNote:
    """One tool call as the audit trail sees it: name, arguments, status, who asked."""

    name: str
    arguments: dict[str, Any]
    status: str
    character: str | None = None
    via: str | None = None  # how a call not made natively was made ("rescued from text")

    @classmethod
    def from_result(
        cls, call: ToolCall, result_content: str, character: str | None = None
    ) -> ToolNote:
        """The note of a call; an MCP tool's (``mcp__SERVER__TOOL``) as ``SERVER.TOOL``,
        marked ``MCP`` where a note says how a call was made."""
        status = status_from_result(result_content)
        parts = call.name.split("__", 2)
        if len(parts) == 3 and parts[0] == "mcp" and all(parts[1:]):
            name = f"{parts[1]}.{parts[2]}"
            return cls(name, dict(call.arguments), status, character, MCP_MARK)
        return cls(call.name, dict(call.arguments), status, character)

    def args_text(self, limit: int = ARGS_LIMIT) -> str:
        """The arguments as compact JSON, shortened to ``limit`` characters for the note."""
        try:
            text = json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):
            text = repr(self.arguments)
        return shorten(text, limit)


def write_status(status: str) -> str:
    """A write decision as one line: ``ok``, ``skipped`` or ``error: ...``."""
    line = status.strip().splitlines()[0].strip() if status.strip() else ""
    return "skipped" if line == "skipped" else first_line_status(line)


@dataclass(frozen=True)
class WriteNote:
    """One write decision: the path as shown, the outcome, and which tool call asked.

    ``call`` is the index in ``TurnRecord.tool_notes`` of the call that made the
    write, so the recorder writes the decision right after that call's note.
    """

    path: str
    status: str
    call: int = 0


@dataclass(frozen=True)
class CompactionNote:
    """A ``[[compaction: turns A–B, N tokens → M tokens, model=MODEL — STATUS]]`` note.

    ``summary`` is HARVEY's line written right after the note (what the turns are
    sent as from then on); an ``error:`` status has none, the turns were left out.
    The same type is written and read back (``Scene.compaction`` adds the summary).
    """

    first_turn: int
    last_turn: int
    tokens_before: int
    tokens_after: int
    model: str
    status: str
    summary: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class TurnRecord:
    """One chat turn: who spoke, which model answered, what tools ran."""

    user: str
    model: str
    workspace: str
    user_text: str | None
    reply: str | None
    tool_notes: list[ToolNote] = field(default_factory=list)
    remote: bool = False
    route: str | None = None
    mode: str = "chat"
    rag: RagInfo | None = None
    rag_sources: list[RagSource] = field(default_factory=list)
    harvey_notice: str | None = None
    timestamp: datetime | None = None
    write_notes: list[WriteNote] = field(default_factory=list)
    compaction: CompactionNote | None = None  # made before this turn's request
    # The reply is Harvey's own, not the model's: an analysis's answer that is its evidence
    reply_by_harvey: bool = False


# ---------------------------------------------------------------- parsed notes


@dataclass(frozen=True)
class ParsedToolNote:
    """A ``[[tool: …]]`` note read back; ``args_text`` is the (possibly shortened) JSON."""

    name: str
    args_text: str
    status: str
    character: str | None = None
    via: str | None = None

    @property
    def arguments(self) -> dict[str, Any] | None:
        """The arguments as a dict, or None when the note was shortened or is not JSON."""
        try:
            value = json.loads(self.args_text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class ParsedWriteNote:
    """A ``[[write: PATH — STATUS]]`` note read back."""

    path: str
    status: str


@dataclass(frozen=True)
class ParsedUndoNote:
    """An ``[[undo: PATH — ok|skipped: …|error: …]]`` note read back."""

    path: str
    status: str


@dataclass(frozen=True)
class ParsedChunkInfo:
    """The ``[[chunk: …]]`` header: parameters of one chunked analysis.

    ``endpoints`` is the size of the endpoint pool the map phase was given (absent for
    one server); ``files`` how many files a whole-folder analysis covers (absent for one).
    """

    file: str
    chunks: int
    model: str
    boundary: str
    chunk_size: int
    endpoints: int | None = None
    files: int | None = None
    pages: str = ""  # "1-12": the pages of a PDF the analysis read ("" for other files)


@dataclass(frozen=True)
class ChunkServed:
    """A ``[[chunk-served: E of P endpoints]]`` note: E of the pool's P endpoints completed
    map calls (an endpoint that died or was refused before serving one is not counted)."""

    served: int
    endpoints: int


@dataclass(frozen=True)
class ChunkFileNote:
    """A ``[[chunk-file: PATH — chunks=A-B, …, failed=F — STATUS]]`` note (both ways): one
    file of a whole-folder analysis, its chunks A..B of the run (the ``[[chunk-result:]]``
    numbers), how many failed, and whether the file got a result (its synthesis, when it
    has more than one chunk, took ``levels`` levels)."""

    path: str
    first: int
    last: int
    boundary: str
    chunk_size: int
    failed: int
    status: str
    levels: int = 1
    pages: str = ""  # "1-12" for a PDF


@dataclass(frozen=True)
class ParsedChunkResult:
    index: int
    total: int
    status: str


@dataclass(frozen=True)
class ParsedSynthesis:
    model: str
    status: str
    levels: int = 1
    answer: str = ""  # "evidence", "synthesis", or "" (a recording made before format 2.0)


@dataclass(frozen=True)
class ParsedShell:
    command: str
    exit_code: int

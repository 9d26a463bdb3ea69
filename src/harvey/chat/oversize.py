"""The chunked-read flow: what happens when a file will not fit — alert, ask, chunk, answer.

``ChunkedReads`` is a collaborator of the agent, built with only what it
needs: the UI (to alert and ask), the session's ``PromptBudget`` (what is
left, the one ``ReadBudget``, the map model's window and ratio), the
``Clients`` (``@route`` in a chunk instruction), the cancel event, the
settings (``chunking:`` and ``analysis:``) and the recorder the analysis engine writes its chunk
notes to. It never sees the agent's turn: a caller describes the turn in a
``ReadTurn`` and gets a typed ``ChunkResult`` back (answered, cancelled,
failed, not needed); ending the turn on an answer is the caller's decision.

Three ways in: the pre-read guard in ``read_file`` (``oversize``, through
``ToolContext.on_oversize``) before any byte of the file is read; files named
to a model without tools (``read_for_context``, from ``chat/mentioned_files.py``,
behind the same guard); and
a direct analysis (``analyze``: ``harvey analyze``, ``/read-chunks``).

Memory for an analysis does not grow with the file: the chunk count is first
bounded from the file's size alone (each chunk holds at most
``chunk_size_bytes``, so a file of S bytes makes at least S / chunk_size
chunks) and a file that must make more than ``max_chunks`` is asked about
before one byte is read. A file up to one window is read whole and chunked
with its grammar; a larger one is streamed through the chunker
(``analysis/file_chunks.py``).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harvey.analysis.api import AnalyzeOptions, Collaborators, analyze_file, chunking_of
from harvey.analysis.engine import AnalysisRecorder, MapExecutor, ResultCache
from harvey.analysis.file_chunks import source_size
from harvey.chat.clients import Clients, find_mention
from harvey.chat.prompt_budget import BudgetSnapshot, PromptBudget
from harvey.config.settings import ChunkingSettings, Settings
from harvey.context.amounts import size_text, tokens_text
from harvey.context.budget import BYTES_PER_TOKEN
from harvey.errors import Cancelled, FileRefused, HarveyError, NotAFile, UsageError, WorkspaceError
from harvey.messages import Message
from harvey.protocols import LLMClient
from harvey.tools.document_read import attach_document
from harvey.ui import AgentUI
from harvey.workspace.files import check_readable
from harvey.workspace.paths import looks_binary
from harvey.workspace.source import Source, binary_refusal

CANCELLED_TEXT = "File read cancelled by user."
ATTACH_LIMIT_BYTES = 1_000_000


class ChunkStatus(enum.Enum):
    ANSWERED = "answered"  # the synthesis answers the request: the turn can end with it
    CANCELLED = "cancelled"  # the person (or a missing --yes) said no; nothing was analysed
    FAILED = "failed"  # the analysis ran and failed; ``text`` says why (an ``error:`` line)
    NOT_NEEDED = "not needed"  # the file fits: it was read whole
    REFUSED = "refused"  # not text (a binary file): nothing was read; ``text`` says why


@dataclass(frozen=True)
class ChunkResult:
    """How a chunked read ended, and the text for the conversation (or the tool result)."""

    status: ChunkStatus
    text: str
    by_harvey: bool = False  # the answer is the evidence itself: no model wrote it

    @property
    def answered(self) -> bool:
        return self.status is ChunkStatus.ANSWERED


@dataclass(frozen=True)
class ReadTurn:
    """The turn a read happens in, as much of it as the chunked-read flow may see.

    ``pending`` is what the turn has added so far (it counts against the
    budget); ``on_analysis`` is called with HARVEY's alert just before an
    analysis starts, so the caller can write the interrupted scene first.
    """

    client: LLMClient
    pending: Sequence[Message] = ()
    user_text: str = ""
    on_analysis: Callable[[str | None], None] | None = None
    budget: BudgetSnapshot | None = None  # the round's budget (None: take one now)


def too_big(name: str, size: int, estimated: int, allowed: int, remaining: int) -> str:
    """Why a file is not read whole, on two lines: its size (bytes) and tokens (an
    estimate), then that this is more than a read may take now, of what is left."""
    return (
        f"{name} is {size_text(size)}, {tokens_text(estimated, above=allowed)}:\n"
        f"more than the {allowed:,} tokens a read may take now (of {remaining:,} left)"
    )


def overflow_alert(name: str, size: int, estimated: int, allowed: int, remaining: int) -> str:
    return (
        f"Context overflow: {too_big(name, size, estimated, allowed, remaining)}.\n"
        'Enter instructions to process each chunk in turn, or "no" to return.'
    )


class ChunkedReads:
    """Alert, ask, chunk and analyse a file too big for the context that remains."""

    def __init__(
        self,
        *,
        ui: AgentUI,
        workspace: Path,
        settings: Settings | ChunkingSettings,
        budget: PromptBudget,
        clients: Clients,
        cancel: threading.Event,
        recorder: AnalysisRecorder | None = None,
        results: Callable[[bool], ResultCache] | None = None,
    ) -> None:
        self.ui = ui
        self.workspace = workspace
        self.settings = settings
        self.budget = budget
        self.clients = clients
        self.cancel = cancel
        self.recorder = recorder
        self.results = results  # fresh → the stored map results (sessions.db), or None

    def _turn(self, turn: ReadTurn | None) -> ReadTurn:
        return turn if turn is not None else ReadTurn(self.clients.current)

    def _budget(self, turn: ReadTurn) -> BudgetSnapshot:
        return turn.budget if turn.budget is not None else self.budget.snapshot(turn.client)

    def _source(self, path: Path) -> Source:
        check_readable(self.workspace, path)  # a secret file or a hard link: FileRefused
        return Source.at(path, self._name(path))

    def _name(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.workspace))
        except ValueError:
            return path.name

    def oversize(
        self, source: Source, size: int, estimated: int, turn: ReadTurn | None = None
    ) -> ChunkResult:
        """The alert: ask for a chunk instruction, or cancel, before reading anything.
        The ``Source`` the read decided is the one analysed: no second decision or read."""
        turn = self._turn(turn)
        budget = self._budget(turn)
        remaining = budget.remaining(turn.pending)
        allowed = min(budget.read_budget(turn.pending).tokens, remaining)
        name = source.name
        alert = overflow_alert(name, size, estimated, allowed, remaining)
        if not self.ui.interactive and not self.ui.auto_yes:
            flat = too_big(name, size, estimated, allowed, remaining).replace("\n", " ")
            message = (
                f"File read cancelled: {flat}. "
                "Rerun with --yes to analyse it in chunks with your prompt as the instruction."
            )
            self.ui.warn(message)
            return ChunkResult(ChunkStatus.CANCELLED, message)
        instruction = self.ui.ask_chunk_instruction(alert, turn.user_text)
        if instruction is None or instruction.strip().lower() in ("no", "n", ""):
            return ChunkResult(ChunkStatus.CANCELLED, CANCELLED_TEXT)
        try:
            return self.analyze(source, instruction, turn=turn, alert=alert)
        except Cancelled:
            raise
        except HarveyError as exc:
            message = f"error: chunk analysis of {name} failed: {exc}"
            return ChunkResult(ChunkStatus.FAILED, message)

    def analyze(
        self,
        target: Path | Source,
        instruction: str,
        *,
        turn: ReadTurn | None = None,
        alert: str | None = None,
        overrides: ChunkingSettings | None = None,
        fresh: bool = False,
        executor: MapExecutor | None = None,
    ) -> ChunkResult:
        """Chunk ``target`` (a path inside the workspace, or the ``Source`` a read already
        decided) and run the map-reduce analysis: ANSWERED with the synthesis, or
        CANCELLED when the person refused more than ``max_chunks``.

        Raises ``UsageError`` for an empty file, ``WorkspaceError`` for one that
        cannot be read, ``SynthesisError`` and ``Cancelled`` from the analysis.
        """
        turn = self._turn(turn)
        source = target if isinstance(target, Source) else self._source(target)
        name, size = source.name, source_size(source)
        if size == 0:
            raise UsageError(f"{name} is empty: there is nothing to analyse")
        map_client, routed, using = self.collaborators(instruction, turn, alert)
        # the answer enters the conversation: its evidence may fill half of what is left
        room = self._budget(turn).remaining(turn.pending)
        answer_chars = max(2_000, int(room * BYTES_PER_TOKEN) // 2)
        outcome = analyze_file(
            source,
            routed,
            settings=self.settings,
            client=map_client,
            as_typed=instruction,
            options=AnalyzeOptions(overrides, fresh, executor, answer_chars=answer_chars),
            using=using,
        )
        if not outcome.answered:
            return ChunkResult(ChunkStatus.CANCELLED, CANCELLED_TEXT)
        evidence = outcome.answer is not None and outcome.answer.kind == "evidence"
        return ChunkResult(ChunkStatus.ANSWERED, outcome.text, by_harvey=evidence)

    def collaborators(
        self, instruction: str, turn: ReadTurn | None = None, alert: str | None = None
    ) -> tuple[LLMClient, str, Collaborators]:
        """What this session lends an analysis (``analysis.api``): the map client an
        ``@route`` in ``instruction`` names (else the turn's), the instruction without
        it, and the recorder, stored results, calibrated budget, UI and cancel event."""
        turn = self._turn(turn)
        mention, without_route = find_mention(instruction)
        client = self.clients.resolve(mention) if mention else turn.client
        on_analysis = turn.on_analysis
        using = Collaborators(
            recorder=self.recorder,
            results=self.results,
            sizing=self.budget,
            confirm=self.ui.confirm,
            progress=self.ui.progress_stream(),
            warn=self.ui.warn,
            cancel=self.cancel,
            on_start=(lambda: on_analysis(alert)) if on_analysis is not None else None,
        )
        return client, without_route if mention else instruction, using

    def read_for_context(self, path: Path, turn: ReadTurn | None = None) -> ContextRead:
        """Read a whole file into the conversation, behind the pre-read guard.

        Raises ``FileRefused`` for a secret file (``/read .env``) or a hard link."""
        turn = self._turn(turn)
        source = self._source(path)  # a document is read once for both
        name = source.name
        if _binary(source):  # refused as analyze refuses it: never offered for chunking
            why = binary_refusal(name, "Harvey")
            return ContextRead(
                f"[{name}: not attached: {why}]", ChunkResult(ChunkStatus.REFUSED, why)
            )
        if chunking_of(self.settings).enabled:
            budget = self._budget(turn).read_budget(turn.pending)
            checked = budget.check(source)  # at the ratio of the file's type (prose, source)
            if checked.exceeds:
                chunked = self.oversize(source, checked.size, checked.tokens, turn)
                return ContextRead(f"[{name}: {chunked.text}]", chunked)
        return ContextRead(_attachment(source), NOT_NEEDED)


@dataclass(frozen=True)
class ContextRead:
    """A file as the conversation gets it, and whether it had to be chunked."""

    text: str
    chunked: ChunkResult


NOT_NEEDED = ChunkResult(ChunkStatus.NOT_NEEDED, "")


def _binary(source: Source) -> bool:
    """``Source.looks_binary``; a file that cannot be read is not judged here (its
    reader says why)."""
    try:
        return source.looks_binary()
    except (OSError, WorkspaceError):
        return False


def _attachment(source: Source) -> str:
    """A file that fits, whole (up to ``ATTACH_LIMIT_BYTES``), between markers; a PDF,
    DOCX, HTML or EPUB as its extracted text."""
    name = source.name
    try:
        if source.is_document:
            return attach_document(source, ATTACH_LIMIT_BYTES)
        raw = source.data(ATTACH_LIMIT_BYTES)  # never a FIFO, never more than the limit
    except FileRefused as exc:
        return f"[{name}: not attached: {exc}]"
    except NotAFile:
        return f"[{name}: not a regular file, not attached]"
    except (OSError, WorkspaceError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return f"[{name}: cannot read it ({reason}), not attached]"
    if looks_binary(raw):
        return f"[{name}: binary file, not attached]"
    cut = len(raw) > ATTACH_LIMIT_BYTES
    body = raw[:ATTACH_LIMIT_BYTES].decode("utf-8", errors="replace")
    if cut:
        body += f"\n[only the first {ATTACH_LIMIT_BYTES:,} bytes of {name} are attached]"
    return f"--- {name} ---\n{body}\n--- end of {name} ---"

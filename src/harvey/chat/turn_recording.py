"""What one chat turn has produced so far, and the one place turns reach the session file.

``TurnState`` is the agent's private scratchpad for the turn in flight: the
messages, tool notes and write decisions it has made (a chunked read that
answers the turn raises ``TurnAnswered`` instead of writing here). It is passed
to whatever needs the turn, never read back from the agent; a cancelled turn throws it
away, so nothing half-done reaches history, ``sessions.db`` or the file.

``TurnRecorder`` is the only caller of ``Recorder.record_turn``: the finished
turn, the TALKING scene a chunked read interrupted (written before the CHUNK
ANALYSIS scene, so the file reads in the order things happened), and the
reply scene of a direct analysis (``harvey analyze``, ``/read-chunks``).
The chunk notes themselves are written by ``analysis/engine.py`` alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from harvey.llm.base import is_remote_endpoint
from harvey.messages import Message, ToolCall, ToolResult
from harvey.protocols import LLMClient, RagInfo, RagSource
from harvey.session.recorder import Recorder
from harvey.session.records import CompactionNote, ToolNote, TurnRecord, WriteNote


@dataclass
class TurnState:
    """What one turn has produced so far; discarded if the turn is cancelled."""

    client: LLMClient
    route: str | None
    user_text: str | None
    new_messages: list[Message] = field(default_factory=list)
    notes: list[ToolNote] = field(default_factory=list)
    writes: list[WriteNote] = field(default_factory=list)  # each write decision, in order
    results: list[ToolResult] = field(default_factory=list)
    recorded_prefix: bool = False  # the interrupted TALKING scene is already written
    on_tool: Callable[[ToolCall, ToolResult], None] | None = None
    rag: RagInfo | None = None  # retrieval added passages to this turn's prompt
    rag_sources: list[RagSource] = field(default_factory=list)
    context_texts: list[str] = field(default_factory=list)  # sent ahead of this turn's prompt
    asked: str | None = None  # the person's own words in this turn's message


class TurnRecorder:
    """Turn the agent's turns into ``TurnRecord``s for the session file (if one is kept)."""

    def __init__(self, recorder: Recorder | None, *, user: str, workspace: Path) -> None:
        self.recorder = recorder
        self.user = user
        self.workspace = workspace
        # made before the next turn (chat/compaction.py): written in that turn's scene
        self.pending_compaction: CompactionNote | None = None

    def interrupted(self, state: TurnState, alert: str | None) -> None:
        """A chunked read starts inside ``state``: write the turn so far, with HARVEY's alert."""
        if self.recorder is None or state.recorded_prefix:
            return
        self.recorder.record_turn(
            self._record(
                state, user_text=state.user_text, reply=None, notes=state.notes, notice=alert
            )
        )
        state.recorded_prefix = True

    def finished(
        self, state: TurnState, reply: str, *, chunk_analysis: bool, by_harvey: bool = False
    ) -> None:
        """The committed turn; after an interrupted scene only its reply is left to write
        (HARVEY's line when it is an analysis's evidence itself)."""
        if self.recorder is None:
            return
        if chunk_analysis and state.recorded_prefix:
            record = self._record(state, user_text=None, reply=reply, notes=[])
        else:
            record = self._record(state, user_text=state.user_text, reply=reply, notes=state.notes)
        self.recorder.record_turn(replace(record, reply_by_harvey=by_harvey))

    def analysis(self, client: LLMClient, reply: str, *, by_harvey: bool = False) -> None:
        """The reply scene of a direct chunk analysis, after its CHUNK ANALYSIS scene."""
        self._scene(client, "analysis", reply=reply, by_harvey=by_harvey)

    def compaction(self, client: LLMClient, note: CompactionNote) -> None:
        """A compaction outside a turn (``/compact``): a scene with its note and summary."""
        self._scene(client, "compaction", compaction=note)

    def _scene(
        self,
        client: LLMClient,
        mode: str,
        *,
        reply: str | None = None,
        compaction: CompactionNote | None = None,
        by_harvey: bool = False,
    ) -> None:
        """A scene of HARVEY's alone (no user text): an analysis's reply, a compaction."""
        if self.recorder is None:
            return
        self.recorder.record_turn(
            TurnRecord(
                user=self.user,
                model=client.model,
                workspace=str(self.workspace),
                user_text=None,
                reply=reply,
                mode=mode,
                remote=is_remote_endpoint(client.endpoint),
                compaction=compaction,
                reply_by_harvey=by_harvey,
            )
        )

    def _record(
        self,
        state: TurnState,
        *,
        user_text: str | None,
        reply: str | None,
        notes: list[ToolNote],
        notice: str | None = None,
    ) -> TurnRecord:
        compaction, self.pending_compaction = self.pending_compaction, None
        return TurnRecord(
            user=self.user,
            model=state.client.model,
            workspace=str(self.workspace),
            user_text=user_text,
            reply=reply,
            tool_notes=list(notes),
            write_notes=[w for w in state.writes if w.call < len(notes)],  # those calls' writes
            remote=is_remote_endpoint(state.client.endpoint),
            route=state.route,
            harvey_notice=notice,
            rag=state.rag if user_text is not None else None,  # with the words it was sent with
            rag_sources=list(state.rag_sources) if user_text is not None else [],
            compaction=compaction,
        )

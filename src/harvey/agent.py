"""The agent: history, the turn loop and tool rounds.

``Agent.turn`` is the one place every chat turn passes through: it builds the
prompt (system prompt, injected plan text, history), streams the model's reply,
runs tool calls through the executor (the hook registry), commits the turn to
``sessions.db`` and hands a ``TurnRecord`` to the recorder. A cancelled turn
leaves history, store and session file exactly as they were.
"""

from __future__ import annotations

import getpass
import logging
import os
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harvey.config import Settings
from harvey.context.budget import (
    BYTES_PER_TOKEN,
    BudgetReport,
    budget_report,
    remaining_context,
    serialize_history,
)
from harvey.errors import Cancelled, StoreError, TurnNotSaved
from harvey.history_fit import FittedHistory, fit_history, omitted_notice
from harvey.llm.base import LLMClient, ModelCapabilities, Usage, chat, is_remote_endpoint
from harvey.messages import Message, ToolCall, ToolResult
from harvey.prompts import build_system_prompt
from harvey.session.recorder import Recorder
from harvey.session.records import ToolNote, TurnRecord, WriteNote
from harvey.session.store import SessionStore
from harvey.tools.approval import WriteGate
from harvey.tools.registry import ToolContext, ToolExecutor
from harvey.ui import AgentUI, HeadlessUI

log = logging.getLogger(__name__)

MENTION_PREFIX = "@"


def default_user_name(settings: Settings) -> str:
    if settings.user:
        return settings.user
    try:
        return os.environ.get("USER") or getpass.getuser() or "user"
    except Exception:  # getpass raises various errors without a passwd entry
        return "user"


def split_mention(text: str) -> tuple[str | None, str]:
    """``"@name rest"`` → ``("name", "rest")``; anything else → ``(None, text)``."""
    stripped = text.lstrip()
    if not stripped.startswith(MENTION_PREFIX) or len(stripped) < 2:
        return None, text
    head, _, rest = stripped[1:].partition(" ")
    if not head or not all(c.isalnum() or c in "-_.:/" for c in head):
        return None, text
    return head, rest.strip()


def find_mention(text: str) -> tuple[str | None, str]:
    """Find an ``@name`` anywhere in an instruction (chunk prompts put it last)."""
    words = text.split()
    for i, word in enumerate(words):
        if word.startswith(MENTION_PREFIX) and len(word) > 1:
            rest = " ".join(words[:i] + words[i + 1 :])
            return word[1:].rstrip(".,;:"), rest
    return None, text


def _title(text: str, limit: int = 60) -> str:
    """A session's title: its first prompt on one line, shortened."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass
class TurnOutcome:
    reply: str
    tool_results: list[ToolResult] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    chunk_analysis: bool = False


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
    final_reply: str | None = None  # set by a chunk analysis: ends the turn
    recorded_prefix: bool = False  # the interrupted TALKING scene is already written
    on_tool: Callable[[ToolCall, ToolResult], None] | None = None


class Agent:
    def __init__(
        self,
        *,
        client: LLMClient,
        executor: ToolExecutor,
        settings: Settings,
        workspace: Path,
        store: SessionStore | None = None,
        session_id: str | None = None,
        recorder: Recorder | None = None,
        ui: AgentUI | None = None,
        harvey_home: Path | None = None,
        route_client: Callable[[str], LLMClient | None] | None = None,
        plan_text: Callable[[], str | None] | None = None,
        system_extra: tuple[str, ...] = (),
    ) -> None:
        self.client = client
        self.executor = executor
        self.settings = settings
        self.workspace = workspace
        self.store = store
        self.session_id = session_id or uuid.uuid4().hex
        self.recorder = recorder
        self.ui: AgentUI = ui or HeadlessUI()
        self.harvey_home = harvey_home
        self.route_client = route_client
        self.plan_text = plan_text
        self.system_extra = system_extra
        self.user = default_user_name(settings)
        self.history: list[Message] = []
        self.handover: str | None = None  # injected once, into the next turn's prompt
        self.last_usage = Usage()
        self._caps: dict[str, ModelCapabilities] = {}
        self._system_prompts: dict[bool, str] = {}
        self.model_clients: dict[str, LLMClient] = {}  # @model on the current backend
        self.current_turn: TurnState | None = None
        self.cancel_event = threading.Event()
        self.write_gate = WriteGate(self.ui, self._record_write)  # "all" lasts the session
        self._omitted_told = 0  # messages left out when the person was told (0: not yet)
        self._unstored: list[Message] = []  # in history, not yet in sessions.db

    # -- capabilities and accounting ------------------------------------------

    def capabilities(self, client: LLMClient | None = None) -> ModelCapabilities:
        client = client or self.client
        key = f"{client.backend}:{client.endpoint}:{client.model}"
        if key not in self._caps:
            caps = client.capabilities()
            if self.settings.context_window and client is self.client:
                caps = ModelCapabilities(
                    self.settings.context_window, caps.supports_tools, "config"
                )
            self._caps[key] = caps
        return self._caps[key]

    def tools_enabled(self, client: LLMClient | None = None) -> bool:
        return self.settings.tools.enabled and self.capabilities(client).supports_tools

    def system_prompt(self, client: LLMClient | None = None) -> str:
        """Built once per turn (it reads HARVEY.md), not once per round or budget check."""
        tools = self.tools_enabled(client)
        if tools not in self._system_prompts:
            self._system_prompts[tools] = build_system_prompt(
                self.workspace, tools=tools, extra=self.system_extra
            )
        return self._system_prompts[tools]

    def bytes_per_token(self, client: LLMClient | None = None) -> float:
        """The calibrated ratio for this model when known, else the 4-bytes heuristic."""
        client = client or self.client
        ratio = self.store.calibration_ratio(client.model) if self.store else None
        return ratio or BYTES_PER_TOKEN

    def injected_texts(self) -> list[str]:
        texts = []
        if self.handover:
            texts.append(self.handover)
        plan = self.plan_text() if self.plan_text else None
        if plan:
            texts.append(plan)
        return texts

    def fitted_history(
        self, client: LLMClient | None = None, pending: list[Message] | None = None
    ) -> FittedHistory:
        """The history the next prompt carries: all of it, or the newest turns that fit.

        The history gets what the window leaves once the system prompt, the
        injected text, the turn in progress (``pending``) and the reply margin
        are counted, so the turn in progress always has priority over the past.
        """
        client = client or self.client
        room = budget_report(
            self.capabilities(client).context_window,
            history=list(pending or []),
            system_prompt=self.system_prompt(client),
            injected=self.injected_texts(),
            bytes_per_token=self.bytes_per_token(client),
        )
        return fit_history(self.history, room.remaining, room.bytes_per_token)

    def _sent_history(self, client: LLMClient, pending: list[Message]) -> list[Message]:
        """What of the history a prompt now costs: the kept messages and the note."""
        fitted = self.fitted_history(client, pending)
        note = fitted.note
        return ([note] if note else []) + fitted.messages

    def remaining_tokens(
        self, client: LLMClient | None = None, extra: list[Message] | None = None
    ) -> int:
        client = client or self.client
        history = self._sent_history(client, list(extra or [])) + list(extra or [])
        return remaining_context(
            self.capabilities(client).context_window,
            history=history,
            system_prompt=self.system_prompt(client),
            injected=self.injected_texts(),
            bytes_per_token=self.bytes_per_token(client),
        )

    def budget(self, client: LLMClient | None = None) -> BudgetReport:
        """Everything already in the prompt, in tokens; ``/status`` shows it."""
        client = client or self.client
        return budget_report(
            self.capabilities(client).context_window,
            history=self._sent_history(client, []),
            system_prompt=self.system_prompt(client),
            injected=self.injected_texts(),
            bytes_per_token=self.bytes_per_token(client),
        )

    def status(self) -> dict[str, object]:
        caps = self.capabilities()
        report = self.budget()
        return {
            "backend": self.client.backend,
            "endpoint": self.client.endpoint,
            "model": self.client.model,
            "context_window": caps.context_window,
            "context_source": caps.context_source,
            "used_tokens": report.used,
            "plan_tokens": report.injected,
            "remaining_tokens": report.remaining,
            "bytes_per_token": report.bytes_per_token,
            "calibrated": report.bytes_per_token != BYTES_PER_TOKEN,
            "tools": self.tools_enabled(),
            "session_id": self.session_id,
            "messages": len(self.history),
            "omitted_messages": self.fitted_history().omitted_messages,
        }

    # -- the turn -----------------------------------------------------------------

    def resolve_route(self, name: str) -> LLMClient:
        """``@name``: a configured route, else another model on the current backend.

        The other-model clients are kept, so repeated ``@name`` turns reuse one
        connection pool instead of opening (and leaking) a new one each time.
        """
        if self.route_client is not None:
            client = self.route_client(name)
            if client is not None:
                return client
        return self.resolve_route_model(name)

    def resolve_route_model(self, name: str) -> LLMClient:
        key = f"{self.client.backend}:{self.client.endpoint}:{name}"
        if key not in self.model_clients:
            self.model_clients[key] = self.client.with_model(name)
        return self.model_clients[key]

    def switch_model(self, name: str) -> None:
        """``/model NAME``: later turns go to NAME on the current backend."""
        previous = self.client
        self.client = self.resolve_route_model(name)
        self.model_clients.setdefault(
            f"{previous.backend}:{previous.endpoint}:{previous.model}", previous
        )
        if self.store is not None:
            self.store.set_model(self.session_id, name)

    def build_prompt(self, client: LLMClient, pending: list[Message]) -> list[Message]:
        messages = [Message("system", self.system_prompt(client))]
        for text in self.injected_texts():
            messages.append(Message("system", text))
        fitted = self.fitted_history(client, pending)
        self._tell_omitted(client, fitted)
        if fitted.note is not None:
            messages.append(fitted.note)
        return messages + fitted.messages + pending

    def _tell_omitted(self, client: LLMClient, fitted: FittedHistory) -> None:
        """Say that history was left out, once per session: as the conversation goes on
        the cut moves every turn, and ``/status`` shows the current count."""
        if not fitted.omitted_messages or self._omitted_told:
            return
        self._omitted_told = fitted.omitted_messages
        window = self.capabilities(client).context_window
        self.ui.warn(omitted_notice(fitted, client.model, window))

    def turn(
        self,
        user_text: str,
        *,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
        on_tool: Callable[[ToolCall, ToolResult], None] | None = None,
    ) -> TurnOutcome:
        route, text = split_mention(user_text)
        client = self.resolve_route(route) if route else self.client
        if cancel is None:
            cancel = self.cancel_event
            cancel.clear()
        self._system_prompts.clear()  # pick up an edited HARVEY.md once per turn
        state = TurnState(client=client, route=route, user_text=user_text, on_tool=on_tool)
        self.current_turn = state
        try:
            if not self.tools_enabled(client):
                text = self._attach_files(text, client)
            state.new_messages.append(Message("user", text))
            outcome = self._run_rounds(state, on_text, cancel)
        finally:
            self.current_turn = None
        if cancel.is_set():
            raise Cancelled("cancelled")
        self.history.extend(state.new_messages)
        self.handover = None
        self._commit(state, outcome)
        return outcome

    def _run_rounds(
        self, state: TurnState, on_text: Callable[[str], None] | None, cancel: threading.Event
    ) -> TurnOutcome:
        client = state.client
        use_tools = self.tools_enabled(client)
        schemas = self.executor.schemas() if use_tools else None
        ctx = self.tool_context()
        usage = Usage()
        if state.final_reply is not None:  # a tool-less model's file was chunk-analysed
            state.new_messages.append(Message("assistant", state.final_reply))
            return TurnOutcome(state.final_reply, state.results, usage, client.model, True)
        for _round in range(self.settings.tools.max_rounds + 1):
            last_round = _round == self.settings.tools.max_rounds
            prompt = self.build_prompt(client, state.new_messages)
            result = chat(client, prompt, None if last_round else schemas, on_text, cancel)
            usage = result.usage
            self._calibrate(client, prompt, usage)
            if not result.tool_calls or last_round:
                reply = result.text
                state.new_messages.append(Message("assistant", reply))
                return TurnOutcome(reply, state.results, usage, client.model)
            calls = [
                c if c.id else ToolCall(f"call_{uuid.uuid4().hex[:12]}", c.name, c.arguments)
                for c in result.tool_calls
            ]
            state.new_messages.append(Message("assistant", result.text, calls))
            for call in calls:
                if cancel.is_set():
                    raise Cancelled("cancelled")
                res = self.executor.execute(ctx, call)
                state.results.append(res)
                if state.on_tool is not None:
                    state.on_tool(call, res)
                state.notes.append(
                    ToolNote.from_result(
                        call, res.content, character=state.route.upper() if state.route else None
                    )
                )
                state.new_messages.append(res.to_message())
            if state.final_reply is not None:
                state.new_messages.append(Message("assistant", state.final_reply))
                return TurnOutcome(state.final_reply, state.results, usage, client.model, True)
        raise AssertionError("unreachable: the last round never offers tools")

    def _calibrate(self, client: LLMClient, prompt: list[Message], usage: Usage) -> None:
        self.last_usage = usage
        if self.store is None or not usage.prompt_tokens:
            return
        # the same bytes the estimator counts (tool-call arguments included)
        prompt_bytes = len(serialize_history(prompt).encode("utf-8", "surrogatepass"))
        try:
            self.store.record_calibration(client.model, prompt_bytes, usage.prompt_tokens)
        except StoreError as exc:  # calibration is advisory; never fail a turn on it
            log.warning("could not record calibration: %s", exc)

    def _commit(self, state: TurnState, outcome: TurnOutcome) -> None:
        """Store the turn, then record it; a store failure loses neither reply nor recording.

        When ``sessions.db`` cannot take the turn (disk full), the session file
        still gets it and ``TurnNotSaved`` carries the outcome, so the caller
        prints the reply before the error.
        """
        failure: StoreError | None = None
        if self.store is not None:
            first_turn = not any(m.role == "user" for m in self.history[: -len(state.new_messages)])
            try:
                self._store_messages(state.new_messages)
                if first_turn and state.user_text:
                    self.store.set_title(self.session_id, _title(state.user_text))
            except StoreError as exc:
                failure = exc
        if self.recorder is not None:
            if outcome.chunk_analysis and state.recorded_prefix:
                record = self.turn_record(state, user_text=None, reply=outcome.reply, notes=[])
            else:
                record = self.turn_record(
                    state, user_text=state.user_text, reply=outcome.reply, notes=state.notes
                )
            self.recorder.record_turn(record)
        if failure is not None:
            raise TurnNotSaved(f"the reply was not saved: {failure}", outcome) from failure

    def turn_record(
        self,
        state: TurnState,
        *,
        user_text: str | None,
        reply: str | None,
        notes: list[ToolNote],
        harvey_notice: str | None = None,
    ) -> TurnRecord:
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
            harvey_notice=harvey_notice,
        )

    # -- tools ------------------------------------------------------------------------

    def tool_context(self) -> ToolContext:
        chunking = self.settings.chunking
        guarded = chunking.enabled
        return ToolContext(
            workspace=self.workspace,
            session_id=self.session_id,
            interactive=self.ui.interactive,
            confirm=self.ui.confirm,
            read_budget=self._read_budget if guarded else None,
            on_oversize=self._on_oversize if guarded else None,
            approve_write=self.write_gate,
            allowed_commands=tuple(self.settings.security.allowed_commands),
            shell_timeout=self.settings.security.shell_timeout,
            sandbox=self.settings.security.sandbox,
            harvey_home=self.harvey_home,
        )

    def _record_write(self, path: str, status: str) -> None:
        """A write decision belongs to the tool call in flight: its note comes next."""
        state = self.current_turn
        if state is not None:
            state.writes.append(WriteNote(path, status, call=len(state.notes)))

    def _read_budget(self) -> int:
        state = self.current_turn
        extra = state.new_messages if state else []
        client = state.client if state else self.client
        return int(self.remaining_tokens(client, extra) * self.settings.chunking.threshold)

    def _on_oversize(self, path: Path, size: int, estimated: int, budget: int) -> str:
        from harvey.oversize import handle_oversize

        return handle_oversize(self, path, size, estimated)

    def _attach_files(self, text: str, client: LLMClient) -> str:
        from harvey.oversize import attach_mentioned_files

        return attach_mentioned_files(self, text, client)

    # -- sessions -------------------------------------------------------------------------

    def load_history(self, messages: list[Message], *, stored: bool = True) -> None:
        """Start from ``messages``; ``stored=False`` (an imported .spmd) saves them with
        the first committed turn, so a run that fails before one leaves nothing behind."""
        self.history = list(messages)
        self._unstored = [] if stored else list(messages)

    def _store_messages(self, messages: list[Message]) -> None:
        """Commit ``messages`` after any the store has not taken yet, in one transaction.

        What a failed commit (disk full) could not save stays pending and goes
        in with the next commit, so a later turn saves the earlier one too.
        """
        if self.store is None:
            return
        batch = self._unstored + messages
        try:
            self.store.add_turn(self.session_id, batch)
        except StoreError:
            self._unstored = batch
            raise
        self._unstored = []

    def add_context(self, message: Message) -> None:
        """Add a message outside a model turn (e.g. ``!cmd`` output) and commit it."""
        self.add_messages([message])

    def add_messages(self, messages: list[Message]) -> None:
        self.history.extend(messages)
        self._store_messages(list(messages))

    def record_analysis(self, label: str, instruction: str, result: str) -> None:
        """Put a direct chunk analysis (``harvey analyze``, ``/read-chunks``) into the
        conversation and the session file, as the reply of the turn after its scene."""
        self.add_messages(
            [Message("user", f"Analyse {label}: {instruction}"), Message("assistant", result)]
        )
        if self.recorder is not None:
            self.recorder.record_turn(
                TurnRecord(
                    user=self.user,
                    model=self.client.model,
                    workspace=str(self.workspace),
                    user_text=None,
                    reply=result,
                    mode="analysis",
                    remote=is_remote_endpoint(self.client.endpoint),
                )
            )

    def clear(self) -> None:
        self.history = []

"""The agent: history, the turn loop and tool rounds.

``Agent.turn`` is the one place every chat turn passes through: it builds the
prompt (system prompt, injected plan text, history), streams the model's reply,
runs tool calls through the executor (the hook registry), commits the turn to
``sessions.db`` and hands it to its ``TurnRecorder``. A cancelled turn leaves
history, store and session file exactly as they were.

What the agent does not do itself, it holds a collaborator for: ``Clients``
(which client ``@name`` and ``/model`` mean, and closing them all),
``PromptBudget`` (every token question), ``ChunkedReads`` (a file too big for
what is left) and ``TurnRecorder`` (the session file).
"""

from __future__ import annotations

import functools
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.chat.calls.harvey_replies import for_client
from harvey.chat.calls.tool_rounds import ToolRounds
from harvey.chat.clients import Clients, split_mention
from harvey.chat.doing import tool_doing
from harvey.chat.history_fit import FittedHistory, omitted_notice
from harvey.chat.mentioned_files import MentionedFiles
from harvey.chat.outcomes import AgentStatus, Gathered, TurnOutcome, status_of, title_of
from harvey.chat.prompt_budget import BudgetSnapshot, PromptBudget
from harvey.chat.turn_recording import TurnRecorder, TurnState
from harvey.chat.turn_room import fit_result
from harvey.config.settings import Settings
from harvey.context.budget import ReadBudget
from harvey.errors import Cancelled, StoreError, TurnNotSaved
from harvey.llm import activity
from harvey.messages import Message, ToolCall, ToolResult
from harvey.protocols import LLMClient, ModelCapabilities, TurnContextProvider, TurnQuery, Usage
from harvey.session.location import default_user_name
from harvey.session.recorder import Recorder
from harvey.session.records import WriteNote
from harvey.session.store import SessionStore
from harvey.tools.approval import WriteGate
from harvey.tools.registry import ToolContext, ToolExecutor, TurnAnswered
from harvey.ui import AgentUI, HeadlessUI

if TYPE_CHECKING:
    from harvey.analysis.map_calls import ResultCache
    from harvey.chat.oversize import ChunkedReads, ReadTurn
    from harvey.workspace.source import Source

log = logging.getLogger(__name__)


class Agent:
    """A conversation with a model: its history, its turns, and the collaborators they use."""

    def __init__(
        self,
        *,
        clients: Clients,
        executor: ToolExecutor,
        settings: Settings,
        workspace: Path,
        store: SessionStore | None = None,
        session_id: str | None = None,
        recorder: Recorder | None = None,
        ui: AgentUI | None = None,
        harvey_home: Path | None = None,
        budget: PromptBudget,
        history: list[Message] | None = None,
        turn_context: list[TurnContextProvider] | None = None,
    ) -> None:
        """``budget`` is built by the session builder (``chat/runtime.py``), the only way;
        ``history`` is the list it accounts for, kept (and changed in place) here."""
        self.clients = clients
        self.executor = executor
        self.settings = settings
        self.workspace = workspace
        self.store = store
        self.session_id = session_id or uuid.uuid4().hex
        self.ui: AgentUI = ui or HeadlessUI()
        self.harvey_home = harvey_home
        self.user = default_user_name(settings)
        self.history: list[Message] = history if history is not None else []
        self.budget = budget
        self.cancel_event = threading.Event()
        self.recorder = recorder
        self.turns = TurnRecorder(recorder, user=self.user, workspace=workspace)
        self.write_gate = WriteGate(self.ui)  # "all" lasts the session
        self.turns_taken = 0  # by this process: a resumed session starts again at 0
        self._omitted_told = 0  # messages left out when the person was told (0: not yet)
        self._unstored: list[Message] = []  # in history, not yet in sessions.db
        # asked once per turn for what it adds (plan, knowledge retrieval, memory recall,
        # the files a prompt names); the session's own list: ``/rag use`` changes it
        self.turn_context: list[TurnContextProvider] = (
            turn_context if turn_context is not None else []
        )
        self.turn_context.append(MentionedFiles(workspace, budget, lambda: self.chunks))
        budget.tool_schemas = executor.schemas  # what a request says about them is counted

    @property
    def client(self) -> LLMClient:
        """The client later turns go to (``/model`` changes it)."""
        return self.clients.current

    def capabilities(self, client: LLMClient | None = None) -> ModelCapabilities:
        return self.budget.capabilities(client)

    def status(self) -> AgentStatus:
        return status_of(self.client, self.budget, self.session_id, len(self.history))

    # -- the turn -----------------------------------------------------------------

    def switch_model(self, name: str) -> None:
        """``/model NAME``: later turns go to NAME on the current backend."""
        self.clients.switch(name)
        if self.store is not None:
            self.store.set_model(self.session_id, name)

    def build_prompt(self, budget: BudgetSnapshot, pending: list[Message]) -> list[Message]:
        """The round's prompt, from the round's budget snapshot."""
        messages = [Message("system", budget.system_prompt)]
        for text in budget.injected:
            messages.append(Message("system", text))
        fitted = budget.fitted_history(pending)
        self._tell_omitted(budget, fitted)
        if fitted.note is not None:
            messages.append(fitted.note)
        return messages + fitted.messages + pending

    def _gather_context(self, state: TurnState, text: str) -> Gathered:
        """Ask each turn context provider once: this turn's text, the session's, the notes;
        what goes after the prompt, and an answer that ends the turn, come back."""
        gathered = Gathered()
        if not text.strip():
            return gathered
        client = state.client
        mode = self.budget.tool_mode(client)
        tool_less = mode in ("off", "constrained")
        # what stands in for a tool comes last: a named file is read within what is left
        asked = [
            provider
            for provider in sorted(self.turn_context, key=lambda p: p.tool_less_only)
            if tool_less or not provider.tool_less_only
        ]
        if not asked:
            return gathered

        def on_analysis(alert: str | None) -> None:
            self.turns.interrupted(state, alert)

        query = TurnQuery(
            text,
            self.budget.capabilities(client).context_window,
            self.budget.bytes_per_token(client),
            client,
            user_text=state.user_text or "",
            on_analysis=on_analysis,
            tool_mode=mode,
        )
        for provider in asked:
            found = provider.for_turn(replace(query, ahead=tuple(state.context_texts)))
            if found is None:
                continue
            if found.text:
                state.context_texts.append(found.text)
            if found.after:
                gathered.after.append(found.after)
            if found.rag is not None:
                state.rag = found.rag
                state.rag_sources.extend(found.rag_sources)
            if found.session_text is not None:
                self.budget.keep_for_session(found.session_text)
            if found.recall and self.recorder is not None:
                self.recorder.record_context_recall(list(found.recall))
            if found.answer is not None:  # a named file was chunk-analysed: no model call
                gathered.answer, gathered.answer_by_harvey = found.answer, found.answer_by_harvey
                break
        return gathered

    def _tell_omitted(self, budget: BudgetSnapshot, fitted: FittedHistory) -> None:
        """Say that history was left out, once per session: as the conversation goes on
        the cut moves every turn, and ``/status`` shows the current count."""
        if not fitted.omitted_messages or self._omitted_told:
            return
        self._omitted_told = fitted.omitted_messages
        self.ui.warn(omitted_notice(fitted, budget.client.model, budget.window))

    def turn(
        self,
        user_text: str,
        *,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
        on_tool: Callable[[ToolCall, ToolResult], None] | None = None,
    ) -> TurnOutcome:
        self.turns_taken += 1
        route, text = split_mention(user_text)
        client = self.clients.resolve(route) if route else self.client
        if cancel is None:
            cancel = self.cancel_event
            cancel.clear()
        state = TurnState(client=client, route=route, user_text=user_text, on_tool=on_tool)
        activity.report("preparing the prompt")  # a front end shows it from the first second
        gathered = self._gather_context(state, text)
        # The turn's context (plan, passages) rides ahead of its words, named files after
        # them, and the history keeps the message as sent: the next request then extends
        # this one byte for byte.
        state.asked = text
        sent = "\n\n".join([*state.context_texts, text, *gathered.after])
        state.new_messages.append(Message("user", sent))
        state.context_texts.clear()  # in the message now: counted there, not twice
        if gathered.answer is not None:  # a tool-less model's file was chunk-analysed
            answer = gathered.answer
            replies = for_client(client, self.settings, self.workspace, text)
            if replies is not None and gathered.answer_by_harvey:  # what a source file defines
                answer = replies.with_outline(answer)
            outcome = self._answered(state, answer, Usage(), gathered.answer_by_harvey)
        else:
            outcome = self._run_rounds(state, on_text, cancel)
        if cancel.is_set():
            raise Cancelled("cancelled")
        self.history.extend(state.new_messages)
        self._commit(state, outcome)
        return outcome

    def _run_rounds(
        self, state: TurnState, on_text: Callable[[str], None] | None, cancel: threading.Event
    ) -> TurnOutcome:
        client = state.client
        use_tools = self.budget.tools_enabled(client)
        rounds = ToolRounds(
            self.budget.tool_mode(client),
            self.executor.schemas() if use_tools else None,
            session=self.session_id,
            workspace=self.workspace,
            asked=state.asked,
            replies=for_client(client, self.settings, self.workspace, state.asked),
        )
        for _round in range(self.settings.tools.max_rounds + 1):
            last_round = _round == self.settings.tools.max_rounds
            budget = self.budget.snapshot(client, state.context_texts, offer=not last_round)
            prompt = self.build_prompt(budget, state.new_messages)
            prompt = budget.fit_prompt(prompt, len(state.new_messages))  # never over the window
            activity.report(f"asking {client.model}")
            result = rounds.ask(client, prompt, not last_round, on_text, cancel)
            usage = result.usage
            # the tools' description went in the system prompt: in the usage, so in the sample
            self.budget.calibrate(client, [*prompt, Message("system", budget.tools)], usage)
            if not result.tool_calls or last_round:
                reply = result.text
                state.new_messages.append(Message("assistant", reply))
                return TurnOutcome(
                    reply, state.results, usage, client.model, by_harvey=rounds.by_harvey
                )
            calls = [
                c if c.id else ToolCall(f"call_{uuid.uuid4().hex[:12]}", c.name, c.arguments)
                for c in result.tool_calls
            ]
            state.new_messages.append(Message("assistant", result.text, calls))
            ctx = self.tool_context(state)  # its reads see this round's calibration
            answer: str | None = None
            by_harvey = False
            for call in calls:
                if cancel.is_set():
                    raise Cancelled("cancelled")
                activity.report(tool_doing(call))
                try:
                    res = rounds.execute(self.executor, ctx, call)
                except TurnAnswered as answered:  # the round's other calls still run
                    assert answered.result is not None, "the registry adds the call's result"
                    res, answer, by_harvey = answered.result, answered.reply, answered.by_harvey
                # fitted to what the turn has left before its next request (turn_room.py)
                res = fit_result(call, res, budget.room(state.new_messages))
                state.results.append(res)
                if state.on_tool is not None:
                    state.on_tool(call, res)
                who = state.route.upper() if state.route else None
                state.notes.append(rounds.note(call, res.content, who))
                state.new_messages.append(res.to_message())
            if answer is not None:
                return self._answered(state, answer, usage, by_harvey)
        raise AssertionError("unreachable: the last round never offers tools")

    def _answered(
        self, state: TurnState, reply: str, usage: Usage, by_harvey: bool = False
    ) -> TurnOutcome:
        """A chunked read answered the turn: its answer is the reply (recorded as HARVEY's
        when it is the evidence itself)."""
        state.new_messages.append(Message("assistant", reply))
        return TurnOutcome(reply, state.results, usage, state.client.model, True, by_harvey)

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
                    self.store.set_title(self.session_id, title_of(state.user_text))
            except StoreError as exc:
                failure = exc
        self.turns.finished(
            state, outcome.reply, chunk_analysis=outcome.chunk_analysis, by_harvey=outcome.by_harvey
        )
        if failure is not None:
            raise TurnNotSaved(f"the reply was not saved: {failure}", outcome) from failure

    # -- tools ------------------------------------------------------------------------

    def tool_context(self, state: TurnState | None = None) -> ToolContext:
        """What tools get: bound to the turn ``state`` (its client, its notes), or
        to the session outside a turn (``!`` commands), where nothing is recorded."""
        guarded = self.settings.chunking.enabled

        @functools.cache
        def snapshot() -> BudgetSnapshot:
            """Taken at the first read of the round, shared by the round's later reads."""
            client = state.client if state is not None else self.client
            return self.budget.snapshot(client, state.context_texts if state else ())

        def read_budget() -> ReadBudget:
            return snapshot().read_budget(state.new_messages if state else ())

        def on_oversize(source: Source, size: int, estimated: int, budget: int) -> str:
            """``read_file`` met a file too big: a chunked answer ends the turn (by raising)."""
            turn = self._read_turn(state, snapshot())
            result = self.chunks.oversize(source, size, estimated, turn)
            if result.answered and state is not None:
                raise TurnAnswered(result.text, by_harvey=result.by_harvey)
            return result.text

        def record_write(path: str, status: str) -> None:
            """A write decision belongs to the tool call in flight: its note comes next."""
            assert state is not None
            state.writes.append(WriteNote(path, status, call=len(state.notes)))

        return ToolContext(
            workspace=self.workspace,
            session_id=self.session_id,
            interactive=self.ui.interactive,
            confirm=self.ui.confirm,
            read_budget=read_budget if guarded else None,
            on_oversize=on_oversize if guarded else None,
            approve_write=self.write_gate.for_turn(record_write if state is not None else None),
            allowed_commands=tuple(self.settings.security.allowed_commands),
            shell_timeout=self.settings.security.shell_timeout,
            sandbox=self.settings.security.sandbox,
            limits=self.settings.security.limits,
            unix_sockets=self.settings.security.unix_sockets,
            secret_files=tuple(self.settings.security.secret_files),
            harvey_home=self.harvey_home,
            extras={"recording": str(self.recorder.path)} if self.recorder is not None else {},
        )

    @functools.cached_property
    def chunks(self) -> ChunkedReads:
        """Built on first use: ``harvey run`` on a file that fits never loads the chunked flow."""
        from harvey.chat.oversize import ChunkedReads

        return ChunkedReads(
            ui=self.ui,
            workspace=self.workspace,
            settings=self.settings,
            budget=self.budget,
            clients=self.clients,
            cancel=self.cancel_event,
            recorder=self.recorder,
            results=self._stored_results if self.store is not None else None,
        )

    def _stored_results(self, fresh: bool) -> ResultCache:
        """This session's map results in sessions.db (resumable analyses)."""
        from harvey.session.map_results import StoredResults

        assert self.store is not None
        return StoredResults(self.store, self.session_id, fresh=fresh)

    def _read_turn(self, state: TurnState | None, budget: BudgetSnapshot) -> ReadTurn:
        """The turn in flight as ``ChunkedReads`` sees it (the session's client outside one)."""
        from harvey.chat.oversize import ReadTurn

        if state is None:
            return ReadTurn(self.client, budget=budget)

        def on_analysis(alert: str | None) -> None:
            self.turns.interrupted(state, alert)

        return ReadTurn(
            state.client, state.new_messages, state.user_text or "", on_analysis, budget
        )

    # -- sessions -------------------------------------------------------------------------

    def load_history(self, messages: list[Message], *, stored: bool = True) -> None:
        """Start from ``messages``; ``stored=False`` (an imported .spmd) saves them with
        the first committed turn, so a run that fails before one leaves nothing behind."""
        self.history[:] = messages  # in place: the session builder gave the budget this list
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

    def record_analysis(
        self, label: str, instruction: str, result: str, *, by_harvey: bool = False
    ) -> None:
        """Put a direct chunk analysis (``harvey analyze``, ``/read-chunks``) into the
        conversation and the session file, as the reply of the turn after its scene
        (HARVEY's line when the answer is the evidence itself)."""
        self.add_messages(
            [Message("user", f"Analyse {label}: {instruction}"), Message("assistant", result)]
        )
        self.turns.analysis(self.client, result, by_harvey=by_harvey)

    def clear(self) -> None:
        self.history.clear()

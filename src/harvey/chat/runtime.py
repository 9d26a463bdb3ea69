"""Assemble a working session: client, tools, store, recorder, plan, agent.

The CLI and the REPL both call ``open_runtime``; tests call it too. It is the
only place that knows how the pieces are wired, so each piece stays ignorant
of the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.chat.agent import Agent
from harvey.chat.clients import Clients
from harvey.chat.compaction import resumed_history
from harvey.chat.plan_context import PlanContext
from harvey.chat.plan_injection import handover_text
from harvey.chat.prompt_budget import PromptBudget
from harvey.chat.prompts import GuideHook, root_guidance
from harvey.config.settings import Paths, Settings, configured_keys
from harvey.errors import ConfigError, HarveyError, StoreError
from harvey.llm.factory import make_client, make_route_client
from harvey.memory.startup import SessionMemory, attach
from harvey.messages import Message
from harvey.ownfiles.nofollow import Refusals, UnsafePath
from harvey.protocols import LLMClient, TurnContextProvider
from harvey.redact import Redactor, install
from harvey.session.continuation import session_to_resume
from harvey.session.location import default_user_name, note_harvey_dir, open_recorder
from harvey.session.recorder import Recorder
from harvey.session.store import SessionStore
from harvey.tools.builtin import build_executor, build_registry
from harvey.tools.get_plan import GetPlanTool
from harvey.tools.memory_tools import AddMemoryTool, RetrieveMemoryTool
from harvey.tools.offload import OFFLOAD_SYSTEM_PROMPT, remove_offload_dir
from harvey.tools.plan import FilePlanWriter
from harvey.tools.recall_turns import RecallTurnsTool
from harvey.tools.registry import Deferred, ToolExecutor, ToolRegistry
from harvey.ui import AgentUI
from harvey.workspace import secret_files

if TYPE_CHECKING:
    from harvey.knowledge.retrieval import Retrieval

log = logging.getLogger(__name__)


@dataclass
class Runtime:
    paths: Paths
    settings: Settings
    store: SessionStore
    agent: Agent
    recorder: Recorder | None
    plan_writer: FilePlanWriter | None
    resumed: bool = False
    memory: SessionMemory | None = None  # recall at session start (None: memory off)
    ending: list[Callable[[], None]] = field(default_factory=list)  # MCP servers, ended last

    @property
    def client(self) -> LLMClient:
        return self.agent.client

    def plan_content(self) -> str:
        if self.plan_writer is None:
            return ""
        try:
            return self.plan_writer.read()
        except (OSError, HarveyError):  # unreadable, or its folder became a link
            return ""

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
        self._discard_if_empty()
        self.agent.clients.close()
        for provider in self.agent.turn_context:
            provider.close()
        for end in self.ending:
            end()
        self.store.close()

    def _discard_if_empty(self) -> None:
        """A session that never got a message is not kept: nothing in it to resume.

        Its row is normally never written (``SessionStore.reserve_session``);
        this removes one a failed first turn's todos wrote, with any output
        that turn offloaded.
        """
        session_id = self.agent.session_id
        try:
            if self.store.discard_if_empty(session_id):
                remove_offload_dir(self.paths.workspace, session_id)
        except StoreError as exc:  # harmless (--continue skips it); never hide the real error
            log.debug("could not discard empty session %s: %s", session_id, exc)


def open_store(paths: Paths) -> SessionStore:
    return SessionStore(paths.sessions_db)


def delete_session(store: SessionStore, session_id: str, workspace: Path | None = None) -> bool:
    """Remove a session's rows, its offloaded tool output and its checkpoints (undo);
    files never block rows."""
    info = store.get_session(session_id)
    if info is None:
        return False
    deleted = store.delete_session(info.id)
    try:
        from harvey.session.checkpoints import remove_checkpoints

        remove_checkpoints(Path(store.path).parent, info.id)  # beside sessions.db
        remove_offload_dir(Path(workspace or info.workspace), info.id)
    except Exception as exc:  # the rows are gone; a stale folder is only a warning
        log.warning("could not remove offloaded output of %s: %s", info.id, exc)
    return deleted


def open_runtime(
    paths: Paths,
    settings: Settings,
    *,
    ui: AgentUI,
    record: bool = True,
    resume_latest: bool = False,
    resume_file: Path | None = None,
    resume_id: str | None = None,
) -> Runtime:
    """Build everything a session needs; raises HarveyError with one clear line.

    A ``resume_file`` is read before anything is opened or created, so a
    missing or unreadable one leaves no ``HARVEY_HOME`` or ``sessions.db``.
    """
    install(Redactor.from_env(extra=configured_keys(settings)))  # these settings' keys
    notice = secret_files.state_inside(paths.workspace, paths.harvey_home)  # or refused
    secret_files.install(
        secret_files.for_workspace(
            paths.workspace, paths.harvey_home, settings.security.secret_files
        )
    )
    if notice:
        ui.warn(notice)
    imported = _history_from_file(resume_file, ui) if resume_file is not None else None
    chosen = session_to_resume(paths, resume_id) if resume_id is not None else None
    client = make_client(settings)
    store = open_store(paths)
    try:
        if chosen is not None:  # harvey run --session ID
            start = _Start(chosen, store.messages(chosen), True, True)
        else:
            start = _start(store, paths.workspace, client, ui, resume_latest, imported)
        recording = (resume_file or True) if record else False
        return _assemble(paths, settings, ui, client, store, start, recording)
    except BaseException:
        store.close()
        client.close()
        raise


@dataclass(frozen=True)
class _Start:
    """Which conversation the session continues: none, the latest, or an imported file's."""

    session_id: str
    history: list[Message]
    resumed: bool
    stored: bool  # the history is in sessions.db already (an import is saved with turn one)


def _start(
    store: SessionStore,
    workspace: Path,
    client: LLMClient,
    ui: AgentUI,
    resume_latest: bool,
    imported: list[Message] | None,
) -> _Start:
    if resume_latest:
        info = store.latest_session(workspace)
        if info is not None:
            return _Start(info.id, resumed_history(store, info.id), True, True)
        ui.warn("no earlier session in this workspace; starting a new one")
    elif imported is not None:
        return _Start(store.reserve_session(workspace, client.model), imported, True, False)
    return _Start(store.reserve_session(workspace, client.model), [], False, True)


def _assemble(
    paths: Paths,
    settings: Settings,
    ui: AgentUI,
    client: LLMClient,
    store: SessionStore,
    start: _Start,
    recording: bool | Path,
) -> Runtime:
    """Each part is built once, after what it needs: nothing is handed a part to come.

    ``recording`` is False for ``--no-record``, else True or the resumed file
    (named in the new recording's title page).
    """
    workspace, session_id = paths.workspace, start.session_id
    refusals = Refusals(ui.warn)
    note_harvey_dir(workspace, refusals)
    recorder = None
    if recording is not False:  # session.directory is checked before anything is made
        continued_from = recording if isinstance(recording, Path) else None
        user = default_user_name(settings)
        recorder = open_recorder(
            paths, settings, client, refusals, user=user, continued_from=continued_from,
            store=store, session_id=session_id, resumed=start.resumed and start.stored,
        )  # fmt: skip
    plan_writer = _plan_writer(paths, session_id, refusals)
    handover = _restore_plan(store, start, plan_writer, ui)
    providers: list[TurnContextProvider] = [
        PlanContext(plan_writer, session_id=session_id, handover=handover)
    ]
    if settings.rag.active:  # a missing or broken store is an error before the first turn
        from harvey.knowledge.retrieval import Retrieval

        providers.append(Retrieval.open(workspace, settings.rag.active, settings, ui.warn))
    ending: list[Callable[[], None]] = []
    executor = _executor(
        paths, settings, store, session_id, plan_writer, providers, refusals,
        lambda: settings.context_window or client.capabilities().context_window, ending,
    )  # fmt: skip
    clients = Clients(
        client, settings=settings, make_route=lambda route: make_route_client(settings, route)
    )
    history: list[Message] = []
    budget = PromptBudget(
        settings=settings,
        workspace=workspace,
        main_client=clients.active,
        history=history,
        store=store,
        system_extra=(OFFLOAD_SYSTEM_PROMPT,) if settings.offload.enabled else (),
        guidance=root_guidance(workspace),  # read once: the system prompt is the session's
    )
    agent = Agent(
        clients=clients,
        executor=executor,
        settings=settings,
        workspace=workspace,
        store=store,
        session_id=session_id,
        recorder=recorder,
        ui=ui,
        harvey_home=paths.harvey_home,
        budget=budget,
        history=history,
        turn_context=providers,
    )
    agent.load_history(start.history, stored=start.stored)
    memory = attach(agent, settings, paths.harvey_home)
    return Runtime(
        paths, settings, store, agent, recorder, plan_writer, start.resumed, memory, ending
    )


def _executor(
    paths: Paths,
    settings: Settings,
    store: SessionStore,
    session_id: str,
    plan_writer: FilePlanWriter | None,
    providers: list[TurnContextProvider],
    refusals: Refusals,
    mcp_window: Callable[[], int],
    ending: list[Callable[[], None]],
) -> ToolExecutor:
    """The session's tools, wrapped in their hooks (offload, audit)."""
    registry = build_registry(settings, todo_store=store, plan_writer=plan_writer)
    read_plan = plan_writer.read if plan_writer else str
    registry.register(Deferred(GetPlanTool, lambda: GetPlanTool(read_plan)))
    # what a compaction summarised, read back from sessions.db
    registry.register(Deferred(RecallTurnsTool, lambda: RecallTurnsTool(store.messages)))
    _register_search_knowledge(registry, settings, paths.workspace, providers)
    if settings.memory.enabled:
        home = paths.harvey_home  # memory.db is opened when one of them is first called
        registry.register(Deferred(RetrieveMemoryTool, lambda: RetrieveMemoryTool(home, settings)))
        registry.register(Deferred(AddMemoryTool, lambda: AddMemoryTool(home)))
    if settings.mcp.servers:  # approved servers' tools, within the schema budget
        from harvey.tools.mcp_tools import register_mcp_tools

        ending.append(
            register_mcp_tools(
                registry, settings, paths, mcp_window, refusals.warn, providers=providers
            )
        )
    executor = build_executor(
        registry,
        settings,
        paths.workspace,
        session_id,
        on_refused=lambda exc: refusals.note(exc, "so long tool output is not offloaded"),
    )
    executor.add(GuideHook(paths.workspace), outermost=True)  # subfolders' AGENTS.md, HARVEY.md
    return executor


def _restore_plan(
    store: SessionStore, start: _Start, plan_writer: FilePlanWriter | None, ui: AgentUI
) -> str | None:
    """A resumed session's todos back in its plan file; the handover its first turn gets."""
    if not start.resumed or plan_writer is None:
        return None
    todos = store.get_todos(start.session_id)
    if todos:
        try:
            plan_writer.write(todos)
        except OSError as exc:
            ui.warn(f"could not restore the plan file: {exc}")
    if not plan_writer.path.exists():
        return None
    return handover_text(plan_writer.read(), session_id=start.session_id)


def _register_search_knowledge(
    registry: ToolRegistry,
    settings: Settings,
    workspace: Path,
    providers: list[TurnContextProvider],
) -> None:
    """``search_knowledge`` when a store is active or this workspace has one (``/rag use``).

    ``providers`` is the agent's own list: ``/rag use`` changes it during the session.
    """
    from harvey.knowledge.names import store_names  # a stat: no SQLite, no numpy

    if not settings.rag.active and not store_names(workspace):
        return
    from harvey.tools.knowledge import SearchKnowledgeTool

    def active() -> Retrieval | None:
        from harvey.knowledge.retrieval import active_retrieval

        return active_retrieval(providers)

    registry.register(Deferred(SearchKnowledgeTool, lambda: SearchKnowledgeTool(active)))


def _plan_writer(paths: Paths, session_id: str, refusals: Refusals) -> FilePlanWriter | None:
    try:
        return FilePlanWriter(paths.workspace, session_id, paths.harvey_home)
    except UnsafePath as exc:  # a link where the plans go: no plan file, the todos still work
        refusals.note(exc, "so there is no plan file this session")
        return None
    except OSError as exc:
        raise ConfigError(f"cannot create the plan directory: {exc}") from exc


def _history_from_file(path: Path, ui: AgentUI) -> list[Message]:
    from harvey.inputs import check_input_file
    from harvey.session.resume import load_conversation

    check_input_file(path, "session file")
    messages, parsed = load_conversation(path)
    for warning in parsed.warnings:
        ui.warn(f"{path.name}: {warning}")
    return messages

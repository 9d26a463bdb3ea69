"""Assemble a working session: client, tools, store, recorder, plan, agent.

The CLI and the REPL both call ``open_runtime``; tests call it too. It is the
only place that knows how the pieces are wired, so each piece stays ignorant
of the others.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harvey import secret_files
from harvey.agent import Agent, default_user_name
from harvey.clients import Clients
from harvey.config import Paths, SessionSettings, Settings, configured_keys
from harvey.context.plan_injection import dynamic_plan_text, handover_text
from harvey.context.prompt_budget import PromptBudget
from harvey.errors import ConfigError, HarveyError, StoreError
from harvey.llm.base import LLMClient
from harvey.llm.factory import make_client, make_route_client
from harvey.memory.startup import SessionMemory, attach
from harvey.messages import Message
from harvey.own_files import Location, Refusals, UnsafePath
from harvey.redact import Redactor, install
from harvey.session.recorder import Recorder
from harvey.session.store import SessionStore
from harvey.tools.builtin import build_executor, build_registry
from harvey.tools.get_plan import GetPlanTool
from harvey.tools.memory_tools import memory_tools
from harvey.tools.offload import OFFLOAD_SYSTEM_PROMPT, remove_offload_dir
from harvey.tools.plan import FilePlanWriter
from harvey.tools.registry import ToolRegistry
from harvey.ui import AgentUI

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
    """Remove a session's rows and its offloaded tool output; files never block rows."""
    info = store.get_session(session_id)
    if info is None:
        return False
    deleted = store.delete_session(info.id)
    try:
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
) -> Runtime:
    """Build everything a session needs; raises HarveyError with one clear line.

    A ``resume_file`` is read before anything is opened or created, so a
    missing or unreadable one leaves no ``HARVEY_HOME`` or ``sessions.db``.
    """
    install(Redactor.from_env(extra=configured_keys(settings)))  # these settings' keys
    secret_files.install(secret_files.SecretFiles(settings.security.secret_files))
    imported = _history_from_file(resume_file, ui) if resume_file is not None else None
    client = make_client(settings)
    store = open_store(paths)
    try:
        return _assemble(
            paths, settings, ui, client, store, record, resume_latest, resume_file, imported
        )
    except BaseException:
        store.close()
        client.close()
        raise


def _assemble(
    paths: Paths,
    settings: Settings,
    ui: AgentUI,
    client: LLMClient,
    store: SessionStore,
    record: bool,
    resume_latest: bool,
    resume_file: Path | None,
    imported: list[Message] | None,
) -> Runtime:
    workspace = paths.workspace
    history: list[Message] = []
    session_id: str | None = None
    resumed = False
    if resume_latest:
        info = store.latest_session(workspace)
        if info is None:
            ui.warn("no earlier session in this workspace; starting a new one")
        else:
            session_id, history, resumed = info.id, store.messages(info.id), True
    elif imported is not None:
        history = imported
        resumed = True
    if session_id is None:  # imported history is stored with the first turn (load_history)
        session_id = store.reserve_session(workspace, client.model)

    refusals = Refusals(ui.warn)
    harvey_dir = Location(workspace, (".harvey",)).problem()
    if harvey_dir is not None:  # a cloned repository's link: one line for everything
        refusals.note(harvey_dir, f"so {WORKSPACE_FEATURES} are off this session")
    sessions = (
        session_location(paths, settings.session) if record and settings.session.record else None
    )
    plan_writer = _plan_writer(paths, session_id, refusals)
    registry = build_registry(settings, todo_store=store, plan_writer=plan_writer)
    registry.register(GetPlanTool(lambda: plan_writer.read() if plan_writer else ""))
    _register_search_knowledge(registry, settings, workspace, lambda: agent)
    for tool in memory_tools(paths.harvey_home, settings) if settings.memory.enabled else []:
        registry.register(tool)  # retrieve_memory, add_memory
    executor = build_executor(
        registry,
        settings,
        workspace,
        session_id,
        on_refused=lambda exc: refusals.note(exc, "so long tool output is not offloaded"),
    )

    plan_cache: dict[str, object] = {}

    def plan_text() -> str | None:
        """The dynamic plan summary, recomputed only when the plan file changes.

        It is asked for on every round and budget check; reducing (and logging
        the reduction) once per version of the plan is enough.
        """
        if plan_writer is None:
            return None
        try:
            stat = plan_writer.path.stat()
        except OSError:
            return None
        key = (stat.st_mtime_ns, stat.st_size)
        if plan_cache.get("key") != key:
            try:
                content = plan_writer.read()
            except HarveyError:
                return None
            plan_cache["key"] = key
            plan_cache["text"] = dynamic_plan_text("", content, session_id=session_id or "")
        text = plan_cache["text"]
        return text if isinstance(text, str) else None

    recorder = None
    if (
        sessions is not None
        and settings.session.record
        and _may_record(sessions, settings, refusals)
    ):
        recorder = Recorder.open_in(
            sessions,
            user=default_user_name(settings),
            model=client.model,
            backend=client.backend,
            warn=ui.warn,
            continued_from=resume_file,
        )
    clients = Clients(
        client, settings=settings, make_route=lambda route: make_route_client(settings, route)
    )
    budget = PromptBudget(
        settings=settings,
        workspace=workspace,
        main_client=lambda: clients.current,
        history=lambda: agent.history,
        store=store,
        plan_text=plan_text,
        system_extra=(OFFLOAD_SYSTEM_PROMPT,) if settings.offload.enabled else (),
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
    )
    agent.load_history(history, stored=imported is None)
    if settings.rag.active:  # a missing or broken store is an error before the first turn
        from harvey.knowledge.retrieval import Retrieval

        agent.turn_context.append(Retrieval.open(workspace, settings.rag.active, settings, ui.warn))
    if resumed and plan_writer is not None:
        todos = store.get_todos(session_id)
        if todos:
            try:
                plan_writer.write(todos)
            except OSError as exc:
                ui.warn(f"could not restore the plan file: {exc}")
        if plan_writer.path.exists():
            budget.handover = handover_text(plan_writer.read(), session_id=session_id)
    memory = attach(agent, settings, paths.harvey_home)
    return Runtime(paths, settings, store, agent, recorder, plan_writer, resumed, memory)


def _register_search_knowledge(
    registry: ToolRegistry, settings: Settings, workspace: Path, agent: Callable[[], Agent]
) -> None:
    """``search_knowledge`` when a store is active or this workspace has one (``/rag use``)."""
    from harvey.knowledge.names import store_names  # a stat: no SQLite, no numpy

    if not settings.rag.active and not store_names(workspace):
        return
    from harvey.tools.knowledge import SearchKnowledgeTool

    def active() -> Retrieval | None:
        from harvey.knowledge.retrieval import active_retrieval

        return active_retrieval(agent().turn_context)

    registry.register(SearchKnowledgeTool(active))


def _plan_writer(paths: Paths, session_id: str, refusals: Refusals) -> FilePlanWriter | None:
    try:
        return FilePlanWriter(paths.workspace, session_id, paths.harvey_home)
    except UnsafePath as exc:  # a link where the plans go: no plan file, the todos still work
        refusals.note(exc, "so there is no plan file this session")
        return None
    except OSError as exc:
        raise ConfigError(f"cannot create the plan directory: {exc}") from exc


WORKSPACE_FEATURES = "session recording, the plan file, offloaded output and knowledge stores"
DEFAULT_SESSIONS = SessionSettings.model_fields["directory"].default


def session_location(paths: Paths, session: SessionSettings) -> Location:
    """``session.directory`` as a folder under the workspace or ``HARVEY_HOME``, or a ConfigError.

    Relative: under the workspace. Absolute: it must name a folder inside the
    workspace or ``HARVEY_HOME``. ``..`` is refused outright (a walk never
    climbs), and the walk that opens it refuses any link on the way.
    """
    raw = session.directory
    shown = raw if len(raw) <= 80 else raw[:77] + "..."
    where = "recordings stay inside the workspace or HARVEY_HOME"
    if "\x00" in raw or not raw.strip():
        raise ConfigError(f"session.directory {shown!r} is not a folder name ({where})")
    directory = Path(raw)
    if ".." in directory.parts:
        raise ConfigError(f"session.directory {shown!r} climbs out with '..' ({where})")
    if not directory.is_absolute():
        return Location.under(paths.workspace, directory)
    home = Path(os.path.abspath(paths.harvey_home))
    for root, is_home in ((paths.workspace, False), (home, True), (home.resolve(), True)):
        if directory == root or directory.is_relative_to(root):
            return Location.under(root, directory.relative_to(root), home=is_home)
    raise ConfigError(
        f"session.directory {shown!r} is outside the workspace and HARVEY_HOME ({where})"
    )


def recording_files(paths: Paths, settings: Settings) -> list[Path]:
    """Every ``.spmd`` recording of the workspace, oldest first (``harvey memory mine --all``).

    Listed through the same walk the recorder writes through: a recordings
    folder that is a link lists nothing, and only regular files are named.
    """
    import stat

    try:
        with session_location(paths, settings.session).open(create=False) as folder:
            names = sorted(n for n in folder.names() if n.endswith(".spmd"))
            return [
                folder.path / n
                for n in names
                if (entry := folder.entry(n)) is not None and stat.S_ISREG(entry.st_mode)
            ]
    except (OSError, HarveyError):
        return []


def _may_record(sessions: Location, settings: Settings, refusals: Refusals) -> bool:
    """False (after one warning) when the recordings' folder is a link or someone else's.

    The default ``.harvey/sessions`` is the workspace's, which a repository may
    have planted: recording is off for the session. A ``session.directory`` the
    user configured that leads through a link is a configuration error.
    """
    try:
        sessions.open(create=True).close()
    except UnsafePath as exc:
        if settings.session.directory != DEFAULT_SESSIONS:
            raise ConfigError(f"session.directory {settings.session.directory!r}: {exc}") from exc
        refusals.note(exc, "so session recording is off this session")
        return False
    except OSError:
        pass  # the recorder itself warns once and records nothing
    return True


def _history_from_file(path: Path, ui: AgentUI) -> list[Message]:
    from harvey.inputs import check_input_file
    from harvey.session.resume import load_conversation

    check_input_file(path, "session file")
    messages, parsed = load_conversation(path)
    for warning in parsed.warnings:
        ui.warn(f"{path.name}: {warning}")
    return messages

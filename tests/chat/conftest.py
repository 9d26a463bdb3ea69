"""Build a real Agent around the scripted backend, a real store and real tools."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harvey.chat.agent import Agent
from harvey.chat.clients import Clients
from harvey.chat.plan_context import PlanContext
from harvey.chat.prompt_budget import PromptBudget
from harvey.config.settings import ChunkingSettings, Settings
from harvey.llm.scripted import Reply, ScriptedClient
from harvey.messages import Message
from harvey.session.recorder import Recorder
from harvey.session.store import SessionStore
from harvey.tools.builtin import build_executor, build_registry
from harvey.tools.plan import FilePlanWriter
from harvey.ui import HeadlessUI

AgentFactory = Callable[..., Agent]


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture()
def store(tmp_path: Path) -> SessionStore:
    s = SessionStore(tmp_path / "home" / "sessions.db")
    yield s
    s.close()


@pytest.fixture()
def make_agent(workspace: Path, store: SessionStore, tmp_path: Path) -> AgentFactory:
    def factory(
        replies: list[Reply | str],
        *,
        settings: Settings | None = None,
        context_window: int = 8192,
        supports_tools: bool = True,
        ui: HeadlessUI | None = None,
        record: bool = True,
        plan: bool = False,
    ) -> Agent:
        # the fixed 6,000-byte chunks these tests count on (the default is `auto`,
        # sized to the window: tests/context/test_auto_chunks.py)
        settings = settings or Settings(chunking=ChunkingSettings(chunk_size_bytes=6000))
        client = ScriptedClient(
            replies, model="testmodel", context_window=context_window, supports_tools=supports_tools
        )
        session_id = store.create_session(workspace, client.model)
        writer = FilePlanWriter(workspace, session_id, tmp_path / "home") if plan else None
        registry = build_registry(settings, todo_store=store, plan_writer=writer)
        executor = build_executor(registry, settings, workspace, session_id)
        recorder = (
            Recorder.open_in(
                workspace / ".harvey" / "sessions",
                user="tester",
                model=client.model,
                backend=client.backend,
            )
            if record
            else None
        )
        clients = Clients(client)
        history: list[Message] = []
        budget = PromptBudget(
            settings=settings,
            workspace=workspace,
            main_client=lambda: clients.current,
            history=history,
            store=store,
        )
        agent = Agent(
            clients=clients,
            executor=executor,
            settings=settings,
            workspace=workspace,
            store=store,
            session_id=session_id,
            recorder=recorder,
            ui=ui or HeadlessUI(),
            harvey_home=tmp_path / "home",
            budget=budget,
            history=history,
            turn_context=[PlanContext(writer, session_id=session_id)] if writer else None,
        )
        agent.plan_writer = writer  # type: ignore[attr-defined]
        return agent

    return factory

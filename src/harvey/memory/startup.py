"""The session's side of memory: recall once, before the first prompt is sent.

``open_runtime`` attaches a ``SessionMemory`` to the agent's ``before_turn``
hooks. On the first turn it recalls against that turn's text (so ranking
uses what the person actually asked), puts the block into the prompt budget
as injected memory (counted in remaining context like the plan), writes the
INT. CONTEXT RECALL scene, and says how many memories did not fit. Later
turns keep the same block; nothing is recalled twice.

Memory is an aid, never a reason to lose a turn: a missing ``memory.db``
means nothing to recall (and none is created), and a broken one is one
warning.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.errors import StoreError
from harvey.memory.recall import Recall, recall
from harvey.memory.store import MemoryStore
from harvey.memory.vectors import open_vectors

if TYPE_CHECKING:
    from harvey.agent import Agent
    from harvey.config import Settings

log = logging.getLogger(__name__)

DB_NAME = "memory.db"


def memory_db(harvey_home: Path) -> Path:
    return Path(harvey_home) / DB_NAME


class SessionMemory:
    """Recall for one session; ``recalled`` is what went in, ``left_out`` what did not fit."""

    def __init__(self, agent: Agent, settings: Settings, db_path: Path) -> None:
        self.agent = agent
        self.settings = settings
        self.db_path = db_path
        self.recalled: Recall | None = None
        self._done = False

    def before_turn(self, text: str) -> None:
        if self._done:
            return
        self._done = True
        if not self.db_path.exists():
            return
        agent = self.agent
        try:
            with MemoryStore(self.db_path) as store:
                found = recall(
                    store,
                    agent.workspace,
                    text,
                    context_window=agent.budget.capabilities().context_window,
                    budget_pct=self.settings.memory.budget_pct,
                    bytes_per_token=agent.budget.bytes_per_token(),
                    vectors=open_vectors(store, self.settings, agent.ui.warn),
                    warn=agent.ui.warn,
                )
                store.mark_recalled([m.id for m, _ in found.items])
        except StoreError as exc:
            agent.ui.warn(f"memory recall skipped: {exc}")
            return
        self.recalled = found
        agent.budget.memory = found.block
        if agent.recorder is not None:
            agent.recorder.record_context_recall(found.recall_items())
        if found.left_out:
            message = (
                f"memory: {len(found.left_out)} matching memories did not fit the recall budget "
                f"({found.budget} tokens); /memory status lists them"
            )
            log.warning("%s", message)
            agent.ui.warn(message)


def attach(agent: Agent, settings: Settings, harvey_home: Path) -> SessionMemory | None:
    """Hook recall into ``agent`` unless ``memory.enabled`` is off (``--no-memory``)."""
    if not settings.memory.enabled:
        return None
    memory = SessionMemory(agent, settings, memory_db(harvey_home))
    agent.before_turn.append(memory.before_turn)
    return memory

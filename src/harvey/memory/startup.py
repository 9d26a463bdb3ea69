"""The session's side of memory: recall once, before the first prompt is sent.

``open_runtime`` registers a ``SessionMemory`` among the agent's turn context
providers (``harvey.protocols``). On the first turn it recalls against
that turn's text (so ranking uses what the person actually asked) and
returns the block as ``session_text`` — injected memory for the rest of the
session, counted in remaining context like the plan — with the
``[[recall:]]`` items the agent writes as INT. CONTEXT RECALL, and says how
many memories did not fit. Later turns keep the same block; nothing is
recalled twice.

Recall is cheap when there is nothing to recall, since every ``harvey run``
pays for it: no memory.db means no SQLite open at all (and none is created),
and a memory.db holding no memory for this workspace costs one query —
no migration, no search module, no embedder. Memory is an aid, never a reason
to lose a turn: a broken memory.db is one warning.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from harvey.errors import StoreError
from harvey.protocols import TurnContext, TurnContextProvider, TurnQuery

if TYPE_CHECKING:
    from harvey.config.settings import Settings
    from harvey.memory.recall import Recall
    from harvey.ui import AgentUI

log = logging.getLogger(__name__)

DB_NAME = "memory.db"


class Host(Protocol):
    """What recall needs of the agent it joins (``chat.agent.Agent`` is one): named by
    shape, so memory/ sits below chat/."""

    turns_taken: int
    turn_context: list[TurnContextProvider]
    workspace: Path
    ui: AgentUI


def memory_db(harvey_home: Path) -> Path:
    return Path(harvey_home) / DB_NAME


def anything_to_recall(db_path: Path, workspace: Path) -> bool:
    """Whether memory.db may hold an active memory for ``workspace``: one query on the file
    as it is (no migration), opened the one way every store is (``store.connection``:
    no link, the user's own file). A file that cannot answer says True, so the full open
    reports what is wrong with it."""
    import sqlite3

    from harvey.errors import WorkspaceError
    from harvey.store.connection import open_home

    if not db_path.exists():
        return False
    try:
        db = open_home(db_path)
    except (sqlite3.Error, OSError, WorkspaceError):
        return True
    try:
        row = db.execute(
            "SELECT EXISTS (SELECT 1 FROM memories WHERE archived = 0 AND superseded_by IS NULL "
            "AND (workspace IS NULL OR workspace = ?))",
            (str(workspace),),
        ).fetchone()
        return bool(row[0])
    except sqlite3.Error:
        return True
    finally:
        db.close()


class SessionMemory:
    """Recall for one session; ``recalled`` is what went in, ``left_out`` what did not fit."""

    tool_less_only = False

    def __init__(
        self, workspace: Path, settings: Settings, db_path: Path, warn: Callable[[str], None]
    ) -> None:
        self.workspace = workspace
        self.settings = settings
        self.db_path = db_path
        self.warn = warn
        self.recalled: Recall | None = None
        self._done = False

    def for_turn(self, query: TurnQuery) -> TurnContext | None:
        """The first turn's recall (block and notes); None later, or when nothing applies."""
        if self._done:
            return None
        self._done = True
        if not anything_to_recall(self.db_path, self.workspace):
            return None
        from harvey.memory.recall import recall
        from harvey.memory.store import MemoryStore
        from harvey.memory.vectors import open_vectors

        try:
            with MemoryStore(self.db_path) as store:
                found = recall(
                    store,
                    self.workspace,
                    query.prompt,
                    context_window=query.window_tokens,
                    budget_pct=self.settings.memory.budget_pct,
                    bytes_per_token=query.bytes_per_token,
                    vectors=open_vectors(store, self.settings, self.warn),
                    warn=self.warn,
                )
                store.mark_recalled([m.id for m, _ in found.items])
        except StoreError as exc:
            self.warn(f"memory recall skipped: {exc}")
            return None
        self.recalled = found
        if found.left_out:
            message = (
                f"memory: {len(found.left_out)} matching memories did not fit the recall budget "
                f"({found.budget} tokens); /memory status lists them"
            )
            log.warning("%s", message)
            self.warn(message)
        return TurnContext(session_text=found.block, recall=tuple(found.recall_items()))

    def close(self) -> None:
        """Nothing stays open: the store is opened for the one recall."""

    def register(self, agent: Host) -> None:
        """Ask ``agent`` to recall at its first turn, if memory.db exists by then.

        Without a memory.db there is nothing to recall, and a turn should not reach
        into memory at all. A front end that can create one before the first turn
        (the REPL's profile offer, ``/memory add``) calls this again after it; once
        a turn has been taken it is too late: recall would add a system message
        mid-session and break the prefix the model's cache keeps."""
        if agent.turns_taken or self in agent.turn_context or not self.db_path.exists():
            return
        # first among the providers: the recall scene and block come before anything
        # retrieved for the same turn
        agent.turn_context.insert(0, self)


def attach(agent: Host, settings: Settings, harvey_home: Path) -> SessionMemory | None:
    """The session's recall, registered with ``agent`` if memory.db exists; None when
    ``memory.enabled`` is off (``--no-memory``)."""
    if not settings.memory.enabled:
        return None
    memory = SessionMemory(agent.workspace, settings, memory_db(harvey_home), agent.ui.warn)
    memory.register(agent)
    return memory

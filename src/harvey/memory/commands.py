"""What ``harvey memory`` and the REPL's ``/memory`` and ``/recall`` do, once.

Both front ends parse their own arguments and render their own way (click's
echo and ``--json``, or the REPL's console); the doing is here, and returns
plain values — memories, counts, a saved memory, a message — without printing.
memory.db is opened only when it exists: a reading command on a fresh home
creates nothing, and one naming an id is the same usage error as an unknown id.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.errors import UsageError
from harvey.memory.startup import memory_db
from harvey.memory.store import Memory, MemoryStore

if TYPE_CHECKING:
    from harvey.config.settings import Settings
    from harvey.memory.review import Ask, Echo, MineReport
    from harvey.protocols import LLMClient

#: The counts a fresh home reports: no memory.db is no memories.
EMPTY_COUNTS = {"active": 0, "archived": 0, "superseded": 0, "mined_recordings": 0}


def open_store(harvey_home: Path) -> MemoryStore:
    """memory.db, made on first use (mining and profiles write)."""
    return MemoryStore(memory_db(harvey_home))


def existing_store(harvey_home: Path) -> MemoryStore | None:
    """The store when memory.db exists; None means no memories (reading makes no file)."""
    db = memory_db(harvey_home)
    return MemoryStore(db) if db.exists() else None


def store_for(harvey_home: Path, memory_id: str) -> MemoryStore:
    """The store for a command naming ``memory_id``; with no memory.db yet there is no
    such memory, the same usage error as an unknown id (and nothing made)."""
    store = existing_store(harvey_home)
    if store is None:
        raise UsageError(f"no memory {memory_id!r} (no memories yet)")
    return store


def list_memories(
    harvey_home: Path,
    workspace: Path,
    *,
    all_workspaces: bool = False,
    mtype: str | None = None,
) -> list[Memory]:
    """This workspace's memories and those for every workspace (archived too with
    ``all_workspaces``)."""
    store = existing_store(harvey_home)
    if store is None:
        return []
    with store:
        return store.memories(
            workspace=str(workspace),
            all_workspaces=all_workspaces,
            mtype=mtype,
            include_inactive=all_workspaces,
        )


def show(harvey_home: Path, memory_id: str) -> dict[str, object]:
    """Every field of one memory, as its JSON form."""
    with store_for(harvey_home, memory_id) as store:
        return store.require(memory_id).to_json()


def flag(harvey_home: Path, memory_id: str) -> str:
    """Lower a memory's confidence by 0.1 (archived at or below 0.2); the line to show."""
    with store_for(harvey_home, memory_id) as store:
        item = store.flag(memory_id)
    return f"{item.id}: confidence {item.confidence:.2f}{', archived' * item.archived}"


def forget(harvey_home: Path, memory_id: str) -> str:
    """Delete a memory for good; the line to show."""
    with store_for(harvey_home, memory_id) as store:
        store.forget(memory_id)
    return f"{memory_id} forgotten"


def counts(harvey_home: Path) -> dict[str, int]:
    """Active, archived and superseded memories and mined recordings."""
    store = existing_store(harvey_home)
    if store is None:
        return dict(EMPTY_COUNTS)
    with store:
        return store.counts()


def recall(
    harvey_home: Path,
    settings: Settings,
    workspace: Path,
    query: str,
    warn: Callable[[str], None],
    limit: int = 10,
) -> list[tuple[Memory, float]]:
    """The memories that match ``query`` with their weighted scores (nothing injected)."""
    from harvey.memory.recall import weighted
    from harvey.memory.vectors import hybrid_search, open_vectors

    store = existing_store(harvey_home)
    if store is None:
        return []
    with store:
        vectors = open_vectors(store, settings, warn)
        hits = hybrid_search(
            store, vectors, query, workspace=str(workspace), limit=limit, warn=warn
        )
    return [(m, weighted(relevance, m.confidence)) for m, relevance in hits]


def mine(
    files: list[Path],
    *,
    harvey_home: Path,
    settings: Settings,
    client: LLMClient,
    workspace: Path,
    context_window: int,
    ask: Ask | None,
    echo: Echo,
    warn: Callable[[str], None],
    force: bool = False,
) -> MineReport:
    """Propose memories from recordings, review them through ``ask`` (None accepts all)
    and store the accepted ones, with vectors when an embedder is set."""
    from harvey.memory.mining import concurrency_for
    from harvey.memory.review import mine_files
    from harvey.memory.vectors import open_vectors

    with open_store(harvey_home) as store:
        return mine_files(
            files,
            store=store,
            client=client,
            workspace=workspace,
            context_window=context_window,
            ask=ask,
            echo=echo,
            force=force,
            vectors=open_vectors(store, settings, warn),
            concurrency=concurrency_for(settings.chunking, client),
        )


def clean_text(text: str, workspace: Path, prefix: str = "") -> str:
    """``text`` as a memory may hold it (paths portable); a credential or an empty text
    is a usage error, ``prefix`` naming what was not saved."""
    from harvey.memory.scrub import scrub

    cleaned = scrub(text.strip(), workspace=workspace)
    if cleaned.rejected or not cleaned.text:
        raise UsageError(f"{prefix}not saved: the text {cleaned.rejected or 'is empty'}")
    return cleaned.text

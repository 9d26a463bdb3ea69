"""What ``harvey rag`` and the REPL's ``/rag`` do, once.

Each front end parses its own arguments and renders its own way (click's echo,
``--json`` and a progress bar, or the REPL's console); the doing is here and
returns plain values — a report, hits, a status record, a line — without
printing. The REPL works on the store its session retrieves from; the command
line opens the store it names and closes it again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvey.documents.model import page_label
from harvey.errors import UsageError

if TYPE_CHECKING:
    from harvey.config.settings import Settings
    from harvey.knowledge.ingest import IngestReport, Progress
    from harvey.knowledge.retrieval import Retrieval
    from harvey.knowledge.search import Hit, Ranked
    from harvey.knowledge.service import Knowledge

NO_STORES = "no knowledge stores (make one with 'harvey rag new NAME')"
BELOW_FLOOR = "no passage above the floor"


def empty_line(ranked: Ranked) -> str:
    """What a search that found nothing to send says: nothing matched at all, or candidates
    matched but none reached the relevance floor (``rag.floor``)."""
    if ranked.below_floor:
        return f"{BELOW_FLOOR} ({ranked.below_floor} candidates under it; see rag.floor)"
    return "no matching passages"


def hit_line(hit: Hit) -> str:
    """Where a passage is and how well it scored, as both front ends show it."""
    c = hit.chunk
    where = page_label((c.page_start, c.page_end)) or f"L{c.start_line}-L{c.end_line}"
    return f"{c.path}:{where} — score {hit.score:.2f}"


def hit_row(hit: Hit) -> dict[str, object]:
    """A passage for ``--json``."""
    c = hit.chunk
    return {
        "path": c.path,
        "start_line": c.start_line,
        "end_line": c.end_line,
        "page_start": c.page_start or None,  # pages of a PDF passage; null for other files
        "page_end": c.page_end or None,
        "score": hit.score,
        "text": c.text,
    }


def create(workspace: Path, name: str, embedder: str | None) -> str:
    """Make the empty store ``name`` bound to an embedder; the line to show."""
    from harvey.knowledge.store import check_name, create_store
    from harvey.retrieval.embedders import LocalEmbedder, check_spec, default_spec

    check_name(name)
    spec = check_spec(embedder or default_spec())
    dims = LocalEmbedder.dims if spec == "local" else 0
    if spec == "local":
        LocalEmbedder()  # fail now, not at the first ingest, if its files are missing
    with create_store(workspace, name, spec, dims) as store:
        return f"created store {name} (embedder {spec}) at {store.path}"


def ingest(
    knowledge: Knowledge,
    workspace: Path,
    paths: Iterable[str],
    *,
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    progress: Progress | None = None,
) -> IngestReport:
    """Files and folders (recursively) into an open store; its searcher sees them next."""
    report = knowledge.ingester(workspace).ingest(
        list(paths), include=tuple(include), exclude=tuple(exclude), progress=progress
    )
    knowledge.searcher.invalidate()
    return report


@dataclass(frozen=True)
class StoreSummary:
    """One line of ``harvey rag list``."""

    name: str
    files: int
    chunks: int
    embedder: str


def summaries(workspace: Path) -> list[StoreSummary]:
    """This workspace's stores with their sizes, by name."""
    from harvey.knowledge.store import open_store, store_names

    rows = []
    for name in store_names(workspace):
        with open_store(workspace, name) as store:
            files, chunks, _size = store.counts()
            rows.append(StoreSummary(name, files, chunks, store.embedder_spec))
    return rows


@dataclass(frozen=True)
class StoreStatus:
    """``harvey rag status NAME``: a store's size, embedder, last ingest and drift."""

    name: str
    path: Path
    embedder: str
    files: int
    chunks: int
    size: int
    last_ingest: str  # local time, or "never"
    changed: int  # files changed (or gone) on disk since they were ingested


def status(workspace: Path, name: str) -> StoreStatus:
    """A store checked for integrity, counted, and compared with the files on disk."""
    from harvey.knowledge.store import open_store

    with open_store(workspace, name) as store:
        store.integrity()
        files, chunks, size = store.counts()
        changed = 0
        for row in store.files():
            try:
                st = os.stat(workspace / row.path)
            except OSError:
                changed += 1
                continue
            if (st.st_size, st.st_mtime_ns) != (row.size, row.mtime_ns):
                changed += 1
        last = store.meta("last_ingest")
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(last))) if last else "never"
        return StoreStatus(
            name, store.path, store.embedder_spec, files, chunks, size, when, changed
        )


def query(workspace: Path, name: str, settings: Settings, text: str, k: int) -> list[Hit]:
    """The ``k`` best passages of store ``name`` for ``text`` above the floor, best first."""
    return query_ranked(workspace, name, settings, text, k).hits


def query_ranked(workspace: Path, name: str, settings: Settings, text: str, k: int) -> Ranked:
    """``query``, saying how many candidates the relevance floor kept out."""
    from harvey.knowledge.service import open_knowledge

    knowledge = open_knowledge(workspace, name, settings)
    try:
        return knowledge.searcher.ranked(text, k)
    finally:
        knowledge.close()


def existing_store_path(workspace: Path, name: str) -> Path:
    """Where store ``name`` is; an unknown name is a usage error naming the stores."""
    from harvey.knowledge.store import store_names, store_path

    path = store_path(workspace, name)
    if name not in store_names(workspace):  # listed without following a link
        known = ", ".join(store_names(workspace)) or "none"
        raise UsageError(f"no knowledge store {name!r} (stores: {known})")
    return path


def use(
    providers: list[Any],  # a session's turn context providers
    workspace: Path,
    name: str,
    settings: Settings,
    warn: Callable[[str], None],
) -> tuple[Retrieval, Settings]:
    """Retrieve from store ``name`` in place of the active one among a session's turn
    context providers; the opened retrieval and the settings that name it active."""
    from harvey.knowledge.retrieval import Retrieval, active_retrieval
    from harvey.knowledge.store import with_active

    chosen = with_active(settings, name)
    opened = Retrieval.open(workspace, name, chosen, warn)
    old = active_retrieval(providers)
    if old is not None:
        providers.remove(old)
        old.close()
    providers.append(opened)
    return opened, chosen


def retrieval_line(active: Retrieval) -> str:
    """``/rag status``: the store a session retrieves from and how."""
    files, chunks, size = active.knowledge.store.counts()
    state = "on" if active.enabled else "off"
    return (
        f"{active.name}: {files} files, {chunks} chunks, {size:,} bytes, embedder "
        f"{active.knowledge.store.embedder_spec}, retrieval {state}, top_k "
        f"{active.settings.top_k}, floor {active.settings.floor}; "
        f"last turn: {active.last_outcome}"
    )

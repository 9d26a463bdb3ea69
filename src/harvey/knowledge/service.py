"""A store opened together with the embedder it is bound to, ready to ingest and search.

The embedder is bound when the store is made (``meta.embedder``): a store
made with ``local`` is searched with ``local`` only, because vectors of two
models are not comparable. Asking for another is an error naming both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from harvey.config.settings import Settings, base_url_for
from harvey.errors import UsageError
from harvey.knowledge.floor import FLOORS
from harvey.knowledge.ingest import Ingester
from harvey.knowledge.search import Searcher
from harvey.knowledge.store import KnowledgeStore, open_store
from harvey.llm.keys import key_for
from harvey.retrieval.embedders import Embedder, check_spec, make_embedder


def build_embedder(spec: str, settings: Settings) -> Embedder | None:
    """The embedder ``spec`` names; only an ``openai:`` one is handed the key (and only
    then does an ``api_key_command`` run)."""
    key = None
    if spec.startswith("openai:"):
        secret = key_for(settings.api_key, settings.api_key_command, os.environ)
        key = secret.get_secret_value() if secret is not None else None
    return make_embedder(
        spec,
        ollama_url=base_url_for("ollama", settings),
        openai_url=base_url_for("openai", settings),
        api_key=key,
    )


@dataclass
class Knowledge:
    """One open store, its embedder, and the searcher/ingester that use them."""

    store: KnowledgeStore
    embedder: Embedder | None
    searcher: Searcher
    chunk_size_bytes: int

    @property
    def name(self) -> str:
        return self.store.name

    def ingester(self, workspace: Path) -> Ingester:
        return Ingester(self.store, workspace, self.embedder, self.chunk_size_bytes)

    def close(self) -> None:
        self.store.close()


def open_knowledge(
    workspace: Path, name: str, settings: Settings, *, embedder: str | None = None
) -> Knowledge:
    """Open ``name`` with its bound embedder; ``embedder`` (if given) must be that one."""
    store = open_store(workspace, name)
    try:
        bound = store.embedder_spec
        if embedder is not None and check_spec(embedder) != bound:
            raise UsageError(
                f"store {name!r} was made with embedder {bound}, not {embedder}; "
                f"make a new store to use {embedder}"
            )
        model = build_embedder(bound, settings)
    except BaseException:
        store.close()
        raise
    rag = settings.rag
    searcher = Searcher(store, model, FLOORS[rag.floor])
    return Knowledge(store, model, searcher, rag.chunk_size_bytes)

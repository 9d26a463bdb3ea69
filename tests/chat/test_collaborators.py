"""The agent's collaborators: one client cache, one read budget, chunking overrides, no cycle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harvey.analysis.file_chunks import chunk_config
from harvey.chat.clients import Clients, find_mention, split_mention
from harvey.chat.oversize import ChunkStatus
from harvey.config.settings import ChunkingSettings, RouteSettings, Settings
from harvey.errors import UsageError
from harvey.llm.scripted import Reply, ScriptedClient
from harvey.protocols import LLMClient
from harvey.session.store import SessionStore

from .conftest import AgentFactory


class Closing(ScriptedClient):
    """A scripted client that remembers being closed (and can fail to close)."""

    def __init__(self, model: str, closed: list[str], fail: bool = False) -> None:
        super().__init__([], model=model)
        self.closed = closed
        self.fail = fail

    def with_model(self, model: str) -> LLMClient:
        return Closing(model, self.closed)

    def close(self) -> None:
        self.closed.append(self.model)
        if self.fail:
            raise RuntimeError("socket already gone")


def test_clients_make_each_client_once_and_close_each_once() -> None:
    closed: list[str] = []
    made: list[str] = []
    settings = Settings(routes=[RouteSettings(name="reviewer", model="big")])

    def make_route(route: RouteSettings) -> LLMClient:
        made.append(route.name)
        return Closing(route.model or "", closed, fail=True)

    clients = Clients(Closing("main", closed), settings=settings, make_route=make_route)
    reviewer = clients.resolve("Reviewer")
    assert clients.resolve("reviewer") is reviewer and made == ["reviewer"]
    other = clients.resolve("small")  # not a route: another model on the current backend
    assert other.model == "small" and clients.resolve("small") is other
    assert clients.switch("small") is other and clients.current is other
    assert clients.switch("main").model == "main"  # the first client was kept, not remade
    clients.close()  # the route's close fails; the others are still closed
    assert sorted(closed) == ["big", "main", "small"]


def test_mentions() -> None:
    assert split_mention("@reviewer look at this") == ("reviewer", "look at this")
    assert split_mention("mail me@example.com") == (None, "mail me@example.com")
    assert find_mention("Summarise it @small.") == ("small", "Summarise it")


def test_chunking_overrides_are_a_partial_stanza() -> None:
    base = ChunkingSettings(chunk_size_tokens=500, overlap="none")
    assert base.overridden_by(ChunkingSettings.partial(chunk_size_bytes=None)) == base
    merged = base.overridden_by(ChunkingSettings.partial(chunk_size_bytes=1000, concurrency=2))
    assert (merged.chunk_size_bytes, merged.overlap, merged.concurrency) == (1000, "none", 2)
    embedded = ScriptedClient([], model="m")
    embedded.backend = "local"
    assert chunk_config(base, embedded).concurrency == 1  # unset concurrency → 1 embedded
    assert chunk_config(base, embedded).chunk_size_bytes == 2000
    with pytest.raises(UsageError, match=r"^chunking\.overlap: "):
        ChunkingSettings.partial(overlap="word")


def test_read_file_and_read_for_context_use_the_same_calibrated_budget(
    make_agent: AgentFactory, workspace: Path, store: SessionStore
) -> None:
    """At 4 bytes/token the file fits; the model's calibrated 2 bytes/token says it does not.

    Both paths must agree (they once used different ratios)."""
    for _ in range(3):
        store.record_calibration("testmodel", 2000, 1000)  # 2 bytes per token
    agent = make_agent(
        [Reply(tool_calls=[("read_file", {"path": "f.txt", "limit": 0})]), "done"],
        context_window=2048,
    )
    budget = agent.budget.read_budget()
    assert budget.bytes_per_token == 2.0
    size = int(budget.tokens * 3)  # ≤ tokens at 4 B/t, > tokens at 2 B/t
    (workspace / "f.txt").write_text("x" * size)
    ctx = agent.tool_context()
    assert ctx.read_budget is not None and ctx.read_budget() == budget
    read = agent.chunks.read_for_context(workspace / "f.txt")
    assert read.chunked.status is ChunkStatus.CANCELLED  # headless: the alert, not the file
    outcome = agent.turn("read f.txt")
    assert outcome.tool_results[0].content.startswith("File read cancelled")


def test_the_chunked_read_flow_does_not_import_the_agent() -> None:
    code = "import sys, harvey.chat.oversize; assert 'harvey.chat.agent' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)

"""Recall costs next to nothing when there is nothing to recall: no memory.db, no SQLite
open; a memory.db without a memory for this workspace, one query (no migration, no search
modules loaded). Behaviour is checked, never time."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harvey.memory.startup import anything_to_recall
from harvey.memory.store import Memory, MemoryStore

RUN = """
import sys
from harvey.config.settings import resolve_paths, load_settings
from harvey.chat.runtime import open_runtime
from harvey.ui import HeadlessUI
from harvey.llm.scripted import ScriptedClient, Reply
import harvey.chat.runtime as rt
rt.make_client = lambda settings: ScriptedClient([Reply("hello")])
paths = resolve_paths(sys.argv[1])
runtime = open_runtime(paths, load_settings(paths), ui=HeadlessUI(), record=False)
print(runtime.agent.turn("how do I build?").reply)
runtime.close()
loaded = [m for m in ("harvey.memory.store", "harvey.memory.recall", "harvey.memory.vectors",
                      "harvey.memory.scrub") if m in sys.modules]
print("loaded:", ",".join(loaded) or "none")
"""


def run(ws: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", RUN, str(ws)],
        env=dict(os.environ), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def applied(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY name")]


@pytest.mark.slow
def test_nothing_to_recall_opens_nothing(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    db = isolated_env / "memory.db"
    assert "loaded: none" in run(ws)  # no memory.db: no store, no search
    assert not db.exists() and not anything_to_recall(db, ws)

    with MemoryStore(db) as store:
        store.add(Memory("", "tool_use", "other project: build with make", workspace="/elsewhere"))
    with sqlite3.connect(db) as conn:  # made an older memory.db: only m001 applied
        conn.execute("DELETE FROM _migrations WHERE name != 'm001_memories'")
        conn.execute("DROP TABLE workspace_choices")
        conn.execute("DROP TABLE memory_vectors")  # its triggers go with it
        conn.execute("DROP TABLE memory_vector_packs")
        for name in ("insert", "delete", "update"):
            conn.execute(f"DROP TRIGGER memory_generation_memories_{name}")
        conn.execute("DROP TABLE memory_generation")
    assert not anything_to_recall(db, ws.resolve())
    assert "loaded: none" in run(ws)
    assert applied(db) == ["m001_memories"]  # one query, no migration

    with MemoryStore(db) as store:  # now one for this workspace: the full recall runs
        store.add(Memory("", "tool_use", "build with go build first", workspace=str(ws.resolve())))
    assert anything_to_recall(db, ws.resolve())
    out = run(ws)
    assert "harvey.memory.store" in out and "harvey.memory.recall" in out
    with MemoryStore(db) as store:
        (mine,) = store.memories(workspace=str(ws.resolve()))
        assert mine.recall_count == 1


def test_an_unreadable_file_goes_to_the_full_open(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    db.write_bytes(b"not a database" * 100)
    assert anything_to_recall(db, tmp_path)  # the full open then names the problem


@pytest.mark.slow  # recall loads the embedder
def test_recall_is_registered_only_while_it_can_still_happen(
    tmp_path: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No memory.db at start: the turn does not ask memory at all. One made before the first
    turn (the REPL's profile offer) is recalled at that turn; one made later waits for the
    next session, since recall mid-session would add a system message ahead of the history."""
    import harvey.chat.runtime as rt
    from harvey.config.settings import load_settings, resolve_paths
    from harvey.llm.scripted import Reply, ScriptedClient
    from harvey.ui import HeadlessUI

    ws = tmp_path / "ws"
    ws.mkdir()
    db = isolated_env / "memory.db"

    def session(replies: list[Reply]) -> tuple[rt.Runtime, ScriptedClient]:
        client = ScriptedClient(replies)
        monkeypatch.setattr(rt, "make_client", lambda settings: client)
        paths = resolve_paths(ws)
        return rt.open_runtime(paths, load_settings(paths), ui=HeadlessUI(), record=False), client

    def remember(text: str) -> None:
        with MemoryStore(db) as store:
            store.add(Memory("", "tool_use", text, workspace=str(ws.resolve())))

    runtime, client = session([Reply("one"), Reply("two")])
    assert runtime.memory is not None and runtime.memory not in runtime.agent.turn_context
    remember("build with go build first")  # before the first turn
    runtime.memory.register(runtime.agent)
    runtime.agent.turn("how do I build?")

    def system(n: int) -> str:
        return "\n".join(m.content for m in client.seen[n].messages if m.role == "system")

    assert "go build first" in system(0)
    remember("test with go test ./...")  # after it: not this session
    runtime.memory.register(runtime.agent)
    runtime.agent.turn("and test?")
    assert "go build first" in system(1) and "go test" not in system(1)
    runtime.close()

    runtime, client = session([Reply("three")])  # memory.db exists: registered at open
    assert runtime.memory in runtime.agent.turn_context
    runtime.agent.turn("and test?")
    assert "go test" in system(0)
    runtime.close()

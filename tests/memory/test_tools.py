"""retrieve_memory and add_memory through the real `harvey run` against the fake server."""

from __future__ import annotations

import subprocess
from pathlib import Path

from harvey.llm.scripted import Reply
from harvey.memory.store import Memory, MemoryStore
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import invoke_harvey


def run(ws: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return invoke_harvey(
        "run", "remember this", "--backend", "openai", "--base-url", url, *extra, cwd=ws
    )


def recording(ws: Path) -> str:
    files = sorted((ws / ".harvey" / "sessions").glob("*.spmd"), key=lambda f: f.stat().st_mtime)
    return files[-1].read_text()


def add(text: str, mtype: str = "project_fact") -> Reply:
    return Reply(tool_calls=[("add_memory", {"type": mtype, "text": text})])


def test_add_memory_is_refused_in_batch_mode_even_with_yes(
    tmp_path: Path, isolated_env: Path
) -> None:
    """A memory outlives the session: ``--yes`` (an answer about the task) does not cover it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for extra in ((), ("--yes",)):
        script = [add("the docs are built with mkdocs"), Reply("ok")]
        with FakeOpenAI(script) as srv:
            proc = run(ws, srv.url, *extra)
        assert proc.returncode == 0, proc.stderr
        assert "add_memory" in recording(ws) and "interactive REPL" in recording(ws)
    if (isolated_env / "memory.db").exists():
        with MemoryStore(isolated_env / "memory.db") as store:
            assert store.memories(all_workspaces=True, include_inactive=True) == []


def test_add_memory_asks_the_person_and_stores_only_on_yes(
    tmp_path: Path, isolated_env: Path
) -> None:
    from harvey.messages import ToolCall
    from harvey.tools.memory_tools import AddMemoryTool
    from harvey.tools.registry import ToolContext, ToolRegistry

    ws = tmp_path / "ws"
    ws.mkdir()
    asked: list[str] = []
    answers = [False, True]

    def confirm(question: str) -> bool:
        asked.append(question)
        return answers.pop(0)

    ctx = ToolContext(workspace=ws, interactive=True, confirm=confirm)
    registry = ToolRegistry([AddMemoryTool(isolated_env)])
    call = ToolCall("c", "add_memory", {"type": "project_fact", "text": "docs use mkdocs"})
    assert "declined by the user" in registry.execute(ctx, call).content
    assert registry.execute(ctx, call).content.startswith("stored as project_fact_")
    assert len(asked) == 2 and "docs use mkdocs" in asked[0]
    with MemoryStore(isolated_env / "memory.db") as store:
        assert [m.text for m in store.memories(workspace=str(ws))] == ["docs use mkdocs"]


def test_add_memory_refuses_credentials(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    key = "AKIAIOSFODNN7EXAMPLE"
    with FakeOpenAI([add(f"aws key {key}"), Reply("fine")]) as srv:
        proc = run(ws, srv.url, "--yes")
        result = srv.chat_requests[1]["messages"][-1]["content"]
    assert proc.returncode == 0
    assert "contains a credential" in result
    if (isolated_env / "memory.db").exists():
        assert key.encode() not in (isolated_env / "memory.db").read_bytes()


def test_retrieve_memory(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with MemoryStore(isolated_env / "memory.db") as store:
        store.add(Memory("", "tool_use", "lint with ruff check src tests", workspace=str(ws)))
    script = [Reply(tool_calls=[("retrieve_memory", {"query": "how to lint"})]), Reply("done")]
    with FakeOpenAI(script) as srv:
        proc = run(ws, srv.url)
        result = srv.chat_requests[1]["messages"][-1]["content"]
    assert proc.returncode == 0, proc.stderr
    assert "lint with ruff check src tests" in result

"""build_registry / build_executor assemble the tools and hooks from settings."""

from __future__ import annotations

from pathlib import Path

from harvey.config.settings import Settings
from harvey.messages import ToolCall
from harvey.session.todos import Todo
from harvey.tools.builtin import build_executor, build_registry
from harvey.tools.hooks import HookRegistry
from harvey.tools.offload import OffloadHook
from harvey.tools.registry import ToolContext


class Store:
    def __init__(self) -> None:
        self.data: dict[str, list[Todo]] = {}

    def get_todos(self, session_id: str) -> list[Todo]:
        return self.data.get(session_id, [])

    def set_todos(self, session_id: str, todos: list[Todo]) -> None:
        self.data[session_id] = todos


def test_default_tools() -> None:
    registry = build_registry(Settings())
    assert registry.names() == [
        "read_file",
        "write_file",
        "list_files",
        "search_files",
        "run_shell",
        "edit_file",
    ]
    assert "todo_write" in build_registry(Settings(), todo_store=Store()).names()


def test_shell_uses_security_settings(ctx: ToolContext) -> None:
    settings = Settings.model_validate({"security": {"allowed_commands": ["echo"]}})
    registry = build_registry(settings)
    assert registry.execute(ctx, ToolCall("1", "run_shell", {"command": "echo hi"})).content == (
        "hi\n"
    )
    refused = registry.execute(ctx, ToolCall("2", "run_shell", {"command": "ls"})).content
    assert refused.startswith("error: refused")


def test_executor_offloads_when_enabled(ctx: ToolContext, workspace: Path) -> None:
    settings = Settings.model_validate({"offload": {"threshold": 200}})
    (workspace / "big.txt").write_text("word\n" * 500)
    executor = build_executor(build_registry(settings), settings, workspace, "s1")
    assert isinstance(executor, HookRegistry)
    assert any(isinstance(h, OffloadHook) for h in executor.hooks)
    result = executor.execute(ctx, ToolCall("c", "run_shell", {"command": "cat big.txt"}))
    assert "saved to .harvey/tool_results/s1/c.txt" in result.content
    # read_file is never offloaded, even above the threshold
    page = executor.execute(ctx, ToolCall("r", "read_file", {"path": "big.txt"}))
    assert page.content.startswith("word\n")


def test_executor_without_offload_is_the_bare_registry(ctx: ToolContext, workspace: Path) -> None:
    settings = Settings.model_validate({"offload": {"enabled": False, "threshold": 200}})
    (workspace / "big.txt").write_text("word\n" * 500)
    executor = build_executor(build_registry(settings), settings, workspace, "s1")
    assert executor.hooks == ()
    result = executor.execute(ctx, ToolCall("c", "run_shell", {"command": "cat big.txt"}))
    assert result.content == "word\n" * 500

"""Assemble the default tools and the hook layer from settings.

The CLI and the REPL call these two functions and nothing else, so adding a
tool or a hook is a change here, not in every front end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from harvey.config.settings import Settings
from harvey.tools.edit import EditFileTool
from harvey.tools.files import ListFilesTool, ReadFileTool, WriteFileTool
from harvey.tools.hooks import HookRegistry, ToolHook
from harvey.tools.offload import OffloadHook
from harvey.tools.registry import Deferred, Tool, ToolRegistry
from harvey.tools.search import SearchFilesTool
from harvey.tools.shell import RunShellTool
from harvey.tools.todo import PlanWriter, TodoStore, TodoWriteTool

if TYPE_CHECKING:
    from harvey.ownfiles.nofollow import UnsafePath


def build_registry(
    settings: Settings,
    *,
    todo_store: TodoStore | None = None,
    plan_writer: PlanWriter | None = None,
    extra_tools: Iterable[Tool] = (),
) -> ToolRegistry:
    """read_file, write_file, list_files, search_files, run_shell, edit_file, and todo_write
    with a store."""
    security = settings.security
    tools: list[Tool] = [
        Deferred(ReadFileTool, ReadFileTool),
        Deferred(WriteFileTool, WriteFileTool),
        Deferred(ListFilesTool, ListFilesTool),
        Deferred(SearchFilesTool, SearchFilesTool),
        Deferred(
            RunShellTool,
            lambda: RunShellTool(
                allowed_commands=security.allowed_commands, timeout=security.shell_timeout
            ),
        ),
    ]
    tools.append(Deferred(EditFileTool, EditFileTool))  # beside write_file: targeted edits
    if todo_store is not None:
        store = todo_store
        tools.append(Deferred(TodoWriteTool, lambda: TodoWriteTool(store, plan_writer)))
    tools.extend(extra_tools)
    return ToolRegistry(tools)


def build_executor(
    registry: ToolRegistry,
    settings: Settings,
    workspace: Path | str,
    session_id: str,
    extra_hooks: Iterable[ToolHook] = (),
    on_refused: Callable[[UnsafePath], None] | None = None,
) -> HookRegistry:
    """Wrap the registry in hooks: offload (when enabled) outermost, then ``extra_hooks``.

    ``on_refused`` reports the offload folder refused as a link (the session's ``Refusals``).
    """
    hooks: list[ToolHook] = []
    if settings.offload.enabled:
        hooks.append(
            OffloadHook(
                workspace,
                session_id,
                threshold=settings.offload.threshold,
                preview_lines=settings.offload.preview_lines,
                on_refused=on_refused,
            )
        )
    hooks.extend(extra_hooks)
    return HookRegistry(registry, hooks)

"""The todo list a model keeps while it works, and the ``todo_write`` tool.

The model always sends the whole list (``id``, ``content``, ``status``), so
the stored list is never a merge of partial updates that could drift. An empty
call returns the current list, so the model can re-read its plan after a
``--continue``. Storage is behind the ``TodoStore`` protocol (the session
store implements it in ``sessions.db``); the markdown plan file is behind
``PlanWriter`` so a failing plan file never breaks the agent loop.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Any, Protocol, runtime_checkable

from harvey.errors import HarveyError, ToolError
from harvey.session.todos import STATUSES, Todo
from harvey.tools.registry import ToolContext

log = logging.getLogger(__name__)


@runtime_checkable
class TodoStore(Protocol):
    def get_todos(self, session_id: str) -> list[Todo]: ...

    def set_todos(self, session_id: str, todos: list[Todo]) -> None: ...


@runtime_checkable
class PlanWriter(Protocol):
    """Keeps a human-readable copy of the todo list; may raise, callers log and go on."""

    def write(self, todos: list[Todo]) -> None: ...


def parse_todos(raw: Any) -> list[Todo]:
    """Validate the model's list strictly; the ToolError names the first problem."""
    if not isinstance(raw, list):
        raise ToolError("'todos' must be a list of {id, content, status} objects")
    todos: list[Todo] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"todo #{index + 1}"
        if not isinstance(item, dict):
            raise ToolError(f"{where} must be an object with id, content and status")
        raw_id = item.get("id")
        if isinstance(raw_id, int) and not isinstance(raw_id, bool):
            raw_id = str(raw_id)
        if not isinstance(raw_id, str) or not raw_id.strip():
            raise ToolError(f"{where} is missing its 'id'")
        todo_id = raw_id.strip()
        where = f"todo {todo_id!r}"
        if todo_id in seen:
            raise ToolError(f"duplicate id {todo_id!r}: every todo needs its own id")
        seen.add(todo_id)
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            raise ToolError(f"{where} is missing its 'content'")
        status = item.get("status", "pending")
        if status not in STATUSES:
            raise ToolError(
                f"{where} has unknown status {status!r} (allowed: {', '.join(STATUSES)})"
            )
        todos.append(Todo(todo_id, content.strip(), status))
    return todos


def todos_json(todos: list[Todo]) -> str:
    return json.dumps([t.to_dict() for t in todos], ensure_ascii=False, indent=2)


def summary(todos: list[Todo]) -> str:
    counts = Counter(t.status for t in todos)
    parts = [f"{counts[s]} {s.replace('_', ' ')}" for s in STATUSES if counts[s]]
    return ", ".join(parts) if parts else "empty"


class TodoWriteTool:
    name = "todo_write"
    description = (
        "Keep your task list for this session. Send the WHOLE list every time, each item "
        "{id, content, status} with status one of pending, in_progress, completed, cancelled. "
        "Call with no todos to get the current list."
    )
    parameters: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol reads an attribute
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "content": {"type": "string"},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    },
                    "required": ["id", "content", "status"],
                },
            }
        },
    }

    def __init__(self, store: TodoStore, plan_writer: PlanWriter | None = None) -> None:
        self.store = store
        self.plan_writer = plan_writer

    def run(self, ctx: ToolContext, args: dict[str, Any]) -> str:
        raw = args.get("todos")
        if raw is None or raw == []:
            # Reading is the safe reading of an empty call: an empty list never wipes a plan.
            return todos_json(self.store.get_todos(ctx.session_id))
        todos = parse_todos(raw)
        self.store.set_todos(ctx.session_id, todos)
        if self.plan_writer is not None:
            try:
                self.plan_writer.write(todos)
            except (HarveyError, OSError) as exc:  # the plan file is a convenience, never a blocker
                log.warning("todo_write: failed to write the plan file: %s", exc)
            except Exception:
                # Broad on purpose: the todos are already saved, so a bug in a plan
                # writer must not turn this call into an error; its traceback is logged.
                log.exception("todo_write: the plan writer crashed")
        return f"Todo list saved ({summary(todos)}).\n{todos_json(todos)}"

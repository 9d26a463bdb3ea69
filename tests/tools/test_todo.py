"""todo_write: strict validation, whole-list writes, empty call reads, plan writer fail-open."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.messages import ToolCall
from harvey.session.todos import STATUSES, Todo
from harvey.tools.registry import ToolContext, ToolRegistry
from harvey.tools.todo import PlanWriter, TodoStore, TodoWriteTool, parse_todos


class MemoryTodoStore:
    """A dict-backed implementation of the TodoStore protocol (the real one is SQLite)."""

    def __init__(self) -> None:
        self.data: dict[str, list[Todo]] = {}

    def get_todos(self, session_id: str) -> list[Todo]:
        return list(self.data.get(session_id, []))

    def set_todos(self, session_id: str, todos: list[Todo]) -> None:
        self.data[session_id] = list(todos)


class ListPlanWriter:
    def __init__(self, fail: bool = False) -> None:
        self.writes: list[list[Todo]] = []
        self.fail = fail

    def write(self, todos: list[Todo]) -> None:
        if self.fail:
            raise OSError("disk full")
        self.writes.append(todos)


def call(ctx: ToolContext, tool: TodoWriteTool, args: dict[str, Any]) -> str:
    return ToolRegistry([tool]).execute(ctx, ToolCall("t", "todo_write", args)).content


ITEMS = [
    {"id": "1", "content": "Read the spec", "status": "completed"},
    {"id": "2", "content": "Write the code", "status": "in_progress"},
    {"id": "3", "content": "Ship it", "status": "pending"},
]


def test_protocols_are_satisfied() -> None:
    assert isinstance(MemoryTodoStore(), TodoStore)
    assert isinstance(ListPlanWriter(), PlanWriter)


def test_write_stores_whole_list_and_updates_plan(ctx: ToolContext) -> None:
    store, plan = MemoryTodoStore(), ListPlanWriter()
    tool = TodoWriteTool(store, plan)
    result = call(ctx, tool, {"todos": ITEMS})
    assert not result.startswith("error:")
    assert "1 pending, 1 in progress, 1 completed" in result
    expected = [Todo(**item) for item in ITEMS]
    assert store.get_todos(ctx.session_id) == expected
    assert plan.writes == [expected]
    # the whole list replaces the old one, it is not merged
    call(ctx, tool, {"todos": ITEMS[:1]})
    assert store.get_todos(ctx.session_id) == expected[:1]


@pytest.mark.parametrize("args", [{}, {"todos": None}, {"todos": []}])
def test_empty_call_returns_the_current_list(ctx: ToolContext, args: dict[str, Any]) -> None:
    store = MemoryTodoStore()
    tool = TodoWriteTool(store)
    assert json.loads(call(ctx, tool, args)) == []
    call(ctx, tool, {"todos": ITEMS})
    assert json.loads(call(ctx, tool, args)) == ITEMS
    assert store.get_todos(ctx.session_id) == [Todo(**i) for i in ITEMS]  # nothing wiped


def test_lists_are_per_session(ctx: ToolContext) -> None:
    store = MemoryTodoStore()
    tool = TodoWriteTool(store)
    call(ctx, tool, {"todos": ITEMS})
    other = ctx.evolve(session_id="other")
    assert json.loads(call(other, tool, {})) == []


@pytest.mark.parametrize(
    ("todos", "problem"),
    [
        ([{"content": "x", "status": "pending"}], "missing its 'id'"),
        ([{"id": "", "content": "x", "status": "pending"}], "missing its 'id'"),
        ([{"id": "1", "content": "x", "status": "done"}], "unknown status 'done'"),
        (
            [
                {"id": "1", "content": "a", "status": "pending"},
                {"id": "1", "content": "b", "status": "pending"},
            ],
            "duplicate id '1'",
        ),
        ([{"id": "1", "status": "pending"}], "missing its 'content'"),
        (["just text"], "must be an object"),
        ("not a list", "must be a list"),
    ],
)
def test_bad_input_is_an_error_naming_the_problem(
    ctx: ToolContext, todos: Any, problem: str
) -> None:
    store, plan = MemoryTodoStore(), ListPlanWriter()
    result = call(ctx, TodoWriteTool(store, plan), {"todos": todos})
    assert result.startswith("error:")
    assert problem in result
    assert store.data == {} and plan.writes == []  # nothing half-written


def test_plan_writer_failure_is_logged_not_fatal(
    ctx: ToolContext, caplog: pytest.LogCaptureFixture
) -> None:
    store = MemoryTodoStore()
    with caplog.at_level(logging.WARNING):
        result = call(ctx, TodoWriteTool(store, ListPlanWriter(fail=True)), {"todos": ITEMS})
    assert not result.startswith("error:")
    assert len(store.get_todos(ctx.session_id)) == 3
    assert "disk full" in caplog.text


todo_item = st.fixed_dictionaries(
    {
        "id": st.text(alphabet="abc123", min_size=1, max_size=4),
        "content": st.text(min_size=1, max_size=20).filter(str.strip),
        "status": st.sampled_from(STATUSES),
    }
)


@given(st.lists(todo_item, max_size=8, unique_by=lambda d: d["id"]))
def test_valid_lists_round_trip(items: list[dict[str, str]]) -> None:
    todos = parse_todos(items)
    assert [t.id for t in todos] == [i["id"] for i in items]
    assert [t.status for t in todos] == [i["status"] for i in items]

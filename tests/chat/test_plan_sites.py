"""Plan injection sites, checked in what the model actually receives."""

from __future__ import annotations

import itertools
from pathlib import Path

from harvey.chat.plan_budget import DYNAMIC_BUDGET
from harvey.chat.plan_injection import PLAN_SUMMARY_PREFIX, compose_dynamic
from harvey.llm.scripted import Reply
from harvey.tools.get_plan import GetPlanTool

from .conftest import AgentFactory


def todos(n: int, width: int = 120) -> list[dict[str, str]]:
    return [
        {"id": f"t{i}", "content": f"Step {i}: " + "x" * width, "status": "pending"}
        for i in range(n)
    ]


def plan_messages(agent, request: int) -> list[str]:  # type: ignore[no-untyped-def]
    """The plan summaries request ``request`` carries: each rides ahead of the words of
    the user message of the turn after the plan changed (``chat/plan_context.py``)."""
    seen = agent.client.seen[request].messages
    assert not any(m.content.startswith(PLAN_SUMMARY_PREFIX) for m in seen if m.role == "system")
    return [
        m.content.rsplit("\n\n", 1)[0]
        for m in seen
        if m.role == "user" and m.content.startswith(PLAN_SUMMARY_PREFIX)
    ]


def test_each_request_extends_the_one_before_across_plan_changes(
    make_agent: AgentFactory,
) -> None:
    """The prompt cache of llama.cpp, Ollama and the embedded model reuses the longest
    common prefix: a plan change must not rewrite what was already sent."""
    agent = make_agent(
        [
            "hello",
            Reply(tool_calls=[("todo_write", {"todos": todos(3, 10)})]),
            "planned",
            "working",
            Reply(tool_calls=[("todo_write", {"todos": todos(4, 10)})]),
            "replanned",
            "done",
        ],
        plan=True,
    )
    for words in ("hi", "plan it", "go on", "change the plan", "finish"):
        agent.turn(words)
    requests = [list(r.messages) for r in agent.client.seen]
    for before, after in itertools.pairwise(requests):
        assert after[: len(before)] == before
    # the plan went out once per version: after the first and after the second todo_write
    assert len(plan_messages(agent, 3)) == 1  # "go on": the first plan, new
    assert len(plan_messages(agent, 4)) == 1  # "change the plan": the same plan, not again
    assert len(plan_messages(agent, 6)) == 2  # "finish": the second plan, once more


def test_small_plan_is_injected_byte_identical(make_agent: AgentFactory) -> None:
    agent = make_agent(
        [Reply(tool_calls=[("todo_write", {"todos": todos(3, 10)})]), "planned", "next"], plan=True
    )
    agent.turn("plan it")
    agent.turn("go on")
    injected = plan_messages(agent, 2)
    assert len(injected) == 1
    content = agent.plan_writer.read()
    assert injected[0] == PLAN_SUMMARY_PREFIX + compose_dynamic("", content)
    assert "[Harvey: plan reduced" not in injected[0]


def test_over_budget_plan_is_reduced_with_notice_and_tail(make_agent: AgentFactory) -> None:
    agent = make_agent(
        [Reply(tool_calls=[("todo_write", {"todos": todos(200)})]), "planned", "next"], plan=True
    )
    agent.turn("plan a lot")
    # a person adds a section at the end of the plan file; it is the newest material
    path: Path = agent.plan_writer.path
    path.write_text(path.read_text() + "\n## Notes\n\nThe newest note is at the end.\n")
    agent.turn("continue")
    (injected,) = plan_messages(agent, 2)
    body = injected[len(PLAN_SUMMARY_PREFIX) :]
    assert len(body.encode("utf-8")) <= DYNAMIC_BUDGET
    assert "[Harvey: plan reduced to fit the injection budget;" in body
    assert "Call get_plan for the full plan.]" in body
    assert "The newest note is at the end." in body  # the tail survives
    assert "# Execution Plan" in body  # the head survives
    # the plan is part of the history as sent, so it counts against the remaining context
    assert any(m.content.startswith(PLAN_SUMMARY_PREFIX) for m in agent.history)


def test_get_plan_returns_the_whole_plan(make_agent: AgentFactory) -> None:
    agent = make_agent([Reply(tool_calls=[("todo_write", {"todos": todos(200)})]), "ok"], plan=True)
    agent.turn("plan")
    full = agent.plan_writer.read()
    assert len(full.encode()) > DYNAMIC_BUDGET
    tool = GetPlanTool(agent.plan_writer.read)
    assert tool.run(agent.tool_context(), {}) == full

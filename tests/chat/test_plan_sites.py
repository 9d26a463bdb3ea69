"""Plan injection sites, checked in what the model actually receives."""

from __future__ import annotations

from pathlib import Path

from harvey.context.plan_budget import DYNAMIC_BUDGET
from harvey.context.plan_injection import PLAN_SUMMARY_PREFIX, compose_dynamic
from harvey.llm.scripted import Reply
from harvey.tools.get_plan import GetPlanTool

from .conftest import AgentFactory


def todos(n: int, width: int = 120) -> list[dict[str, str]]:
    return [
        {"id": f"t{i}", "content": f"Step {i}: " + "x" * width, "status": "pending"}
        for i in range(n)
    ]


def plan_messages(agent, request: int) -> list[str]:  # type: ignore[no-untyped-def]
    seen = agent.client.seen[request].messages
    return [
        m.content for m in seen if m.role == "system" and m.content.startswith(PLAN_SUMMARY_PREFIX)
    ]


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
    # the injected plan counts against the remaining context
    assert agent.status().plan_tokens > 0


def test_get_plan_returns_the_whole_plan(make_agent: AgentFactory) -> None:
    agent = make_agent([Reply(tool_calls=[("todo_write", {"todos": todos(200)})]), "ok"], plan=True)
    agent.turn("plan")
    full = agent.plan_writer.read()
    assert len(full.encode()) > DYNAMIC_BUDGET
    tool = GetPlanTool(agent.plan_writer.read)
    assert tool.run(agent.tool_context(), {}) == full

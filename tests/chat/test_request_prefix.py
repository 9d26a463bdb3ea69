"""Every request of a session begins with the previous request's messages, byte for byte.

llama.cpp, Ollama and the embedded model reuse the longest common prefix of the
previous request: a request that rewrites an earlier message makes them evaluate
the whole history again (issue 21: 0.32 s against 16.8 s for a 3,578-token history
on the embedded model). Over random sessions — plain answers, tool rounds, plan
changes, plans edited by hand between turns — no request may break the prefix.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvey.llm.scripted import Reply

from .conftest import AgentFactory

TURNS = st.lists(st.sampled_from(["answer", "plan", "read", "edit-plan"]), min_size=1, max_size=6)


def todos(n: int) -> list[dict[str, str]]:
    return [{"id": f"t{i}", "content": f"Step {i}", "status": "pending"} for i in range(n)]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(turns=TURNS)
def test_no_request_rewrites_an_earlier_one(make_agent: AgentFactory, turns: list[str]) -> None:
    script: list[Reply | str] = []
    for n, kind in enumerate(turns):
        if kind == "plan":
            script.append(Reply(tool_calls=[("todo_write", {"todos": todos(n + 2)})]))
        elif kind == "read":
            script.append(Reply(tool_calls=[("list_files", {"path": "."})]))
        script.append(f"reply {n}")
    agent = make_agent(script, plan=True)
    for n, kind in enumerate(turns):
        if kind == "edit-plan" and agent.plan_writer.path.exists():
            path = agent.plan_writer.path
            path.write_text(path.read_text() + f"\nA note added by hand before turn {n}.\n")
        agent.turn(f"turn {n}: {kind}")
    requests = [list(r.messages) for r in agent.client.seen]
    assert len(requests) == len(script)
    for before, after in itertools.pairwise(requests):
        assert after[: len(before)] == before

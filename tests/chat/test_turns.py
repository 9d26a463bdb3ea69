from __future__ import annotations

import threading
from pathlib import Path

import pytest

from harvey.config.settings import Settings, ToolsSettings
from harvey.errors import Cancelled
from harvey.llm.scripted import Reply
from harvey.session.fountain import parse_session
from harvey.tools.registry import TurnAnswered

from .conftest import AgentFactory


def scripted(agent):  # type: ignore[no-untyped-def]
    return agent.client


def test_plain_turn_commits_history_store_and_scene(make_agent: AgentFactory) -> None:
    agent = make_agent(["Four."])
    outcome = agent.turn("What is 2+2?")
    assert outcome.reply == "Four."
    assert [m.role for m in agent.history] == ["user", "assistant"]
    assert [m.content for m in agent.store.messages(agent.session_id)] == ["What is 2+2?", "Four."]
    agent.recorder.close()
    parsed = parse_session(agent.recorder.path)
    talking = [s for s in parsed.scenes if s.kind == "talking"]
    assert len(talking) == 1
    assert ("TESTMODEL", "Four.") in talking[0].dialogue


def test_tool_round_trip_reads_a_workspace_file(make_agent: AgentFactory, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("the secret is 42\n")
    agent = make_agent(
        [
            Reply(tool_calls=[("read_file", {"path": "notes.txt"})]),
            "The secret is 42.",
        ]
    )
    outcome = agent.turn("What is the secret?")
    assert outcome.reply == "The secret is 42."
    tool_msgs = [m for m in agent.history if m.role == "tool"]
    assert tool_msgs and "the secret is 42" in tool_msgs[0].content
    # the model saw the tool result in its second request
    second = scripted(agent).seen[1].messages
    assert any(m.role == "tool" and "42" in m.content for m in second)
    assert scripted(agent).seen[0].tools, "tools are offered to a tool-capable model"


def test_failing_tool_becomes_error_result_not_exception(make_agent: AgentFactory) -> None:
    agent = make_agent(
        [
            Reply(tool_calls=[("read_file", {"path": "../../etc/passwd"})]),
            Reply(tool_calls=[("no_such_tool", {})]),
            "I could not read it.",
        ]
    )
    outcome = agent.turn("read /etc/passwd")
    assert [r.is_error for r in outcome.tool_results] == [True, True]
    assert outcome.reply == "I could not read it."


def test_max_rounds_then_one_final_call_without_tools(make_agent: AgentFactory) -> None:
    settings = Settings(tools=ToolsSettings(max_rounds=2))
    loop = Reply(tool_calls=[("list_files", {})])
    agent = make_agent([loop, loop, "done"], settings=settings)
    assert agent.turn("loop forever").reply == "done"
    seen = scripted(agent).seen
    assert len(seen) == 3
    assert seen[0].tools and seen[1].tools and not seen[2].tools


def test_model_without_tools_gets_none_and_still_answers(make_agent: AgentFactory) -> None:
    agent = make_agent(["hello"], supports_tools=False)
    assert agent.turn("hi").reply == "hello"
    assert scripted(agent).seen[0].tools == []


def test_tools_disabled_in_config(make_agent: AgentFactory) -> None:
    agent = make_agent(["hello"], settings=Settings(tools=ToolsSettings(enabled=False)))
    agent.turn("hi")
    assert scripted(agent).seen[0].tools == []


def test_cancelled_turn_leaves_no_trace(make_agent: AgentFactory) -> None:
    agent = make_agent(["first", "second"])
    agent.turn("one")
    before = list(agent.history)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        agent.turn("two", cancel=cancel)
    assert agent.history == before
    assert len(agent.store.messages(agent.session_id)) == 2


def test_system_prompt_includes_harvey_md(make_agent: AgentFactory, workspace: Path) -> None:
    (workspace / "HARVEY.md").write_text("Always answer in French.")
    agent = make_agent(["oui"])
    agent.turn("hello")
    system = scripted(agent).seen[0].messages[0]
    assert system.role == "system" and "Always answer in French." in system.content


def test_calibration_recorded_from_usage(make_agent: AgentFactory) -> None:
    agent = make_agent([Reply(text="ok", prompt_tokens=10_000)])
    agent.turn("hello")
    ratio = agent.store.calibration_ratio("testmodel")
    assert ratio is not None and ratio < 4.0
    assert agent.budget.bytes_per_token() == ratio
    assert agent.status().calibrated is True


def test_remaining_context_shrinks_with_history(make_agent: AgentFactory) -> None:
    agent = make_agent(["x" * 4000])
    before = agent.budget.remaining()
    agent.turn("tell me a long story")
    assert agent.budget.remaining() < before < 8192


def test_route_mention_uses_other_model_and_attributes_tools(make_agent: AgentFactory) -> None:
    agent = make_agent([Reply(tool_calls=[("list_files", {})]), "routed reply"])
    outcome = agent.turn("@mistral look around")
    assert outcome.model == "mistral"
    assert scripted(agent).seen[0].messages[-1].content == "look around"
    agent.recorder.close()
    text = agent.recorder.path.read_text()
    assert "[[MISTRAL.tool: list_files(" in text


class AnswersTheTurn:
    """A tool whose output is the turn's answer, as a chunked read of a big file is."""

    def __init__(self) -> None:
        self.name = "answer"
        self.description = "answers the whole turn"
        self.parameters: dict[str, object] = {"type": "object", "properties": {}}

    def run(self, ctx: object, args: dict[str, object]) -> str:
        raise TurnAnswered("The answer is 7.")


def test_a_tool_that_answers_the_turn_raises_and_the_loop_ends_the_turn(
    make_agent: AgentFactory, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("seven\n")
    agent = make_agent(
        [Reply(tool_calls=[("answer", {}), ("read_file", {"path": "notes.txt"})]), "never asked"]
    )
    agent.executor.inner.register(AnswersTheTurn())  # type: ignore[attr-defined]
    outcome = agent.turn("what is the answer?")
    assert outcome.reply == "The answer is 7." and outcome.chunk_analysis
    # the round's other call still ran, and the answer is also the tool's message
    assert [r.name for r in outcome.tool_results] == ["answer", "read_file"]
    assert outcome.tool_results[0].content == "The answer is 7."
    assert "seven" in outcome.tool_results[1].content
    assert [m.role for m in agent.history] == ["user", "assistant", "tool", "tool", "assistant"]
    assert agent.client.remaining == 1  # type: ignore[attr-defined]  # no second model call

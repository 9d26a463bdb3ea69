"""The agent asks before each write, remembers "all" and records every decision in the scene."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.errors import Cancelled
from harvey.llm.scripted import Reply
from harvey.session.fountain import parse_session
from harvey.session.records import ParsedWriteNote
from harvey.ui import HeadlessUI, WriteChoice, WriteRequest

from .conftest import AgentFactory


class ScriptedUI(HeadlessUI):
    interactive = True

    def __init__(self, answers: list[WriteChoice]) -> None:
        super().__init__()
        self.answers = list(answers)
        self.asked: list[str] = []

    def approve_write(self, request: WriteRequest) -> WriteChoice:
        self.asked.append(request.path)
        return self.answers.pop(0)


def write(path: str, content: str = "x\n") -> tuple[str, dict[str, str]]:
    return ("write_file", {"path": path, "content": content})


def test_decisions_of_the_turn_land_in_its_scene(make_agent: AgentFactory, workspace: Path) -> None:
    (workspace / "keep.txt").write_text("original\n")
    ui = ScriptedUI([WriteChoice.NO, WriteChoice.ALL])
    agent = make_agent(
        [
            Reply(tool_calls=[write("keep.txt"), write("new.txt")]),
            Reply(tool_calls=[write("third.txt")]),
            "Done.",
            Reply(tool_calls=[write("fourth.txt")]),
            "Again.",
        ],
        ui=ui,
    )
    agent.turn("write some files")
    agent.turn("and one more")
    assert ui.asked == ["keep.txt", "new.txt"]  # "all" covers third.txt and the next turn
    assert (workspace / "keep.txt").read_text() == "original\n"
    assert all((workspace / n).exists() for n in ("new.txt", "third.txt", "fourth.txt"))
    agent.recorder.close()
    first, second = parse_session(agent.recorder.path, strict=True).turns
    assert first.write_notes == [
        ParsedWriteNote("keep.txt", "skipped"),
        ParsedWriteNote("new.txt", "ok"),
        ParsedWriteNote("third.txt", "ok"),
    ]
    assert second.write_notes == [ParsedWriteNote("fourth.txt", "ok")]
    declined = [t for t in first.tool_notes if t.status != "ok"]
    assert len(declined) == 1 and "declined" in declined[0].status


def test_quit_ends_the_turn_like_ctrl_c(make_agent: AgentFactory, workspace: Path) -> None:
    agent = make_agent(
        [Reply(tool_calls=[write("a.txt")]), "never"], ui=ScriptedUI([WriteChoice.QUIT])
    )
    with pytest.raises(Cancelled):
        agent.turn("write a.txt")
    assert not (workspace / "a.txt").exists()
    assert agent.history == [] and agent.store.messages(agent.session_id) == []
    agent.recorder.close()
    assert parse_session(agent.recorder.path).turns == []


def test_headless_agent_refuses_and_records_skipped(
    make_agent: AgentFactory, workspace: Path
) -> None:
    agent = make_agent([Reply(tool_calls=[write("cmds.txt")]), "ok"], ui=HeadlessUI(auto_yes=True))
    agent.turn("write it")
    assert not (workspace / "cmds.txt").exists()
    tool = next(m for m in agent.history if m.role == "tool")
    assert tool.content.startswith("error: write refused") and "--allow-writes" in tool.content
    agent.recorder.close()
    (turn,) = parse_session(agent.recorder.path, strict=True).turns
    assert turn.write_notes == [ParsedWriteNote("cmds.txt", "skipped")]

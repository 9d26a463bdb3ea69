"""The read alert estimates a file at the ratio of its type: a source file that fits the
window no longer raises it; one that does not fit still does."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.context.budget import estimate_tokens
from harvey.llm.scripted import Reply
from harvey.session.store import SessionStore

from .conftest import AgentFactory


def python_source(methods: int) -> str:
    """Ordinary indented Python: many bytes of indentation, few tokens."""
    out = ['"""A generated module: a class of small methods."""', "", "", "class Shapes:"]
    for i in range(methods):
        out += [
            f"    def area_{i}(self, width: float, height: float) -> float:",
            f'        """The area of shape {i}, scaled."""',
            "        if width < 0 or height < 0:",
            '            raise ValueError("negative size")',
            "        total = width * height",
            "        for factor in self.factors:",
            "            total = total * factor",
            "        return total",
            "",
        ]
    return "\n".join(out) + "\n"


@pytest.fixture()
def calibrated(store: SessionStore) -> SessionStore:
    """What a session learns: chat prompts at 3 bytes/token; map calls over code at the
    benchmark's figures (2.2 bytes/token for a size, 3.77 units/token for a text)."""
    for _ in range(3):
        store.record_calibration("testmodel", 3000, 1000)
        store.record_calibration("testmodel", 2200, 1000, "source", 3770)
    return store


def read(make_agent: AgentFactory, name: str) -> str:
    agent = make_agent(
        [Reply(tool_calls=[("read_file", {"path": name, "limit": 0})]), "done"],
        context_window=8192,
    )
    return agent.turn(f"read {name}").tool_results[0].content


def test_a_20_kb_python_file_that_fits_an_8k_window_raises_no_alert(
    make_agent: AgentFactory, workspace: Path, calibrated: SessionStore
) -> None:
    text = python_source(60)
    assert 18_000 < len(text.encode()) < 22_000
    (workspace / "shapes.py").write_text(text)
    agent = make_agent([], context_window=8192)
    budget = agent.budget.read_budget()
    assert not budget.fits(len(text.encode()), "prose")  # the prose ratio would alert
    assert not budget.fits(len(text.encode()), "source")  # so would code's size ratio alone
    assert estimate_tokens(text, budget.texts["source"], "source") <= budget.tokens
    assert read(make_agent, "shapes.py") == text  # read whole: no alert


def test_a_python_file_that_does_not_fit_still_raises_the_alert(
    make_agent: AgentFactory, workspace: Path, calibrated: SessionStore
) -> None:
    (workspace / "middle.py").write_text(python_source(110))  # read and estimated: too big
    (workspace / "huge.py").write_text(python_source(400))  # too big by its size alone
    for name in ("middle.py", "huge.py"):
        said = read(make_agent, name)
        assert said.startswith(f"File read cancelled: {name} is "), said
        assert "KB, about " in said and "tokens a read may take now" in said


def test_the_same_text_as_prose_is_estimated_as_prose(
    make_agent: AgentFactory, workspace: Path, calibrated: SessionStore
) -> None:
    text = python_source(60)
    (workspace / "shapes.txt").write_text(text)
    agent = make_agent([], context_window=8192)
    checked = agent.budget.read_budget().check(workspace / "shapes.txt")
    assert checked.tokens == estimate_tokens(text, agent.budget.bytes_per_token(), "prose")

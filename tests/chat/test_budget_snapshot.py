"""The budget is a snapshot per round: one tool turn reads the calibration a few times, not
once per budget question (counted through sqlite3's trace callback, statement by statement)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from harvey.session.store import SessionStore

from .conftest import AgentFactory


@pytest.fixture()
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement any connection opened from now on runs, in order."""
    seen: list[str] = []
    connect = sqlite3.connect

    def traced(*args: object, **kwargs: object) -> sqlite3.Connection:
        db = connect(*args, **kwargs)  # type: ignore[arg-type]
        db.set_trace_callback(seen.append)
        return db

    monkeypatch.setattr(sqlite3, "connect", traced)
    return seen


@pytest.fixture()
def store(tmp_path: Path, statements: list[str]) -> Iterator[SessionStore]:
    """The chat fixtures' store, opened after the trace is in place."""
    s = SessionStore(tmp_path / "home" / "sessions.db")
    yield s
    s.close()


def calibration_reads(statements: list[str]) -> int:
    return sum(1 for s in statements if s.startswith("SELECT") and "calibration_samples" in s)


@pytest.fixture()
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    """Every calibration ratio asked of the store (it answers repeats from its cache)."""
    asked: list[tuple[str, str, str]] = []
    real = SessionStore.calibration_ratio

    def counted(self: SessionStore, model: str, doc_type: str = "prose", measure: str = "units"):
        asked.append((model, doc_type, measure))
        return real(self, model, doc_type, measure)

    monkeypatch.setattr(SessionStore, "calibration_ratio", counted)
    return asked


def tool_turn(make_agent: AgentFactory, reads: int, *logs: list) -> None:
    """One turn: a round of ``reads`` file reads, then the reply; ``logs`` start empty."""
    calls = [("read_file", {"path": "notes.txt"})] * reads
    agent = make_agent([Reply(tool_calls=calls), "It is 42."])
    for log in logs:
        log.clear()
    outcome = agent.turn("what is the secret?")
    assert outcome.reply == "It is 42." and len(outcome.tool_results) == reads


@pytest.mark.parametrize("reads", [1, 3])
def test_a_round_reads_the_calibration_once_however_many_questions_it_asks(
    make_agent: AgentFactory,
    workspace: Path,
    statements: list[str],
    lookups: list[tuple[str, str, str]],
    reads: int,
) -> None:
    (workspace / "notes.txt").write_text("the secret is 42\n")
    tool_turn(make_agent, reads, statements, lookups)
    # Round one's prompt asks the text ratio; its tools, after the reply's sample, the
    # four a read needs (text and size, prose and source) once however many reads;
    # round two's prompt one; and the store re-reads after each of its two samples.
    # Before the snapshot every budget question asked again: 11 for one read, 25 for three.
    assert len(lookups) == 8, lookups
    # in SQL (sqlite3's trace): what the store's cache does not answer
    assert 0 < calibration_reads(statements) <= 6, statements


def test_the_snapshot_is_a_value_of_its_round(make_agent: AgentFactory) -> None:
    """Later changes (a new message, a recalled memory) do not change a snapshot taken."""
    agent = make_agent(["ok"])
    before = agent.budget.snapshot()
    agent.budget.keep_for_session("remember: the user likes tea")
    agent.turn("hello")
    assert before.history == () and before.injected == ()
    after = agent.budget.snapshot()
    assert after.injected == ("remember: the user likes tea",) and len(after.history) == 2
    assert after.remaining() < before.remaining()

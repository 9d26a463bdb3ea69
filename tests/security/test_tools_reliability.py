"""Fault tests for "nothing lost" and "clean errors for bad input", through real ``harvey``.

Each test plays one fault the hostile probe found — a history larger than the
window, a store that refuses a commit, processes racing on a fresh home, runs
that fail before their first turn, read-only commands, undecodable bytes,
duplicate config keys, a bad URL, a 300-character file name — and asserts what
the person sees (one line, the right exit status) and what was (not) written.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harvey.llm.scripted import Reply
from harvey.messages import Message
from harvey.session.recorder import Recorder
from harvey.session.records import TurnRecord
from harvey.session.store import SessionStore
from tests.cli.conftest import assert_one_line_error
from tests.fakes.base import HTTPFailure
from tests.fakes.openai import FakeOpenAI
from tests.fakes.quoting import QuotingOpenAI

WINDOW = 8192
TEN_MB = 10 * 1024 * 1024


def harvey(
    workspace: Path,
    *args: str | bytes,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    prefix: Sequence[str] = ("-m", "harvey"),
) -> subprocess.CompletedProcess[str]:
    """The real command; ``args`` may be bytes (argv that is not valid UTF-8)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, *prefix, *args],
        cwd=workspace,
        input=input if input is not None else b"",
        env=full_env,
        capture_output=True,
        timeout=300,
    )
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


def openai(srv: FakeOpenAI) -> tuple[str, ...]:
    return ("--backend", "openai", "--base-url", srv.url)


def request_tokens(body: object) -> int:
    """A request's size by the 4-bytes-per-token estimate (the whole JSON body)."""
    return len(json.dumps(body).encode("utf-8")) // 4


def big_history(turns: int = 200) -> list[Message]:
    """About 10 MB of conversation, the oldest turn first."""
    size = TEN_MB // (2 * turns)
    history: list[Message] = []
    for i in range(turns):
        history.append(Message("user", f"old question {i} " + "q" * size))
        history.append(Message("assistant", f"old answer {i} " + "a" * size))
    history += [Message("user", "remember the word PAPAYA"), Message("assistant", "PAPAYA, noted.")]
    return history


# -- 1. history beyond the window ----------------------------------------------------------


def assert_fitted(srv: FakeOpenAI, proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    requests = srv.chat_requests
    assert requests, proc.stderr[-2000:]
    assert max(request_tokens(r) for r in requests) < WINDOW
    sent = requests[0]["messages"]
    assert any(m["role"] == "system" and "left out" in m["content"] for m in sent)
    assert any("PAPAYA" in (m.get("content") or "") for m in sent)  # the newest turns are kept
    shown = " ".join((proc.stdout + proc.stderr).split())  # rich wraps long lines
    assert "earlier messages" in shown and "left out of the prompt" in shown


@pytest.mark.slow
def test_continue_with_a_10mb_history_never_sends_over_the_window(
    victim_workspace: Path, isolated_env: Path
) -> None:
    store = SessionStore(isolated_env / "sessions.db")
    sid = store.create_session(victim_workspace.resolve(), "fake-model")
    history = big_history()
    store.add_turn(sid, history)
    store.close()
    with FakeOpenAI([Reply("It was PAPAYA.")], context_window=WINDOW) as srv:
        proc = harvey(victim_workspace, "--continue", *openai(srv), input=b"which word was it?\n")
        assert_fitted(srv, proc)
    assert "It was PAPAYA." in proc.stdout
    store = SessionStore(isolated_env / "sessions.db")
    kept = store.messages(sid)
    store.close()
    assert kept[: len(history)] == history  # sessions.db keeps everything as it was
    assert [m.content for m in kept[len(history) :]] == ["which word was it?", "It was PAPAYA."]


@pytest.mark.slow
def test_continue_file_with_a_10mb_history_never_sends_over_the_window(
    victim_workspace: Path, tmp_path: Path
) -> None:
    recorder = Recorder(tmp_path / "big.spmd", user="tester", model="m", backend="openai")
    history = big_history(turns=100)
    for user, reply in zip(history[::2], history[1::2], strict=True):
        recorder.record_turn(
            TurnRecord(
                user="tester", model="m", workspace=".", user_text=user.content, reply=reply.content
            )
        )
    recorder.close()
    assert (tmp_path / "big.spmd").stat().st_size > TEN_MB
    with FakeOpenAI([Reply("It was PAPAYA.")], context_window=WINDOW) as srv:
        proc = harvey(
            victim_workspace,
            "--continue-file",
            str(tmp_path / "big.spmd"),
            *openai(srv),
            input=b"which word was it?\n",
        )
        assert_fitted(srv, proc)


# -- 2. a reply whose commit fails -----------------------------------------------------------

DISK_FULL = """
import sys
from harvey.errors import StoreError
from harvey.session.store import SessionStore

def full(self, session_id, messages):
    raise StoreError(f"session store {self.path}: database or disk is full")

SessionStore.add_turn = full
from harvey.cli import main
main(sys.argv[1:], prog_name="harvey")
"""


def test_run_prints_a_reply_the_store_refused_then_the_error(victim_workspace: Path) -> None:
    with FakeOpenAI([Reply("the precious answer")]) as srv:
        proc = harvey(victim_workspace, "run", "question", *openai(srv), prefix=("-c", DISK_FULL))
    assert proc.stdout == "the precious answer\n"
    assert_one_line_error(proc, 1, "not saved", "disk is full")
    spmd = next((victim_workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert "the precious answer" in spmd  # the session file still has it


@pytest.mark.slow
def test_repl_prints_a_reply_the_store_refused_then_the_error(victim_workspace: Path) -> None:
    with FakeOpenAI([Reply("the precious answer"), Reply("second answer")]) as srv:
        proc = harvey(
            victim_workspace, *openai(srv), input=b"question\nagain\n", prefix=("-c", DISK_FULL)
        )
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())  # rich wraps long lines
    assert "the precious answer" in out and "second answer" in out  # the REPL goes on
    first_error = out.index("error:")
    assert out.index("the precious answer") < first_error
    assert "not saved" in out and "disk is full" in out
    assert "Traceback" not in proc.stderr


# -- 3. processes racing on a fresh HARVEY_HOME ---------------------------------------------


@pytest.mark.slow
def test_four_runs_starting_on_a_fresh_home_all_succeed(
    victim_workspace: Path, tmp_path: Path
) -> None:
    with FakeOpenAI([], default_reply=Reply("ok")) as srv:
        for attempt in range(3):
            home = tmp_path / f"fresh-home-{attempt}"
            env = {"HARVEY_HOME": str(home)}
            with ThreadPoolExecutor(4) as pool:
                runs = [
                    pool.submit(harvey, victim_workspace, "run", f"hi {i}", *openai(srv), env=env)
                    for i in range(4)
                ]
                procs = [run.result() for run in runs]
            for proc in procs:
                assert proc.returncode == 0, proc.stderr
                assert "already exists" not in proc.stderr
            db = sqlite3.connect(home / "sessions.db")
            assert db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 4
            db.close()


# -- 4. failed runs leave no session ----------------------------------------------------------


def session_count(home: Path) -> int:
    db = sqlite3.connect(home / "sessions.db")
    try:
        return int(db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])
    finally:
        db.close()


@pytest.mark.slow
def test_failed_runs_keep_no_session_and_continue_resumes_the_real_one(
    victim_workspace: Path, isolated_env: Path
) -> None:
    with FakeOpenAI([Reply("I will remember MANGO.")]) as srv:
        assert harvey(victim_workspace, "run", "remember MANGO", *openai(srv)).returncode == 0
    assert session_count(isolated_env) == 1
    # the server is gone: the run fails before its first turn
    down = ("--backend", "openai", "--base-url", "http://127.0.0.1:9/v1")
    assert_one_line_error(harvey(victim_workspace, "run", "hello?", *down), 1, "127.0.0.1:9")
    # a first turn that wrote todos, then failed
    todo = {"todos": [{"id": "1", "content": "half done", "status": "pending"}]}
    script = [Reply(tool_calls=[("todo_write", todo)]), HTTPFailure(400, "bad request")]
    with FakeOpenAI(script) as srv:
        proc = harvey(victim_workspace, "run", "plan it", *openai(srv))
        assert proc.returncode == 1 and len(srv.chat_requests) == 2, proc.stderr
    assert session_count(isolated_env) == 1
    db = sqlite3.connect(isolated_env / "sessions.db")
    assert db.execute("SELECT COUNT(*) FROM todos").fetchone()[0] == 0
    db.close()
    with FakeOpenAI([Reply("It was MANGO.")]) as srv:
        proc = harvey(victim_workspace, "--continue", *openai(srv), input=b"which fruit?\n")
        sent = srv.chat_requests[0]["messages"]
    assert proc.returncode == 0, proc.stderr
    assert any("remember MANGO" in (m.get("content") or "") for m in sent)
    assert session_count(isolated_env) == 1


@pytest.mark.slow
def test_a_failed_continue_file_run_keeps_no_session(
    victim_workspace: Path, isolated_env: Path, tmp_path: Path
) -> None:
    spmd = tmp_path / "old.spmd"
    recorder = Recorder(spmd, user="tester", model="m", backend="openai")
    recorder.record_turn(
        TurnRecord(user="tester", model="m", workspace=".", user_text="old q", reply="old a")
    )
    recorder.close()
    down = ("--backend", "openai", "--base-url", "http://127.0.0.1:9/v1")
    proc = harvey(victim_workspace, "--continue-file", str(spmd), *down, input=b"new q\n")
    assert "127.0.0.1:9" in proc.stdout + proc.stderr
    assert not (isolated_env / "sessions.db").exists() or session_count(isolated_env) == 0
    with FakeOpenAI([Reply("new a")]) as srv:
        proc = harvey(
            victim_workspace, "--continue-file", str(spmd), *openai(srv), input=b"new q\n"
        )
    assert proc.returncode == 0, proc.stderr
    db = sqlite3.connect(isolated_env / "sessions.db")
    rows = [r[0] for r in db.execute("SELECT content FROM messages ORDER BY id")]
    db.close()
    assert rows == ["old q", "old a", "new q", "new a"]
    assert session_count(isolated_env) == 1


# -- 5. commands that only read create nothing ------------------------------------------------


def assert_nothing_created(workspace: Path, home: Path) -> None:
    assert not home.exists(), sorted(home.rglob("*"))
    assert not (workspace / ".harvey").exists()


@pytest.mark.slow
def test_read_only_commands_create_nothing(victim_workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "never-created"
    env = {"HARVEY_HOME": str(home)}
    assert_one_line_error(
        harvey(victim_workspace, "sessions", "show", "nope", env=env), 2, "no session 'nope'"
    )
    listing = harvey(victim_workspace, "sessions", "list", env=env)
    assert listing.returncode == 0 and listing.stdout == ""
    assert listing.stderr.strip() == "no sessions"
    assert_one_line_error(
        harvey(victim_workspace, "sessions", "delete", "nope", env=env), 2, "no session"
    )
    prune = harvey(victim_workspace, "sessions", "prune", "--older-than", "1", env=env)
    assert prune.returncode == 0 and "deleted 0 sessions" in prune.stdout
    proc = harvey(
        victim_workspace, "--continue-file", "missing.spmd", "--backend", "openai", env=env
    )
    assert_one_line_error(proc, 2, "missing.spmd", "does not exist")
    assert_nothing_created(victim_workspace, home)


# -- 6. bytes that are not UTF-8 --------------------------------------------------------------


@pytest.mark.slow
def test_undecodable_prompt_stdin_and_instruction_are_replaced(victim_workspace: Path) -> None:
    (victim_workspace / "doc.md").write_text("A short document.\n")
    with QuotingOpenAI(answer="fine [1].") as srv:
        argv = harvey(victim_workspace, "run", b"caf\xe9 \xff bytes", *openai(srv))
        stdin = harvey(victim_workspace, "run", "-", *openai(srv), input=b"piped \xff\xfe\n")
        repl = harvey(victim_workspace, *openai(srv), input=b"typed \xc3(\n")
        analyze = harvey(
            victim_workspace, "analyze", "doc.md", "-i", b"sum \xff up", "--answer", "synthesis",
            *openai(srv),
        )  # fmt: skip
        sent = json.dumps(srv.chat_requests, ensure_ascii=False)
    for proc in (argv, stdin, repl, analyze):
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr and "UnicodeEncodeError" not in proc.stderr
        assert "fine" in proc.stdout
    for text in ("caf\ufffd \ufffd bytes", "piped \ufffd\ufffd", "typed \ufffd(", "sum \ufffd up"):
        assert text in sent, text


# -- 7. duplicate keys in harvey.yaml ---------------------------------------------------------


def test_duplicate_config_keys_are_one_line_naming_both(
    victim_workspace: Path, isolated_env: Path
) -> None:
    (victim_workspace / "harvey.yaml").write_text(
        "backend: openai\nchunking:\n  max_chunks: 3\n  overlap: none\n  max_chunks: 9\n"
    )
    proc = harvey(victim_workspace, "run", "hi")
    assert_one_line_error(proc, 2, "harvey.yaml", "'max_chunks'", "lines 3 and 5")
    assert not (isolated_env / "sessions.db").exists()


# -- 8. a base URL that is not a URL ----------------------------------------------------------


@pytest.mark.parametrize("where", ["flag", "route"])
def test_a_bad_base_url_is_exit_2_and_writes_nothing(
    victim_workspace: Path, tmp_path: Path, where: str
) -> None:
    home = tmp_path / "never-created"
    if where == "flag":
        args: tuple[str, ...] = ("run", "hi", "--backend", "openai", "--base-url", "not a url")
    else:
        (victim_workspace / "harvey.yaml").write_text(
            "routes:\n  - name: helper\n    base_url: 'not a url'\n"
        )
        args = ("run", "@helper hi", "--backend", "openai")
    proc = harvey(victim_workspace, *args, env={"HARVEY_HOME": str(home)})
    assert_one_line_error(proc, 2, "base_url", "not a url")
    assert_nothing_created(victim_workspace, home)


# -- 9. a 300-character file name --------------------------------------------------------------


def test_a_300_character_file_name_is_one_line(victim_workspace: Path, tmp_path: Path) -> None:
    long = "n" * 300 + ".spmd"
    home = tmp_path / "never-created"
    env = {"HARVEY_HOME": str(home)}
    proc = harvey(victim_workspace, "--continue-file", long, "--backend", "openai", env=env)
    assert_one_line_error(proc, 2, "too long")
    assert_one_line_error(harvey(victim_workspace, "sessions", "render", long, env=env), 2, "long")
    assert_one_line_error(harvey(victim_workspace, "run", "hi", "-w", long, env=env), 2, "long")
    assert_nothing_created(victim_workspace, home)


def test_repl_read_of_a_300_character_name_is_one_line_and_goes_on(
    victim_workspace: Path,
) -> None:
    with FakeOpenAI([Reply("still here")]) as srv:
        proc = harvey(
            victim_workspace, *openai(srv), input=f"/read {'r' * 300}.txt\nhello\n".encode()
        )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())  # rich wraps long lines
    assert out.count("error:") == 1
    assert "error:" in out and "name too long" in out.lower() and "rrrr" in out
    assert out.lower().index("name too long") < out.index("still here")  # and the REPL went on

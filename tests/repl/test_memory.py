"""Two REPL sessions in a row (the issue's "done when"): the first is mined on exit and
reviewed, the second starts with INT. CONTEXT RECALL and sends the memory to the model."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pexpect
import pytest

from harvey.llm.scripted import Reply
from harvey.memory.store import MemoryStore
from harvey.session.fountain import parse_session
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import harvey_argv, invoke_harvey

PROMPT = "tester>"
KEY = "ghp_0123456789abcdefghijABCDEFGHIJ0123"


def spawn(ws: Path, *args: str) -> pexpect.spawn:
    env = {**os.environ, "TERM": "xterm", "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1"}
    argv = harvey_argv(*args)
    return pexpect.spawn(
        argv[0], argv[1:], cwd=str(ws), env=env, encoding="utf-8",
        timeout=30, dimensions=(40, 120), logfile=sys.stderr if os.environ.get("PX") else None,
    )  # fmt: skip


def line(child: pexpect.spawn, text: str) -> None:
    child.send(text + "\r")


@pytest.mark.slow
def test_mined_on_exit_then_recalled(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "harvey.yaml").write_text("memory:\n  auto_mine_min_turns: 1\n")
    (ws / "README.md").write_text("# zebra\nA tool that counts stripes.\n")
    mined = json.dumps({"memories": [
        {"type": "tool_use", "kind": "pattern", "text": "count stripes with ./stripes --all",
         "evidence": [1], "confidence": 0.9},
        {"type": "project_fact", "kind": "fact", "text": f"the deploy token is {KEY}",
         "evidence": [1], "confidence": 0.9},
    ]})  # fmt: skip
    script = [
        Reply("Zebra is a small tool that counts stripes."),  # the profile, offered at start
        Reply("Use ./stripes --all."),
        Reply(mined),
        Reply("As remembered: ./stripes --all."),
    ]
    with FakeOpenAI(script, context_window=8192) as srv:
        args = ("--backend", "openai", "--base-url", srv.url)
        child = spawn(ws, *args)
        child.expect(r"No workspace profile yet")  # before the first prompt
        line(child, "y")
        child.expect("Keep this profile")
        line(child, "y")
        child.expect("profile saved as workspace_profile_")
        child.expect(PROMPT)
        line(child, f"how do I count stripes? my token is {KEY}")
        child.expect("stripes --all")
        child.expect(PROMPT)
        line(child, "/exit")
        child.expect("Mine it for memories")
        line(child, "y")
        child.expect("1 rejected")
        child.expect(r"\[a/e/s/q\]")
        line(child, "a")
        child.expect("1 memories stored")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0

        child = spawn(ws, *args)  # a profile exists: no offer, the prompt comes first
        child.expect([PROMPT, "No workspace profile"])
        assert child.after == PROMPT
        line(child, "how do I count stripes again?")
        child.expect("As remembered")
        child.expect(PROMPT)
        line(child, "/memory status")
        child.expect("recalled 2")
        child.expect(PROMPT)
        line(child, "/recall stripes")
        child.expect("stripes --all")
        child.expect(PROMPT)
        line(child, "/exit")
        child.expect("Mine it for memories")
        line(child, "n")
        child.expect(pexpect.EOF)
        child.close()
        requests = srv.chat_requests
    assert len(requests) == 4
    assert "Head of README.md" in requests[0]["messages"][0]["content"]
    assert requests[2]["response_format"]["type"] == "json_schema"
    # the profile saved before the first prompt (memory.db did not exist when the session
    # opened) is recalled at that session's first turn
    first = "\n".join(m["content"] for m in requests[1]["messages"] if m["role"] == "system")
    assert "counts stripes" in first
    system = "\n".join(m["content"] for m in requests[3]["messages"] if m["role"] == "system")
    assert "counts stripes" in system and "./stripes --all" in system  # the first answer's prompt
    files = sorted((ws / ".harvey" / "sessions").glob("*.spmd"), key=lambda f: f.stat().st_mtime)
    second = parse_session(files[-1])
    assert second.scenes[0].kind == "recall" and second.scenes[1].kind == "talking"
    sources = sorted(r.source for r in second.scenes[0].recall)
    assert sources == ["tool_use", "workspace_profile"]
    listed = harvey_list(ws)
    assert {m["type"] for m in listed} == {"tool_use", "workspace_profile"}
    tip = next(m for m in listed if m["type"] == "tool_use")
    assert tip["text"] == "count stripes with ./stripes --all" and tip["confidence"] == 0.5
    assert all(KEY not in m["text"] for m in listed)
    assert KEY.encode() not in (isolated_env / "memory.db").read_bytes()
    for recording in files:  # the key was typed in session 1: its recording redacts it
        assert KEY not in recording.read_text()


@pytest.mark.slow
def test_declined_profile_offer_is_not_repeated(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "HARVEY.md").write_text("Answer briefly.\n")
    with FakeOpenAI([Reply("one"), Reply("two")], context_window=8192) as srv:
        args = ("--backend", "openai", "--base-url", srv.url)
        child = spawn(ws, *args)
        child.expect("No workspace profile yet")
        line(child, "n")
        child.expect("not asked again")
        child.expect(PROMPT)
        line(child, "/exit")
        child.expect(pexpect.EOF)
        child.close()
        child = spawn(ws, *args)
        child.expect([PROMPT, "No workspace profile"])
        assert child.after == PROMPT
        line(child, "/memory profile")
        child.expect("no profile")
        child.expect(PROMPT)
        line(child, "/exit")
        child.expect(pexpect.EOF)
        child.close()
        assert srv.chat_requests == []  # a "no" costs no model call
    other = tmp_path / "other"  # the answer is this workspace's, not every workspace's
    other.mkdir()
    (other / "README.md").write_text("# other\n")
    with FakeOpenAI([], context_window=8192) as srv:
        child = spawn(other, "--backend", "openai", "--base-url", srv.url)
        child.expect("No workspace profile yet")
        child.sendcontrol("d")  # no answer: not remembered as a "no"
        child.expect(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    with MemoryStore(isolated_env / "memory.db") as store:
        assert store.choice(str(ws.resolve()), "profile_offer") == "declined"
        assert store.choice(str(other.resolve()), "profile_offer") is None


def harvey_list(ws: Path) -> list[dict[str, object]]:
    out = invoke_harvey("memory", "list", "--json", cwd=ws)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_memory_commands_on_a_fresh_home_make_no_file(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()  # no README, no HARVEY.md: nothing to profile, no offer
    with FakeOpenAI([], context_window=8192) as srv:
        child = spawn(ws, "--backend", "openai", "--base-url", srv.url)
        child.expect(PROMPT)
        line(child, "/memory")
        child.expect("no memories")
        child.expect(PROMPT)
        line(child, "/memory show tool_use_abcdef")
        child.expect(r"error: no memory 'tool_use_abcdef' \(no memories yet\)")
        child.expect(PROMPT)
        line(child, "/memory show")
        child.expect("error: usage: /memory")
        child.expect(PROMPT)
        line(child, "/recall builds")
        child.expect("no memories")
        child.expect(PROMPT)
        line(child, "/exit")
        child.expect(pexpect.EOF)
        child.close()
    assert not (isolated_env / "memory.db").exists()

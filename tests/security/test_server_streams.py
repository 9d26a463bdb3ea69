"""A hostile server's stream: too many tool calls, a reply without end, arguments
without end, counts no store can hold. Each is cut where it passes its bound
(``llm/reply_bounds.py``), nothing of the reply runs, and the turn ends with one line
that the session's recording keeps — through the real ``harvey run``."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harvey.cli.output import MAX_PENDING_TEXT, JsonOutput
from harvey.llm.reply_bounds import MAX_ARGUMENT_CHARS, MAX_REPLY_CHARS, MAX_TOOL_CALLS
from tests.fakes.hostile import Canned, HostileServer
from tests.harvey_process import run_harvey

SSE = {"content-type": "text/event-stream"}


def _event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def _write_call(index: int, arguments: str | None = None) -> dict[str, Any]:
    args = arguments or json.dumps({"path": f"f{index}.txt", "content": "pwned"})
    fragment = {"index": index, "id": f"c{index}", "type": "function"}
    return {"tool_calls": [{**fragment, "function": {"name": "write_file", "arguments": args}}]}


def _run(workspace: Path, body: Any, *args: str) -> tuple[Any, str]:
    """``harvey run`` against a server whose every chat answer is ``body``; (the process,
    every session recording's text)."""
    with HostileServer({"/v1/chat/completions": Canned(body, 200, SSE)}) as srv:
        proc = run_harvey(
            "run", "go", "--backend", "openai", "--base-url", srv.url, "--model", "m",
            "--allow-writes", *args, cwd=workspace, timeout=180,
        )  # fmt: skip
    return proc, _recordings(workspace)


def _recordings(workspace: Path) -> str:
    import os

    home = Path(os.environ["HARVEY_HOME"])
    found = [*workspace.rglob("*.spmd"), *home.rglob("*.spmd")]
    return "\n".join(p.read_text(encoding="utf-8") for p in found)


def _written(workspace: Path) -> list[str]:
    return sorted(p.name for p in workspace.glob("f*.txt"))


def test_a_reply_with_three_thousand_tool_calls_runs_none(victim_workspace: Path) -> None:
    def body() -> Iterator[bytes]:
        for index in range(3000):
            yield _event(_write_call(index))
        yield _event({}, "tool_calls")
        yield b"data: [DONE]\n\n"

    proc, recorded = _run(victim_workspace, body)
    note = f"more than {MAX_TOOL_CALLS} tool calls; none of them ran"
    assert proc.returncode == 0, proc.stderr
    assert note in proc.stdout and note in recorded
    assert _written(victim_workspace) == []


def test_thirty_two_calls_are_still_a_reply(victim_workspace: Path) -> None:
    """The bound is a bound, not a ban: a reply at it runs (the last call is refused
    only because the fake repeats the same reply until the rounds run out)."""
    batch = b"".join(_event(_write_call(i)) for i in range(MAX_TOOL_CALLS))
    body = batch + _event({}, "tool_calls") + b"data: [DONE]\n\n"
    proc, _ = _run(victim_workspace, body)
    assert "none of them ran" not in proc.stdout
    assert len(_written(victim_workspace)) == MAX_TOOL_CALLS


def _words(seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    vocabulary = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "su", "ta") for b in "bdgkmpst"]
    while True:
        sentence = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(5, 14)))
        yield sentence.capitalize() + ". "


def test_a_reply_without_end_is_cut_at_its_bound(victim_workspace: Path) -> None:
    def body() -> Iterator[bytes]:
        words = _words(1)
        while True:  # until Harvey hangs up
            yield _event({"content": "".join(next(words) for _ in range(20))})

    proc, recorded = _run(victim_workspace, body)
    note = f"the reply passed {MAX_REPLY_CHARS:,} characters"
    assert proc.returncode == 0, proc.stderr
    assert note in proc.stdout and note in recorded
    assert len(proc.stdout) <= MAX_REPLY_CHARS + 1000


def test_arguments_without_end_are_cut_and_nothing_runs(victim_workspace: Path) -> None:
    def body() -> Iterator[bytes]:
        yield _event(_write_call(0, '{"path": "f0.txt", "content": "'))
        while True:
            piece = {"index": 0, "function": {"arguments": "x" * 8192}}
            yield _event({"tool_calls": [piece]})

    proc, recorded = _run(victim_workspace, body)
    note = f"the arguments of write_file passed {MAX_ARGUMENT_CHARS:,} characters"
    assert proc.returncode == 0, proc.stderr
    assert note in proc.stdout and note in recorded
    assert _written(victim_workspace) == []


def test_calls_written_as_text_past_the_bound_run_none(victim_workspace: Path) -> None:
    calls = [
        {"name": "write_file", "arguments": {"path": f"f{i}.txt", "content": "pwned"}}
        for i in range(MAX_TOOL_CALLS + 8)
    ]
    body = _event({"content": json.dumps(calls)}, "stop") + b"data: [DONE]\n\n"
    proc, _ = _run(victim_workspace, body)
    assert proc.returncode == 0, proc.stderr
    assert _written(victim_workspace) == []


@pytest.mark.parametrize("count", [10**30, -5, 1.5, "12", True, float("inf")])
def test_token_counts_no_store_can_hold_are_not_kept(victim_workspace: Path, count: Any) -> None:
    usage = {"prompt_tokens": count, "completion_tokens": count, "total_tokens": count}
    raw = json.dumps(usage).replace("Infinity", "1e999")
    chunk = _event({"content": "Hello there."}, "stop").replace(
        b'"finish_reason": "stop"}]', b'"finish_reason": "stop"}], "usage": ' + raw.encode()
    )
    proc, recorded = _run(victim_workspace, chunk + b"data: [DONE]\n\n")
    assert proc.returncode == 0, proc.stderr
    assert "Hello there." in proc.stdout and "Hello there." in recorded
    import os

    with sqlite3.connect(Path(os.environ["HARVEY_HOME"]) / "sessions.db") as db:
        texts = [row[0] for row in db.execute("SELECT content FROM messages")]
    assert any("Hello there." in t for t in texts)


def test_stream_json_sends_a_long_line_in_parts(capsys: pytest.CaptureFixture[str]) -> None:
    out = JsonOutput("stream-json", "run")
    line = " ".join(f"word{i}" for i in range(400_000))  # 4.3 MB, no newline
    out.text(line[:1_000_000])
    out.text(line[1_000_000:])
    out.flush_text()
    events = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    texts = [e["text"] for e in events if e["type"] == "text"]
    assert "".join(texts) == line
    assert max(len(t) for t in texts) <= MAX_PENDING_TEXT
    assert len(texts) > len(line) // MAX_PENDING_TEXT


def test_reasoning_without_end_is_cut_at_the_reply_bound(victim_workspace: Path) -> None:
    """A reasoning field no TextDelta carries is still part of the reply's length."""

    def body() -> Iterator[bytes]:
        while True:
            yield _event({"reasoning_content": "I am still thinking about it. " * 200})

    proc, recorded = _run(victim_workspace, body)
    note = f"the reply passed {MAX_REPLY_CHARS:,} characters"
    assert proc.returncode == 0, proc.stderr
    assert note in proc.stdout and note in recorded


@pytest.mark.parametrize("part", ["name", "id"])
def test_a_call_whose_name_or_id_never_ends_runs_nothing(victim_workspace: Path, part: str) -> None:
    def body() -> Iterator[bytes]:
        yield _event(_write_call(0))
        while True:
            piece: dict[str, Any] = {"index": 0, "function": {}}
            if part == "name":
                piece["function"]["name"] = "write_file_" * 100
            else:
                piece["id"] = "c" * 100_000
            yield _event({"tool_calls": [piece]})
            if part == "id":
                yield _event({}, "tool_calls") + b"data: [DONE]\n\n"
                return

    proc, recorded = _run(victim_workspace, body)
    assert proc.returncode == 0, proc.stderr
    assert "name or id passed 256 characters" in proc.stdout + recorded
    assert _written(victim_workspace) == []

"""``--output-format json|stream-json`` on ``harvey run`` and ``harvey analyze``, parsed line by line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harvey.cli.output import SCHEMA_VERSION, requested_format
from harvey.llm.scripted import Reply
from tests.fakes.quoting import ANSWER, QuotingOpenAI
from tests.fakes.servers import FakeOpenAI

from .conftest import Run

RESULT_KEYS = {
    "type", "version", "command", "session_id", "model", "resumed", "reply", "usage",
    "tool_calls", "writes", "warnings", "error", "exit",
}  # fmt: skip


def lines(stdout: str) -> list[dict[str, Any]]:
    """Every stdout line as JSON: anything else on stdout fails here."""
    return [json.loads(line) for line in stdout.splitlines()]


def one(stdout: str) -> dict[str, Any]:
    (document,) = lines(stdout)
    assert set(document) >= RESULT_KEYS and document["type"] == "result"
    assert document["version"] == SCHEMA_VERSION
    return document


def test_json_run_with_a_tool_call(harvey: Run, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    script = [Reply(tool_calls=[("read_file", {"path": "a.txt"})]), Reply("It says alpha.")]
    with FakeOpenAI(script) as srv:
        proc = harvey(
            "run", "read a.txt", "--output-format", "json", "--backend", "openai",
            "--base-url", srv.url, "-m", "fake-model",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = one(proc.stdout)
    assert doc["reply"] == "It says alpha." and doc["exit"] == 0 and doc["error"] is None
    assert doc["model"] == "fake-model" and len(doc["session_id"]) == 32
    assert doc["tool_calls"] == [
        {"name": "read_file", "arguments": {"path": "a.txt"}, "status": "ok"}
    ]
    usage = doc["usage"]
    assert usage["calls"] == 2 and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["source"] in ("server", "estimated", "mixed")
    assert "analysis" not in doc


def test_stream_json_events_then_the_result(harvey: Run, workspace: Path) -> None:
    script = [
        Reply("Writing it.", tool_calls=[("write_file", {"path": "b.txt", "content": "x"})]),
        Reply("line one\nline two"),
    ]
    with FakeOpenAI(script) as srv:
        proc = harvey(
            "run", "write b.txt", "--output-format", "stream-json", "--backend", "openai",
            "--base-url", srv.url,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    events = lines(proc.stdout)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "result"
    assert kinds.index("write") < kinds.index("tool")  # the decision is made inside the call
    assert events[kinds.index("write")] == {"type": "write", "path": "b.txt", "approved": False}
    tool = events[kinds.index("tool")]
    assert tool["name"] == "write_file" and tool["status"].startswith("error: write refused")
    text = "".join(e["text"] for e in events if e["type"] == "text")
    assert text == "Writing it.line one\nline two"
    result = events[-1]
    assert result["reply"] == "line one\nline two"
    assert result["session_id"] == events[0]["session_id"] and result["exit"] == 0
    assert result["writes"] == [{"path": "b.txt", "approved": False}]
    assert not (workspace / "b.txt").exists()
    assert "refused to write b.txt" in proc.stderr  # the person's line stays on stderr


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
def test_unreachable_server_is_a_json_error(harvey: Run, workspace: Path, fmt: str) -> None:
    (workspace / "harvey.yaml").write_text("retries: 0\n")
    proc = harvey(
        "run", "hi", "--output-format", fmt, "--backend", "openai",
        "--base-url", "http://127.0.0.1:9/v1", env={"HARVEY_DEBUG": ""},
    )  # fmt: skip
    assert proc.returncode == 1
    events = lines(proc.stdout)
    result = events[-1]
    assert result["type"] == "result" and result["exit"] == 1 and result["reply"] is None
    assert "127.0.0.1:9" in result["error"]["message"]
    if fmt == "stream-json":
        assert events[-2]["type"] == "error" and events[-2]["exit"] == 1
    assert proc.stderr.startswith("harvey: ")


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--output-format", "json"),  # no PROMPT: click's own usage error
        ("run", "--output-format", "json", "--bogus", "hi"),
        ("--continue", "analyze", "a.txt", "-i", "x", "--output-format", "json"),
        ("run", "   ", "--output-format=json"),
    ],
)
def test_usage_errors_are_json_too(harvey: Run, args: tuple[str, ...]) -> None:
    proc = harvey(*args)
    assert proc.returncode == 2
    doc = one(proc.stdout)
    assert doc["exit"] == 2 and doc["error"]["kind"] == "UsageError"


def test_json_analyze_reports_chunks_and_reuse(harvey: Run, workspace: Path) -> None:
    doc_text = "\n\n".join(f"Paragraph {i}. " + "Some words here. " * 40 for i in range(12))
    (workspace / "doc.md").write_text(doc_text)
    args = ("analyze", "doc.md", "-i", "Summarise", "--chunk-size", "2000", "--backend", "openai")
    with QuotingOpenAI() as srv:
        first = harvey(*args, "--base-url", srv.url, "--output-format", "stream-json")
    assert first.returncode == 0, first.stderr
    events = lines(first.stdout)
    chunks = [e for e in events if e["type"] == "chunk"]
    result = events[-1]
    assert result["reply"].startswith(ANSWER) and result["command"] == "analyze"
    assert result["version"] == 2
    assert result["analysis"] == {"chunks": len(chunks), "failed": 0, "reused": 0}
    assert len(chunks) >= 3 and all(c["status"] == "ok" for c in chunks)
    assert result["usage"]["calls"] >= len(chunks) + 1
    assert result["citations"] == [
        {"id": 1, "path": "doc.md", "lines": [1, 1], "pages": None,
         "quote": "Paragraph 0. Some words here.", "verified": True},
    ]  # fmt: skip
    (cited,) = [e for e in events if e["type"] == "citations"]
    assert cited["citations"] == result["citations"]
    assert "Processing chunk" not in first.stdout
    with QuotingOpenAI() as srv:
        again = harvey(*args, "--base-url", srv.url, "--output-format", "json")
    assert one(again.stdout)["analysis"]["reused"] == len(chunks)


def test_json_analyze_of_a_missing_file(harvey: Run) -> None:
    proc = harvey("analyze", "nope.md", "-i", "x", "--output-format", "json", "--backend", "openai")
    assert proc.returncode == 2
    doc = one(proc.stdout)
    assert "nope.md" in doc["error"]["message"] and doc["analysis"] == {
        "chunks": 0, "failed": 0, "reused": 0,
    }  # fmt: skip


def test_run_continue_json_carries_the_session(harvey: Run) -> None:
    with FakeOpenAI([Reply("one"), Reply("two")]) as srv:
        url = ("--backend", "openai", "--base-url", srv.url, "--output-format", "json")
        first = one(harvey("run", "first", *url).stdout)
        second = one(harvey("run", "-c", "second", *url).stdout)
    assert second["session_id"] == first["session_id"]
    assert (first["resumed"], second["resumed"]) == (False, True)


def test_raw_is_for_text_output(harvey: Run) -> None:
    proc = harvey("run", "hi", "--raw", "--output-format", "json", "--backend", "openai")
    assert proc.returncode == 2 and "--raw" in one(proc.stdout)["error"]["message"]


def test_requested_format_reads_the_raw_line() -> None:
    assert requested_format(["run", "--output-format", "stream-json", "x"]) == "stream-json"
    assert requested_format(["run", "--output-format=json"]) == "json"
    assert requested_format(["run", "--", "--output-format", "json"]) == "text"
    assert requested_format(["run", "--output-format", "xml"]) == "text"


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
def test_ctrl_c_ends_with_a_json_result(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    from harvey.cli.output import JsonOutput

    output = JsonOutput(fmt, "run")
    output.started("abc", "m", False)
    output.text("partial ")
    with pytest.raises(KeyboardInterrupt), output.guard():
        raise KeyboardInterrupt
    events = lines(capsys.readouterr().out)
    assert events[-1]["exit"] == 130 and events[-1]["error"]["kind"] == "Interrupted"
    assert events[-1]["session_id"] == "abc"
    if fmt == "stream-json":
        assert [e["type"] for e in events] == ["start", "text", "error", "result"]


def test_stream_json_folder_analysis_reports_files(harvey: Run, workspace: Path) -> None:
    (workspace / "docs").mkdir()
    for name in ("a.md", "b.md"):
        (workspace / "docs" / name).write_text(f"# {name}\n\n" + "Some words here. " * 30)
    with QuotingOpenAI() as srv:
        proc = harvey(
            "analyze", "docs", "-i", "Summarise", "--output-format", "stream-json",
            "--backend", "openai", "--base-url", srv.url,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    events = lines(proc.stdout)
    files = [e for e in events if e["type"] == "file"]
    assert sorted(e["name"] for e in files) == ["docs/a.md", "docs/b.md"]
    assert [e["done"] for e in files] == [1, 2] and all(e["total"] == 2 for e in files)
    result = events[-1]
    assert result["reply"].startswith(ANSWER) and result["analysis"]["chunks"] >= 2
    assert [c["path"] for c in result["citations"]] == ["docs/a.md"]

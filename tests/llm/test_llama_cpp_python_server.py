"""Harvey end to end against a real llama-cpp-python server (``python -m llama_cpp.server``)
serving the embedded model's GGUF: a REPL turn and ``harvey analyze`` (``harvey run`` is
``test_llm_local``'s). That server runs one request at a time and interrupts a running
stream when the next arrives; Harvey must recognise it, and store no empty map result at
any concurrency — even one forced with ``--concurrency``.
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import pexpect
import pytest

from harvey.analysis.evidence import ChunkEvidence
from tests.harvey_process import harvey_argv, run_harvey

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("embedded_model")]

DOC = "\n\n".join(  # two chunks of 600 bytes: two map calls and a synthesis
    [
        "In 1871 Samuel Harrow founded the Harrow Bay Water Company. " * 5,
        "In 1893 the company built the reservoir on Gull Hill for four thousand people. " * 5,
    ]
)


def _env(tmp_path: Path) -> dict[str, str]:
    return {"HARVEY_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}


@pytest.mark.parametrize("concurrency", [None, "2"], ids=["found-out", "forced-2"])
def test_analyze_stores_no_empty_map_result(
    llama_server: str, tmp_path: Path, concurrency: str | None
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "doc.md").write_text(DOC)
    forced = ["--concurrency", concurrency] if concurrency else []
    proc = run_harvey(
        "analyze", "doc.md", "-i", "Name the year and the event in one short sentence.",
        "--backend", "openai", "--base-url", llama_server, "--chunk-size", "600", *forced,
        "--evidence", "model",
        cwd=ws, env=_env(tmp_path), timeout=600,
    )  # fmt: skip
    spmd = next((ws / ".harvey" / "sessions").glob("*.spmd")).read_text()
    statuses = re.findall(r"\[\[chunk-result: \d+/(\d+) — ([^\]]*)\]\]", spmd)
    assert statuses, spmd
    db = sqlite3.connect(tmp_path / "home" / "sessions.db")
    stored = [row[0] for row in db.execute("SELECT text FROM map_results")]
    db.close()
    assert all(ChunkEvidence.from_json(text) for text in stored), stored  # records, never empty
    ok = [s for _n, s in statuses if s.startswith("ok")]
    assert len(stored) == len(ok)  # what is stored is what was recorded ok
    for _n, status in statuses:
        assert status.startswith(("ok", "skipped", "error: stream ended early", "error: empty"))
    if concurrency is None:  # recognised: one call at a time, every answer whole
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert all(s.startswith(("ok", "skipped")) for _n, s in statuses) and proc.stdout.strip()
    elif all(s.startswith("error") for _n, s in statuses):
        assert proc.returncode == 1 and "no synthesis" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_repl_turn(llama_server: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = dict(os.environ)
    env.update(_env(tmp_path))
    env.update({"TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "120", "LINES": "40"})
    env.update({"USER": "tester", "LOGNAME": "tester"})
    argv = harvey_argv("--backend", "openai", "--base-url", llama_server)
    child = pexpect.spawn(
        argv[0], argv[1:], cwd=str(ws), env=env, encoding="utf-8", timeout=240,
        dimensions=(40, 120),
    )  # fmt: skip
    try:
        child.expect("tester>")
        child.send("What is the capital of France? One word.\r")
        child.expect(r"[A-Za-z]{3,}")  # an answer, streamed back
        child.expect("tester>")
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)
    db = sqlite3.connect(tmp_path / "home" / "sessions.db")
    replies = [r[0] for r in db.execute("SELECT content FROM messages WHERE role = 'assistant'")]
    db.close()
    assert replies and all(reply.strip() for reply in replies)


def test_the_model_choosing_its_evidence_gets_the_schema_through(
    llama_server: str, tmp_path: Path
) -> None:
    """llama-cpp-python's server refuses OpenAI's ``response_format: json_schema`` (its
    validation knows ``text`` and ``json_object``, with a ``schema`` beside it): the client
    asks again in that form, and the model's choices arrive as records."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "doc.md").write_text(DOC)
    proc = run_harvey(
        "analyze", "doc.md", "-i", "In which years was something founded or built?",
        "--backend", "openai", "--base-url", llama_server, "--chunk-size", "600",
        "--evidence", "choose",
        cwd=ws, env=_env(tmp_path), timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    spmd = next((ws / ".harvey" / "sessions").glob("*.spmd")).read_text()
    statuses = re.findall(r"\[\[chunk-result: \d+/\d+ — ([^\]]*)\]\]", spmd)
    assert statuses and all(s.startswith(("ok", "skipped")) for s in statuses), statuses


def test_a_prompt_longer_than_the_servers_window_is_said_to_be(
    llama_server: str, tmp_path: Path
) -> None:
    """The server (``--n_ctx 2048``, which Harvey cannot ask it for) drops a streamed request
    whose prompt is longer than its window, without an error: Harvey must not call that
    "cannot reach", and must say what to set."""
    ws = tmp_path / "ws"
    ws.mkdir()
    prompt = "Summarise this. " + "The reservoir on Gull Hill held the town's water. " * 300
    proc = run_harvey(
        "run", prompt, "--backend", "openai", "--base-url", llama_server,
        cwd=ws, env=_env(tmp_path), timeout=300,
    )  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    # before its headers are out or after, by the timing of its threads: either way, one line
    said = ("closed the connection without answering", "stream ended early")
    assert any(s in lines[-1] for s in said), proc.stderr
    assert "--n_ctx" in lines[-1] and "context_window" in lines[-1]
    assert "cannot reach" not in proc.stderr

"""A ``harvey analyze`` killed with SIGKILL resumes without repeating finished calls."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.conftest import Run
from tests.fakes.quoting import QuotingLlamaCpp, map_requests
from tests.harvey_process import harvey_argv

CHUNKS_ARGS = ("--chunk-size", "1000", "--yes", "--concurrency", "1")


def _doc(workspace: Path) -> None:
    text = "\n\n".join(f"Paragraph {i}. " + "Some words here. " * 30 for i in range(24))
    (workspace / "doc.md").write_text(text)


def _stored() -> int:
    db = Path(os.environ["HARVEY_HOME"]) / "sessions.db"
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM map_results").fetchone()[0])


@pytest.mark.slow
def test_resume_after_kill_9_and_fresh(harvey: Run, workspace: Path) -> None:
    _doc(workspace)
    with QuotingLlamaCpp(delay_per_call=0.1) as srv:
        args = ["analyze", "doc.md", "-i", "Summarise", "--backend", "openai"]
        args += ["--endpoint", srv.url, *CHUNKS_ARGS]
        proc = subprocess.Popen(
            harvey_argv(*args),
            cwd=workspace,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while srv.calls < 6 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        done = _stored()
        assert done >= 4  # the finished calls were written as they returned
        srv.requests.clear()
        second = harvey(*args)
        assert second.returncode == 0, second.stderr
        first_total = done + srv.calls - 1  # what the second run made, minus the synthesis
        assert len(map_requests(srv)) == srv.calls - 1
        assert f"reused {done} of {first_total} map results" in second.stderr
        srv.requests.clear()
        third = harvey(*args)  # everything stored: only the synthesis
        assert third.returncode == 0 and srv.calls == 1, third.stderr
        srv.requests.clear()
        fresh = harvey(*args, "--fresh")
        assert fresh.returncode == 0 and srv.calls == first_total + 1, fresh.stderr
        assert "reused" not in fresh.stderr


def test_sessions_delete_removes_stored_results(harvey: Run, workspace: Path) -> None:
    _doc(workspace)
    with QuotingLlamaCpp() as srv:
        args = ["analyze", "doc.md", "-i", "Summarise", "--backend", "openai"]
        assert harvey(*args, "--base-url", srv.url, *CHUNKS_ARGS).returncode == 0
    assert _stored() > 0
    listing = harvey("sessions", "list")
    session_id = listing.stdout.split()[0]
    assert harvey("sessions", "delete", session_id).returncode == 0
    assert _stored() == 0

"""``harvey analyze FOLDER`` never sends the model a file from outside the workspace."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import run_harvey


def _analyze(workspace: Path, *paths: str) -> tuple[subprocess.CompletedProcess[str], str, int]:
    """Run ``harvey analyze PATHS``; what it sent the model, and how many chat calls."""
    with FakeOpenAI([], default_reply="r") as srv:
        model = ("--backend", "openai", "--base-url", srv.url, "--yes")
        proc = run_harvey("analyze", *paths, "-i", "x", *model, cwd=workspace)
        sent = json.dumps([r.body for r in srv.requests])
        chats = len(srv.chat_requests)
    return proc, sent, chats


def test_links_out_of_the_workspace_are_not_followed(victim_workspace: Path, outside: Path) -> None:
    docs = victim_workspace / "docs"
    docs.mkdir()
    (docs / "ok.md").write_text("inside\n")
    (docs / "link.txt").symlink_to(outside / "secret.txt")
    (docs / "dirlink").symlink_to(outside, target_is_directory=True)
    proc, sent, chats = _analyze(victim_workspace, "docs")
    assert proc.returncode == 0, proc.stderr
    assert chats == 1 and "inside" in sent and "outside secret" not in sent


@pytest.mark.slow
def test_a_path_leading_out_is_refused_before_any_call(
    victim_workspace: Path, outside: Path
) -> None:
    (victim_workspace / "ok.md").write_text("inside\n")
    (victim_workspace / "out").symlink_to(outside, target_is_directory=True)
    for target in ("out", str(outside), "../outside"):
        proc, sent, chats = _analyze(victim_workspace, "ok.md", target)
        assert proc.returncode == 2 and "outside the workspace" in proc.stderr, proc.stderr
        assert chats == 0 and "outside secret" not in sent

"""The embedded 135M model mines with grammar-constrained JSON, with no network."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bench.bench_memory import make_recordings


@pytest.mark.slow
@pytest.mark.usefixtures("embedded_model")
def test_embedded_model_mines_valid_json(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (recording,) = make_recordings(tmp_path)[:1]
    proc = subprocess.run(
        [sys.executable, "-m", "harvey", "memory", "mine", str(recording), "--yes",
         "--backend", "local"],
        cwd=ws, env=dict(os.environ), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "memories stored" in proc.stdout
    assert "did not answer with the memory JSON" not in proc.stderr
    status = subprocess.run(
        [sys.executable, "-m", "harvey", "memory", "status", "--json"],
        cwd=ws, env=dict(os.environ), capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert '"mined_recordings": 1' in status.stdout

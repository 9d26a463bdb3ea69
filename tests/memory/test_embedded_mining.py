"""The embedded 135M model mines with grammar-constrained JSON, with no network."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.bench_memory import make_recordings

from tests.harvey_process import run_harvey


@pytest.mark.slow
@pytest.mark.usefixtures("embedded_model")
def test_embedded_model_mines_valid_json(tmp_path: Path, isolated_env: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (recording,) = make_recordings(tmp_path)[:1]
    proc = run_harvey(
        "memory", "mine", str(recording), "--yes", "--backend", "local", cwd=ws, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    assert "memories stored" in proc.stdout
    assert "did not answer with the memory JSON" not in proc.stderr
    status = run_harvey("memory", "status", "--json", cwd=ws, check=True)
    assert '"mined_recordings": 1' in status.stdout

"""Constrained mode with the real embedded model (SmolLM2-135M): its turn is a
grammar-valid choice, so it reads the file its prompt names instead of guessing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harvey_process import invoke_harvey


@pytest.mark.slow
@pytest.mark.usefixtures("embedded_model", "isolated_env")
def test_the_embedded_model_reads_the_named_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("The spare key is under the blue pot.\n")
    (ws / "harvey.yaml").write_text("tools:\n  max_rounds: 2\n")
    proc = invoke_harvey(
        "run", "Read notes.md: where is the spare key?", "--backend", "local", cwd=ws
    )
    assert proc.returncode == 0, proc.stderr
    (recording,) = (ws / ".harvey" / "sessions").glob("*.spmd")
    text = recording.read_text()
    assert '[[tool: read_file({"path":"notes.md"}) — ok — constrained]]' in text
    assert proc.stdout.strip() and not proc.stdout.lstrip().startswith('{"tool"')

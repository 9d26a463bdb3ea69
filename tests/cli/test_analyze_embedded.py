"""`harvey analyze` with the embedded SmolLM2 model, for real (slow)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Run

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("embedded_model")]


def test_analyze_with_the_embedded_model(harvey: Run, workspace: Path) -> None:
    parts = [
        "## The well\n\nIn 1853 Nathaniel Orme counted 142 wells in the town of Harrow Bay.",
        "## The reservoir\n\nThe Linmore reservoir opened on 14 June 1881 and held water for the town.",
        "## The dam\n\nThe Stennet dam failed on 3 March 1889 after a week of heavy rain.",
    ]
    (workspace / "history.md").write_text(
        "\n\n".join(p + " " + "It was a busy year. " * 20 for p in parts)
    )
    proc = harvey(
        "analyze",
        "history.md",
        "-i",
        "List the years mentioned.",
        "--backend",
        "local",
        "--chunk-size",
        "700",
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), "the synthesized answer is printed"
    assert "Processing chunk 1/" in proc.stderr
    spmd = next((workspace / ".harvey" / "sessions").glob("*.spmd")).read_text()
    assert "INT. CHUNK ANALYSIS — history.md" in spmd
    assert "[[synthesis: model=" in spmd and "— ok]]" in spmd

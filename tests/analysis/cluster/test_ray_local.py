"""``harvey analyze --executor ray`` end to end, Ray started on this machine for the run."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from harvey.analysis.evidence import ChunkEvidence
from tests.analysis.cluster.conftest import SYNTHESIS, EchoLlamaCpp, write_doc
from tests.cli.conftest import Run

ARGS = ("-i", "Summarise", "--backend", "openai", "--chunk-size", "1000", "--yes")


def test_analyze_on_a_ray_it_starts_itself(
    harvey: Run, workspace: Path, ray_env: dict[str, str]
) -> None:
    write_doc(workspace, paragraphs=8)
    with EchoLlamaCpp(slots=2, delay_per_call=0.05) as srv:
        proc = harvey(
            "analyze", "doc.md", *ARGS, "--endpoint", srv.url, "--executor", "ray",
            env=ray_env, timeout=180,
        )  # fmt: skip
        map_calls = srv.map_calls()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(SYNTHESIS)
    n = max(map_calls)
    assert sorted(map_calls) == list(range(1, n + 1)) and n >= 4  # each chunk asked once
    stderr = [line for line in proc.stderr.splitlines() if line.strip()]
    assert stderr[-1].startswith("Synthesizing")  # progress, and nothing of Ray's
    assert [line for line in stderr if line.startswith("Processing chunk")] == [
        f"Processing chunk {i}/{n}…" for i in range(1, n + 1)
    ]
    with sqlite3.connect(Path(os.environ["HARVEY_HOME"]) / "sessions.db") as db:
        texts = [t for (t,) in db.execute("SELECT text FROM map_results")]
    stored = [ChunkEvidence.from_json(t) for t in texts]  # stored here, as verified records
    assert len(stored) == n and all(e is not None and len(e.records) == 1 for e in stored)
    # The session file has the partial results' notes in chunk order, each once.
    (session,) = workspace.glob(".harvey/sessions/*.spmd")
    text = session.read_text()
    notes = [line for line in text.splitlines() if line.startswith("[[chunk-result:")]
    assert len(notes) == n and all(f"{i}/{n}" in notes[i - 1] for i in range(1, n + 1)), notes
    # Ray's files went to the folder the test gave it, nothing to the user's home.
    assert (Path(ray_env["RAY_TMPDIR"]) / "ray").is_dir()

"""A quality run's results kept as they come, so an interrupted run resumes.

The embedded section alone costs two hours on two cores; a run cut short by a
restart would otherwise start again from nothing. With
``HARVEY_BENCH_QUALITY_JOURNAL=path`` every scored outcome is appended to that
file as one JSON line the moment it is known, and a later run with the same path
reuses every row it finds instead of running it again. The key names the model,
the case, the pipeline and the chunk size; nothing else is checked, so delete the
journal after changing Harvey or a case.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from bench.analysis_pipelines import Outcome
from bench.analysis_scoring import Score


class Journal:
    """Scored outcomes by key; a no-op without a path."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.rows: dict[str, tuple[Outcome, Score]] = {}
        if path is not None and path.exists():
            text = path.read_text(encoding="utf-8")
            if text and not text.endswith("\n"):  # the next row must not join a cut one
                with path.open("a", encoding="utf-8") as handle:
                    handle.write("\n")
            for line in text.splitlines():
                try:
                    row = json.loads(line)
                    outcome = Outcome(row["text"], row["seconds"], row["calls"], error=row["error"])
                    self.rows[row["key"]] = (outcome, Score(**row["score"]))
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by the interruption itself

    @classmethod
    def from_environment(cls) -> Journal:
        named = os.environ.get("HARVEY_BENCH_QUALITY_JOURNAL", "").strip()
        return cls(Path(named) if named else None)

    @staticmethod
    def key(model: str, case: str, pipeline: str, size: object = "auto") -> str:
        return f"{model}|{case}|{pipeline}|{size}"

    def get(self, key: str) -> tuple[Outcome, Score] | None:
        return self.rows.get(key)

    def put(self, key: str, outcome: Outcome, score: Score) -> None:
        self.rows[key] = (outcome, score)
        if self.path is None:
            return
        row = {
            "key": key,
            "text": outcome.text,
            "seconds": outcome.seconds,
            "calls": outcome.calls,
            "error": outcome.error,
            "score": asdict(score),
        }
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")

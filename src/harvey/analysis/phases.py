"""The map phase as one call, for a caller that runs its own analysis.

``run_chunked_analysis`` is one file's whole analysis: a start note, the map
phase, the reduce, the synthesis note. Whole-folder analysis
(``folder_analysis.py``) needs the map phase apart: one map phase over every
file's chunks, then one reduce over every file's records. This drives the same
engine (``engine.AnalysisRun``), so both kinds of analysis share its bounded
calls, stored results, split-on-too-long, cancel and evidence notes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from harvey.analysis.engine import AnalysisRun
from harvey.analysis.evidence import ChunkEvidence
from harvey.analysis.map_calls import MapExecutor, ResultCache
from harvey.analysis.params import AnalysisRecorder, ChunkAnalysisParams
from harvey.context.budget import BYTES_PER_TOKEN
from harvey.errors import Cancelled
from harvey.protocols import LLMClient, ProgressReporter


@dataclass
class MapOutcome:
    """The map phase alone: each chunk's evidence in chunk order (``None`` for a failed
    one), failed chunks (1-based), results reused from an earlier run, model calls made,
    and how many pool endpoints served it."""

    evidence: list[ChunkEvidence | None]
    failures: list[int]
    reused: int
    served: int | None
    first_failure: str = ""  # the first failed call's reason ("" when none failed)
    calls: int = 0
    run: AnalysisRun | None = None  # the engine that ran it (its query, for the reduce)


def run_map_phase(
    client: LLMClient,
    params: ChunkAnalysisParams,
    *,
    recorder: AnalysisRecorder | None,
    progress: ProgressReporter,
    cancel: threading.Event,
    results: ResultCache | None = None,
    executor: MapExecutor | None = None,
) -> MapOutcome:
    """Only the map phase, for a caller that reduces its own way (whole-folder analysis):
    ``[[chunk-result:]]`` and evidence notes, no start note, no synthesis; ``progress`` is
    not started or closed here. Raises ``Cancelled`` on cancel."""
    analysis = AnalysisRun(
        client, params, recorder, progress, cancel, client, None, BYTES_PER_TOKEN, results, executor
    )
    try:
        evidence, failures = analysis.map_phase()
    except KeyboardInterrupt as exc:
        cancel.set()
        raise Cancelled("chunk analysis cancelled") from exc
    return MapOutcome(
        evidence,
        failures,
        analysis.reused,
        analysis.served,
        analysis.first_failure,
        analysis.calls,
        analysis,
    )

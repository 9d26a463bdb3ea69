"""The map phase and the reduce phase as two calls, for a caller that runs its own analysis.

``run_chunked_analysis`` is one file's whole analysis: a start note, the map
phase, the reduce, the synthesis note. Whole-folder analysis
(``folder_analysis.py``) needs the halves apart: one map phase over every
file's chunks, then a reduce per file and one over the files. These two
functions drive the same engine (``analysis.AnalysisRun`` for the map phase,
``reduce.HierarchicalReduce`` for the reduce), so both kinds of analysis share
its bounded calls, stored results, split-on-too-long, cancel and hierarchical
reduce.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from harvey.analysis.chunking import ChunkConfig
from harvey.analysis.engine import AnalysisRun
from harvey.analysis.map_calls import MapExecutor, ResultCache, calls_at_once
from harvey.analysis.params import AnalysisRecorder, ChunkAnalysisParams
from harvey.analysis.progress import NullProgress, ProgressReporter
from harvey.analysis.reduce import HierarchicalReduce
from harvey.context.budget import BYTES_PER_TOKEN
from harvey.errors import Cancelled
from harvey.llm.base import LLMClient


@dataclass
class MapOutcome:
    """The map phase alone: partial results in chunk order, failed chunks (1-based),
    results reused from an earlier run, and how many pool endpoints served it."""

    partials: list[str]
    failures: list[int]
    reused: int
    served: int | None
    first_failure: str = ""  # the first failed call's reason ("" when none failed)


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
    ``[[chunk-result:]]`` notes, no start note, no synthesis; ``progress`` is not started
    or closed here. Raises ``Cancelled`` on cancel."""
    analysis = AnalysisRun(
        client, params, recorder, progress, cancel, client, None, BYTES_PER_TOKEN, results, executor
    )
    try:
        partials, failures = analysis.map_phase()
    except KeyboardInterrupt as exc:
        cancel.set()
        raise Cancelled("chunk analysis cancelled") from exc
    return MapOutcome(partials, failures, analysis.reused, analysis.served, analysis.first_failure)


def synthesize(
    client: LLMClient,
    instruction: str,
    partials: Sequence[str],
    *,
    cancel: threading.Event,
    config: ChunkConfig,
    context_window: int | None = None,
    bytes_per_token: float = BYTES_PER_TOKEN,
    progress: ProgressReporter | None = None,
) -> tuple[str, int]:
    """The reduce phase alone over ``partials`` (hierarchical when they do not fit
    ``context_window``): the text and the levels it took. No notes are written."""
    reduce = HierarchicalReduce(
        client,
        instruction,
        concurrency=calls_at_once(client, config),
        cancel=cancel,
        progress=progress if progress is not None else NullProgress(),
        context_window=context_window,
        bytes_per_token=bytes_per_token,
    )
    text = reduce.run(list(partials))
    return text, reduce.levels

"""Whole-folder analysis: the chunks of many files in one map phase, one answer from them all.

Map: every chunk of every file goes through ONE map phase (``run_map_phase``),
so a pool's least-in-flight dispatch sees all the work at once, stored results
are reused and written as calls return (resume), and one progress bar counts
chunks, finished files and failures for the whole run. How chunks are numbered,
located and keyed per file is ``folder_map.py``; each chunk's evidence is found as
in a one-file analysis (``mapper.py``), every record knowing its file and lines.

Reduce: the records of every file, merged without a model (the same words kept
once, the files in the run's order), then shown as the answer or written up by
the model and checked — the same reduce as one file's (``reduce.py``). No file
is summarised on its own first: a summary of summaries is where a small model
invents. ``--per-file`` shows each file's own evidence before the answer.

The session gets one INT. CHUNK ANALYSIS scene: ``[[chunk:]]`` with ``files=``,
the instruction, the ``[[chunk-result:]]`` and evidence notes numbered over the
whole run, ``[[chunk-served:]]`` for a pool, one ``[[chunk-file:]]`` per file in
order, the answer's citations and the ``[[synthesis:]]`` note.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harvey.analysis.answer import FRAMING, Answer, Intent, merge, one_line
from harvey.analysis.engine import every_call_failed
from harvey.analysis.evidence import Record
from harvey.analysis.finder import Finder
from harvey.analysis.folder_map import (
    FileChunks,
    FileProgress,
    FolderParams,
    common_value,
    every_chunk,
)
from harvey.analysis.map_calls import MapExecutor, ResultCache, first_line, pool_size
from harvey.analysis.mapper import Style
from harvey.analysis.params import AnalysisRecorder, AnswerKind
from harvey.analysis.phases import MapOutcome, run_map_phase
from harvey.analysis.reduce import ReduceSpec, reduce_evidence
from harvey.analysis.sizes import evidence_reason
from harvey.chunks.chunking import ChunkConfig
from harvey.context.budget import BYTES_PER_TOKEN
from harvey.errors import Cancelled, HarveyError, SynthesisError
from harvey.protocols import LLMClient, ProgressReporter
from harvey.session.records import ChunkFileNote


@dataclass
class FileAnswer:
    """What one file came to: its records, its chunks (1-based over the run), the failed
    ones and its status (``ok`` or ``error: every chunk failed``)."""

    name: str
    records: list[Record]
    first: int
    last: int
    failures: list[int]
    status: str

    @property
    def text(self) -> str:
        """The file's own evidence, a quote a line with its number."""
        if self.status != "ok":
            return f"[{self.name}: {self.status.removeprefix('error: ')}]"
        if not self.records:
            return f"{FRAMING}nothing in {self.name} answers the instruction."
        return "\n".join(f"- {one_line(r.quote)} [{r.id}]" for r in self.records)


@dataclass
class FolderResult:
    """The answer, every file's share (in order), and what was reused."""

    answer: Answer
    files: list[FileAnswer]
    failures: list[int]
    reused: int  # map results stored by an earlier run
    records: list[Record] = field(default_factory=list)
    calls: int = 0

    @property
    def text(self) -> str:
        return self.answer.text


@dataclass
class FolderRun:
    """One whole-folder analysis: the map client, what to record, where results live."""

    client: LLMClient
    instruction: str
    model: str  # the name recorded in the notes
    label: str  # what the scene heading shows: the folder, or the paths given
    config: ChunkConfig
    as_typed: str | None = None
    recorder: AnalysisRecorder | None = None
    synthesis_client: LLMClient | None = None
    context_window: int | None = None
    bytes_per_token: float = BYTES_PER_TOKEN
    results: ResultCache | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    executor: MapExecutor | None = None  # where the map calls run (None: here)
    evidence: Style = "harvey"
    answer: AnswerKind = "evidence"
    answer_chars: int | None = None
    finder: Finder | None = None  # what finds each chunk's evidence (None: the words)

    @property
    def synth(self) -> LLMClient:
        return self.synthesis_client if self.synthesis_client is not None else self.client

    def run(self, files: Sequence[FileChunks], progress: ProgressReporter) -> FolderResult:
        """Find every file's evidence, then answer from all of it; raises ``SynthesisError``
        when the synthesis fails and ``Cancelled`` on cancel."""
        if not files or any(f.total < 1 for f in files):
            raise ValueError("a folder analysis needs files of at least one chunk each")
        params = self._params(files)
        n = params.count
        self._start_note(files, n)
        tracker = FileProgress(progress, params)
        tracker.start(n)
        try:
            outcome = run_map_phase(
                self.client,
                params,
                recorder=self.recorder,
                progress=tracker,
                cancel=self.cancel,
                results=self.results,
                executor=self.executor,
            )
            if self.recorder is not None and outcome.served is not None:
                self.recorder.record_chunk_served(outcome.served, pool_size(self.client) or 0)
            if len(outcome.failures) == n:  # nothing to answer from: no invented answer
                raise SynthesisError(every_call_failed(n, outcome.first_failure))
            answers = self._per_file(params, outcome)
            if self.recorder is not None:
                for a in answers:
                    self.recorder.record_chunk_file(self._file_note(params, a))
            records = [r for e in outcome.evidence if e is not None for r in e.records]
            if self.answer == "synthesis" and records:
                tracker.synthesis_started(1, len(records), 1)
            answer = reduce_evidence(
                records,
                self._spec(params, outcome),
                self.synth,
                context_window=self.context_window,
                bytes_per_token=self.bytes_per_token,
                cancel=self.cancel,
            )
        except (Cancelled, KeyboardInterrupt) as exc:
            self.cancel.set()
            self._synthesis_note("error: cancelled")
            raise Cancelled("chunk analysis cancelled") from exc
        except SynthesisError as exc:
            self._synthesis_note(f"error: {str(exc).removeprefix('synthesis failed: ')}")
            raise
        except HarveyError as exc:  # a file could not be read to the end
            self._synthesis_note(f"error: {first_line(exc)}")
            raise
        finally:
            tracker.close()
        if self.recorder is not None:
            self.recorder.record_answer(answer)
        self._synthesis_note("ok", answer.kind)
        told = getattr(progress, "answered", None)  # JSON output: the citations
        if told is not None:
            told(answer)
        return FolderResult(
            answer, answers, outcome.failures, outcome.reused, records, outcome.calls
        )

    # --- the parts ----------------------------------------------------------------

    def _params(self, files: Sequence[FileChunks]) -> FolderParams:
        starts: list[int] = []
        total = 0
        for f in files:
            starts.append(total)
            total += f.total
        return FolderParams(
            filename=self.label,
            chunks=every_chunk(files),
            instruction=self.instruction,
            model=self.model,
            boundary=common_value(f.boundary for f in files),
            config=self.config,
            as_typed=self.as_typed,
            total=total,
            evidence=self.evidence,
            answer=self.answer,
            answer_chars=self.answer_chars,
            files=list(files),
            starts=starts,
            finder=self.finder,
        )

    def _spec(self, params: FolderParams, outcome: MapOutcome) -> ReduceSpec:
        model = self.synth.model if self.synthesis_client is not None else self.model
        return ReduceSpec(
            instruction=self.instruction,
            kind=self.answer,
            intent=_intent(outcome),
            why=evidence_reason(model, self.answer),
            budget_chars=self.answer_chars,
            order=params.names(),
            dropped=sum(len(e.dropped) for e in outcome.evidence if e is not None),
        )

    def _start_note(self, files: Sequence[FileChunks], n: int) -> None:
        if self.recorder is None:
            return
        pool = pool_size(self.client)
        extra: dict[str, Any] = {} if pool is None else {"endpoints": pool}
        self.recorder.record_chunk_analysis_start(
            self.label,
            n,
            self.model,
            common_value(f.boundary for f in files),
            max(f.chunk_size for f in files),
            self.as_typed if self.as_typed is not None else self.instruction,
            files=len(files),
            **extra,
        )

    def _per_file(self, params: FolderParams, outcome: MapOutcome) -> list[FileAnswer]:
        """Each file's share of the evidence, merged as the answer merges it."""
        failed = set(outcome.failures)
        intent = _intent(outcome)
        answers: list[FileAnswer] = []
        for file, start in zip(params.files, params.starts, strict=True):
            numbers = list(range(start + 1, start + file.total + 1))
            bad = [i for i in numbers if i in failed]
            mine = [
                r
                for e in outcome.evidence[start : start + file.total]
                if e is not None
                for r in e.records
            ]
            status = "error: every chunk failed" if len(bad) == len(numbers) else "ok"
            kept = merge(
                mine,
                exhaustive=intent.exhaustive,
                keep=intent.keep,
                relative_floor=intent.relative_floor,
            ).records
            answers.append(FileAnswer(file.name, kept, numbers[0], numbers[-1], bad, status))
        return answers

    def _file_note(self, params: FolderParams, answer: FileAnswer) -> ChunkFileNote:
        file, _ = params.file_at(answer.first)
        return ChunkFileNote(
            answer.name,
            answer.first,
            answer.last,
            file.boundary,
            file.chunk_size,
            len(answer.failures),
            answer.status,
            1,
            file.pages,
        )

    def _synthesis_note(self, status: str, answer: str = "") -> None:
        if self.recorder is not None:
            model = self.synth.model if self.synthesis_client is not None else self.model
            self.recorder.record_chunk_synthesis(model, status, answer=answer)


def per_file_markdown(result: FolderResult) -> str:
    """``--per-file``: a Markdown section per file (its own evidence), then the answer."""
    parts = [f"## {a.name}\n\n{a.text.strip()}\n" for a in result.files]
    parts.append(f"## Overall\n\n{result.text.strip()}\n")
    return "\n".join(parts)


def _intent(outcome: MapOutcome) -> Intent:
    """What the instruction asks of the answer, as the run's finder read it (with no run,
    every record: nothing was chosen)."""
    return outcome.run.mapper.finder.intent if outcome.run is not None else Intent(True)


__all__ = ["FileAnswer", "FolderResult", "FolderRun", "per_file_markdown"]

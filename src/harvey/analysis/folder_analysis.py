"""Whole-folder analysis: the chunks of many files in one map phase, then two reduces.

Map: every chunk of every file goes through ONE map phase (``run_map_phase``),
so a pool's least-in-flight dispatch sees all the work at once, stored results
are reused and written as calls return (resume), and one progress bar counts
chunks, finished files and failures for the whole run. How chunks are numbered,
prompted and keyed per file is ``folder_map.py``.

Reduce, per file: a file of one chunk has its map result as its answer; a file
of several is synthesised over its partial results (hierarchically when they do
not fit), these syntheses running side by side up to the map concurrency. A
file's synthesis is stored like a map result, so a run killed among them
resumes there too. A failed file synthesis does not stop the run (the file's
answer says it failed, its note records ``error: …``), as a failed chunk does
not stop a map phase.

Reduce, overall: the files' answers, each headed by its path, through the same
hierarchical reduce as one file's partials. That synthesis is never stored:
it is the one call a repeated run always makes.

The session gets one INT. CHUNK ANALYSIS scene: ``[[chunk:]]`` with ``files=``,
the instruction, the ``[[chunk-result:]]`` notes numbered over the whole run,
``[[chunk-served:]]`` for a pool, one ``[[chunk-file:]]`` per file in order, and
the ``[[synthesis:]]`` of the overall answer.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harvey.analysis.bounded_calls import POLL_SECONDS, first_line
from harvey.analysis.chunking import ChunkConfig
from harvey.analysis.folder_map import (
    FileChunks,
    FileProgress,
    FolderParams,
    common_value,
    digest,
    every_chunk,
    text_hash,
)
from harvey.analysis.map_support import MapExecutor, ResultCache, map_concurrency, pool_size
from harvey.analysis.params import AnalysisRecorder
from harvey.analysis.phases import run_map_phase, synthesize
from harvey.analysis.progress import ProgressReporter
from harvey.context.budget import BYTES_PER_TOKEN
from harvey.errors import Cancelled, HarveyError, SynthesisError
from harvey.llm.base import LLMClient
from harvey.session.records import ChunkFileNote


@dataclass
class FileAnswer:
    """What one file came to: its answer, its chunks (1-based over the run), the failed
    ones, the levels of its synthesis and its status (``ok`` or ``error: …``)."""

    name: str
    text: str
    first: int
    last: int
    failures: list[int]
    levels: int
    status: str


@dataclass
class FolderResult:
    """The overall answer, every file's answer (in order), and what was reused."""

    text: str
    files: list[FileAnswer]
    failures: list[int]
    levels: int
    reused: int  # map results stored by an earlier run
    reused_files: int  # file syntheses stored by an earlier run


def file_instruction(instruction: str, name: str) -> str:
    """The instruction a file's own synthesis is given: the user's, naming the file."""
    return f"{instruction}\n\n(The sections below are parts of the file {name}.)"


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

    @property
    def synth(self) -> LLMClient:
        return self.synthesis_client if self.synthesis_client is not None else self.client

    def run(self, files: Sequence[FileChunks], progress: ProgressReporter) -> FolderResult:
        """Map every chunk, synthesise each file, then the files; raises ``SynthesisError``
        when the overall synthesis fails and ``Cancelled`` on cancel."""
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
            answers, reused_files = self._per_file(
                params, outcome.partials, outcome.failures, tracker
            )
            if self.recorder is not None:
                for a in answers:
                    self.recorder.record_chunk_file(self._file_note(params, a))
            text, levels = self._overall(answers, tracker)
        except (Cancelled, KeyboardInterrupt) as exc:
            self.cancel.set()
            self._synthesis_note("error: cancelled", 1)
            raise Cancelled("chunk analysis cancelled") from exc
        except SynthesisError as exc:
            self._synthesis_note(f"error: {str(exc).removeprefix('synthesis failed: ')}", 1)
            raise
        except HarveyError as exc:  # a file could not be read to the end
            self._synthesis_note(f"error: {first_line(exc)}", 1)
            raise
        finally:
            tracker.close()
        self._synthesis_note("ok", levels)
        return FolderResult(text, answers, outcome.failures, levels, outcome.reused, reused_files)

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
            files=list(files),
            starts=starts,
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

    def _per_file(
        self,
        params: FolderParams,
        partials: list[str],
        failures: list[int],
        progress: FileProgress,
    ) -> tuple[list[FileAnswer], int]:
        """Each file's answer; the files of several chunks are synthesised side by side."""
        failed = set(failures)
        answers: list[FileAnswer] = []
        jobs: dict[int, list[str]] = {}
        for index, (file, start) in enumerate(zip(params.files, params.starts, strict=True)):
            numbers = list(range(start + 1, start + file.total + 1))
            bad = [i for i in numbers if i in failed]
            mine = partials[start : start + file.total]
            answer = FileAnswer(file.name, mine[0], numbers[0], numbers[-1], bad, 1, "ok")
            if len(bad) == len(numbers):
                answer.text = f"[{file.name}: every chunk failed] {mine[0]}"
                answer.status = "error: every chunk failed"
            elif file.total > 1:
                jobs[index] = mine
            answers.append(answer)
        if jobs:
            progress.files_synthesis_started(len(jobs))
        reused = self._synthesise_files(answers, jobs)
        return answers, reused

    def _file_key(self, name: str, partials: Sequence[str]) -> str:
        hashes = [text_hash(p) for p in partials]
        return digest(["folder-file", self.synth.model, self.instruction, name, hashes])

    def _synthesise_files(self, answers: list[FileAnswer], jobs: dict[int, list[str]]) -> int:
        """Run the file syntheses (stored ones reused); returns how many were reused."""
        reused = 0
        todo: dict[int, str] = {}
        for index, partials in jobs.items():
            key = self._file_key(answers[index].name, partials)
            stored = self.results.get(key) if self.results is not None else None
            if stored is not None:
                answers[index].text = stored
                reused += 1
            else:
                todo[index] = key
        if not todo:
            return reused
        workers = map_concurrency(self.synth, self.config.concurrency)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
        try:
            futures = {pool.submit(self._one_file, answers[i].name, jobs[i]): i for i in todo}
            pending = set(futures)
            while pending:
                if self.cancel.is_set():
                    raise Cancelled("chunk analysis cancelled")
                done, pending = concurrent.futures.wait(pending, timeout=POLL_SECONDS)
                for future in done:
                    self._file_done(answers[futures[future]], todo[futures[future]], future)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return reused

    def _one_file(self, name: str, partials: list[str]) -> tuple[str, int]:
        return synthesize(
            self.synth,
            file_instruction(self.instruction, name),
            partials,
            cancel=self.cancel,
            config=self.config,
            context_window=self.context_window,
            bytes_per_token=self.bytes_per_token,
        )

    def _file_done(
        self, answer: FileAnswer, key: str, future: concurrent.futures.Future[tuple[str, int]]
    ) -> None:
        try:
            text, levels = future.result()
        except Cancelled:
            raise
        except HarveyError as exc:
            reason = first_line(exc).removeprefix("synthesis failed: ")
            answer.text = f"[{answer.name}: synthesis failed: {reason}]"
            answer.status = f"error: {reason}"
            return
        answer.text, answer.levels = text, levels
        if self.results is not None:
            self.results.put(key, self.synth.model, text)

    def _overall(self, answers: list[FileAnswer], progress: ProgressReporter) -> tuple[str, int]:
        """One file is its own answer; several go through the hierarchical reduce."""
        if len(answers) == 1:
            return answers[0].text, 1
        sections = [f"File {a.name}:\n{a.text}" for a in answers]
        return synthesize(
            self.synth,
            self.instruction,
            sections,
            cancel=self.cancel,
            config=self.config,
            context_window=self.context_window,
            bytes_per_token=self.bytes_per_token,
            progress=progress,
        )

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
            answer.levels,
            file.pages,
        )

    def _synthesis_note(self, status: str, levels: int) -> None:
        if self.recorder is not None:
            model = self.synth.model if self.synthesis_client is not None else self.model
            self.recorder.record_chunk_synthesis(model, status, levels=levels)


def per_file_markdown(result: FolderResult) -> str:
    """``--per-file``: a Markdown section per file, then the overall answer."""
    parts = [f"## {a.name}\n\n{a.text.strip()}\n" for a in result.files]
    parts.append(f"## Overall\n\n{result.text.strip()}\n")
    return "\n".join(parts)


__all__ = [
    "FileAnswer",
    "FolderResult",
    "FolderRun",
    "file_instruction",
    "per_file_markdown",
]

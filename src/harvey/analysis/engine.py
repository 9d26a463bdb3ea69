"""Map-reduce analysis of a document too big for the model's context.

Map: every chunk goes to the model with the user's instruction (the seed's
prompt, ``instruction + "\\n\\n---\\nChunk i of N:\\n" + chunk``), up to
``config.concurrency`` calls in flight (``bounded_calls.py``). A failed chunk
does not stop the map phase: its partial result becomes ``[chunk i failed: …]``
and the recorder gets ``error: …``. A chunk the server refuses as too long
(``ContextTooLong``) is cut in two at its best boundary and both halves are
analysed (``split_retry.py``); its note says ``ok (split in k parts …)``.
Notes and partial results stay in chunk order whatever order the calls
finish in.

Reduce: the partial results synthesised, hierarchically when they do not fit
the synthesis model's context (``reduce.py``). A synthesis failure raises
``SynthesisError``; the note records it first.

Cancel: setting ``cancel`` (the REPL does on Ctrl-C; a ``KeyboardInterrupt``
here does the same) stops within a poll interval: queued calls never start,
running streams stop at their next event, the synthesis note records
``error: cancelled`` and ``Cancelled`` is raised — nothing is returned to
inject. Calls run in daemon threads so a server that never answers cannot
hold the process — or, given an ``executor`` (``map_support.MapExecutor``),
wherever it runs them (a Ray cluster); stored results, notes and the reduce
stay here either way. The inputs, result and recorder protocol are
``params.py``; every public name stays importable from here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from harvey.analysis.bounded_calls import UsageSink, first_line, map_calls, run_bounded
from harvey.analysis.chunking import Chunk, DocType
from harvey.analysis.map_support import (
    MapExecutor,
    MapTask,
    ResultCache,
    endpoints_served,
    map_concurrency,
    pool_size,
    served_counts,
)
from harvey.analysis.params import (
    AnalysisRecorder,
    AnalysisResult,
    ChunkAnalysisParams,
    map_prompt,
    result_key,
)
from harvey.analysis.progress import NullProgress, ProgressReporter, make_progress
from harvey.analysis.reduce import HierarchicalReduce, reduce_prompt
from harvey.context.budget import BYTES_PER_TOKEN
from harvey.errors import Cancelled, ContextTooLong, HarveyError, SynthesisError, WorkspaceError
from harvey.llm.base import LLMClient, map_client_of


class AnalysisRun:
    """One run: the map phase, then the (possibly hierarchical) reduce (``reduce.py``).

    ``run`` is the whole of one file's analysis; ``map_phase`` and
    ``reduce_phase`` apart are for a caller that orchestrates its own run
    (``phases.py``). ``levels`` counts the reduce levels so far, for the note.
    """

    def __init__(
        self,
        client: LLMClient,
        params: ChunkAnalysisParams,
        recorder: AnalysisRecorder | None,
        progress: ProgressReporter,
        cancel: threading.Event,
        synthesis_client: LLMClient,
        context_window: int | None,
        bytes_per_token: float,
        results: ResultCache | None = None,
        executor: MapExecutor | None = None,
        on_usage: UsageSink | None = None,
    ) -> None:
        self.client = map_client_of(client)
        self.executor = executor
        self.on_usage = on_usage
        self.results = results
        self.reused = 0
        self._called: list[tuple[int, str]] = []  # call j of the map phase → (chunk, key)
        self.params = params
        self.recorder = recorder
        self.progress = progress
        self.cancel = cancel
        separate = synthesis_client is not client
        self.synth_model = synthesis_client.model if separate else params.model
        self._reduce = HierarchicalReduce(
            synthesis_client,
            params.instruction,
            concurrency=params.config.concurrency,
            cancel=cancel,
            progress=progress,
            context_window=context_window,
            bytes_per_token=bytes_per_token,
        )
        self.served: int | None = None  # endpoints of a pool that completed map calls
        self._texts: dict[int, str] = {}  # the chunks in flight, for a split on "too long"
        self._split_status: dict[int, str] = {}

    def _recover(self, i: int, err: ContextTooLong) -> tuple[str | None, BaseException | None]:
        """Chunk ``i`` (0-based) refused as too long: analysed in pieces (``split_retry``)."""
        from harvey.analysis.split_retry import analyse_split

        text = self._texts.get(i)
        if text is None:
            return None, err
        doc_type = DocType.SOURCE if self.params.boundary == "source" else DocType.PROSE
        try:
            split = analyse_split(
                self.client,
                self.params.instruction,
                i + 1,
                self.params.count,
                text,
                doc_type,
                self.cancel,
                err,
            )
        except ContextTooLong as exc:
            return None, exc
        self._split_status[i] = split.status
        return split.text, None

    def _tasks(self, n: int, reuse: Callable[[int, str], None]) -> Iterator[MapTask]:
        """The map calls, made one by one as call slots free up; a chunk whose result
        is stored goes to ``reuse`` instead and costs no call."""
        i = -1
        for i, chunk in enumerate(self.params.chunks):
            if i >= n:
                break
            text = chunk.text if isinstance(chunk, Chunk) else chunk
            self._texts[i] = text
            key, prompt = self.params.map_call(self.client.model, i + 1, n, text)
            stored = self.results.get(key) if self.results is not None else None
            if stored is not None:
                self.reused += 1
                reuse(i, stored)
                continue
            self._called.append((i, key))
            yield MapTask(key, prompt)
        if i + 1 != n:  # a streamed file that changed between the count and the map
            raise WorkspaceError(
                f"{self.params.filename} changed while it was being analysed "
                f"(expected {n} chunks); run the analysis again"
            )

    def map_phase(self) -> tuple[list[str], list[int]]:
        n = self.params.count
        partials: list[str | None] = [None] * n
        statuses: dict[int, str] = {}
        failures: list[int] = []
        recorded = 0
        before = served_counts(self.client)

        def done(i: int, text: str | None, err: BaseException | None) -> None:
            nonlocal recorded
            self._texts.pop(i, None)
            if err is None:
                partials[i] = text or ""
                statuses[i] = self._split_status.pop(i, "ok")
            else:
                reason = first_line(err)
                partials[i] = f"[chunk {i + 1} failed: {reason}]"
                statuses[i] = f"error: {reason}"
                failures.append(i + 1)
            self.progress.chunk_finished(i + 1, n, None if err is None else first_line(err))
            while recorded in statuses:  # notes in chunk order, whatever finished first
                if self.recorder is not None:
                    self.recorder.record_chunk_result(recorded + 1, n, statuses.pop(recorded))
                else:
                    statuses.pop(recorded)
                recorded += 1

        def called(j: int, text: str | None, err: BaseException | None) -> None:
            i, key = self._called[j]
            if isinstance(err, ContextTooLong):  # split and analysed: stored like any result
                text, err = self._recover(i, err)
            if err is None:
                self._keep(key, text or "")
            done(i, text, err)

        def reuse(i: int, text: str) -> None:
            if hasattr(self.progress, "chunk_reused"):  # not in the protocol (JSON output's)
                self.progress.chunk_reused(i + 1, n)
            self.progress.chunk_started(i + 1, n)
            done(i, text, None)

        tasks = self._tasks(n, reuse)
        concurrency = map_concurrency(self.client, self.params.config.concurrency)

        def started(j: int) -> None:
            self.progress.chunk_started(self._called[j][0] + 1, n)

        if self.executor is not None:
            self.executor.run_map(self.client, tasks, concurrency, self.cancel, started, called)
        else:
            prompts = (t.prompt for t in tasks)
            run_bounded(
                self.client, prompts, concurrency, self.cancel, started, called, None, self.on_usage
            )
        # Calls a Ray executor makes run on the nodes' own clients: not counted here.
        self.served = endpoints_served(self.client, before) if self.executor is None else None
        return [p or "" for p in partials], sorted(failures)

    def _keep(self, key: str, text: str) -> None:
        """Store one map result as soon as it arrives, so a killed run loses no finished call."""
        if self.results is not None:
            self.results.put(key, self.client.model, text)

    @property
    def levels(self) -> int:
        """The reduce levels run so far (0 before the reduce starts)."""
        return self._reduce.levels

    def reduce_phase(self, partials: list[str]) -> str:
        """The synthesis over the map phase's ``partials`` (``HierarchicalReduce``)."""
        return self._reduce.run(partials)

    def _note(self, status: str) -> None:
        if self.recorder is not None:
            levels = max(1, self.levels)
            self.recorder.record_chunk_synthesis(self.synth_model, status, levels=levels)

    def run(self) -> AnalysisResult:
        p = self.params
        n = p.count
        if self.recorder is not None:
            pool = pool_size(self.client)
            extra: dict[str, Any] = {} if pool is None else {"endpoints": pool}
            if p.pages:  # a PDF's pages; a recorder of text files never sees the argument
                extra["pages"] = p.pages
            self.recorder.record_chunk_analysis_start(
                p.filename,
                n,
                p.model,
                p.boundary,
                p.config.chunk_size_bytes,
                p.as_typed if p.as_typed is not None else p.instruction,
                **extra,
            )
        self.progress.start(n)
        try:
            partials, failures = self.map_phase()
            if self.recorder is not None and self.served is not None:
                self.recorder.record_chunk_served(self.served, pool_size(self.client) or 0)
            text = self.reduce_phase(partials)
        except (Cancelled, KeyboardInterrupt) as exc:
            self.cancel.set()
            self._note("error: cancelled")
            raise Cancelled("chunk analysis cancelled") from exc
        except SynthesisError as exc:
            self._note(f"error: {str(exc).removeprefix('synthesis failed: ')}")
            raise
        except HarveyError as exc:  # the file could not be read to the end
            self._note(f"error: {first_line(exc)}")
            raise
        finally:
            self.progress.close()
        self._note("ok")
        return AnalysisResult(
            text=text,
            failures=failures,
            levels=self.levels,
            partials=partials,
            reused=self.reused,
        )


def run_chunked_analysis(
    client: LLMClient,
    params: ChunkAnalysisParams,
    *,
    recorder: AnalysisRecorder | None = None,
    progress: ProgressReporter | TextIO | None = None,
    cancel: threading.Event | None = None,
    synthesis_client: LLMClient | None = None,
    context_window: int | None = None,
    bytes_per_token: float = BYTES_PER_TOKEN,
    results: ResultCache | None = None,
    executor: MapExecutor | None = None,
    on_usage: UsageSink | None = None,
) -> AnalysisResult:
    """Map every chunk through ``client``, then synthesize; returns an ``AnalysisResult``.

    ``progress`` is a reporter, or a stream for ``make_progress`` (default
    stderr: a rich bar on a terminal, plain lines otherwise); pass
    ``NullProgress()`` for none. ``context_window`` (the synthesis model's)
    enables the hierarchical reduce; without it the synthesis is one call.
    ``executor`` runs the map calls elsewhere (``--executor ray``); default: here.
    ``on_usage`` gets every map prompt with its usage report (calibration
    samples of the document's type). Raises ``SynthesisError`` when synthesis
    fails and ``Cancelled`` on cancel.
    """
    if params.count < 1:
        raise ValueError("run_chunked_analysis needs at least one chunk")
    reporter: ProgressReporter
    if progress is None or not hasattr(progress, "chunk_started"):
        reporter = make_progress(progress)
    else:
        reporter = progress  # type: ignore[assignment]
    analysis = AnalysisRun(
        client,
        params,
        recorder,
        reporter,
        cancel if cancel is not None else threading.Event(),
        synthesis_client if synthesis_client is not None else client,
        context_window,
        bytes_per_token,
        results,
        executor,
        on_usage,
    )
    return analysis.run()


__all__ = [
    "AnalysisRecorder",
    "AnalysisResult",
    "AnalysisRun",
    "ChunkAnalysisParams",
    "MapExecutor",
    "MapTask",
    "NullProgress",
    "ResultCache",
    "SynthesisError",
    "map_calls",
    "map_prompt",
    "reduce_prompt",
    "result_key",
    "run_chunked_analysis",
]

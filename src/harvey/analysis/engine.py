"""Map-reduce analysis of a document too big for the model's context, every claim traced.

Map: every chunk is cut into sentences and lines, and the evidence the
instruction asks for is found in it (``mapper.py``): by Harvey's finder alone,
or by the model choosing among numbered candidates, or by the model writing
records whose quotes are then verified word for word against the chunk. A
chunk that holds nothing for the instruction is skipped without a call. Up to
``config.concurrency`` calls are in flight (``map_calls.py``). A failed chunk
does not stop the map phase: its note records ``error: …``. A chunk the server
refuses as too long (``ContextTooLong``) is cut in two at its best boundary and
the evidence of both halves is found (``split_retry.py``). The notes — each
chunk's status and its kept and dropped records, numbered — are written in
chunk order whatever order the calls finish in; a stored map result is the
chunk's verified records (resume).

Reduce: the records merged without a model and either shown as the answer or
written up by the model and checked (``reduce.py``); every claim cites the
records it rests on. A synthesis failure raises ``SynthesisError``; the note
records it first. When every map call failed there is nothing to answer from:
no synthesis call is made, and the ``SynthesisError`` says so in one line.

Cancel: setting ``cancel`` (the REPL does on Ctrl-C; a ``KeyboardInterrupt``
here does the same) stops within a poll interval: queued calls never start,
running streams stop at their next event, the synthesis note records
``error: cancelled`` and ``Cancelled`` is raised — nothing is returned to
inject. Calls run in daemon threads so a server that never answers cannot
hold the process — or, given an ``executor`` (``map_calls.MapExecutor``),
wherever it runs them (a Ray cluster); stored results, notes and the reduce
stay here either way. The inputs, result and recorder protocol are
``params.py``; every public name stays importable from here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from harvey.analysis.answer import Answer
from harvey.analysis.evidence import ChunkEvidence, Record
from harvey.analysis.map_calls import (
    MapExecutor,
    MapTask,
    ResultCache,
    UsageSink,
    endpoints_served,
    first_line,
    map_calls,
    map_concurrency,
    map_limit,
    pool_size,
    run_bounded,
    served_counts,
)
from harvey.analysis.mapper import EvidenceMapper, Piece
from harvey.analysis.params import (
    AnalysisRecorder,
    AnalysisResult,
    ChunkAnalysisParams,
    positioned,
    result_key,
)
from harvey.analysis.progress import NullProgress, make_progress
from harvey.analysis.reduce import ReduceSpec, reduce_evidence
from harvey.analysis.sizes import evidence_reason
from harvey.context.budget import BYTES_PER_TOKEN
from harvey.errors import Cancelled, ContextTooLong, HarveyError, SynthesisError, WorkspaceError
from harvey.llm.base import map_client_of
from harvey.protocols import LLMClient, ProgressReporter
from harvey.workspace.kinds import DocType


class AnalysisRun:
    """One run: the map phase, then the reduce (``reduce.py``).

    ``run`` is the whole of one file's analysis; ``map_phase`` and
    ``reduce_phase`` apart are for a caller that orchestrates its own run
    (``phases.py``).
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
        self.calls = 0
        self._called: list[tuple[int, str]] = []  # call j of the map phase → (chunk, key)
        self.params = params
        self.recorder = recorder
        self.progress = progress
        self.cancel = cancel
        self.synthesis_client = synthesis_client
        separate = synthesis_client is not client
        self.synth_model = synthesis_client.model if separate else params.model
        self.context_window = context_window
        self.bytes_per_token = bytes_per_token
        self.mapper = EvidenceMapper(
            params.instruction, params.evidence, params.names(), params.finder
        )
        self.served: int | None = None  # endpoints of a pool that completed map calls
        self._pieces: dict[int, Piece] = {}  # the chunks in flight: a split, a call's answer
        self.first_failure = ""  # the first failed map call's reason, for "all failed"
        self._split_status: dict[int, str] = {}
        self._next_id = 1

    def _recover(
        self, i: int, err: ContextTooLong
    ) -> tuple[ChunkEvidence | None, BaseException | None]:
        """Chunk ``i`` (0-based) refused as too long: its evidence found in pieces."""
        from harvey.analysis.split_retry import analyse_split

        piece = self._pieces.get(i)
        if piece is None:
            return None, err
        doc_type = DocType.SOURCE if piece.source else DocType.PROSE
        try:
            split = analyse_split(self.client, self.mapper, piece, doc_type, self.cancel, err)
        except ContextTooLong as exc:
            return None, exc
        self._split_status[i] = split.status
        return split.evidence, None

    def _tasks(
        self, n: int, local: Callable[[int, ChunkEvidence, bool], None]
    ) -> Iterator[MapTask]:
        """The map calls, made one by one as call slots free up; a chunk that needs no call
        (nothing in it to find, Harvey's own finder, a stored result) goes to ``local``."""
        i = -1
        for i, chunk in enumerate(positioned(self.params.chunks)):
            if i >= n:
                break
            piece = self.params.piece(i + 1, n, chunk)
            planned = self.mapper.plan(piece)
            if isinstance(planned, ChunkEvidence):
                local(i, planned, False)
                continue
            key = self.params.map_key(self.client.model, i + 1, n, piece.chunk.text)
            stored = self.results.get(key) if self.results is not None else None
            evidence = ChunkEvidence.from_json(stored) if stored is not None else None
            if evidence is not None:
                self.reused += 1
                local(i, evidence, True)
                continue
            self._pieces[i] = piece
            self._called.append((i, key))
            yield MapTask(key, planned.prompt, planned.schema)
        if i + 1 != n:  # a streamed file that changed between the count and the map
            raise WorkspaceError(
                f"{self.params.filename} changed while it was being analysed "
                f"(expected {n} chunks); run the analysis again"
            )

    def _numbered(self, evidence: ChunkEvidence) -> ChunkEvidence:
        """The chunk's records numbered on from the last chunk's (chunk order)."""
        records = [r.numbered(self._next_id + k) for k, r in enumerate(evidence.records)]
        self._next_id += len(records)
        return ChunkEvidence(records, evidence.dropped, evidence.skipped)

    def map_phase(self) -> tuple[list[ChunkEvidence | None], list[int]]:
        n = self.params.count
        found: list[ChunkEvidence | None] = [None] * n
        statuses: dict[int, tuple[str, ChunkEvidence | None]] = {}
        failures: list[int] = []
        recorded = 0
        before = served_counts(self.client)

        def done(i: int, evidence: ChunkEvidence | None, err: BaseException | None) -> None:
            nonlocal recorded
            self._pieces.pop(i, None)
            if err is None and evidence is not None:
                statuses[i] = (self._split_status.pop(i, evidence.status()), evidence)
            else:
                reason = first_line(err) if err is not None else "no answer"
                self.first_failure = self.first_failure or reason
                statuses[i] = (f"error: {reason}", None)
                failures.append(i + 1)
            self.progress.chunk_finished(i + 1, n, None if err is None else first_line(err))
            while recorded in statuses:  # notes and numbers in chunk order
                status, got = statuses.pop(recorded)
                if got is not None:
                    got = self._numbered(got)
                    found[recorded] = got
                if self.recorder is not None:
                    self.recorder.record_chunk_result(recorded + 1, n, status)
                    if got is not None and (got.records or got.dropped):
                        self.recorder.record_chunk_evidence(
                            recorded + 1, n, got.records, got.dropped
                        )
                recorded += 1

        def called(j: int, text: str | None, err: BaseException | None) -> None:
            i, key = self._called[j]
            evidence: ChunkEvidence | None = None
            if isinstance(err, ContextTooLong):  # split and found: stored like any result
                evidence, err = self._recover(i, err)
            elif err is None:
                piece = self._pieces.get(i)
                evidence = self.mapper.read(piece, text or "") if piece is not None else None
            if err is None and evidence is not None:
                self.calls += 1
                self._keep(key, evidence)
            done(i, evidence, err)

        def local(i: int, evidence: ChunkEvidence, reused: bool) -> None:
            if reused and hasattr(self.progress, "chunk_reused"):  # JSON output's reporter
                self.progress.chunk_reused(i + 1, n)
            self.progress.chunk_started(i + 1, n)
            done(i, evidence, None)

        tasks = self._tasks(n, local)

        def started(j: int) -> None:
            self.progress.chunk_started(self._called[j][0] + 1, n)

        if self.executor is not None:
            concurrency = map_concurrency(self.client, self.params.config.concurrency)
            self.executor.run_map(self.client, tasks, concurrency, self.cancel, started, called)
        else:
            # Harvey's own finder makes no call: no server is asked how many it takes
            harvey = self.params.evidence == "harvey"
            limit = 1 if harvey else map_limit(self.client, self.params.config)
            run_bounded(
                self.client, tasks, limit, self.cancel, started, called, None, self.on_usage
            )
        # Calls a Ray executor makes run on the nodes' own clients: not counted here.
        self.served = endpoints_served(self.client, before) if self.executor is None else None
        return found, sorted(failures)

    def _keep(self, key: str, evidence: ChunkEvidence) -> None:
        """Store one map result as soon as it arrives, so a killed run loses no finished call."""
        if self.results is not None:
            self.results.put(key, self.client.model, evidence.to_json())

    def spec(self, evidence: list[ChunkEvidence | None]) -> ReduceSpec:
        p = self.params
        return ReduceSpec(
            instruction=p.instruction,
            kind=p.answer,
            intent=self.mapper.finder.intent,
            why=evidence_reason(self.synth_model, p.answer),
            budget_chars=p.answer_chars,
            order=p.names(),
            dropped=sum(len(e.dropped) for e in evidence if e is not None),
        )

    def reduce_phase(self, evidence: list[ChunkEvidence | None]) -> Answer:
        """The answer over the map phase's verified records (``reduce.py``)."""
        records = [r for e in evidence if e is not None for r in e.records]
        return reduce_evidence(
            records,
            self.spec(evidence),
            self.synthesis_client,
            context_window=self.context_window,
            bytes_per_token=self.bytes_per_token,
            cancel=self.cancel,
        )

    def _note(self, status: str, answer: str = "") -> None:
        if self.recorder is not None:
            self.recorder.record_chunk_synthesis(self.synth_model, status, answer=answer)

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
            evidence, failures = self.map_phase()
            if self.recorder is not None and self.served is not None:
                self.recorder.record_chunk_served(self.served, pool_size(self.client) or 0)
            if len(failures) == n:  # an answer from no evidence would be an invented one
                raise SynthesisError(every_call_failed(n, self.first_failure))
            quotes = sum(len(e.records) for e in evidence if e is not None)
            if p.answer == "synthesis" and quotes:
                self.progress.synthesis_started(1, quotes, 1)
            answer = self.reduce_phase(evidence)
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
        if self.recorder is not None:
            self.recorder.record_answer(answer)
        self._note("ok", answer.kind)
        told = getattr(self.progress, "answered", None)  # JSON output: the citations
        if told is not None:
            told(answer)
        records = [r for e in evidence if e is not None for r in e.records]
        return AnalysisResult(answer, failures, evidence, records, self.reused, self.calls)


def every_call_failed(n: int, first: str) -> str:
    """The one line an analysis whose every map call failed ends with (no synthesis)."""
    return f"no synthesis: all {n} map calls failed (the first: {first})"


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
    """Find every chunk's evidence (through ``client`` when the evidence style calls a
    model), then answer from it; returns an ``AnalysisResult``.

    ``progress`` is a reporter, or a stream for ``make_progress`` (default
    stderr: a rich bar on a terminal, plain lines otherwise); pass
    ``NullProgress()`` for none. ``context_window`` (the synthesis model's)
    bounds the evidence a synthesis is given; without it all of it is.
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
    "Record",
    "ResultCache",
    "SynthesisError",
    "map_calls",
    "result_key",
    "run_chunked_analysis",
]

"""Map-reduce analysis of a document too big for the model's context.

Map: every chunk goes to the model with the user's instruction (the seed's
prompt, ``instruction + "\\n\\n---\\nChunk i of N:\\n" + chunk``), up to
``config.concurrency`` calls in flight. A failed chunk does not stop the map
phase: its partial result becomes ``[chunk i failed: …]`` and the recorder
gets ``error: …``. A chunk the server refuses as too long
(``ContextTooLong``) is cut in two at its best boundary and both halves are
analysed (``split_retry.py``); its note says ``ok (split in k parts …)``.
Notes and partial results stay in chunk order whatever order the calls
finish in.

Reduce: one synthesis call over all partial results. When they do not fit
the synthesis model's context (``context_window`` given), they are combined
in groups that fit and the group results combined again — a hierarchical
reduce with a depth limit that must shrink the text at every level. A
synthesis failure raises ``SynthesisError``; the note records it first.

Cancel: setting ``cancel`` (the REPL does on Ctrl-C; a ``KeyboardInterrupt``
here does the same) stops within a poll interval: queued calls never start,
running streams stop at their next event, the synthesis note records
``error: cancelled`` and ``Cancelled`` is raised — nothing is returned to
inject. Calls run in daemon threads so a server that never answers cannot
hold the process — or, given an ``executor`` (``map_support.MapExecutor``),
wherever it runs them (a Ray cluster); stored results, notes and the reduce
stay here either way.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TextIO

from harvey.context.budget import BYTES_PER_TOKEN, remaining_context, tokens_for_bytes
from harvey.context.chunking import Chunk, ChunkConfig, DocType
from harvey.context.map_support import (
    MapExecutor,
    MapTask,
    ResultCache,
    endpoints_served,
    map_concurrency,
    pool_size,
    result_key,
    served_counts,
)
from harvey.context.progress import NullProgress, ProgressReporter, make_progress
from harvey.errors import Cancelled, ContextTooLong, HarveyError, SynthesisError, WorkspaceError
from harvey.llm.base import LLMClient, Usage, chat
from harvey.messages import Message

if TYPE_CHECKING:
    from harvey.session.records import ChunkFileNote

MAX_LEVELS = 5
POLL_SECONDS = 0.1
_SEPARATOR = "\n\n---\n"

# A map prompt as sent and the server's usage for it: a calibration sample (PromptBudget).
UsageSink = Callable[[str, Usage], None]
_Done = tuple[int, str | None, BaseException | None, str, Usage | None]


class AnalysisRecorder(Protocol):
    """The chunk-analysis methods of ``harvey.session.recorder.Recorder``."""

    def record_chunk_analysis_start(
        self,
        filename: str,
        total_chunks: int,
        model: str,
        boundary: str,
        chunk_size_bytes: int,
        user_instruction: str,
        endpoints: int | None = None,
        files: int | None = None,
    ) -> None: ...

    def record_chunk_result(self, i: int, n: int, status: str) -> None: ...

    def record_chunk_synthesis(self, model: str, status: str, levels: int = 1) -> None: ...

    def record_chunk_served(self, served: int, endpoints: int) -> None: ...

    def record_chunk_file(self, note: ChunkFileNote) -> None: ...  # whole-folder analysis


def map_prompt(instruction: str, index: int, total: int, chunk: str) -> str:
    """The seed's per-chunk prompt (``index`` is 1-based)."""
    return f"{instruction}\n\n---\nChunk {index} of {total}:\n{chunk}"


def _reduce_header(instruction: str, count: int) -> str:
    return (
        f"{instruction}\n\n---\nCombine the following {count} section summaries "
        "into a single coherent response:\n\n"
    )


def reduce_prompt(instruction: str, partials: Sequence[str]) -> str:
    """The seed's synthesis prompt over ``partials`` joined by ``\\n\\n---\\n``."""
    return _reduce_header(instruction, len(partials)) + _SEPARATOR.join(partials)


@dataclass
class ChunkAnalysisParams:
    """Inputs to ``run_chunked_analysis`` (the seed's ``ChunkAnalysisParams``).

    ``model`` is the resolved name recorded in the notes (an ``@name`` in the
    instruction already parsed by the caller, who passes the matching client);
    ``boundary`` is ``"paragraph"`` or ``"source"``. ``chunks`` may be a lazy
    iterable (a file streamed through the chunker) when ``total`` says how many
    it yields: the map phase then pulls one chunk per free call slot, so only
    the chunks in flight are in memory, however large the file.
    """

    filename: str
    chunks: Sequence[Chunk | str] | Iterable[Chunk | str]
    instruction: str
    model: str
    boundary: str = "paragraph"
    config: ChunkConfig = field(default_factory=ChunkConfig)
    # The instruction as the person typed it (``@route`` included) for the
    # session record, when ``instruction`` had the route stripped for the model.
    as_typed: str | None = None
    total: int | None = None

    def map_call(self, model: str, index: int, total: int, text: str) -> tuple[str, str]:
        """The stored-result key and the prompt of chunk ``index`` of ``total`` (1-based);
        whole-folder analysis numbers chunks per file instead (``folder_analysis.py``)."""
        key = result_key(model, self, index, total, text)
        return key, map_prompt(self.instruction, index, total, text)

    @property
    def count(self) -> int:
        """How many chunks the map phase will see."""
        if self.total is not None:
            return self.total
        if not isinstance(self.chunks, Sequence):
            raise ValueError("lazy chunks need ChunkAnalysisParams.total")
        return len(self.chunks)


@dataclass
class AnalysisResult:
    """The synthesized answer, which chunks failed (1-based) and how many reduce levels ran."""

    text: str
    failures: list[int]
    levels: int
    partials: list[str]
    reused: int = 0  # map results taken from an earlier run instead of a call


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _run_bounded(
    client: LLMClient,
    prompts: Iterable[str],
    concurrency: int,
    cancel: threading.Event,
    on_start: Callable[[int], None],
    on_done: Callable[[int, str | None, BaseException | None], None],
    call: Callable[[str], str] | None = None,
    on_usage: UsageSink | None = None,
) -> None:
    """Run one chat call per prompt, at most ``concurrency`` at once; report as they finish.

    A prompt is taken from ``prompts`` only when a call slot is free, and a
    call drops it when it ends: a lazy iterable keeps memory to the calls in
    flight. ``call`` replaces the plain chat call (``map_calls``); ``on_usage`` gets each
    answered prompt with the server's usage report, in this (the coordinating) thread.
    """
    results: queue.Queue[_Done] = queue.Queue()

    def work(i: int, prompt: str) -> None:
        try:
            if call is not None:
                results.put((i, call(prompt), None, "", None))
                return
            reply = chat(client, [Message(role="user", content=prompt)], cancel=cancel)
            results.put((i, reply.text, None, prompt if on_usage else "", reply.usage))
        except BaseException as exc:  # reported to the coordinator, never lost
            results.put((i, None, exc, "", None))

    pending: Iterator[str] | None = iter(prompts)
    next_i = in_flight = 0
    while pending is not None or in_flight:
        while in_flight < concurrency and pending is not None:
            if cancel.is_set():
                raise Cancelled("chunk analysis cancelled")
            prompt = next(pending, None)
            if prompt is None:
                pending = None
                break
            on_start(next_i)
            threading.Thread(target=work, args=(next_i, prompt), daemon=True).start()
            next_i += 1
            in_flight += 1
        try:
            i, text, err, sent, usage = results.get(timeout=POLL_SECONDS)
        except queue.Empty:
            if cancel.is_set():
                raise Cancelled("chunk analysis cancelled") from None
            continue
        in_flight -= 1
        if cancel.is_set() or isinstance(err, Cancelled):
            raise Cancelled("chunk analysis cancelled")
        if on_usage is not None and usage is not None and usage.prompt_tokens:
            on_usage(sent, usage)
        on_done(i, text, err)


def map_calls(
    client: LLMClient,
    inputs: Sequence[str],
    call: Callable[[str], str],
    *,
    concurrency: int = 1,
    cancel: threading.Event | None = None,
) -> list[tuple[str | None, BaseException | None]]:
    """The map phase alone, for callers with their own call (a system prompt, structured
    output, a retry — memory mining): ``call`` per input, at most ``concurrency`` (or an
    endpoint pool's capacity) at once; each input's ``(answer, error)``, in input order."""
    out: list[tuple[str | None, BaseException | None]] = [(None, None)] * len(inputs)

    def done(i: int, text: str | None, err: BaseException | None) -> None:
        out[i] = (text, err)

    _run_bounded(
        client,
        inputs,
        map_concurrency(client, concurrency),
        cancel if cancel is not None else threading.Event(),
        lambda _i: None,
        done,
        call,
    )
    return out


class _Analysis:
    """One run: the map phase, then the (possibly hierarchical) reduce."""

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
        self.client = client
        self.executor = executor
        self.on_usage = on_usage
        self.results = results
        self.reused = 0
        self._called: list[tuple[int, str]] = []  # call j of the map phase → (chunk, key)
        self.params = params
        self.recorder = recorder
        self.progress = progress
        self.cancel = cancel
        self.synth = synthesis_client
        separate = synthesis_client is not client
        self.synth_model = synthesis_client.model if separate else params.model
        self.context_window = context_window
        self.bytes_per_token = bytes_per_token
        self.levels = 0
        self.served: int | None = None  # endpoints of a pool that completed map calls
        self._texts: dict[int, str] = {}  # the chunks in flight, for a split on "too long"
        self._split_status: dict[int, str] = {}

    def _recover(self, i: int, err: ContextTooLong) -> tuple[str | None, BaseException | None]:
        """Chunk ``i`` (0-based) refused as too long: analysed in pieces (``split_retry``)."""
        from harvey.context.split_retry import analyse_split

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
                reason = _first_line(err)
                partials[i] = f"[chunk {i + 1} failed: {reason}]"
                statuses[i] = f"error: {reason}"
                failures.append(i + 1)
            self.progress.chunk_finished(i + 1, n, None if err is None else _first_line(err))
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
            _run_bounded(
                self.client, prompts, concurrency, self.cancel, started, called, None, self.on_usage
            )
        # Calls a Ray executor makes run on the nodes' own clients: not counted here.
        self.served = endpoints_served(self.client, before) if self.executor is None else None
        return [p or "" for p in partials], sorted(failures)

    def _keep(self, key: str, text: str) -> None:
        """Store one map result as soon as it arrives, so a killed run loses no finished call."""
        if self.results is not None:
            self.results.put(key, self.client.model, text)

    def _fits(self, partials: Sequence[str]) -> bool:
        if self.context_window is None:
            return True
        size = len(_reduce_header(self.params.instruction, len(partials)).encode("utf-8"))
        size += sum(len(p.encode("utf-8")) for p in partials)
        size += len(_SEPARATOR) * max(0, len(partials) - 1)
        budget = remaining_context(self.context_window, bytes_per_token=self.bytes_per_token)
        return tokens_for_bytes(size, self.bytes_per_token) <= budget

    def _groups(self, partials: list[str]) -> list[list[str]]:
        groups: list[list[str]] = []
        current: list[str] = []
        for index, partial in enumerate(partials, 1):
            if not self._fits([partial]):
                raise SynthesisError(
                    f"synthesis failed: partial result {index} alone does not fit the "
                    f"synthesis model's context ({self.context_window} tokens)"
                )
            if current and not self._fits([*current, partial]):
                groups.append(current)
                current = []
            current.append(partial)
        groups.append(current)
        return groups

    def reduce_phase(self, partials: list[str]) -> str:
        current = partials
        while True:
            self.levels += 1
            groups = [current] if self._fits(current) else self._groups(current)
            self.progress.synthesis_started(self.levels, len(current), len(groups))
            outputs = self._synthesize(groups)
            if len(groups) == 1:
                return outputs[0]
            if self.levels >= MAX_LEVELS:
                raise SynthesisError(
                    f"synthesis failed: partial results still too large after {MAX_LEVELS} levels"
                )
            before = sum(len(p) for p in current)
            if sum(len(o) for o in outputs) >= before:
                raise SynthesisError(
                    f"synthesis failed: level {self.levels} did not shrink the partial results "
                    f"({before} characters in, {sum(len(o) for o in outputs)} out)"
                )
            current = outputs

    def _synthesize(self, groups: list[list[str]]) -> list[str]:
        prompts = [reduce_prompt(self.params.instruction, g) for g in groups]
        outputs: list[str] = [""] * len(prompts)

        def done(i: int, text: str | None, err: BaseException | None) -> None:
            if err is not None:
                raise SynthesisError(f"synthesis failed: {_first_line(err)}") from err
            outputs[i] = text or ""

        concurrency = self.params.config.concurrency
        _run_bounded(self.synth, prompts, concurrency, self.cancel, lambda i: None, done)
        return outputs

    def _note(self, status: str) -> None:
        if self.recorder is not None:
            levels = max(1, self.levels)
            self.recorder.record_chunk_synthesis(self.synth_model, status, levels=levels)

    def run(self) -> AnalysisResult:
        p = self.params
        n = p.count
        if self.recorder is not None:
            pool = pool_size(self.client)
            self.recorder.record_chunk_analysis_start(
                p.filename,
                n,
                p.model,
                p.boundary,
                p.config.chunk_size_bytes,
                p.as_typed if p.as_typed is not None else p.instruction,
                **({} if pool is None else {"endpoints": pool}),
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
            self._note(f"error: {_first_line(exc)}")
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
    analysis = _Analysis(
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

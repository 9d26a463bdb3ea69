"""Map-phase wall clock of the chunked analysis against a server with fixed latency.

The map phase exists to turn N slow model calls into ⌈N/c⌉ rounds of them. This
benchmark checks that the real engine (``run_chunked_analysis``) with the real
OpenAI-compatible client (httpx, SSE parsing, one thread per call) gets there:
a loopback fake server answers every chat request after a fixed 200 ms, so the
ideal wall clock of a whole analysis is ``⌈n/c⌉ × 200 ms`` for the map phase
plus one 200 ms synthesis call. The target is to stay within 1.25× of it.

The fake server is subclassed here only to count how many requests it is
serving at once, which shows that concurrency 16 really reaches the server
(its ``ThreadingHTTPServer`` serves one thread per request; httpx's default
pool allows 100 connections).

Run alone with ``python -m bench.bench_map_phase``; ``bench/run.py`` imports ``run()``.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any

from tests.fakes.base import _Handler
from tests.fakes.servers import FakeOpenAI

from harvey.analysis.engine import ChunkAnalysisParams, run_chunked_analysis
from harvey.analysis.progress import NullProgress
from harvey.chunks.chunking import ChunkConfig
from harvey.llm.openai import OpenAIClient
from harvey.llm.scripted import Reply

DELAY = 0.200  # seconds the server waits before every chat answer
TARGET_RATIO = 1.25
CHUNK_COUNTS = (8, 32, 128)
CONCURRENCIES = (1, 4, 16)
REPEATS = 3
# Cells whose ideal time is above this run once, so the whole benchmark stays near
# a minute and a half (128 chunks one at a time is ~26 s per run).
SLOW_CELL_SECONDS = 10.0
CHUNK_TEXT = (
    "The committee met on Tuesday to review the quarterly figures. Revenue rose in "
    "three of the four regions, and the board asked for a breakdown by product line. "
) * 8  # about 1.3 KB, a realistic small chunk


class CountingOpenAI(FakeOpenAI):
    """The loopback fake, counting chat requests in progress and the peak of that count."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gauge = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def _chat(self, h: _Handler, body: Any) -> None:
        with self._gauge:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            super()._chat(h, body)
        finally:
            with self._gauge:
                self.in_flight -= 1

    def __enter__(self) -> CountingOpenAI:
        self.start()
        return self

    def reset_peak(self) -> None:
        with self._gauge:
            self.peak = self.in_flight


@dataclass
class Cell:
    """One (n, c) measurement."""

    n: int
    c: int
    runs: list[float]
    peak: int
    requests: int

    @property
    def ideal(self) -> float:
        return math.ceil(self.n / self.c) * DELAY + DELAY

    @property
    def measured(self) -> float:
        return statistics.median(self.runs)

    @property
    def ratio(self) -> float:
        return self.measured / self.ideal


def analyse_once(client: OpenAIClient, n: int, c: int) -> float:
    """Wall clock of one whole analysis (map of ``n`` chunks at concurrency ``c`` + synthesis)."""
    params = ChunkAnalysisParams(
        filename="bench.txt",
        chunks=[f"{i}: {CHUNK_TEXT}" for i in range(n)],
        instruction="Summarise this section in one sentence.",
        model=client.model,
        config=ChunkConfig(concurrency=c, max_chunks=max(n, 1)),
    )
    start = time.perf_counter()
    result = run_chunked_analysis(client, params, progress=NullProgress())
    elapsed = time.perf_counter() - start
    if result.failures:
        raise RuntimeError(f"{len(result.failures)} chunk calls failed at n={n}, c={c}")
    return elapsed


def measure(server: CountingOpenAI, client: OpenAIClient, n: int, c: int) -> Cell:
    ideal = math.ceil(n / c) * DELAY + DELAY
    repeats = 1 if ideal > SLOW_CELL_SECONDS else REPEATS
    runs: list[float] = []
    before = len(server.chat_requests)
    server.reset_peak()
    for _ in range(repeats):
        runs.append(analyse_once(client, n, c))
    requests = len(server.chat_requests) - before
    return Cell(n, c, runs, server.peak, requests)


def run() -> str:
    """Measure every (n, c) cell and return the Markdown section."""
    cells: list[Cell] = []
    with CountingOpenAI(delay_per_call=DELAY, default_reply=Reply("ok")) as server:
        client = OpenAIClient(server.url, "fake-model", retries=0)
        try:
            analyse_once(client, 2, 2)  # warm-up: imports, first connection
            for n in CHUNK_COUNTS:
                for c in CONCURRENCIES:
                    cells.append(measure(server, client, n, c))
        finally:
            client.close()
    rows = []
    for cell in cells:
        met = (
            "yes"
            if cell.ratio <= TARGET_RATIO
            else f"**no** (+{cell.ratio / TARGET_RATIO - 1:.0%})"
        )
        rows.append(
            f"| {cell.n} | {cell.c} | {cell.measured:.3f} | {len(cell.runs)} "
            f"| {cell.ideal:.3f} | {cell.ratio:.3f} | {cell.peak} "
            f"| {cell.requests // len(cell.runs)} | {met} |"
        )
    worst = max(cells, key=lambda cell: cell.ratio)
    missed = [cell for cell in cells if cell.ratio > TARGET_RATIO]
    if missed:
        verdict = (
            f"**Target missed** in {len(missed)} of {len(cells)} cells; worst n={worst.n}, "
            f"c={worst.c} at {worst.ratio:.2f}× ({worst.ratio / TARGET_RATIO - 1:.0%} over 1.25×)."
        )
    else:
        verdict = (
            f"**Target met** in all {len(cells)} cells (worst n={worst.n}, c={worst.c} at "
            f"{worst.ratio:.3f}× the ideal)."
        )
    lines = [
        "## Map phase: wall clock against a server with 200 ms per call",
        "",
        "What this measures: `run_chunked_analysis` with the real `OpenAIClient` against the "
        "loopback `FakeOpenAI` answering every chat call after a fixed 200 ms; wall clock of "
        "the whole analysis (map + one synthesis call). *ideal* = ⌈n/c⌉ × 200 ms + 200 ms "
        f"synthesis. Median of {REPEATS} runs per cell; cells whose ideal exceeds "
        f"{SLOW_CELL_SECONDS:g} s (n=128 at c=1) run once. *peak* is the most chat requests "
        "the server was serving at the same time; *calls* = chat requests per run "
        "(n map calls + 1 synthesis).",
        "",
        f"Target: every cell within {TARGET_RATIO}× the ideal. {verdict}",
        "",
        "| n | c | measured s | runs | ideal s | ratio | peak | calls | target met |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        *rows,
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())

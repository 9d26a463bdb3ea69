"""The endpoint pool: wall clock of a map phase spread over several llama.cpp-like servers.

Every server is the loopback ``FakeLlamaCpp`` (``tests/fakes/llamacpp.py``): it
speaks the OpenAI-compatible API plus llama.cpp's ``/health`` and ``/slots``,
so the pool learns each endpoint's capacity the way it would from a real
``llama-server --parallel N``, and it answers every chat call after a fixed
delay. The analysis is the real ``run_chunked_analysis`` over a real
``PooledClient`` (httpx, SSE parsing, one thread per call).

Sections, as the issue asks:

* four endpoints × one slot × 200 ms, 64 chunks — target ≤ 1.15 × ⌈64/4⌉ × 200 ms
  + one 200 ms synthesis;
* three endpoints × two slots at 50/100/400 ms, 120 chunks: least-in-flight
  against round-robin — target ≥ 2× faster;
* the same with the 50 ms endpoint (the one doing most of the work) killed after
  10 calls — every chunk completes, target ≤ 1.2 × the ideal for the survivors;
* resume: ``harvey analyze`` (a subprocess) over 64 chunks killed with SIGKILL at
  about half, then run again — the second run's calls counted at the server must
  equal the chunks not yet done + 1 synthesis.

Run alone with ``python -m bench.bench_pool``; ``bench/run.py`` imports ``run()``.
"""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from tests.fakes.llamacpp import FakeLlamaCpp

from harvey.analysis.engine import ChunkAnalysisParams, run_chunked_analysis
from harvey.analysis.progress import NullProgress
from harvey.chunks.chunking import ChunkConfig
from harvey.llm.openai import OpenAIClient
from harvey.llm.pool import EndpointSpec
from harvey.llm.pool_setup import build_pool
from harvey.protocols import LLMClient

CHUNK_TEXT = "The committee met on Tuesday to review the quarterly figures. " * 20


def _make(url: str, model: str | None) -> LLMClient:
    return OpenAIClient(url, model or "fake-model", retries=0, timeout=30)


def _analyse(servers: Sequence[FakeLlamaCpp], n: int, policy: str = "least-in-flight") -> float:
    """Wall clock of one whole analysis of ``n`` chunks over a pool of ``servers``."""
    pool = build_pool([EndpointSpec(s.url) for s in servers], "openai", None, _make, policy=policy)
    params = ChunkAnalysisParams(
        filename="bench.txt",
        chunks=[f"{i}: {CHUNK_TEXT}" for i in range(n)],
        instruction="Summarise this section in one sentence.",
        model=pool.model,
        config=ChunkConfig(concurrency=1, max_chunks=n),
    )
    try:
        start = time.perf_counter()
        result = run_chunked_analysis(pool, params, progress=NullProgress())
        elapsed = time.perf_counter() - start
    finally:
        pool.close()
    if result.failures:
        raise RuntimeError(f"{len(result.failures)} of {n} chunks failed")
    return elapsed


def _verdict(ok: bool, text: str) -> str:
    return f"**target met** ({text})" if ok else f"**target missed** ({text})"


def four_by_one() -> list[str]:
    n, delay = 64, 0.200
    with ExitStack() as stack:
        servers = [
            stack.enter_context(FakeLlamaCpp(slots=1, delay_per_call=delay)) for _ in range(4)
        ]
        _analyse(servers, 4)  # warm-up: imports, first connections
        measured = _analyse(servers, n)
        calls = [s.calls for s in servers]
    target = 1.15 * math.ceil(n / 4) * delay + delay
    return [
        "### Four endpoints × one slot × 200 ms, 64 chunks",
        "",
        f"Measured {measured:.2f} s; ideal {math.ceil(n / 4) * delay + delay:.2f} s "
        f"(⌈64/4⌉ × 200 ms + 200 ms synthesis); target ≤ {target:.2f} s: "
        + _verdict(measured <= target, f"{measured / target:.2f} of the target")
        + f". Calls per endpoint (warm-up included): {calls}.",
        "",
    ]


DELAYS = (0.050, 0.100, 0.400)


def _three(stack: ExitStack) -> list[FakeLlamaCpp]:
    return [stack.enter_context(FakeLlamaCpp(slots=2, delay_per_call=d)) for d in DELAYS]


def least_vs_round_robin() -> tuple[list[str], float]:
    n = 120
    with ExitStack() as stack:
        servers = _three(stack)
        _analyse(servers, 6)
        least = _analyse(servers, n)
        rr = _analyse(servers, n, policy="round-robin")
    rate = sum(2 / d for d in DELAYS)
    speedup = rr / least
    return [
        "### Three endpoints × two slots at 50/100/400 ms, 120 chunks",
        "",
        "| dispatch | wall clock s |",
        "| --- | ---: |",
        f"| least-in-flight (ties rotated) | {least:.2f} |",
        f"| round-robin | {rr:.2f} |",
        "",
        f"Speed-up {speedup:.2f}× (target ≥ 2×: "
        + ("met" if speedup >= 2 else "**missed**")
        + f"). Lower bound for any dispatch: 120 / {rate:.0f} calls per second = "
        f"{n / rate:.2f} s plus a synthesis.",
        "",
    ], least


def one_killed() -> list[str]:
    n, kill_after = 120, 10
    with ExitStack() as stack:
        servers = _three(stack)
        _analyse(servers, 6)
        for s in servers:
            s.requests.clear()
        victim = servers[0]

        def watch() -> None:
            while victim.calls < kill_after:
                time.sleep(0.002)
            victim.kill()

        threading.Thread(target=watch, daemon=True).start()
        measured = _analyse(servers, n)  # raises if any chunk failed
        served = [s.calls for s in servers]
    survivors = DELAYS[1:]
    rate = sum(2 / d for d in survivors)
    ideal = (n - kill_after) / rate + max(survivors)
    target = 1.2 * ideal
    return [
        "### The same, the 50 ms endpoint killed after 10 calls",
        "",
        f"Every one of the {n} chunks completed. Measured {measured:.2f} s; ideal for the "
        f"survivors {ideal:.2f} s ({n - kill_after} chunks at {rate:.0f} calls/s on the 100 ms "
        "and 400 ms endpoints, plus a synthesis at 400 ms); target ≤ "
        f"{target:.2f} s: "
        + _verdict(measured <= target, f"{measured / ideal:.2f}× the ideal")
        + f". Chat requests received per endpoint (50/100/400 ms): {served}.",
        "",
    ]


def _stored(home: Path) -> int:
    with sqlite3.connect(home / "sessions.db") as db:
        return int(db.execute("SELECT COUNT(*) FROM map_results").fetchone()[0])


def resume_after_kill() -> list[str]:
    n = 64
    with tempfile.TemporaryDirectory() as tmp, FakeLlamaCpp(slots=4, delay_per_call=0.1) as srv:
        ws, home = Path(tmp) / "ws", Path(tmp) / "home"
        ws.mkdir()
        (ws / "doc.md").write_text("\n\n".join(f"Part {i}. " + "word " * 150 for i in range(n)))
        env = {**os.environ, "HARVEY_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
        cmd = [sys.executable, "-m", "harvey", "analyze", "doc.md", "-i", "Summarise"]
        cmd += ["--backend", "openai", "--endpoint", srv.url, "--chunk-size", "800", "--yes"]
        first = subprocess.Popen(
            cmd, cwd=ws, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 120
        while srv.calls < n // 2 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.01)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        done = _stored(home)
        srv.requests.clear()
        second = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=300)
        calls = srv.calls
        total = _stored(home)
    if second.returncode != 0:
        raise RuntimeError(f"the resumed run failed: {second.stderr.strip()}")
    expected = total - done + 1
    return [
        f"### Resume after `kill -9` ({total} chunks)",
        "",
        f"The first run was killed with SIGKILL after {done} map results were stored. The "
        f"second run made {calls} calls (counted at the server); chunks not yet done + "
        f"synthesis = {total - done} + 1 = {expected}: "
        + ("**target met**." if calls == expected else "**target missed**."),
        "",
    ]


def run() -> str:
    lines = [
        "## Endpoint pool: several llama.cpp-compatible servers, failover, resume",
        "",
        "Loopback `FakeLlamaCpp` servers (OpenAI-compatible chat plus llama.cpp's `/health` "
        "and `/slots`) answering each call after a fixed delay; the real engine over a "
        "`PooledClient`; one run per case. Ray has its own section (`bench_ray`).",
        "",
        *four_by_one(),
    ]
    section, _least = least_vs_round_robin()
    lines += section
    lines += one_killed()
    lines += resume_after_kill()
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())

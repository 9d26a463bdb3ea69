"""The pre-read guard costs the same on a 1 GB file as on a 1 KB one, and reads nothing.

``file_exceeds_budget`` decides whether a file would blow the model's context
before Harvey reads it; if it read the file to decide, asking about a huge
file would be the very cost the guard exists to avoid. This benchmark times
the guard on a 1 GB sparse file (1 GB by ``st_size``, almost no disk) and on a
1 KB file, interleaving the two so machine noise hits both alike, and reads the
kernel's per-process I/O counter (``rchar`` in ``/proc/self/io``: bytes passed
through ``read``-family system calls) around the calls to show no file byte is
read. A control row that really reads the 1 KB file shows the counter works.

Run alone with ``python -m bench.bench_guard``; ``bench/run.py`` imports ``run()``.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harvey.context.budget import file_exceeds_budget

GB = 1 << 30
KB = 1 << 10
BUDGET = 100_000  # tokens: the 1 KB file fits, the 1 GB file does not
CALLS = 2_000  # calls per sample
SAMPLES = 25
TARGET_RATIO = 1.25  # "the same cost": the big/small ratio should sit near 1.0
IO_CALLS = 10_000


def rchar() -> int | None:
    """Bytes this process has read through system calls so far, or None off Linux."""
    try:
        text = Path("/proc/self/io").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "rchar":
            return int(value)
    return None


def bytes_read_by(fn: Callable[[], object], calls: int) -> int | None:
    """``rchar`` growth over ``calls`` calls of ``fn``, minus that of an empty loop
    (reading ``/proc/self/io`` itself counts towards ``rchar``)."""

    def delta(body: Callable[[], object]) -> int | None:
        before = rchar()
        for _ in range(calls):
            body()
        after = rchar()
        return None if before is None or after is None else after - before

    control = delta(lambda: None)
    measured = delta(fn)
    if control is None or measured is None:
        return None
    return measured - control


def per_call_ns(fn: Callable[[], object]) -> float:
    start = time.perf_counter_ns()
    for _ in range(CALLS):
        fn()
    return (time.perf_counter_ns() - start) / CALLS


def make_files(directory: Path) -> tuple[Path, Path]:
    big = directory / "big.bin"
    with big.open("wb"):
        pass
    os.truncate(big, GB)  # sparse: a size, no data blocks
    small = directory / "small.txt"
    small.write_bytes(b"x" * KB)
    return big, small


def run() -> str:
    """Time the guard on both files and return the Markdown section."""
    with tempfile.TemporaryDirectory(prefix="harvey-bench-guard-") as tmp:
        big, small = make_files(Path(tmp))
        big_answer = file_exceeds_budget(big, BUDGET)
        small_answer = file_exceeds_budget(small, BUDGET)
        allocated = os.stat(big).st_blocks * 512
        small_allocated = os.stat(small).st_blocks * 512

        def guard_big() -> object:
            return file_exceeds_budget(big, BUDGET)

        def guard_small() -> object:
            return file_exceeds_budget(small, BUDGET)

        def read_small() -> object:
            return small.read_bytes()

        for fn in (guard_big, guard_small):  # warm the dentry cache and the code paths
            per_call_ns(fn)
        big_ns: list[float] = []
        small_ns: list[float] = []
        for i in range(SAMPLES):
            order = (guard_big, guard_small) if i % 2 == 0 else (guard_small, guard_big)
            for fn in order:
                (big_ns if fn is guard_big else small_ns).append(per_call_ns(fn))
        read_ns = statistics.median(per_call_ns(read_small) for _ in range(5))
        io_big = bytes_read_by(guard_big, IO_CALLS)
        io_small = bytes_read_by(guard_small, IO_CALLS)
        io_read = bytes_read_by(read_small, IO_CALLS)

    med_big, med_small = statistics.median(big_ns), statistics.median(small_ns)
    ratio = med_big / med_small

    def io(value: int | None) -> str:
        return "n/a (no /proc/self/io)" if value is None else f"{value:,}"

    no_read = io_big == 0 and io_small == 0
    same_cost = 1 / TARGET_RATIO <= ratio <= TARGET_RATIO
    if same_cost and no_read:
        verdict = f"**Target met**: ratio {ratio:.3f}, 0 bytes read by the guard."
    else:
        problems = []
        if not same_cost:
            off = max(ratio, 1 / ratio) / TARGET_RATIO - 1
            problems.append(f"ratio {ratio:.3f} is outside 1 ± 25 % (by {off:.0%})")
        if not no_read:
            problems.append(f"the guard read {io(io_big)} / {io(io_small)} bytes")
        verdict = "**Target missed**: " + "; ".join(problems) + "."
    lines = [
        "## Pre-read guard: 1 GB sparse file vs 1 KB file",
        "",
        "What this measures: `file_exceeds_budget(path, 100_000)` (an `os.stat`, no open), "
        f"median ns per call over {SAMPLES} interleaved samples of {CALLS:,} calls each; "
        f"*bytes read* is the growth of `rchar` in `/proc/self/io` over {IO_CALLS:,} calls "
        "(minus an empty loop's). The last row really reads the 1 KB file, to show the "
        "counter sees reads.",
        "",
        f"Target: the same cost for both files (ratio 1.0, within ±25 %) and no bytes read. "
        f"{verdict}",
        "",
        "| file | st_size | allocated on disk | exceeds budget | median ns/call | bytes read over "
        f"{IO_CALLS:,} calls |",
        "| --- | ---: | ---: | --- | ---: | ---: |",
        f"| 1 GB sparse | {big_answer[1]:,} | {allocated:,} | {big_answer[0]} | {med_big:,.0f} "
        f"| {io(io_big)} |",
        f"| 1 KB | {small_answer[1]:,} | {small_allocated:,} | {small_answer[0]} | {med_small:,.0f} "
        f"| {io(io_small)} |",
        f"| 1 KB, read (control) | {KB:,} | {small_allocated:,} | — | {read_ns:,.0f} | {io(io_read)} |",
        "",
        f"Ratio 1 GB / 1 KB: **{ratio:.3f}**.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())

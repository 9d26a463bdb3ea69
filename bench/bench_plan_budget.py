"""How ``reduce_plan`` scales with plan size, at both injection budgets.

The reducer runs on every turn (dynamic site) and on every handover, so it must
stay cheap on the largest real plans (122,215 characters in the evidence) and
grow linearly beyond them. This benchmark times it on generated markdown plans
from 1 KB to 1 MB and reports time per KB, with a ratio against the 1 KB row: a
linear reducer keeps that ratio flat (it only falls, as fixed overhead is
amortised), a quadratic one would make it climb with size.

Run alone with ``python -m bench.bench_plan_budget``; ``bench/run.py`` imports
``run()``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from harvey.chat.plan_budget import (
    DYNAMIC_BUDGET,
    HANDOVER_BUDGET,
    contain_tags,
    reduce_plan,
)

KB = 1024
# (label, target size, unit): the evidence's largest plan is measured in characters.
SIZES: list[tuple[str, int, str]] = [
    ("1 KB", 1 * KB, "bytes"),
    ("4 KB", 4 * KB, "bytes"),
    ("16 KB", 16 * KB, "bytes"),
    ("64 KB", 64 * KB, "bytes"),
    ("122,215 chars", 122_215, "chars"),
    ("256 KB", 256 * KB, "bytes"),
    ("1 MB", 1024 * KB, "bytes"),
]
SAMPLES = 7
MIN_SAMPLE_SECONDS = 0.02


def make_plan(target: int, unit: str) -> str:
    """A deterministic plan shaped like real ones: a title, many ``## `` sections
    of uneven size with ``### `` subsections, bullets, code and multi-byte text."""
    parts = ["# Implementation plan — 実装計画\n\nContext for the work ahead.\n\n"]
    size = 0
    i = 0
    while size < target:
        lines = [f"## Step {i}: refine module {i % 17} ✅\n", "\n"]
        for j in range(3 + (i * 7) % 23):
            lines.append(f"- item {j}: update the parser, 日本語のメモ, emoji 🚀 #{i}.{j}\n")
            if j % 5 == 4:
                lines.append(f"### Detail {j}\n```python\nresult = run(step={i}, part={j})\n```\n")
        section = "".join(lines) + "\n"
        parts.append(section)
        size += len(section.encode()) if unit == "bytes" else len(section)
        i += 1
    text = "".join(parts)
    if unit == "chars":
        return text[:target]
    return text.encode()[:target].decode("utf-8", "ignore")


def median_seconds(fn: Callable[[], object]) -> float:
    """Median per-call time over ``SAMPLES`` samples, each long enough to measure."""
    loops = 1
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        if time.perf_counter() - start >= MIN_SAMPLE_SECONDS or loops >= 1 << 16:
            break
        loops *= 2
    samples = []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        samples.append((time.perf_counter() - start) / loops)
    return statistics.median(samples)


def run() -> str:
    """Time the reducer on every size and return a Markdown section with the table."""
    rows = []
    base: dict[str, float] = {}
    for label, target, unit in SIZES:
        # The 1 KB plan is under both budgets and only exercises R1's early return, so
        # each ratio is taken against the smallest plan that budget actually reduces.
        plan = make_plan(target, unit)
        nbytes = len(plan.encode())
        kb = nbytes / KB
        dyn = median_seconds(lambda p=plan: reduce_plan(p, DYNAMIC_BUDGET))  # type: ignore[misc]
        hand = median_seconds(lambda p=plan: reduce_plan(contain_tags(p), HANDOVER_BUDGET))  # type: ignore[misc]
        per_kb = {"dyn": dyn / kb, "hand": hand / kb}
        for key, budget in (("dyn", DYNAMIC_BUDGET), ("hand", HANDOVER_BUDGET)):
            if key not in base and nbytes > budget:
                base[key] = per_kb[key]
        ratio = {key: f"{per_kb[key] / base[key]:.2f}" if key in base else "—" for key in per_kb}
        out_dyn, _, omitted_dyn = reduce_plan(plan, DYNAMIC_BUDGET)
        rows.append(
            f"| {label} | {len(plan):,} | {nbytes:,} | {plan.count(chr(10) + '## ') + 1} "
            f"| {dyn * 1e6:,.1f} | {per_kb['dyn'] * 1e6:.2f} | {ratio['dyn']} "
            f"| {hand * 1e6:,.1f} | {per_kb['hand'] * 1e6:.2f} | {ratio['hand']} "
            f"| {len(out_dyn.encode()):,} / {omitted_dyn} |"
        )
    header = [
        "## Plan injection budget: `reduce_plan` scaling",
        "",
        f"Median of {SAMPLES} samples per cell. *dynamic* is `reduce_plan(plan, "
        f"{DYNAMIC_BUDGET})`; *handover* is `reduce_plan(contain_tags(plan), "
        f"{HANDOVER_BUDGET})`. *ratio* is µs/KB divided by the µs/KB of the smallest plan "
        "that budget reduces (the 1 KB plan fits both budgets and is returned unchanged "
        "by R1's fast path): a flat ratio means linear growth, a quadratic reducer would "
        "climb with size.",
        "",
        "| plan | chars | bytes | sections | dynamic µs | µs/KB | ratio "
        "| handover µs | µs/KB | ratio | dynamic out bytes / omitted |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    return "\n".join([*header, *rows]) + "\n"


if __name__ == "__main__":
    print(run())

"""``make bench``: run every benchmark side by side in one process, write ``BENCHMARKS.md``.

One run on one machine is what makes the numbers comparable, so every section
is measured here in sequence under a header that says when and on what
(date, CPU count and model, Python). A benchmark that fails — a corpus that
cannot be fetched, a tokenizer that does not load — prints its error in its
own section; the others still run and the file is still written.

Usage::

    python -m bench.run                 # all sections → BENCHMARKS.md and stdout
    python -m bench.run --only guard    # one section, stdout only
    python -m bench.run --only guard --output /tmp/guard.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "BENCHMARKS.md"

# (section name for --only, module, title used when the module fails), in run order.
SECTIONS: list[tuple[str, str, str]] = [
    ("chunker", "bench.bench_chunker", "Chunkers"),
    ("map_phase", "bench.bench_map_phase", "Map phase"),
    ("analysis_quality", "bench.bench_analysis_quality", "Faithful analysis"),
    ("reader_questions", "bench.bench_reader_questions", "Reader questions"),
    ("finder_cost", "bench.bench_finder_cost", "What finding by meaning costs"),
    ("guard", "bench.bench_guard", "Pre-read guard"),
    ("estimator", "bench.bench_estimator", "Token estimator"),
    ("tokens", "bench.bench_tokens", "Token counting and window-sized chunks"),
    ("plan_budget", "bench.bench_plan_budget", "Plan injection budget"),
    ("startup", "bench.bench_startup", "Start-up"),
    ("pool", "bench.bench_pool", "Endpoint pool"),
    ("ray", "bench.bench_ray", "Ray"),
    ("rag", "bench.bench_rag", "Knowledge stores"),
    ("documents", "bench.bench_documents", "PDF extraction"),
    ("memory", "bench.bench_memory", "Long-term memory"),
    ("sampling", "bench.bench_sampling", "Sampling of the embedded model"),
    ("tool_tasks", "bench.bench_tool_tasks", "Tool tasks on the embedded model"),
    ("prompt_cache", "bench.bench_prompt_cache", "Prompts that keep the cache"),
    ("mcp_schemas", "bench.bench_mcp_schemas", "MCP schemas on a budget"),
]


def cpu_model() -> str:
    """The CPU's marketing name from ``/proc/cpuinfo``, else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def cpu_count() -> int:
    """CPUs this process may run on (what ``nproc`` prints)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def git_revision() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{out}{' (with uncommitted changes)' if dirty else ''}"


def header(now: dt.datetime) -> str:
    lines = [
        "# Harvey benchmarks",
        "",
        "Written by `make bench` (`python -m bench.run`); every section below was measured "
        "in the same run, on the same machine. Regenerate rather than edit.",
        "",
        f"- date: {now.strftime('%Y-%m-%d %H:%M %Z').strip()}",
        f"- machine: {cpu_count()} CPUs (`nproc`), {cpu_model()}, {platform.system()} "
        f"{platform.release()}",
        f"- Python: {platform.python_implementation()} {platform.python_version()}",
        f"- revision: {git_revision()}",
    ]
    return "\n".join(lines) + "\n"


def run_section(module_name: str, title: str) -> tuple[str, float]:
    """The section's Markdown and its duration; a failure becomes a section saying so."""
    start = time.perf_counter()
    try:
        module = importlib.import_module(module_name)
        text = str(module.run())
    except Exception as exc:
        last = traceback.format_exception(exc)[-3:]
        text = (
            f"## {title}\n\n**Failed**: `{type(exc).__name__}: {exc}`\n\n"
            "```\n" + "".join(last).rstrip() + "\n```\n"
        )
    return text, time.perf_counter() - start


def run_all(names: list[str]) -> str:
    """Run the chosen sections in order and return the whole document."""
    now = dt.datetime.now(dt.UTC).astimezone()
    parts = [header(now)]
    summary = []
    for name, module_name, title in SECTIONS:
        if name not in names:
            continue
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        text, seconds = run_section(module_name, title)
        print(f"[bench] {name} done in {seconds:.1f} s", file=sys.stderr, flush=True)
        summary.append(f"| {name} | {seconds:.1f} |")
        parts.append(text.rstrip() + f"\n\n*Section time: {seconds:.1f} s.*\n")
    parts.append(
        "## Run time\n\n| section | seconds |\n| --- | ---: |\n" + "\n".join(summary) + "\n"
    )
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    names = [name for name, _, _ in SECTIONS]
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only",
        choices=names,
        type=lambda s: s.replace("-", "_"),
        action="append",
        help="run only this section (repeatable); the result is printed, and written only "
        "with --output",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help=f"where to write the Markdown (default: {DEFAULT_OUTPUT.name} when running all)",
    )
    args = parser.parse_args(argv)
    chosen = args.only or names
    output = args.output if args.output is not None else (None if args.only else DEFAULT_OUTPUT)
    document = run_all(chosen)
    print(document)
    if output is not None:
        output.write_text(document, encoding="utf-8")
        print(f"[bench] wrote {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What finding evidence by meaning costs: the first and the second question on one
document of 100 KB, 1 MB and 10 MB, on this machine, and the peak memory.

Each run is a whole ``harvey analyze DOC -i QUESTION --yes`` as a person types it (the
embedded model, Harvey's own finder, a fresh ``HARVEY_HOME`` for each size), timed from
the shell's side, its peak resident memory read from ``getrusage`` of the child. The
first question builds the document's index (its sentences, wordllama's vector of each,
all-MiniLM-L6-v2's of those it ranks); the second, a different question, reuses it
(``HARVEY_HOME/cache/indexes``). The documents are pages of the Python documentation
(``bench/corpora.py``) joined until the size is reached, so their sentences are real
and do not repeat.

Run alone with ``python -m bench.bench_finder_cost``; ``HARVEY_BENCH_COST_SIZES=100000``
limits the sizes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.corpora import CorpusUnavailable, prose_corpus

SIZES = [100_000, 1_000_000, 10_000_000]
FIRST = "How do I make a regular expression ignore upper and lower case?"
SECOND = "What happens when a dictionary key is not found?"

_RUN = (
    "import resource, subprocess, sys, time\n"
    "began = time.perf_counter()\n"
    "code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "seconds = time.perf_counter() - began\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(code, seconds, peak)\n"
)


def _document(size: int) -> str:
    parts: list[str] = []
    total = 0
    for _name, text in prose_corpus():
        parts.append(text)
        total += len(text.encode("utf-8"))
        if total >= size:
            break
    joined = "\n\n".join(parts).encode("utf-8")[:size]
    return joined.decode("utf-8", errors="ignore")


def _ask(workspace: Path, home: Path, question: str) -> tuple[int, float, int]:
    env = {**os.environ, "HARVEY_HOME": str(home)}
    harvey = [sys.executable, "-m", "harvey", "analyze", "doc.txt", "-i", question, "--yes"]
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, *harvey],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    code, seconds, peak = proc.stdout.split()
    return int(code), float(seconds), int(peak) // 1024


def measure(sizes: list[int]) -> list[dict[str, object]]:
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="harvey-cost-") as tmp:
            workspace, home = Path(tmp) / "ws", Path(tmp) / "home"
            workspace.mkdir()
            (workspace / "doc.txt").write_text(_document(size), encoding="utf-8")
            first = _ask(workspace, home, FIRST)
            second = _ask(workspace, home, SECOND)
        row = {
            "size": size,
            "first_s": round(first[1], 1),
            "second_s": round(second[1], 1),
            "peak_mb": max(first[2], second[2]),
            "ok": first[0] == 0 and second[0] == 0,
        }
        print(f"[finder-cost] {json.dumps(row)}", file=sys.stderr, flush=True)
        rows.append(row)
    return rows


def _size(n: int) -> str:
    return f"{n / 1_000_000:g} MB" if n >= 1_000_000 else f"{n // 1000} KB"


def run() -> str:
    sizes = [int(s) for s in os.environ.get("HARVEY_BENCH_COST_SIZES", "").split(",") if s]
    try:
        rows = measure(sizes or SIZES)
    except CorpusUnavailable as exc:
        return f"## What finding by meaning costs\n\nskipped: {exc}\n"
    began = time.strftime("%Y-%m-%d")
    lines = [
        "## What finding by meaning costs",
        "",
        f"`harvey analyze DOC -i QUESTION --yes` on the embedded model, two cores, {began}: "
        "the first question on a document builds its index, the second (another question) "
        "reuses it. Whole commands, process start and model loading included; peak is the "
        "largest resident memory of the two.",
        "",
        "| document | first question (s) | second question (s) | peak memory (MB) | exit 0 |",
        "| --- | ---: | ---: | ---: | :---: |",
    ]
    for row in rows:
        lines.append(
            f"| {_size(int(row['size']))} | {row['first_s']} | {row['second_s']} | "  # type: ignore[call-overload]
            f"{row['peak_mb']} | {'yes' if row['ok'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())

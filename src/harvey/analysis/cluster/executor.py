"""``--executor ray``: the map phase of ``harvey analyze`` run on a Ray cluster.

``RayExecutor`` is a ``harvey.analysis.map_calls.MapExecutor``: the engine
hands it the map calls as ``MapTask``s (prompt and stored-result key) and it
runs them on the cluster, while everything with state stays in this, the
coordinator, process — stored results go to ``sessions.db`` through the
engine's ``ResultCache`` as they arrive, the notes and partial results are
kept in chunk order, the reduce runs here.

Where a call runs (``harvey.analysis.cluster.workers``):

* an HTTP backend or an endpoint pool: one Ray task per call, which calls the
  endpoint (or the pool, rebuilt once per worker from the coordinator's
  probe) from whichever node Ray picks; Ray re-runs a task whose worker or
  node died (``TASK_RETRIES``);
* the embedded model: one ``ModelActor`` per node holds the model. Nodes
  started with the custom resource ``harvey_model`` (``ray start
  --resources='{"harvey_model": 1}'``) get one actor per unit of it; on a
  cluster without that resource, one actor goes to each node with a CPU. Ray
  restarts an actor whose process dies and re-runs its call
  (``ACTOR_RESTARTS``, ``ACTOR_TASK_RETRIES``); an actor whose *node* is gone
  could only be restarted where no room is left, so the coordinator, which
  looks at the nodes every second, retires it and sends its calls to the
  actors that remain.

A chunk a server refuses as too long comes back as ``ContextTooLong`` and is
split and analysed by the engine, in this process, like any other.

Every result is handed to the engine once per key: a call Ray re-ran returns
through its one reference, a call the coordinator sent again after losing
its actor is dropped if an answer for its key already arrived. Results that
arrive together are handed over in chunk order, through the engine's
progress reporter.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harvey.analysis.cluster.connect import connect, disconnect
from harvey.analysis.cluster.recipe import Recipe, recipe_for
from harvey.analysis.cluster.workers import ModelActor, Outcome, map_call
from harvey.errors import Cancelled, ClusterError

if TYPE_CHECKING:
    from harvey.analysis.map_calls import MapTask, OnDone, OnStart
    from harvey.protocols import LLMClient

RESOURCE = "harvey_model"  # the custom resource that marks a node for one model actor
POLL_SECONDS = 0.2
NODE_CHECK_SECONDS = 1.0
TASK_RETRIES = 3  # Ray re-runs a task whose worker or node died
ACTOR_RESTARTS = 3  # Ray restarts a model actor whose process died
ACTOR_TASK_RETRIES = 3  # ... and re-runs the call it was in
RESENDS = 3  # the coordinator sends a call again after Ray gave it up
CALLS_PER_ACTOR = 2  # one running, one queued behind it: no idle gap between calls
HTTP_TASK_CPUS = 1.0
NO_CPU_GRACE = 60.0  # seconds a cluster may have no CPU before the run gives up
READY_TIMEOUT = 300.0  # seconds to wait for the first model actor to load
READY_GRACE = 30.0  # ... and then for the others


def _line(exc: BaseException) -> str:
    return (str(exc).strip() or type(exc).__name__).splitlines()[0]


@dataclass
class _Sent:
    """One map call sent to the cluster: call j of the engine, and where it went."""

    j: int
    task: MapTask
    worker: Any = None
    attempts: int = 0


@dataclass
class _Actor:
    handle: Any
    node: str = ""
    in_flight: int = 0


class _Tasks:
    """HTTP backends: one Ray task per call, at most ``limit`` in flight."""

    def __init__(self, ray: Any, recipe: Recipe, limit: int) -> None:
        self.ray = ray
        self.recipe = recipe
        self.limit = max(1, limit)
        self.in_flight = 0
        self.remote = ray.remote(map_call)
        self._no_cpu_since: float | None = None

    def room(self) -> int:
        return self.limit - self.in_flight

    def send(self, task: MapTask) -> tuple[Any, Any]:
        self.in_flight += 1
        name = f"harvey-map-{task.key[:12]}"
        options = {"num_cpus": HTTP_TASK_CPUS, "max_retries": TASK_RETRIES, "name": name}
        return self.remote.options(**options).remote(self.recipe, task), None

    def finished(self, worker: Any, *, lost: bool = False) -> None:
        self.in_flight -= 1

    def check(self) -> None:
        """A cluster with no CPU for ``NO_CPU_GRACE`` seconds will not run the calls (a
        shorter gap may be an autoscaler bringing a node up)."""
        if self.ray.cluster_resources().get("CPU", 0) >= HTTP_TASK_CPUS:
            self._no_cpu_since = None
            return
        now = time.monotonic()
        self._no_cpu_since = self._no_cpu_since or now
        if now - self._no_cpu_since >= NO_CPU_GRACE:
            raise ClusterError(
                f"no node of the Ray cluster has had a CPU for the map calls for {NO_CPU_GRACE:g} s"
            )

    def close(self) -> None:
        pass


class _Actors:
    """The embedded model: one ``ModelActor`` per node, each with ``CALLS_PER_ACTOR`` calls."""

    def __init__(self, ray: Any, recipe: Recipe, cancel: threading.Event) -> None:
        self.ray = ray
        remote = ray.remote(ModelActor)
        self.all = [
            _Actor(
                remote.options(
                    max_restarts=ACTOR_RESTARTS, max_task_retries=ACTOR_TASK_RETRIES, **placement
                ).remote(recipe)
            )
            for placement in self._placements()
        ]
        self.live: list[_Actor] = []
        self._turn = 0
        try:
            self._wait_ready(cancel)
        except BaseException:
            self.close()
            raise

    def _placements(self) -> list[dict[str, Any]]:
        units = int(self.ray.cluster_resources().get(RESOURCE, 0))
        if units >= 1:
            return [{"resources": {RESOURCE: 1}, "num_cpus": 0}] * units
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = [
            n["NodeID"]
            for n in self.ray.nodes()
            if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= 1
        ]
        if not nodes:
            raise ClusterError("no node of the Ray cluster has a CPU for the embedded model")
        return [
            {"num_cpus": 1, "scheduling_strategy": NodeAffinitySchedulingStrategy(n, soft=True)}
            for n in nodes
        ]

    def _wait_ready(self, cancel: threading.Event) -> None:
        """Every actor loads its model; those not placed in time, or that cannot load, go."""
        waiting = {a.handle.ready.remote(): a for a in self.all}
        errors: list[str] = []
        deadline = time.monotonic() + READY_TIMEOUT
        while waiting and time.monotonic() < deadline:
            if cancel.is_set():
                raise Cancelled("chunk analysis cancelled")
            done, _ = self.ray.wait(list(waiting), num_returns=1, timeout=POLL_SECONDS)
            for ref in done:
                actor = waiting.pop(ref)
                try:
                    actor.node, error = self.ray.get(ref)
                except self.ray.exceptions.RayError as exc:
                    error = _line(exc)
                if error is None:
                    self.live.append(actor)
                    if len(self.live) == 1:
                        deadline = min(deadline, time.monotonic() + READY_GRACE)
                else:
                    errors.append(error)
                    self._kill(actor)
        for actor in waiting.values():
            self._kill(actor)
        if not self.live:
            raise ClusterError(
                f"the embedded model cannot load on the Ray cluster: {errors[0]}"
                if errors
                else f"no Ray node took a model actor within {READY_TIMEOUT:g} s "
                f"(is every node's {RESOURCE} resource held by another run?)"
            )

    def room(self) -> int:
        return sum(CALLS_PER_ACTOR - a.in_flight for a in self.live)

    def send(self, task: MapTask) -> tuple[Any, Any]:
        free = [a for a in self.live if a.in_flight < CALLS_PER_ACTOR]
        fewest = min(a.in_flight for a in free)
        tied = [a for a in free if a.in_flight == fewest]
        actor = tied[self._turn % len(tied)]  # ties rotated, not always the first
        self._turn += 1
        actor.in_flight += 1
        return actor.handle.call.remote(task), actor

    def finished(self, worker: Any, *, lost: bool = False) -> None:
        worker.in_flight -= 1
        if lost and worker in self.live:
            self.live.remove(worker)
            self._kill(worker)

    def check(self) -> None:
        """Retire the actors whose node is gone: their calls then fail and are sent again."""
        alive = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        for actor in [a for a in self.live if a.node not in alive]:
            self.live.remove(actor)
            self._kill(actor)

    def _kill(self, actor: _Actor) -> None:
        try:
            self.ray.kill(actor.handle, no_restart=True)
        except Exception:  # already gone: nothing to stop
            pass

    def close(self) -> None:
        for actor in self.all:
            self._kill(actor)


@dataclass
class RayExecutor:
    """Runs map calls on the Ray cluster this process is attached to (see the module doc).

    ``actors`` forces (``True``) or forbids (``False``) model actors; by default the
    embedded model gets actors and HTTP backends get tasks. ``served`` records, per
    result key, the node and worker process that answered it: what the tests and the
    benchmark look at.
    """

    ray: Any
    attached: bool = False
    actors: bool | None = None
    served: dict[str, tuple[str, int]] = field(default_factory=dict)
    duplicates: int = 0  # answers dropped because their key had one already

    @classmethod
    def connect(
        cls, address: str | None, *, num_cpus: int | None = None, actors: bool | None = None
    ) -> RayExecutor:
        """Join (or start) the cluster now, before anything of the run is written."""
        ray, attached = connect(address, num_cpus=num_cpus)
        return cls(ray, attached, actors)

    def close(self) -> None:
        if self.attached:
            self.attached = False
            disconnect(self.ray)

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run_map(
        self,
        client: LLMClient,
        tasks: Iterable[MapTask],
        concurrency: int,
        cancel: threading.Event,
        on_start: OnStart,
        on_done: OnDone,
    ) -> None:
        recipe = recipe_for(client)
        use_actors = recipe.embedded if self.actors is None else self.actors
        workers: _Tasks | _Actors
        workers = (
            _Actors(self.ray, recipe, cancel)
            if use_actors
            else _Tasks(self.ray, recipe, concurrency)
        )
        sent: dict[Any, _Sent] = {}
        try:
            self._loop(workers, iter(tasks), sent, cancel, on_start, on_done)
        finally:
            for ref in sent:
                try:
                    self.ray.cancel(ref)
                except Exception:  # finished meanwhile, or an actor call Ray cannot cancel
                    pass
            workers.close()

    def _loop(
        self,
        workers: _Tasks | _Actors,
        tasks: Iterator[MapTask],
        sent: dict[Any, _Sent],
        cancel: threading.Event,
        on_start: OnStart,
        on_done: OnDone,
    ) -> None:
        again: deque[_Sent] = deque()
        answered: set[str] = set()
        exhausted = False
        next_j = 0
        checked = time.monotonic()
        while not exhausted or sent or again:
            if cancel.is_set():
                raise Cancelled("chunk analysis cancelled")
            while workers.room() > 0 and (again or not exhausted):
                if again:
                    item = again.popleft()
                else:
                    task = next(tasks, None)
                    if task is None:
                        exhausted = True
                        break
                    item = _Sent(next_j, task)
                    next_j += 1
                    on_start(item.j)
                item.attempts += 1
                ref, item.worker = workers.send(item.task)
                sent[ref] = item
            if not sent:
                if again or not exhausted:
                    raise ClusterError("no Ray worker is left to run the map calls")
                break
            if time.monotonic() - checked >= NODE_CHECK_SECONDS:
                workers.check()
                checked = time.monotonic()
            for ref in self._ready(sent):
                item = sent.pop(ref)
                result = self._collect(ref, item, workers)
                if result is None:
                    again.append(item)
                elif item.task.key in answered:
                    self.duplicates += 1
                else:
                    answered.add(item.task.key)
                    on_done(item.j, *result)

    def _ready(self, sent: dict[Any, _Sent]) -> list[Any]:
        """The references finished now (waiting up to a poll interval), in chunk order."""
        refs = list(sent)
        ready, rest = self.ray.wait(refs, num_returns=1, timeout=POLL_SECONDS)
        if ready and rest:
            more, _ = self.ray.wait(rest, num_returns=len(rest), timeout=0)
            ready = [*ready, *more]
        return sorted(ready, key=lambda r: sent[r].j)

    def _collect(
        self, ref: Any, item: _Sent, workers: _Tasks | _Actors
    ) -> tuple[str | None, BaseException | None] | None:
        """The call's text or error; ``None`` when it must be sent again (its worker died)."""
        errors = self.ray.exceptions
        try:
            outcome: Outcome = self.ray.get(ref)
        except errors.TaskCancelledError as exc:
            workers.finished(item.worker)
            raise Cancelled("chunk analysis cancelled") from exc
        except errors.RayTaskError as exc:  # map_call itself could not run there
            workers.finished(item.worker)
            cause = getattr(exc, "cause", None)
            raise ClusterError(
                "the Ray workers cannot run Harvey's map call "
                f"({_line(cause if cause is not None else exc)}): install harvey-agent on "
                "every node"
            ) from exc
        except errors.RayError as exc:
            lost = isinstance(exc, errors.RayActorError) and not isinstance(
                exc, errors.ActorUnavailableError
            )
            workers.finished(item.worker, lost=lost)
            if item.attempts <= RESENDS:
                return None
            return None, ClusterError(
                f"the cluster lost this chunk's call {item.attempts} times: {_line(exc)}"
            )
        workers.finished(item.worker)
        self.served[outcome.key] = (outcome.node, outcome.pid)
        return outcome.result()

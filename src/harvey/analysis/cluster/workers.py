"""What runs on the Ray nodes: one map call, as a plain task or on a model-holding actor.

Nothing here imports Ray at module level: ``harvey.analysis.cluster.executor`` wraps
``map_call`` and ``ModelActor`` with ``ray.remote`` when a run starts, and the
nodes import this module to run them (every node needs ``harvey-agent``
installed, with ``[local]`` for the embedded model).

A worker keeps one client per recipe for as long as the worker process lives,
so an endpoint pool's cooldowns and an embedded model's loaded weights serve
every task that worker runs, not just one.

A map call never raises back to the coordinator for a model's failure: a
``HarveyError`` becomes an ``Outcome`` carrying its first line and kind, and
the coordinator turns it back into the same error (``Outcome.result``). An
exception Ray transports instead would arrive wrapped in a remote traceback,
and Harvey's errors with extra constructor arguments do not survive pickling.
Only a worker or node that dies leaves the result to Ray: it retries the task,
and the coordinator hands over one result per key whatever Ray retried.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvey.errors import (
    BackendError,
    BackendUnavailable,
    ContextTooLong,
    HarveyError,
    ModelNotFound,
    StreamError,
)
from harvey.messages import Message

if TYPE_CHECKING:
    from harvey.analysis.cluster.recipe import Recipe
    from harvey.analysis.map_calls import MapTask
    from harvey.protocols import LLMClient

_KINDS: dict[str, type[BackendError]] = {
    "BackendUnavailable": BackendUnavailable,
    "ModelNotFound": ModelNotFound,
    "StreamError": StreamError,
}

_CLIENTS: dict[Recipe, LLMClient] = {}
_CLIENTS_LOCK = threading.Lock()


@dataclass(frozen=True)
class Outcome:
    """One map call's answer as it travels back: the text, or the error's kind and line."""

    key: str
    text: str | None
    node: str = ""
    pid: int = 0  # the worker process on that node
    error: str | None = None
    kind: str = ""
    prompt_tokens: int | None = None
    window: int | None = None

    def result(self) -> tuple[str | None, BaseException | None]:
        """``(text, None)``, or ``(None, error)`` rebuilt as the class the worker raised
        (``ContextTooLong`` with its sizes, so the coordinator can split the chunk)."""
        if self.error is None:
            return self.text, None
        if self.kind == "ContextTooLong":
            return None, ContextTooLong(self.error, self.prompt_tokens, self.window)
        return None, _KINDS.get(self.kind, BackendError)(self.error)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def node_id() -> str:
    """The Ray node this worker runs on."""
    import ray

    return str(ray.get_runtime_context().get_node_id())


def client_for(recipe: Recipe) -> LLMClient:
    """This worker's client for ``recipe``, made on first use and kept."""
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(recipe)
        if client is None:
            client = _CLIENTS[recipe] = recipe.build()
        return client


def map_call(recipe: Recipe, task: MapTask) -> Outcome:
    """Run one map call on this node; a failure of the model is an ``Outcome``, not a raise."""
    from harvey.llm.base import chat

    node, pid = node_id(), os.getpid()
    try:
        messages = [Message(role="user", content=task.prompt)]
        if task.schema is None:
            reply = chat(client_for(recipe), messages)
        else:
            reply = chat(client_for(recipe), messages, response_schema=task.schema)
    except ContextTooLong as exc:
        line = _first_line(exc)
        return Outcome(
            task.key, None, node, pid, line, "ContextTooLong", exc.prompt_tokens, exc.window
        )
    except HarveyError as exc:
        return Outcome(task.key, None, node, pid, _first_line(exc), type(exc).__name__)
    except Exception as exc:  # a bug on the node: still one line at the coordinator
        line = f"the Ray worker failed: {type(exc).__name__}: {_first_line(exc)}"
        return Outcome(task.key, None, node, pid, line, "BackendError")
    return Outcome(task.key, reply.answer, node, pid)


class ModelActor:
    """Holds one embedded model on one node and answers map calls with it, one at a time.

    Ray restarts the actor when its process dies (``max_restarts``) and re-runs
    the call it was in (``max_task_retries``); the model is loaded again on the
    first call after a restart, by ``client_for``.
    """

    def __init__(self, recipe: Recipe) -> None:
        self.recipe = recipe

    def ready(self) -> tuple[str, str | None]:
        """Load the model now (so the first chunk does not pay for it): this node's id,
        and the reason the model cannot load here, if it cannot."""
        try:
            client_for(self.recipe).capabilities()
        except HarveyError as exc:
            return node_id(), _first_line(exc)
        return node_id(), None

    def call(self, task: MapTask) -> Outcome:
        return map_call(self.recipe, task)

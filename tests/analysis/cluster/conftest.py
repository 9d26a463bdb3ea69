"""Fixtures for the Ray tests: a private place for Ray's files, and a fake that echoes chunks.

Ray writes its sockets and logs under ``RAY_TMPDIR`` (default ``/tmp/ray``) and a
little under ``~/.ray``; every Ray test points both at a fresh folder, so nothing
lands in the user's home or meets another run's cluster. The folder's path is
kept short: a Unix socket path may not exceed about 107 bytes, and Ray's session
folders add some 60 of their own.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harvey.analysis.map_calls import MapTask
from harvey.analysis.mapper import EvidenceMapper, MapRequest, Piece
from harvey.chunks.chunking import Chunk
from tests.cli.conftest import Run, harvey_process, workspace
from tests.conftest import missing_dependency
from tests.fakes.evidence import part_of, records
from tests.fakes.quoting import QuotingLlamaCpp

#: What the fake answers anything that is not a map call: a synthesis the check keeps.
SYNTHESIS = "The paragraphs say some words [1]."


class EchoLlamaCpp(QuotingLlamaCpp):
    """A fake llama.cpp server whose map answer quotes the first sentence of the chunk it
    was asked about, and ``SYNTHESIS`` for anything else, so a test can see every chunk's
    result arrive exactly once and in order."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(answer=SYNTHESIS, **kwargs)

    def map_calls(self) -> list[int]:
        """The chunk numbers of the map calls received whole, in arrival order: a request
        cut off when its node is removed (its body missing or half sent) is not one."""
        found = []
        for body in self.chat_requests:
            if not isinstance(body, dict) or not body.get("messages"):
                continue
            part = part_of(str(body["messages"][-1]["content"]))
            if part:
                found.append(part[0])
        return found


def map_tasks(n: int) -> list[MapTask]:
    """Map calls as the engine makes them: each a prompt with its records' schema."""
    mapper = EvidenceMapper("Summarise", "model")
    tasks = []
    for i in range(1, n + 1):
        text = f"Chunk {i} of {n} says hello. More follows."
        request = mapper.plan(Piece(Chunk(text, 0, len(text), 1, 1), "doc.md", i, n))
        assert isinstance(request, MapRequest)
        tasks.append(MapTask(f"key-{i}", request.prompt, request.schema))
    return tasks


def echoed(j: int, n: int) -> str:
    """What ``EchoLlamaCpp`` answers the map task ``j`` (0-based) of ``map_tasks(n)``."""
    return records(f"Chunk {j + 1} of {n} says hello.")


@pytest.fixture(scope="module")
def ray_env() -> Iterator[dict[str, str]]:
    """HOME, RAY_TMPDIR and no RAY_ADDRESS for this process and the ``harvey`` it spawns;
    the folder is removed afterwards."""
    if importlib.util.find_spec("ray") is None:
        missing_dependency("ray is not installed (pip install 'harvey-agent[ray]')")
    folder = tempfile.mkdtemp(prefix="hr", dir="/tmp" if os.path.isdir("/tmp") else None)
    env = {"HOME": folder, "RAY_TMPDIR": folder, "RAY_USAGE_STATS_ENABLED": "0"}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.delenv("RAY_ADDRESS", raising=False)
        yield env
    shutil.rmtree(folder, ignore_errors=True)


def write_doc(folder: Path, paragraphs: int = 12, name: str = "doc.md") -> Path:
    """A document that makes one chunk per paragraph at ``--chunk-size 1000``."""
    text = "\n\n".join(f"Paragraph {i}. " + "Some words here. " * 30 for i in range(paragraphs))
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture()
def harvey(harvey_process: Run) -> Run:
    """A real ``harvey`` process: Ray must start (or be missing) in a child, never in
    the test's own process, and a ``sitecustomize`` on PYTHONPATH reaches only a child."""
    return harvey_process


__all__ = [
    "SYNTHESIS",
    "EchoLlamaCpp",
    "echoed",
    "harvey",
    "harvey_process",
    "map_tasks",
    "ray_env",
    "workspace",
    "write_doc",
]

"""The engine's executor seam: map calls run elsewhere, in any order, keyed like stored results."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from harvey.analysis.engine import ChunkAnalysisParams, MapTask, run_chunked_analysis
from harvey.analysis.map_calls import OnDone, OnStart
from harvey.analysis.params import result_key
from harvey.analysis.progress import NullProgress
from harvey.errors import BackendError, ContextTooLong
from harvey.llm.base import LLMClient, chat
from harvey.messages import Message
from tests.analysis.test_engine import CHUNK_RE, FnClient, RecordingDouble

PART_RE = re.compile(r"Chunk (\d+) of \d+, part ")


class BackwardsExecutor:
    """Takes every task first, then answers them last to first: the worst order a cluster
    can return them in. Chunk 2's call fails, chunk 3's is refused as too long."""

    def __init__(self) -> None:
        self.tasks: list[MapTask] = []

    def run_map(
        self,
        client: LLMClient,
        tasks: Iterable[MapTask],
        concurrency: int,
        cancel: threading.Event,
        on_start: OnStart,
        on_done: OnDone,
    ) -> None:
        for j, task in enumerate(tasks):
            on_start(j)
            self.tasks.append(task)
        for j in reversed(range(len(self.tasks))):
            prompt = self.tasks[j].prompt
            if "Chunk 2 of" in prompt:
                on_done(j, None, BackendError("node lost"))
            elif "Chunk 3 of" in prompt and "part" not in prompt:
                on_done(j, None, ContextTooLong("too long", 900, 512))
            else:
                on_done(j, chat(client, [Message(role="user", content=prompt)]).text, None)


class Store:
    def __init__(self, stored: dict[str, str] | None = None) -> None:
        self.rows = dict(stored or {})

    def get(self, key: str) -> str | None:
        return self.rows.get(key)

    def put(self, key: str, model: str, text: str) -> None:
        self.rows[key] = text


def _reply(prompt: str) -> str:
    match = CHUNK_RE.search(prompt) or PART_RE.search(prompt)
    return f"r{match[1]}" if match else "synthesis"


def test_results_notes_and_stored_keys_stay_in_chunk_order_whatever_the_executor_does() -> None:
    chunks = ["alpha. " * 40, "beta. " * 40, "gamma. " * 40 + "\n\n" + "delta. " * 40, "eps. " * 40]
    params = ChunkAnalysisParams("doc.md", chunks, "Summarise", "LLAMA3")
    key = [result_key("LLAMA3", params, i + 1, 4, c) for i, c in enumerate(chunks)]
    store = Store({key[3]: "stored r4"})  # chunk 4 was done by an earlier run
    executor = BackwardsExecutor()
    recorder = RecordingDouble()
    client = FnClient(_reply)
    result = run_chunked_analysis(
        client,
        params,
        recorder=recorder,
        progress=NullProgress(),
        executor=executor,
        results=store,
    )
    assert [t.key for t in executor.tasks] == key[:3]  # chunk 4 costs no call
    assert result.partials[0] == "r1" and result.partials[3] == "stored r4"
    assert result.partials[1] == "[chunk 2 failed: node lost]" and result.failures == [2]
    assert result.partials[2].count("r3") == 2  # refused whole: split here, both halves
    assert result.reused == 1 and result.text == "synthesis"
    notes = [e[1:] for e in recorder.events if e[0] == "result"]
    assert [n[0] for n in notes] == [1, 2, 3, 4]
    assert notes[1][2] == "error: node lost" and notes[2][2].startswith("ok (split in 2 parts")
    assert set(store.rows) == {key[0], key[2], key[3]}  # the failed chunk is not stored

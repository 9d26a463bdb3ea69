"""The engine's executor seam: map calls run elsewhere, in any order, keyed like stored results."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from harvey.analysis.engine import ChunkAnalysisParams, MapTask, run_chunked_analysis
from harvey.analysis.evidence import ChunkEvidence, Record
from harvey.analysis.map_calls import OnDone, OnStart
from harvey.analysis.params import result_key
from harvey.analysis.progress import NullProgress
from harvey.analysis.quotes import Location
from harvey.errors import BackendError, ContextTooLong
from harvey.llm.base import chat
from harvey.messages import Message
from harvey.protocols import LLMClient
from tests.analysis.test_engine import FnClient, RecordingDouble
from tests.fakes.evidence import chunk_of, part_of, records


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
            task = self.tasks[j]
            assert task.schema is not None  # the records' schema travels with the task
            if part_of(task.prompt) == (2, 4):
                on_done(j, None, BackendError("node lost"))
            elif part_of(task.prompt) == (3, 4):
                on_done(j, None, ContextTooLong("too long", 900, 512))
            else:
                message = Message(role="user", content=task.prompt)
                on_done(j, chat(client, [message], response_schema=task.schema).text, None)


class Store:
    def __init__(self, stored: dict[str, str] | None = None) -> None:
        self.rows = dict(stored or {})

    def get(self, key: str) -> str | None:
        return self.rows.get(key)

    def put(self, key: str, model: str, text: str) -> None:
        self.rows[key] = text


def _reply(prompt: str) -> str:
    """Quote the first "Note on X." sentence of the chunk (its part after a split)."""
    found = re.search(r"Note on \w+\.", chunk_of(prompt) or "")
    return records(found.group()) if found else records()


def _chunk(word: str, count: int = 40) -> str:
    return f"Note on {word}. " + f"{word}. " * count


def test_results_notes_and_stored_keys_stay_in_chunk_order_whatever_the_executor_does() -> None:
    chunks = [
        _chunk("alpha"), _chunk("beta"), _chunk("gamma") + "\n\n" + _chunk("delta"), _chunk("eps")
    ]  # fmt: skip
    params = ChunkAnalysisParams("doc.md", chunks, "List every note", "LLAMA3", evidence="model")
    key = [result_key("LLAMA3", params, i + 1, 4, c) for i, c in enumerate(chunks)]
    offset = sum(len(c) for c in chunks[:3])  # where chunk 4 starts in the text
    stored = ChunkEvidence([Record("Note on eps.", Location("doc.md", 3, 3), offset=offset)])
    store = Store({key[3]: stored.to_json()})  # chunk 4 was done by an earlier run
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
    assert [r.quote for r in result.records] == [
        "Note on alpha.",
        "Note on gamma.",
        "Note on delta.",
        "Note on eps.",
    ]  # fmt: skip  (chunk 3 refused whole: split here, both halves quoted)
    assert result.evidence[1] is None and result.failures == [2]
    assert [r.id for r in result.records] == [1, 2, 3, 4]
    assert result.reused == 1
    notes = [e[1:] for e in recorder.events if e[0] == "result"]
    assert [n[0] for n in notes] == [1, 2, 3, 4]
    assert notes[1][2] == "error: node lost"
    assert notes[2][2] == "ok, 2 quotes (split in 2 parts: the server said the chunk was too long)"
    assert set(store.rows) == {key[0], key[2], key[3]}  # the failed chunk is not stored

"""Map calls over a source file are calibration samples of type "source"."""

from __future__ import annotations

from pathlib import Path

from harvey.llm.scripted import Reply
from harvey.session.store import SessionStore
from tests.fakes.evidence import records

from .conftest import AgentFactory
from .test_read_alert_doc_type import python_source


def test_map_calls_of_a_source_file_record_source_samples(
    make_agent: AgentFactory, workspace: Path, store: SessionStore
) -> None:
    path = workspace / "shapes.py"
    path.write_text(python_source(60))  # about 19 KB: 4 chunks of 6,000 bytes
    replies: list[Reply | str] = [Reply(records(), prompt_tokens=1500 + i) for i in range(4)]
    agent = make_agent(replies)
    agent.chunks.analyze(path, "Summarise")
    assert len(agent.client.seen) == 4  # a map call per chunk, and no synthesis of nothing
    samples = store.calibration_samples("testmodel", "source")
    units = store.calibration_samples("testmodel", "source", "units")
    assert sorted(t for _, t in samples) == [1500, 1501, 1502, 1503]  # one per map call
    # each sample is one map prompt (a chunk and its framing), together the whole file
    assert all(size < 7000 for size, _ in samples)
    assert sum(size for size, _ in samples) > path.stat().st_size
    assert all(u != b for (u, _), (b, _) in zip(units, samples, strict=True))
    assert store.calibration_samples("testmodel", "prose") == []

"""``analyze_file`` and ``analyze_paths``: the library entry points, with no Agent or session."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import harvey
from harvey.analysis.api import AnalysisStatus, AnalyzeOptions, Collaborators
from harvey.config import ChunkingSettings, Settings
from harvey.errors import UsageError
from tests.analysis.test_engine import FnClient, RecordingDouble

CHUNK = re.compile(r"Chunk (\d+) of (\d+)")


def _reply(prompt: str) -> str:
    found = CHUNK.search(prompt)
    return f"part {found.group(1)}" if found else "the synthesis"


def _doc(tmp_path: Path, name: str = "doc.md", paragraphs: int = 12) -> Path:
    path = tmp_path / name
    path.write_text(
        "\n\n".join(f"Paragraph {i}. " + "Some words. " * 20 for i in range(paragraphs))
    )
    return path


def test_analyze_file_needs_only_settings_and_a_client(tmp_path: Path) -> None:
    client = FnClient(_reply)
    options = AnalyzeOptions(overrides=ChunkingSettings.partial(chunk_size_bytes=600))
    result = harvey.analyze_file(
        _doc(tmp_path), "Summarise", settings=Settings(), client=client, options=options
    )
    assert result.status is AnalysisStatus.ANSWERED and result.answered
    assert result.text == "the synthesis"
    assert result.total > 1 and result.reused == 0
    assert len(client.prompts) == result.total + 1  # every chunk mapped, then one synthesis


def test_the_recorder_is_a_collaborator_passed_in(tmp_path: Path) -> None:
    recorder = RecordingDouble()
    started: list[bool] = []
    options = AnalyzeOptions(overrides=ChunkingSettings.partial(chunk_size_bytes=600))
    using = Collaborators(recorder=recorder, on_start=lambda: started.append(True))
    result = harvey.analyze_file(
        _doc(tmp_path),
        "Summarise",
        settings=ChunkingSettings(),
        client=FnClient(_reply),
        options=options,
        using=using,
    )
    assert started == [True]
    assert recorder.events[0] == (
        "start",
        "doc.md",
        result.total,
        "LLAMA3",
        "paragraph",
        600,
        "Summarise",
    )
    statuses = [e for e in recorder.events if e[0] == "result"]
    assert [e[1] for e in statuses] == list(range(1, result.total + 1))
    assert recorder.events[-1][0] == "synthesis"


def test_a_refused_question_reads_nothing(tmp_path: Path) -> None:
    client = FnClient(_reply)
    asked: list[str] = []

    def refuse(question: str) -> bool:
        asked.append(question)
        return False

    overrides = ChunkingSettings.partial(chunk_size_bytes=600, max_chunks=2)
    result = harvey.analyze_file(
        _doc(tmp_path),
        "Summarise",
        settings=Settings(),
        client=client,
        options=AnalyzeOptions(overrides=overrides),
        using=Collaborators(confirm=refuse),
    )
    assert result.status is AnalysisStatus.CANCELLED and not result.answered
    assert len(asked) == 1 and "max_chunks (2)" in asked[0]
    assert client.prompts == []


def test_an_empty_file_is_a_usage_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.md"
    empty.write_text("")
    with pytest.raises(UsageError, match="nothing to analyse"):
        harvey.analyze_file(empty, "Summarise", settings=Settings(), client=FnClient(_reply))


def test_analyze_paths_synthesises_each_file_then_the_whole(tmp_path: Path) -> None:
    files = [_doc(tmp_path, "a.md", 4), _doc(tmp_path, "b.md", 4)]
    client = FnClient(_reply)
    outcome = harvey.analyze_paths(
        files,
        "Summarise",
        settings=Settings(),
        client=client,
        workspace=tmp_path,
        options=AnalyzeOptions(overrides=ChunkingSettings.partial(chunk_size_bytes=600)),
    )
    assert outcome.result is not None
    assert outcome.result.text == "the synthesis"
    assert [f.name for f in outcome.result.files] == ["a.md", "b.md"]

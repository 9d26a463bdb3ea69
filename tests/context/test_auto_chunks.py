"""`chunking.chunk_size_bytes: auto`: chunks sized to the map model's window."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harvey.analysis.file_chunks import chunk_config
from harvey.config.settings import ChunkingSettings, load_settings, resolve_paths
from harvey.context.budget import (
    AUTO_CHUNK_SHARE,
    FIXED_CHUNK_BYTES,
    MAX_AUTO_CHUNK_BYTES,
    auto_chunk_bytes,
)
from harvey.errors import ConfigError
from harvey.llm.openai import OpenAIClient
from tests.fakes.evidence import part_of
from tests.fakes.quoting import QuotingOpenAI
from tests.fakes.servers import FakeOpenAI
from tests.harvey_process import invoke_harvey


def test_auto_fills_a_share_of_the_usable_window() -> None:
    size = auto_chunk_bytes(32_768, instruction="Summarise.", bytes_per_token=4.0)
    usable = 32_768 - 3_277 - 3 - 64
    assert size == int(usable * AUTO_CHUNK_SHARE * 4.0)
    assert auto_chunk_bytes(8192) < size < auto_chunk_bytes(131_072)
    assert auto_chunk_bytes(32_768, bytes_per_token=3.0) < size  # code: denser, smaller chunks


def test_auto_stays_within_its_bounds() -> None:
    assert auto_chunk_bytes(100, instruction="x" * 10_000) == 200
    assert auto_chunk_bytes(10**9) == MAX_AUTO_CHUNK_BYTES


def test_auto_is_the_default_and_a_number_still_works(tmp_path: Path) -> None:
    assert load_settings(resolve_paths(tmp_path), env={}).chunking.chunk_size_bytes == "auto"
    (tmp_path / "harvey.yaml").write_text("chunking:\n  chunk_size_bytes: 4000\n")
    assert load_settings(resolve_paths(tmp_path), env={}).chunking.chunk_size_bytes == 4000
    (tmp_path / "harvey.yaml").write_text("chunking:\n  chunk_size_bytes: big\n")
    with pytest.raises(ConfigError, match="chunk_size_bytes"):
        load_settings(resolve_paths(tmp_path), env={})


def test_chunk_config_resolves_auto_for_the_map_model() -> None:
    with FakeOpenAI(context_window=32_768) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        cfg = chunk_config(ChunkingSettings(), client, instruction="Summarise.")
        fixed = chunk_config(
            ChunkingSettings(), client, ChunkingSettings.partial(chunk_size_bytes=5000)
        )
    assert cfg.chunk_size_bytes == auto_chunk_bytes(32_768, instruction="Summarise.")
    assert fixed.chunk_size_bytes == 5000  # --chunk-size overrides auto


def test_auto_is_capped_when_the_model_chooses_the_evidence() -> None:
    """The quality curve's finding: the model choosing among candidates keeps fewer facts
    the larger its chunk, so ``auto`` stops at 3,000 bytes for it; Harvey's own finder
    and a model writing records keep the window-sized chunk, and a number is a number."""
    from harvey.analysis.file_chunks import CHOOSING_CHUNK_BYTES

    with FakeOpenAI(context_window=32_768) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        window = chunk_config(ChunkingSettings(), client).chunk_size_bytes
        assert window > CHOOSING_CHUNK_BYTES == 3000
        for style in ("harvey", "model"):
            assert (
                chunk_config(ChunkingSettings(), client, evidence=style).chunk_size_bytes == window
            )
        choosing = chunk_config(ChunkingSettings(), client, evidence="choose")
        assert choosing.chunk_size_bytes == CHOOSING_CHUNK_BYTES
        fixed = ChunkingSettings.partial(chunk_size_bytes=9000)
        assert (
            chunk_config(ChunkingSettings(), client, fixed, evidence="choose").chunk_size_bytes
            == 9000
        )


def test_the_analysis_sizes_its_chunks_for_the_style_that_finds_the_evidence(
    tmp_path: Path,
) -> None:
    """Through ``analyze_file``: a model that chooses gets 3,000-byte chunks, Harvey's
    finder window-sized ones, on the same document and window."""
    from harvey.analysis.api import AnalyzeOptions, analyze_file

    doc = tmp_path / "doc.md"
    doc.write_text("".join(f"Paragraph {i} holds the year {1900 + i}.\n\n" for i in range(900)))
    totals = {}
    with QuotingOpenAI(context_window=32_768) as srv:
        client = OpenAIClient(srv.url, "fake-model", retries=0)
        for style in ("harvey", "choose"):
            result = analyze_file(
                doc, "List every year.", settings=ChunkingSettings(), client=client,
                options=AnalyzeOptions(evidence=style, answer="evidence"),  # type: ignore[arg-type]
            )  # fmt: skip
            totals[style] = result.total
    size = doc.stat().st_size
    assert totals["choose"] >= size // 3000 > totals["harvey"]


def test_auto_without_a_reachable_window_is_the_fixed_size() -> None:
    client = OpenAIClient("http://127.0.0.1:9/v1", "m", retries=0, connect_timeout=0.5)
    # nothing answers /props: the OpenAI backend's default window (8192) sizes the chunks
    cfg = chunk_config(ChunkingSettings(), client)
    assert cfg.chunk_size_bytes >= FIXED_CHUNK_BYTES


def _analyze(ws: Path, srv: FakeOpenAI, *extra: str) -> subprocess.CompletedProcess[str]:
    return invoke_harvey(
        "analyze", "doc.md", "-i", "Summarise.", "--yes",
        "--backend", "openai", "--base-url", srv.url, "--no-record", *extra,
        cwd=ws,
    )  # fmt: skip


@pytest.mark.slow
def test_a_32k_window_needs_five_times_fewer_calls_and_none_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    text = "\n\n".join(f"Paragraph {i}. " + "Lorem ipsum dolor sit amet. " * 20 for i in range(900))
    (ws / "doc.md").write_text(text)  # about 500 KB
    calls = {}
    for label, extra in (("auto", ()), ("fixed", ("--chunk-size", "6000"))):
        with QuotingOpenAI(context_window=32_768, max_prompt_tokens=32_768) as srv:
            proc = _analyze(ws, srv, *extra)
            assert proc.returncode == 0, proc.stderr
            prompts = [r["messages"][-1]["content"] for r in srv.chat_requests]
            calls[label] = sum(1 for p in prompts if part_of(p))
            assert srv.rejected == 0
    assert calls["auto"] >= 1
    assert calls["fixed"] >= 5 * calls["auto"], calls

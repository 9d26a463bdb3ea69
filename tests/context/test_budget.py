"""W1: the estimator, remaining context, the stat-only pre-read guard, calibration."""

from __future__ import annotations

import builtins
import io
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harvey.context.budget import (
    MAX_SAMPLES,
    Calibration,
    budget_report,
    calibrated_ratio,
    estimate_tokens,
    file_exceeds_budget,
    remaining_context,
    tokens_for_bytes,
)
from harvey.context.estimate import text_units
from harvey.messages import Message, ToolCall


def test_estimate_tokens_empty() -> None:
    assert estimate_tokens("") == 0


def test_estimate_tokens_counts_pieces_not_bytes() -> None:
    # one digit is one token whatever its bytes: a table of numbers is not "4 bytes a token"
    assert estimate_tokens("7" * 400) >= 400
    assert estimate_tokens("the cat sat on the mat " * 20) < len("the cat sat on the mat " * 20)


def test_estimate_tokens_uses_the_ratio() -> None:
    text = "A plain sentence of prose, as a chat turn has. " * 10
    assert estimate_tokens(text, bytes_per_token=2.0) == -(-text_units(text) // 2)
    assert estimate_tokens(text, 2.0) > estimate_tokens(text, 4.0)


@given(st.text(st.characters(exclude_categories=())), st.floats(min_value=1.0, max_value=8.0))
def test_estimate_is_the_units_over_the_ratio(text: str, ratio: float) -> None:
    units = text_units(text)  # never raises, lone surrogates included
    tokens = estimate_tokens(text, ratio)
    assert tokens * ratio >= units
    assert (tokens - 1) * ratio < units or tokens == 0


def test_file_exceeds_budget_small_file(tmp_path: Path) -> None:
    path = tmp_path / "small.txt"
    path.write_text("x" * 400)
    assert file_exceeds_budget(path, 1000) == (False, 400)


def test_file_exceeds_budget_large_file(tmp_path: Path) -> None:
    path = tmp_path / "large.txt"
    path.write_text("x" * 40_000)
    assert file_exceeds_budget(path, 1000) == (True, 40_000)


def test_file_exceeds_budget_boundary(tmp_path: Path) -> None:
    path = tmp_path / "edge.txt"
    path.write_text("x" * 4000)
    assert file_exceeds_budget(path, 1000) == (False, 4000)
    assert file_exceeds_budget(path, 999) == (True, 4000)


def test_file_exceeds_budget_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        file_exceeds_budget(tmp_path / "nope.txt", 1000)


def test_file_exceeds_budget_never_opens_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "secret.txt"
    path.write_text("y" * 10_000)
    path.chmod(0)  # unreadable (for non-root); opening is also forbidden below

    def no_open(*args: object, **kwargs: object) -> None:
        raise AssertionError("the guard opened a file")

    monkeypatch.setattr(builtins, "open", no_open)
    monkeypatch.setattr(io, "open", no_open)
    monkeypatch.setattr(os, "open", no_open)
    assert file_exceeds_budget(path, 100) == (True, 10_000)


def test_file_exceeds_budget_sparse_gigabyte(tmp_path: Path) -> None:
    path = tmp_path / "sparse.bin"
    with path.open("wb") as fh:
        fh.truncate(1 << 30)
    assert file_exceeds_budget(path, 32_000) == (True, 1 << 30)


def test_remaining_context_subtracts_history() -> None:
    empty = remaining_context(8192)
    history = [Message(role="user", content="x" * 4000), Message(role="assistant", content="ok")]
    assert remaining_context(8192, history=history) < empty
    assert remaining_context(8192, history=history) < 8192


def test_remaining_context_arithmetic() -> None:
    # window - history - system - injected - 1_000 margin (10 %), each estimated alone
    texts = {"history": "the history " * 40, "system": "be brief. " * 20, "m": "a memory " * 11}
    got = remaining_context(
        10_000,
        history=texts["history"],
        system_prompt=texts["system"],
        injected=[texts["m"], texts["m"]],
    )
    used = estimate_tokens(texts["history"]) + estimate_tokens(texts["system"])
    assert got == 10_000 - used - 2 * estimate_tokens(texts["m"]) - 1000


def test_remaining_context_counts_tool_call_arguments() -> None:
    call = ToolCall("1", "write_file", {"content": "z" * 4000})
    with_call = [Message(role="assistant", content="", tool_calls=[call])]
    assert remaining_context(8192, history=with_call) < remaining_context(8192) - 900


def test_remaining_context_clamps_at_zero() -> None:
    assert remaining_context(1000, history="x" * 100_000) == 0


def test_budget_report_for_status() -> None:
    report = budget_report(4096, history="x" * 400, bytes_per_token=2.0)
    used = estimate_tokens("x" * 400, 2.0)
    assert (report.window, report.used, report.margin) == (4096, used, 410)
    assert report.remaining == 4096 - used - 410
    assert report.bytes_per_token == 2.0


@given(
    st.integers(min_value=0, max_value=1_000_000),
    st.lists(st.text(max_size=200), max_size=5),
    st.text(max_size=200),
)
def test_remaining_is_monotone_in_what_is_committed(
    window: int, injected: list[str], system: str
) -> None:
    base = remaining_context(window)
    more = remaining_context(window, injected=injected, system_prompt=system)
    assert 0 <= more <= base <= window


def test_calibrated_ratio_takes_the_safe_side() -> None:
    # 3.0 and 5.0 bytes/token observed: estimate with 3.0 (more tokens).
    assert calibrated_ratio([(3000, 1000), (5000, 1000)]) == 3.0
    assert calibrated_ratio([]) is None
    assert calibrated_ratio([(40, 10)]) is None  # too small to say anything
    assert calibrated_ratio([(100, 100)]) == 1.0
    assert calibrated_ratio([(100_000, 1000)]) == 8.0  # clamped


@given(st.lists(st.tuples(st.integers(1, 10**7), st.integers(32, 10**6)), min_size=1))
def test_calibrated_estimate_never_below_any_sample(samples: list[tuple[int, int]]) -> None:
    ratio = calibrated_ratio(samples, quantile=0.0)  # the minimum rule (few samples: always)
    assert ratio is not None
    for size, tokens in samples:
        if size >= tokens:  # samples below 1 byte/token are clamped (broken reports)
            assert tokens_for_bytes(size, ratio) >= tokens


def test_calibration_keeps_recent_samples_and_ignores_missing_counts() -> None:
    cal = Calibration("llama3")
    assert cal.bytes_per_token() == 4.0
    cal.add(1000, None)
    cal.add(3000, 1000)
    assert cal.bytes_per_token() == 3.0
    for _ in range(MAX_SAMPLES):
        cal.add(5000, 1000)
    assert len(cal.samples) == MAX_SAMPLES
    assert cal.bytes_per_token() == 5.0  # the old 3.0 sample aged out
    text = "words of prose " * 50
    for _ in range(MAX_SAMPLES // 10):  # a tenth of the samples: above the 5th percentile
        cal.add_messages([Message(role="user", content=text)], 200)
    assert cal.bytes_per_token() == text_units(text) / 200  # units per token, for texts
    assert cal.size_ratio == len(text) / 200  # bytes per token, for sizes

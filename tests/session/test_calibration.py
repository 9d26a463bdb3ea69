"""Calibration: a low quantile instead of the minimum, and separate ratios for prose and code."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from harvey.context.budget import (
    MAX_SAMPLES,
    MIN_QUANTILE_SAMPLES,
    Calibration,
    calibrated_ratio,
)
from harvey.session.migrations import MIGRATIONS
from harvey.session.store import SessionStore


def test_few_samples_keep_the_minimum() -> None:
    samples = [(4000, 1000), (3000, 1000), (5000, 1000)]
    assert calibrated_ratio(samples) == 3.0


def test_one_odd_sample_no_longer_sets_the_ratio() -> None:
    samples = [(4000, 1000)] * (MIN_QUANTILE_SAMPLES * 2) + [(1500, 1000)]
    assert calibrated_ratio(samples) == 4.0  # the outlier is below the 5th percentile
    assert calibrated_ratio(samples, quantile=0.0) == 1.5


def test_the_quantile_is_below_most_samples() -> None:
    samples = [(3000 + 10 * i, 1000) for i in range(100)]
    ratio = calibrated_ratio(samples)
    assert ratio is not None
    under = sum(1 for b, t in samples if b / t < ratio)
    assert under <= 5


@given(st.lists(st.tuples(st.integers(1, 10**6), st.integers(32, 10**5)), min_size=1))
def test_ratio_is_one_of_the_samples_or_a_clamp(samples: list[tuple[int, int]]) -> None:
    ratio = calibrated_ratio(samples)
    assert ratio is not None and 1.0 <= ratio <= 8.0
    ratios = sorted(b / t for b, t in samples)
    assert ratio in {min(8.0, max(1.0, r)) for r in ratios}
    # never above the median: conservative
    assert ratio <= max(1.0, min(8.0, ratios[len(ratios) // 2]))


def test_in_memory_calibration_keeps_the_last_samples() -> None:
    cal = Calibration("m", doc_type="source")
    for _ in range(MAX_SAMPLES + 10):
        cal.add(3000, 1000)
    assert len(cal.samples) == MAX_SAMPLES and cal.ratio == 3.0


def test_the_store_keeps_prose_and_code_apart(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    store.record_calibration("m", 4000, 1000)
    store.record_calibration("m", 2500, 1000, "source")
    assert store.calibration_ratio("m") == 4.0
    assert store.calibration_ratio("m", "source") == 2.5
    assert store.calibration_samples("m", "source") == [(2500, 1000)]
    store.close()


def test_migration_m006_labels_old_samples_prose(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for name, function in MIGRATIONS[:4]:
        function(db)
        db.execute("INSERT INTO _migrations VALUES (?, 'then')", (name,))
    db.execute(
        "INSERT INTO calibration_samples (model, prompt_bytes, prompt_tokens, created_at) "
        "VALUES ('m', 3300, 1000, 'then')"
    )
    db.close()
    store = SessionStore(path)
    assert "m006_calibration_doc_type" in store.applied_migrations()
    assert store.calibration_ratio("m") == 3.3
    assert store.calibration_ratio("m", "source") is None
    store.close()


def test_the_store_keeps_units_for_texts_and_bytes_for_sizes(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    store.record_calibration("m", 2200, 1000, "source", 3800)
    assert store.calibration_ratio("m", "source") == 3.8  # units per token: texts
    assert store.calibration_ratio("m", "source", "bytes") == 2.2  # bytes per token: sizes
    assert store.calibration_samples("m", "source", "units") == [(3800, 1000)]
    store.close()


def test_migration_m007_keeps_old_samples_with_their_bytes_for_units(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for name, function in MIGRATIONS[:6]:
        function(db)
        db.execute("INSERT INTO _migrations VALUES (?, 'then')", (name,))
    db.execute(
        "INSERT INTO calibration_samples (model, prompt_bytes, prompt_tokens, created_at, "
        "doc_type) VALUES ('m', 3300, 1000, 'then', 'source')"
    )
    db.close()
    store = SessionStore(path)
    assert "m007_calibration_units" in store.applied_migrations()
    # units read like bytes, and bytes are the fewer for code: the safe stand-in
    assert store.calibration_ratio("m", "source") == 3.3
    assert store.calibration_ratio("m", "source", "bytes") == 3.3
    store.close()


def test_in_memory_calibration_learns_units_from_texts() -> None:
    cal = Calibration("m", doc_type="source")
    text = "    for item in items:\n        total += item.price * 3\n" * 40
    cal.add_text(text, 500)
    assert cal.ratio is not None and cal.size_ratio == len(text) / 500
    assert cal.ratio != cal.size_ratio  # units are not bytes

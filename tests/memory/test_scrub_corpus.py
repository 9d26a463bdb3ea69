"""The benchmark's scrubber corpus as a test: every credential shape rejected, at most one
harmless look-alike rejected (the issue's target), and the corpus is as large as promised."""

from __future__ import annotations

from bench.bench_memory import CREDENTIALS, HARMLESS, make_recordings

from harvey.memory.scrub import scrub
from harvey.session.fountain import parse_session


def test_corpus_size() -> None:
    assert len(CREDENTIALS) >= 30 and len(HARMLESS) >= 30


def test_every_credential_is_rejected() -> None:
    assert [c for c in CREDENTIALS if not scrub(c).rejected] == []


def test_at_most_one_harmless_text_is_rejected() -> None:
    assert len([h for h in HARMLESS if scrub(h).rejected]) <= 1


def test_bench_recordings_parse(tmp_path) -> None:  # type: ignore[no-untyped-def]
    files = make_recordings(tmp_path)
    assert len(files) >= 10
    assert all(parse_session(f).turns[0].user_text for f in files)

"""memory.db and the scrubber: ids, flags, supersession, FTS recall, credentials rejected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harvey.errors import StoreError, UsageError
from harvey.memory.recall import recall
from harvey.memory.scrub import scrub
from harvey.memory.store import Memory, MemoryStore


@pytest.fixture()
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "memory.db")


def test_ids_flag_archive_and_forget(store: MemoryStore) -> None:
    m = store.add(Memory("", "tool_use", "run pytest with -x to stop early", kind="pattern"))
    assert re.fullmatch(r"tool_use_[0-9a-f]{6}", m.id)
    assert store.get(m.id).confidence == 0.5  # type: ignore[union-attr]
    for expected in (0.4, 0.3):
        assert store.flag(m.id).confidence == pytest.approx(expected)
    assert not store.require(m.id).archived
    assert store.flag(m.id).archived  # 0.2: archived
    assert store.memories(workspace=None) == []
    store.forget(m.id)
    with pytest.raises(UsageError, match="no memory"):
        store.require(m.id)


def test_supersede_keeps_the_old_one(store: MemoryStore) -> None:
    old = store.add(Memory("", "project_fact", "tests live in tests/", workspace="/ws"))
    new = store.supersede(
        old.id, Memory("", "project_fact", "tests live in tests/ and bench/", workspace="/ws")
    )
    assert store.require(old.id).superseded_by == new.id
    assert [m.id for m in store.memories(workspace="/ws")] == [new.id]
    assert store.find_exact("Tests live in tests/ and bench/.", "/ws") is not None


def test_unknown_type_is_refused_and_nothing_written(store: MemoryStore) -> None:
    with pytest.raises(StoreError, match="unknown memory type"):
        store.add(Memory("", "gossip", "x"))
    assert store.counts()["active"] == 0


def test_corrupted_database_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable memory database"):
        MemoryStore(db)
    assert db.read_bytes().startswith(b"this is not sqlite")  # nothing overwritten


def test_recall_puts_profile_first_then_ranks_within_budget(store: MemoryStore) -> None:
    ws = "/ws"
    store.add(Memory("", "workspace_profile", "A Python package with pytest tests.", workspace=ws))
    store.add(Memory("", "tool_use", "use ruff format before committing", workspace=ws))
    store.add(Memory("", "user_preference", "the user prefers tabs over spaces"))
    store.add(Memory("", "tool_use", "elsewhere only", workspace="/other"))
    found = recall(store, Path(ws), "how do I format with ruff?", context_window=8192)
    types = [(m.type, round(s, 2)) for m, s in found.items]
    assert types[0] == ("workspace_profile", 1.0)
    assert [m.text for m, _ in found.items][1] == "use ruff format before committing"
    assert all(m.workspace != "/other" for m, _ in found.items)
    assert found.block is not None and "use ruff format" in found.block


def test_recall_never_drops_silently(store: MemoryStore) -> None:
    for i in range(40):
        store.add(
            Memory("", "tool_use", f"ruff rule number {i} " + "padding " * 20, workspace="/ws")
        )
    found = recall(store, Path("/ws"), "ruff rule", context_window=1000, budget_pct=5)
    assert found.budget == 512
    assert found.items and found.left_out
    assert len(found.items) + len(found.left_out) == 40


CREDENTIALS = [
    "use key sk-proj-abc123DEF456ghi789JKL0 for the API",
    "token ghp_0123456789abcdefghijABCDEFGHIJ0123",
    "AKIAIOSFODNN7EXAMPLE is the access key",
    "connect to https://admin:hunter22@db.example.com/x",
    "login with password=hunter2",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "slack xoxb-1234567890-abcdefghij",
    "google AIzaSyA1234567890abcdefghijklmnopqrstuv",
]


@pytest.mark.parametrize("text", CREDENTIALS)
def test_credentials_are_rejected_not_masked(text: str) -> None:
    result = scrub(text)
    assert result.rejected and "credential" in result.rejected
    assert result.text == ""


@pytest.mark.parametrize(
    "text",
    [
        "the user prefers tabs over spaces",
        "the accent colour is #ff8800",
        "session 123e4567-e89b-12d3-a456-426614174000 was slow",
        "reset the password in the settings page",
    ],
)
def test_harmless_text_passes(text: str) -> None:
    assert scrub(text).rejected is None


def test_paths_become_portable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = home / "src" / "proj"
    result = scrub(f"edit {ws}/a.py and {home}/.bashrc", workspace=ws, home=home)
    assert result.text == "edit <workspace>/a.py and ~/.bashrc"

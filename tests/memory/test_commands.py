"""The memory command layer both front ends call: plain values back, nothing printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from harvey.config.settings import Settings
from harvey.errors import UsageError
from harvey.memory import commands
from harvey.memory.store import Memory, MemoryStore


def test_reading_a_fresh_home_makes_no_database(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert commands.list_memories(home, tmp_path) == []
    assert commands.counts(home) == commands.EMPTY_COUNTS
    assert commands.recall(home, Settings(), tmp_path, "anything", print) == []
    with pytest.raises(UsageError, match="no memories yet"):
        commands.show(home, "tool_use_000000")
    assert not home.exists()


def test_list_show_flag_forget_and_counts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with MemoryStore(home / "memory.db") as store:
        tip = store.add(
            Memory("", "tool_use", "run make test before a commit", workspace=str(tmp_path))
        )
    assert [m.id for m in commands.list_memories(home, tmp_path)] == [tip.id]
    assert commands.show(home, tip.id)["text"] == "run make test before a commit"
    assert commands.flag(home, tip.id).startswith(f"{tip.id}: confidence ")
    assert commands.counts(home)["active"] == 1
    assert commands.forget(home, tip.id) == f"{tip.id} forgotten"
    assert commands.counts(home)["active"] == 0
    with pytest.raises(UsageError):
        commands.show(home, tip.id)


def test_clean_text_refuses_a_credential_and_an_empty_text(tmp_path: Path) -> None:
    cleaned = commands.clean_text(f"  notes live in {tmp_path}/docs  ", tmp_path)
    assert cleaned == "notes live in <workspace>/docs"
    with pytest.raises(UsageError, match=r"^profile not saved: the text is empty"):
        commands.clean_text("   ", tmp_path, "profile ")
    with pytest.raises(UsageError, match=r"^not saved: the text "):
        commands.clean_text("use ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", tmp_path)
